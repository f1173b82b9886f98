"""Large Themis auctions without branch and bound: the LP relaxation in HiGHS, then a dive.

The auction's program is max sum v[j, k] x[j, k] with at most one type per job and
sum_j width_j x[j, k] <= free_k. Without gangs it is a transportation problem: the constraint
matrix is a network matrix and the right-hand sides are integers, so the simplex vertex is
integral and the LP alone is exact. Gangs (width > 1) break that, but only through their own
columns: once every gang column is fixed at 0 or 1, what is left is again a transportation
problem. So: solve the LP, fix one fractional gang column (the one with the largest value, up if
above 1/2 and the LP stays feasible, else down: at exactly 1/2 the LP may be splitting one gang
it cannot fit beside another it already runs whole), re-solve from the last basis (a few dual
simplex pivots), until no gang column is fractional.

A dive can lose (rounding a gang up can push out a job that had nowhere else to go), so its
answer is used only when it is provably within ``gap`` of an upper bound, relative: the same test
HiGHS' MILP stops on (``mip_rel_gap``, 1e-4 by default, which is what the exact path runs with).
The bound is the LP's, or if that is too far, the LP with at most as many winners as any
fractional allocation has, rounded down (``_winner_cut_bound``). Otherwise the caller solves
the MILP. On full-scale auctions the root of HiGHS' MILP costs
about 1 s on programs whose LP takes 10 ms (docs/baselines.md, "Themis at scale").
"""

from __future__ import annotations

import math

import numpy as np

from fairsim.solve.highs import is_optimal, new_highs
from fairsim.solve.program import NOT_RUN

INTEGRAL_TOL = 1e-7  # HiGHS' primal feasibility tolerance is 1e-7


def feasible_pairs(value: np.ndarray, widths: np.ndarray, free: np.ndarray) -> np.ndarray:
    """(job, type) pairs that can be bids: positive value and the gang fits the free GPUs."""
    return np.argwhere((value > 0) & (widths[:, None] <= free[None, :]))


def dive_value_assignment(value: np.ndarray, widths: np.ndarray, free: np.ndarray,
                          gap: float = 1e-4) -> np.ndarray | None:
    """A type per row (or -1) whose total value is within ``gap`` of an upper bound (the LP's, or
    the LP's with the winner cut), or None when the dive cannot show that (or HiGHS fails): the
    caller then solves the exact MILP."""
    n, t = value.shape
    out = np.full(n, NOT_RUN, dtype=np.int64)
    pairs = feasible_pairs(value, widths, free)
    if len(pairs) == 0:
        return out
    try:
        h, job, typ = _pass_auction(value, widths, free, pairs)
        if not is_optimal(h):
            return None
        bound = float(h.getInfo().objective_function_value)
        gang = widths[job] > 1
        while True:
            x = np.asarray(h.getSolution().col_value)
            fractional = np.flatnonzero(gang & (x > INTEGRAL_TOL) & (x < 1.0 - INTEGRAL_TOL))
            if len(fractional) == 0:
                break
            col = int(fractional[np.argmax(x[fractional])])  # first of the largest: deterministic
            if x[col] > 0.5:
                h.changeColBounds(col, 1.0, 1.0)
                h.run()
                if is_optimal(h):
                    continue
            h.changeColBounds(col, 0.0, 0.0)  # always feasible: x = 0 was
            h.run()
            if not is_optimal(h):
                return None
        x = np.asarray(h.getSolution().col_value)
        objective = float(h.getInfo().objective_function_value)
        if np.abs(x - np.round(x)).max() > INTEGRAL_TOL:
            return None
        if bound - objective > gap * max(1.0, abs(bound)):
            bound = _winner_cut_bound(value, widths, free, pairs)
            if bound is None or bound - objective > gap * max(1.0, abs(bound)):
                return None
    except Exception:  # noqa: BLE001 - a solver crash sends the auction to the exact path
        return None
    chosen = x > 0.5
    out[job[chosen]] = typ[chosen]
    return out


def max_winners(value: np.ndarray, widths: np.ndarray, free: np.ndarray, pairs: np.ndarray) -> int | None:
    """The most winners any allocation can have is at most this: the LP's most (fractional)
    winners, rounded down. Every allocation has a whole number of winners, so "at most this many
    winners" is a valid cut; it matters where the LP splits gangs into a fraction of one more
    winner than fits. None if HiGHS fails."""
    h, _, _ = _pass_auction(value, widths, free, pairs, solve=False)
    m = len(pairs)
    h.changeColsCost(m, np.arange(m, dtype=np.int32), np.ones(m))
    h.run()
    return math.floor(float(h.getInfo().objective_function_value) + 1e-6) if is_optimal(h) else None


def _winner_cut_bound(value: np.ndarray, widths: np.ndarray, free: np.ndarray, pairs: np.ndarray) -> float | None:
    """A tighter upper bound on the auction's optimum: the LP with the ``max_winners`` cut. The
    unbounded bids value a winner far above any difference among the others, so where the LP
    runs a fraction of one more gang than fits, its plain bound is out of reach by most of a
    winner's value."""
    most = max_winners(value, widths, free, pairs)
    if most is None:
        return None
    h, _, _ = _pass_auction(value, widths, free, pairs, solve=False)
    m = len(pairs)
    h.addRow(0.0, float(most), m, np.arange(m, dtype=np.int32), np.ones(m))
    h.run()
    return float(h.getInfo().objective_function_value) if is_optimal(h) else None


def _pass_auction(value: np.ndarray, widths: np.ndarray, free: np.ndarray, pairs: np.ndarray, solve: bool = True):
    """The relaxation, column-wise: each column has its job's one-type row and its type's
    capacity row."""
    import highspy

    n, t = value.shape
    job, typ = pairs[:, 0], pairs[:, 1]
    m = len(pairs)
    index = np.empty(2 * m, dtype=np.int32)
    entry = np.empty(2 * m)
    index[0::2], index[1::2] = job, n + typ
    entry[0::2], entry[1::2] = 1.0, widths[job]
    h = new_highs()
    h.passModel(m, n + t, 2 * m, int(highspy.MatrixFormat.kColwise), int(highspy.ObjSense.kMaximize), 0.0,
                np.ascontiguousarray(value[job, typ], dtype=np.float64), np.zeros(m), np.ones(m), np.zeros(n + t),
                np.concatenate([np.ones(n), free.astype(np.float64)]), np.arange(0, 2 * m + 1, 2, dtype=np.int32),
                index, entry, np.zeros(m, dtype=np.int32))
    if solve:
        h.run()
    return h, job, typ
