"""The LP relaxation of the assignment program: an optimal vertex with its reduced costs and
duals, from scratch (scipy's HiGHS dual simplex) or read from a HiGHS model that holds it."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from fairsim.solve.budget import Budget
from fairsim.solve.lazy import linprog
from fairsim.solve.program import AssignmentProblem, Columns, reduced_costs


@dataclass(frozen=True, eq=False)
class Relaxation:
    """An optimal vertex of the LP relaxation: x, reduced costs, the duals of the one-type rows, the value."""

    x: np.ndarray
    reduced: np.ndarray
    row_duals: np.ndarray
    value: float


def lp_cold(q: AssignmentProblem, cols: Columns, a, lo, hi, budget: Budget) -> Relaxation | str:
    """The relaxation from scratch (scipy linprog, HiGHS dual simplex after presolve) within the
    budget's limits; a message on failure."""
    from scipy import sparse  # here: scipy's import is a large part of a run's start-up

    n, t = q.num_jobs, len(q.capacity)
    # linprog wants A_ub x <= b_ub: the K row is negated
    a_ub = sparse.vstack([a[: n + t], -a[n + t :]], format="csr")
    b_ub = np.concatenate([hi[: n + t], [-lo[n + t]]])
    lp = linprog(
        cols.cost,
        A_ub=a_ub,
        b_ub=b_ub,
        bounds=(0, 1),
        method="highs-ds",
        options={**budget.linprog_options(), "presolve": True},
    )
    budget.note_linprog(lp)
    if lp.status != 0 or lp.x is None:
        return f"LP status {lp.status}: {lp.message}"
    marginals = lp.ineqlin.marginals
    return Relaxation(lp.x, cols.cost - a_ub.T @ marginals, marginals[:n], float(lp.fun))


def relaxation_in(h, cols: Columns, n: int, t: int) -> Relaxation:
    """The optimal vertex HiGHS holds, with reduced costs c - A'y."""
    solution = h.getSolution()
    x = np.asarray(solution.col_value)
    y = np.asarray(solution.row_dual)
    reduced = reduced_costs(n, t, cols, y)
    if len(y) > n + t + 1:  # the cut "at most max_jobs jobs run" (lp_dive's max_jobs): a 1 in every column
        reduced = reduced - y[n + t + 1]
    return Relaxation(x, reduced, y[:n], float(h.getInfo().objective_function_value))
