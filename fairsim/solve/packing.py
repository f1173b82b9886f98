"""K(t), the most GPUs the present jobs can keep busy: exact, by a small ILP over groups of
interchangeable jobs, after a greedy packing that often reaches the trivial bound."""

from __future__ import annotations

import numpy as np

from fairsim.solve.budget import PACKING_NODES, Budget
from fairsim.solve.lazy import milp


def max_packing(workers: np.ndarray, feasible: np.ndarray, capacity: np.ndarray, budget: Budget | None = None) -> int:
    """Exact max of sum d_j x_jk over one-type-per-job, capacity and feasibility.

    Jobs with the same gang size and the same feasible types are interchangeable, so the ILP is
    written over groups: n[g, k] = how many jobs of group g run on type k (a few dozen integer
    variables at most). A greedy packing (widest groups first, each onto the types with the most
    room) is tried first; when it reaches the trivial upper bound min(sum d, sum Y) the ILP is
    skipped. If the ILP fails, the greedy value is returned (feasible, maybe below the max); if
    it stops at the budget's node limit, the better of its incumbent and the greedy value.
    """
    workers = np.asarray(workers, dtype=np.int64)
    capacity = np.asarray(capacity, dtype=np.int64)
    feasible = np.asarray(feasible, dtype=bool)
    ok = feasible.any(axis=1)
    if not ok.any():
        return 0
    workers, feasible = workers[ok], feasible[ok]
    t = feasible.shape[1]
    bits = (feasible.astype(np.int64) << np.arange(t, dtype=np.int64)[None, :]).sum(axis=1)
    width, group_bits, counts = _groups(workers, bits)
    mask = ((group_bits[:, None] >> np.arange(t)[None, :]) & 1).astype(bool)
    upper = int(min((width * counts).sum(), capacity.sum()))
    greedy = _greedy_packing(width, mask, counts, capacity)
    if greedy >= upper:
        return upper
    try:
        exact = _packing_ilp(width, mask, counts, capacity, budget or Budget())
    except Exception:  # noqa: BLE001 - a solver crash: keep the greedy packing, as when the ILP fails
        exact = 0
    return max(greedy, exact)


def _groups(workers: np.ndarray, bits: np.ndarray):
    """The distinct (gang size, feasible-type bits) pairs in lexicographic order, with their
    counts: ``np.unique(..., axis=0)`` by one lexsort (the row-wise unique costs about 5 ms at
    4,000 jobs, every time the set of jobs changes)."""
    order = np.lexsort((bits, workers))
    w, b = workers[order], bits[order]
    start = np.flatnonzero(np.concatenate([[True], (w[1:] != w[:-1]) | (b[1:] != b[:-1])]))
    return w[start], b[start], np.diff(np.append(start, len(order)))


def _greedy_packing(width, mask, counts, capacity) -> int:
    """Widest group first, each onto the types with the most room (ties: the lower type). On
    Python lists: a few dozen groups and types, where numpy's per-call cost would dominate."""
    width, counts, mask = width.tolist(), counts.tolist(), mask.tolist()
    free = [int(c) for c in capacity]
    total = 0
    for g in sorted(range(len(width)), key=lambda g: -width[g]):  # sorted is stable
        left, d = counts[g], width[g]
        for k in sorted(range(len(free)), key=lambda k: -free[k]):
            if left == 0:
                break
            if mask[g][k] and free[k] >= d:
                take = min(left, free[k] // d)
                free[k] -= take * d
                left -= take
                total += take * d
    return total


def _packing_ilp(width, mask, counts, capacity, budget: Budget) -> int:
    from scipy import sparse  # here: scipy's import is a large part of a run's start-up
    from scipy.optimize import Bounds, LinearConstraint

    g_idx, k_idx = np.nonzero(mask)
    nv = len(g_idx)
    g, t = mask.shape
    idx = np.arange(nv)
    a = sparse.csr_matrix(
        (
            np.concatenate([np.ones(nv), width[g_idx].astype(float)]),
            (np.concatenate([g_idx, g + k_idx]), np.concatenate([idx, idx])),
        ),
        shape=(g + t, nv),
    )
    res = milp(
        -width[g_idx].astype(float),
        integrality=np.ones(nv),
        bounds=Bounds(0, counts[g_idx].astype(float)),
        constraints=LinearConstraint(a, -np.inf, np.concatenate([counts, capacity]).astype(float)),
        options={**budget.milp_options(PACKING_NODES), "disp": False},
    )
    budget.note_milp(res, PACKING_NODES)
    if res.x is None:
        return 0
    return int(round(float(width[g_idx] @ np.round(res.x))))
