"""Local improvement of an integral answer to FFT's program by exchanges among gangs that leave
every type's used GPUs unchanged, so capacity and the K row still hold.

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

from fairsim.solve.program import NOT_RUN, AssignmentProblem

_MIN_GAIN = 1e-9  # relative to the objective's scale: a move must gain more than rounding noise


def improve_by_exchanges(p: AssignmentProblem, assignment: np.ndarray, max_moves: int = 200) -> tuple[np.ndarray, int]:
    """(the improved assignment, the moves applied); ``assignment`` is not modified."""
    a = assignment.copy()
    cost = np.where(p.feasible, p.cost, np.inf)
    by_width = {int(w): np.flatnonzero(p.workers == w) for w in np.unique(p.workers)}
    threshold = -_MIN_GAIN * max(abs(p.objective(a)), 1.0)
    moves = 0
    while moves < max_moves:
        run = {w: jobs[a[jobs] >= 0] for w, jobs in by_width.items()}
        idle = {w: _IdleByType(cost, jobs[a[jobs] < 0]) for w, jobs in by_width.items()}
        gain, move = threshold, None
        for w in by_width:
            candidates = [_best_merge(cost, a, run[w], idle.get(2 * w))]
            if w > 1:  # single-GPU jobs only merge: the LP already placed them best around the gangs
                candidates += [
                    _best_replace(cost, a, run[w], idle[w]),
                    _best_exchange(cost, a, run[w]),
                    _best_split(cost, a, run[w], idle.get(w // 2) if w % 2 == 0 else None),
                ]
            for candidate in candidates:
                if candidate is not None and candidate[0] < gain:
                    gain, move = candidate
        if move is None:
            break
        leaving, joining = move  # jobs that stop; (job, type) pairs that start or move
        a[list(leaving)] = NOT_RUN
        for job, k in joining:
            a[job] = k
        moves += 1
    return a, moves


class _IdleByType:
    """One width's idle jobs, read once per move for all three moves that take them in: per type
    (column) the cheapest job and the second cheapest (ties: the lower row, as a stable sort
    would give), with their costs (inf where fewer jobs can run there). Two passes of argmin:
    O(jobs), where a sort of thousands of idle single-GPU jobs would dominate."""

    def __init__(self, cost: np.ndarray, jobs: np.ndarray):
        self.size = len(jobs)
        if not self.size:
            return
        by_type = cost[jobs]
        columns = np.arange(by_type.shape[1])
        first = np.argmin(by_type, axis=0)
        rest = by_type.copy()
        rest[first, columns] = np.inf
        second = np.argmin(rest, axis=0)
        self.first, self.second = jobs[first], jobs[second]
        self.first_cost = by_type[first, columns]
        self.pair_cost = self.first_cost + rest[second, columns]


def _best_replace(cost, a, run, idle):
    if not len(run) or not idle.size:
        return None
    k = a[run]
    delta = idle.first_cost[k] - cost[run, k]
    j = int(np.argmin(delta))
    return delta[j], ((run[j],), ((idle.first[k[j]], k[j]),))


def _best_exchange(cost, a, run):
    if len(run) < 2:
        return None
    on = a[run]
    cross = cost[np.ix_(run, on)]  # [i, j]: job i on job j's type
    own = cost[run, on]
    delta = cross + cross.T - own[:, None] - own[None, :]
    i, j = np.unravel_index(np.argmin(delta), delta.shape)
    return delta[i, j], ((), ((run[i], on[j]), (run[j], on[i])))


def _best_split(cost, a, run, half_idle):
    if half_idle is None or not len(run) or half_idle.size < 2:
        return None
    k = a[run]
    delta = half_idle.pair_cost[k] - cost[run, k]
    j = int(np.argmin(delta))
    return delta[j], ((run[j],), ((half_idle.first[k[j]], k[j]), (half_idle.second[k[j]], k[j])))


def _best_merge(cost, a, run, double_idle):
    if double_idle is None or len(run) < 2 or not double_idle.size:
        return None
    k = a[run]
    order = np.lexsort((-cost[run, k], k))  # by type, dearest first
    ranked, types = run[order], k[order]
    first = np.flatnonzero(np.r_[True, types[1:] != types[:-1]])  # each type's dearest
    first = first[(first + 1 < len(types)) & (types[np.minimum(first + 1, len(types) - 1)] == types[first])]
    if not len(first):
        return None
    pairs_k = types[first]
    delta = double_idle.first_cost[pairs_k] - cost[ranked[first], pairs_k] - cost[ranked[first + 1], pairs_k]
    m = int(np.argmin(delta))
    return delta[m], ((ranked[first[m]], ranked[first[m] + 1]), ((double_idle.first[pairs_k[m]], pairs_k[m]),))
