"""At most one option per job under per-type GPU capacity: the 0/1 program of Sia's scheduler (an
option is a GPU type and a GPU count), solved exactly with HiGHS' branch and bound.

    minimise (or maximise)  sum_v cost[v] x[v]
    subject to              sum_{v of job j} x[v] <= 1             every job
                            sum_{v on type k} gpus[v] x[v] <= capacity[k]   every type
                            x[v] = 1 where forced[v]
                            x binary
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from fairsim.solve.budget import Budget
from fairsim.solve.lazy import milp


@dataclass(frozen=True)
class Choice:
    option: np.ndarray  # int [J]: the chosen option of each job, -1 for none
    optimal: bool  # HiGHS proved it within the gap (else the best incumbent at a limit)
    objective: float


def choose_options(
    cost: np.ndarray,
    job: np.ndarray,
    kind: np.ndarray,
    gpus: np.ndarray,
    capacity: np.ndarray,
    num_jobs: int,
    forced: np.ndarray | None = None,
    maximize: bool = False,
    mip_gap: float = 1e-4,
    budget: Budget | None = None,
) -> Choice:
    """Options are parallel arrays: ``cost``, the ``job`` they belong to (0..num_jobs-1), their GPU
    ``kind`` (type index) and ``gpus``. ``forced``: options that must be chosen (their jobs'
    others are then excluded by the one-per-job row). Without an incumbent (a forced set that does
    not fit), no job gets an option."""
    from scipy.optimize import Bounds, LinearConstraint  # scipy's import is a large part of start-up
    from scipy.sparse import csr_array, vstack

    budget = budget or Budget()
    n = len(cost)
    none = Choice(np.full(num_jobs, -1, dtype=np.int64), True, 0.0)
    if n == 0:
        return none
    cols = np.arange(n)
    per_job = csr_array((np.ones(n), (job, cols)), shape=(num_jobs, n))
    num_types = len(capacity)
    per_type = csr_array((gpus.astype(float), (kind, cols)), shape=(num_types, n))
    lower = np.zeros(n)
    if forced is not None:
        lower[forced] = 1.0
    res = milp(
        -cost if maximize else cost,
        integrality=np.ones(n),
        bounds=Bounds(lower, np.ones(n)),
        constraints=[
            LinearConstraint(vstack([per_job, per_type]).tocsr(), -np.inf, np.r_[np.ones(num_jobs), capacity])
        ],
        options={**budget.milp_options(), "mip_rel_gap": float(mip_gap), "disp": False},
    )
    budget.note_milp(res)
    if res.x is None:
        return Choice(none.option, False, float("nan"))
    chosen = np.flatnonzero(res.x > 0.5)
    option = none.option.copy()
    option[job[chosen]] = chosen
    return Choice(option, res.status == 0, float(cost[chosen].sum()))
