"""LP relaxation + repair: keep the LP vertex's integral rows except a small *core* (the
fractional jobs -- a vertex has at most about one per coupling row -- and the jobs with the
smallest reduced costs), and re-solve the core exactly as a small MILP over the residual
capacity. If that cannot reach K, the full MILP is tried. The LP optimum is a lower bound, so
every answer carries its own certified gap. With a ``WarmStart`` (kept by the caller across
rounds) the LP is re-solved in HiGHS from last round's basis. Every LP and MILP runs within the
caller's ``Budget``."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

import numpy as np

from fairsim.solve.budget import Budget
from fairsim.solve.milp import solve_milp
from fairsim.solve.program import (
    FRACTIONAL_TOL,
    NOT_RUN,
    AssignmentProblem,
    Columns,
    Solution,
    columns,
    matrix,
    prune_dominated,
    to_assignment,
    within_gap,
)
from fairsim.solve.relaxation import Relaxation, lp_cold

if TYPE_CHECKING:
    from fairsim.solve.warm import WarmStart


def solve_lp_repair(
    p: AssignmentProblem,
    budget: Budget | None = None,
    mip_gap: float = 1e-4,
    core: int = 256,
    keep_types: int = 2,
    warm: WarmStart | None = None,
) -> Solution:
    """LP relaxation (HiGHS dual simplex: a vertex, so only a few jobs are fractional); keep its
    integral rows except a *core* of the jobs nearest to changing (the fractional ones and the
    ``core`` jobs with the smallest LP reduced costs), and re-solve the core exactly as a small
    MILP over the residual capacity, each core job limited to its ``keep_types`` types of smallest
    reduced cost (plus those the LP used). The LP optimum bounds the gap of the answer.

    With ``warm`` (a ``WarmStart`` kept by the caller from round to round) the relaxation is
    re-solved from the previous round's basis instead of from scratch; the rest is the same."""
    tick = time.perf_counter()
    if p.num_jobs == 0 or not p.feasible.any():
        return Solution(np.full(p.num_jobs, NOT_RUN, dtype=np.int64), 0.0, "lp_repair", True, False, 0.0)
    q = prune_dominated(p)
    return lp_repair_pruned(p, q, columns(q), tick, budget or Budget(), mip_gap, core, keep_types, warm)


def lp_repair_pruned(
    p: AssignmentProblem,
    q: AssignmentProblem,
    cols: Columns,
    tick: float,
    budget: Budget,
    mip_gap: float,
    core: int,
    keep_types: int,
    warm: WarmStart | None,
) -> Solution:
    """``solve_lp_repair`` once ``q`` (``p`` pruned) and its columns are built."""
    lp_tick = time.perf_counter()
    if warm is None:
        relaxation = lp_cold(q, cols, *matrix(q, cols), budget)
    else:  # builds its own matrix (column-wise, for HiGHS) and only the cold fallback needs this one
        relaxation = warm.relaxation(q, cols, budget)
    lp_s = time.perf_counter() - lp_tick
    sol = repair(p, q, cols, relaxation, tick, budget, mip_gap, core, keep_types, "lp_repair")
    sol.info["lp_s"] = lp_s  # the relaxation's share of time_s (what the warm start saves)
    return sol


def repair(
    p: AssignmentProblem,
    q: AssignmentProblem,
    cols: Columns,
    lp: Relaxation | str,
    tick: float,
    budget: Budget,
    mip_gap: float,
    core: int,
    keep_types: int,
    method: str,
) -> Solution:
    """Round the LP vertex and re-solve its core exactly (see ``solve_lp_repair``)."""
    if isinstance(lp, str):
        return escalate(p, tick, budget, mip_gap, lp, np.nan, 0)
    n = q.num_jobs
    x = lp.x
    frac_col = (x > FRACTIONAL_TOL) & (x < 1 - FRACTIONAL_TOL)
    fractional = np.unique(cols.rows[frac_col])
    assignment = to_assignment(q, cols, x)
    assignment[fractional] = NOT_RUN
    info = {"fractional_jobs": int(len(fractional))}
    if len(fractional) == 0 and q.gpus_used(assignment) >= q.min_gpus:
        return Solution(
            assignment, p.objective(assignment), method, True, False, time.perf_counter() - tick, lp.value, info
        )
    rows = _core_jobs(q, cols, x, lp.reduced, lp.row_duals, fractional, core)
    if len(rows) == n:  # the core is everything: this is the exact MILP
        allowed = q.feasible
    else:
        allowed = _core_columns(q, cols, x, lp.reduced, rows, keep_types)
    repaired = _solve_sub(q, assignment, rows, allowed, budget, mip_gap)
    if repaired is None:  # too narrow: all types for the core jobs
        repaired = _solve_sub(q, assignment, rows, q.feasible[rows], budget, mip_gap)
    if repaired is None:
        return escalate(p, tick, budget, mip_gap, "repair could not reach K", lp.value, len(fractional))
    obj = p.objective(repaired)
    info["core_jobs"] = int(len(rows))
    return Solution(
        repaired, obj, method, within_gap(obj, lp.value, mip_gap), False, time.perf_counter() - tick, lp.value, info
    )


def _core_jobs(
    p: AssignmentProblem,
    cols: Columns,
    x: np.ndarray,
    reduced: np.ndarray,
    row_duals: np.ndarray,
    fractional: np.ndarray,
    core: int,
) -> np.ndarray:
    """Fractional jobs plus the ``core`` jobs closest to changing in the LP: for a job the LP
    leaves out, its smallest |reduced cost|; for a job it runs, also the cost of dropping it
    (its one-type row dual)."""
    n = p.num_jobs
    margin = np.full(n, np.inf)
    off = x < 0.5
    np.minimum.at(margin, cols.rows[off], np.abs(reduced[off]))
    on_rows = cols.rows[~off]
    margin[on_rows] = np.minimum(margin[on_rows], np.abs(row_duals[on_rows]))
    order = np.lexsort((np.arange(n), margin))
    return np.union1d(fractional, order[:core]).astype(np.int64)


def _core_columns(
    p: AssignmentProblem, cols: Columns, x: np.ndarray, reduced: np.ndarray, rows: np.ndarray, keep_types: int
) -> np.ndarray:
    """bool [len(rows), T]: each core job's ``keep_types`` types of smallest reduced cost, plus any the LP used."""
    t = len(p.capacity)
    rc = np.full((p.num_jobs, t), np.inf)
    rc[cols.rows, cols.types] = reduced
    used = np.zeros((p.num_jobs, t), dtype=bool)
    used[cols.rows, cols.types] = x > FRACTIONAL_TOL
    sub_rc = rc[rows]
    rank = np.argsort(np.argsort(sub_rc, axis=1, kind="stable"), axis=1, kind="stable")
    return ((rank < keep_types) & np.isfinite(sub_rc)) | used[rows]


def _solve_sub(
    p: AssignmentProblem, fixed: np.ndarray, rows: np.ndarray, allowed: np.ndarray, budget: Budget, mip_gap: float
) -> np.ndarray | None:
    """Exactly re-assign ``rows`` (on their ``allowed`` types) with the other jobs as in ``fixed``;
    None if K is out of reach that way."""
    base = fixed.copy()
    base[rows] = NOT_RUN
    run = base >= 0
    used = np.bincount(base[run], weights=p.workers[run], minlength=len(p.capacity)).astype(np.int64)
    free = p.capacity - used
    sub = AssignmentProblem(
        p.cost[rows],
        allowed & p.feasible[rows] & (p.workers[rows, None] <= free[None, :]),
        p.workers[rows],
        free,
        max(0, int(p.min_gpus - used.sum())),
    )
    sol = solve_milp(sub, budget, mip_gap)
    if sol.fallback or sub.gpus_used(sol.assignment) < sub.min_gpus:
        return None
    base[rows] = sol.assignment
    return base


def escalate(p, tick, budget: Budget, mip_gap, reason, bound, n_frac) -> Solution:
    """The full MILP, within what is left of the budget (a wall clock that has run out leaves the
    greedy fallback: no floor lets a decision run past its limit)."""
    sol = solve_milp(p, budget, mip_gap)
    sol.time_s = time.perf_counter() - tick
    sol.info.update({"escalated": reason, "fractional_jobs": n_frac})
    if np.isfinite(bound):
        sol.lower_bound = bound
    return sol
