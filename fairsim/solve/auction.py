"""Themis' auction as the gang assignment program, solved like FFT's.

The auction is max sum v[j, k] x[j, k] with at most one type per job and
sum_j width_j x[j, k] <= free_k, over the bids (v > 0, the gang fits). That is the program of
``fairsim.solve.program`` with cost = -v and no work-conservation floor (K = 0), so it is built,
pruned, dived and certified by the same code as FFT's (``auction_problem``, ``solve_auction``).

Large auctions go to ``lp_dive`` (the LP, the quick dive that locks the gangs the LP runs whole,
the full dive, the gang exchanges); its answer stands when it is within ``gap`` of its LP
bound, the test every solver here stops on. The plain LP bound is often out of reach: the
unbounded bids value a winner far above any difference among the others, so where the LP runs a
fraction of one more gang than fits, the LP is most of a winner's value better than any
allocation. The number of winners is a whole number, so "at most floor(the LP's most fractional
winners)" is a valid cut (``max_winners``): no allocation violates it. The dive's LP carries
it (``max_jobs``), which makes its bound, and so its certificate, tight. An uncertified dive
hands the auction to the exact MILP, with the same cut (on full-scale auctions HiGHS then proves
in tens of milliseconds what takes it seconds without). Small auctions go to the exact MILP
directly.
"""

from __future__ import annotations

import math

import numpy as np

from fairsim.solve.budget import Budget
from fairsim.solve.highs import new_highs, pass_lp
from fairsim.solve.lp_dive import solve_lp_dive
from fairsim.solve.milp import solve_milp
from fairsim.solve.program import (
    AssignmentProblem,
    Solution,
    columns,
    is_certified,
    row_bounds,
)


def auction_problem(value: np.ndarray, widths: np.ndarray, free: np.ndarray) -> AssignmentProblem:
    """The auction as an assignment program: a column for each bid (positive value, the gang
    fits the free GPUs), cost -value, capacity the free GPUs, no floor on the GPUs used."""
    feasible = (value > 0) & (widths[:, None] <= free[None, :])
    return AssignmentProblem(
        np.where(feasible, -value, 0.0),
        feasible,
        np.asarray(widths, dtype=np.int64),
        np.asarray(free, dtype=np.int64),
        0,
    )


def solve_auction(p: AssignmentProblem, dive: bool, gap: float = 1e-4, budget: Budget | None = None) -> Solution:
    """The auction's allocation, within ``gap`` (relative) of the optimum unless a limit of the
    budget binds. ``dive``: try the LP dive first (``info["auction"]`` says which route answered:
    ``milp``, ``dive``, or ``milp_after_dive`` when the dive could not be certified)."""
    budget = budget or Budget()
    if not dive:
        sol = solve_milp(p, budget, gap)
        sol.info["auction"] = "milp"
        return sol
    most = max_winners(p, budget)
    sol = solve_lp_dive(p, budget=budget, mip_gap=gap, gap=gap, max_nodes=0, exact_columns=0, max_jobs=most)
    if not sol.fallback and is_certified(sol, gap):
        sol.info["auction"] = "dive"
        return sol
    exact = solve_milp(p, budget, gap, max_jobs=most)
    exact.info["auction"] = "milp_after_dive"
    return exact


def max_winners(p: AssignmentProblem, budget: Budget | None = None) -> int | None:
    """The most winners any allocation can have is at most this: the LP's most (fractional)
    winners, rounded down. None if HiGHS fails (or a limit stops it)."""
    cols = columns(p)
    m = len(cols.rows)
    h = new_highs()
    pass_lp(h, cols, p.num_jobs, len(p.capacity), *row_bounds(p))
    h.changeColsCost(m, np.arange(m, dtype=np.int32), -np.ones(m))  # maximize the number of winners
    solved = (budget or Budget()).run(h)
    return math.floor(-float(h.getInfo().objective_function_value) + 1e-6) if solved else None
