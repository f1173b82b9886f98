"""Local improvement of an integral answer to FFT's program by exchanges among gangs that leave
every type's used GPUs unchanged (so capacity and the K row still hold, and the single-GPU
jobs' best placement, which depends only on what the gangs leave free on each type, is unchanged).

Why: a dive fixes gangs one step at a time from the LP's lead, and its leaf can keep a gang that
an idle gang of the same size, or two of half the size, would beat on the same GPUs. The LP's
transportation structure already makes the single-GPU jobs optimal around the fixed gangs; what
the dive cannot see is a better choice among gangs. Four moves, each on one type's GPUs:

- *replace*: a running gang by an idle gang of the same size on its type;
- *exchange*: two running gangs of the same size trade types;
- *split*: a running gang of size 2w by two idle gangs of size w on its type;
- *merge*: two running gangs of size w on one type by an idle gang of size 2w.

The best move of all is applied while one lowers the objective (steepest descent, ties: the
first in job order), at most ``max_moves`` times. Every move strictly lowers the objective, so the
answer is never worse than the one given, and it is deterministic."""

from __future__ import annotations

import numpy as np

from fairsim.policies.solvers import NOT_RUN, AssignmentProblem

_MIN_GAIN = 1e-9  # relative to the objective's scale: a move must gain more than rounding noise


def improve_by_exchanges(p: AssignmentProblem, assignment: np.ndarray, max_moves: int = 200) -> tuple[np.ndarray, int]:
    """(the improved assignment, the moves applied); ``assignment`` is not modified."""
    a = assignment.copy()
    cost = np.where(p.feasible, p.cost, np.inf)
    widths = np.unique(p.workers)
    scale = max(abs(p.objective(a)), 1.0)
    moves = 0
    while moves < max_moves:
        gain, move = -_MIN_GAIN * scale, None
        for w in widths:  # single-GPU jobs only merge: the LP already placed them best around the gangs
            tries = (_best_replace, _best_exchange, _best_split, _best_merge) if w > 1 else (_best_merge,)
            for candidate in (best(cost, p.workers, a, w) for best in tries):
                if candidate is not None and candidate[0] < gain:
                    gain, move = candidate
        if move is None:
            break
        leaving, joining = move  # jobs that stop, (job, type) pairs that start or move
        a[list(leaving)] = NOT_RUN
        for job, k in joining:
            a[job] = k
        moves += 1
    return a, moves


def _split_by_state(workers, a, w):
    same = np.flatnonzero(workers == w)
    return same[a[same] >= 0], same[a[same] < 0]


def _best_replace(cost, workers, a, w):
    run, idle = _split_by_state(workers, a, w)
    if not len(run) or not len(idle):
        return None
    cheapest = np.argmin(cost[idle], axis=0)  # per type: the only idle job worth trying there
    k = a[run]
    delta = cost[idle[cheapest[k]], k] - cost[run, k]
    j = int(np.argmin(delta))
    return delta[j], ((run[j],), ((idle[cheapest[k[j]]], k[j]),))


def _best_exchange(cost, workers, a, w):
    run, _ = _split_by_state(workers, a, w)
    if len(run) < 2:
        return None
    on = a[run]
    cross = cost[np.ix_(run, on)]  # [i, j]: job i on job j's type
    own = cost[run, on]
    delta = cross + cross.T - own[:, None] - own[None, :]
    i, j = np.unravel_index(np.argmin(delta), delta.shape)
    return delta[i, j], ((), ((run[i], on[j]), (run[j], on[i])))


def _best_split(cost, workers, a, w):
    if w % 2:
        return None
    run, _ = _split_by_state(workers, a, w)
    _, idle = _split_by_state(workers, a, w // 2)
    if not len(run) or len(idle) < 2:
        return None
    pair, pair_cost = _two_cheapest(cost[idle])  # per type
    delta = pair_cost[a[run]] - cost[run, a[run]]
    j = int(np.argmin(delta))
    k = a[run[j]]
    return delta[j], ((run[j],), ((idle[pair[0, k]], k), (idle[pair[1, k]], k)))


def _best_merge(cost, workers, a, w):
    run, _ = _split_by_state(workers, a, w)
    _, idle = _split_by_state(workers, a, 2 * w)
    if len(run) < 2 or not len(idle):
        return None
    best = None
    cheapest = np.argmin(cost[idle], axis=0)  # per type
    for k in np.unique(a[run]):
        on = run[a[run] == k]
        if len(on) < 2:
            continue
        dearest = on[np.argsort(-cost[on, k], kind="stable")[:2]]
        delta = cost[idle[cheapest[k]], k] - cost[dearest, k].sum()
        if best is None or delta < best[0]:
            best = (delta, (tuple(dearest), ((idle[cheapest[k]], k),)))
    return best


def _two_cheapest(cost_by_type):
    """Per type: the rows of the two cheapest jobs ([2, T]) and their summed cost ([T]; inf if fewer than two fit)."""
    order = np.argsort(cost_by_type, axis=0, kind="stable")[:2]
    total = np.take_along_axis(cost_by_type, order, axis=0).sum(axis=0)
    return order, total
