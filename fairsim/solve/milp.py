"""The exact assignment program with scipy.optimize.milp (HiGHS branch and bound): a node limit
(and, opt-in, a time limit) from the budget and a relative MIP gap; a feasible incumbent found
before a limit is used, and a failure falls back to the greedy packing."""

from __future__ import annotations

import time

import numpy as np

from fairsim.solve.budget import Budget
from fairsim.solve.lazy import milp
from fairsim.solve.program import (
    NOT_RUN,
    AssignmentProblem,
    Solution,
    columns,
    greedy_after_failure,
    matrix,
    to_assignment,
)


def solve_milp(
    p: AssignmentProblem, budget: Budget | None = None, mip_gap: float = 1e-4, max_jobs: int | None = None
) -> Solution:
    """The exact program, within the budget's limits (none without one). ``max_jobs``: a cut "at
    most this many jobs run" that no allocation violates (Themis' winner count), which can
    shorten HiGHS' proof a great deal."""
    from scipy.optimize import Bounds, LinearConstraint  # here: scipy's import is a large part of a run's start-up

    budget = budget or Budget()
    tick = time.perf_counter()
    if p.num_jobs == 0 or not p.feasible.any():
        return Solution(np.full(p.num_jobs, NOT_RUN, dtype=np.int64), 0.0, "milp", True, False, 0.0)
    cols = columns(p)
    a, lo, hi = matrix(p, cols)
    constraints = [LinearConstraint(a, lo, hi)]
    if max_jobs is not None:
        constraints.append(LinearConstraint(np.ones((1, len(cols.cost))), -np.inf, float(max_jobs)))
    res = milp(
        cols.cost,
        integrality=np.ones(len(cols.cost)),
        bounds=Bounds(0, 1),
        constraints=constraints,
        options={**budget.milp_options(), "mip_rel_gap": float(mip_gap), "disp": False},
    )
    budget.note_milp(res)
    elapsed = time.perf_counter() - tick
    if res.x is None:
        return greedy_after_failure(p, "milp", f"status {res.status}: {res.message}", elapsed)
    assignment = to_assignment(p, cols, res.x)
    if not p.is_valid(assignment):  # paranoia: never hand the engine an invalid answer
        return greedy_after_failure(p, "milp", "solver answer broke a constraint", elapsed)
    bound = float(getattr(res, "mip_dual_bound", np.nan) or np.nan)
    return Solution(
        assignment, p.objective(assignment), "milp", res.status == 0, False, elapsed, bound, {"status": int(res.status)}
    )
