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

from fairsim.solve.budget import MIP_NODES, Budget
from fairsim.solve.highs import load_highspy


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
    not fit), no job gets an option. HiGHS through highspy, quiet and single-threaded (scipy's
    bundled HiGHS prints a debug line on some integer solutions)."""
    budget = budget or Budget()
    n = len(cost)
    none = Choice(np.full(num_jobs, -1, dtype=np.int64), True, 0.0)
    if n == 0:
        return none
    highspy = load_highspy()
    h = highspy._Highs()  # the bare binding: no banner on stdout
    nodes = budget.limits.mip_nodes
    for key, value in (
        ("output_flag", False),
        ("threads", 1),
        ("mip_rel_gap", float(mip_gap)),
        ("mip_max_nodes", highspy.kHighsIInf if nodes is None else int(nodes)),
    ):
        h.setOptionValue(key, value)
    # column v: 1 in its job's row, its GPUs in its type's row
    index = np.empty(2 * n, dtype=np.int32)
    index[0::2], index[1::2] = job, num_jobs + kind
    value = np.empty(2 * n)
    value[0::2], value[1::2] = 1.0, gpus
    lower = np.zeros(n)
    if forced is not None:
        lower[forced] = 1.0
    h.passModel(
        n,
        num_jobs + len(capacity),
        2 * n,
        int(highspy.MatrixFormat.kColwise),
        int(highspy.ObjSense.kMaximize if maximize else highspy.ObjSense.kMinimize),
        0.0,
        np.ascontiguousarray(cost, dtype=np.float64),
        lower,
        np.ones(n),
        np.full(num_jobs + len(capacity), -highspy.kHighsInf),
        np.r_[np.ones(num_jobs), np.asarray(capacity, dtype=np.float64)],
        np.arange(0, 2 * n + 1, 2, dtype=np.int32),
        index,
        value,
        np.ones(n, dtype=np.int32),  # all integer (binary by their bounds)
    )
    h.run()
    status = h.getModelStatus()
    used = int(h.getInfo().mip_node_count)
    budget.note(MIP_NODES, used, status == highspy.HighsModelStatus.kSolutionLimit)
    if not h.getInfo().primal_solution_status:
        return Choice(none.option, False, float("nan"))
    x = np.asarray(h.getSolution().col_value)
    chosen = np.flatnonzero(x > 0.5)
    option = none.option.copy()
    option[job[chosen]] = chosen
    return Choice(option, status == highspy.HighsModelStatus.kOptimal, float(cost[chosen].sum()))
