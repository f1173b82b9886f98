"""FIFO: jobs start in arrival order, each on its fastest feasible type with room for its gang,
and then run to completion where they started (no preemption, no migration).

With ``backfill`` (default) a job that fits nowhere is skipped and later, smaller jobs may start;
without it the queue head blocks everyone behind it (strict FIFO).

Incrementally (``decide_changes``): jobs with the same gang and the same type preference order
fit or not alike, so the queue is kept as one first-in-first-out line per such class. The next
job to start is the earliest head among the classes that fit in the free GPUs (with backfill),
or the earliest head of all if it fits (without): the jobs ``decide`` would start, found in
O(classes) per start, however long the queue.
"""

from __future__ import annotations

import bisect
from collections import deque

import numpy as np

from fairsim.cluster import ClusterSpec
from fairsim.policies.base import NOT_RUN, Changes, Moves, Policy, PolicyView
from fairsim.policies.queues import fastest_first, fastest_first_of, greedy_fill


class FifoPolicy(Policy):
    event_driven = True  # the decision only changes when a job arrives or finishes

    def __init__(self, backfill: bool = True):
        self.backfill = backfill

    def reset(self, cluster: ClusterSpec, num_jobs: int, seed: int) -> None:
        self.lines: QueueLines | None = None

    def decide(self, view: PolicyView) -> np.ndarray:
        assignment = view.last_type.copy()  # running jobs keep their type
        running = assignment != NOT_RUN
        free = view.capacity - np.bincount(
            assignment[running], weights=view.workers[running], minlength=view.num_types
        ).astype(np.int64)
        queue = np.flatnonzero(~running)  # view rows are in arrival order already
        if len(queue) == 0 or free.max() <= 0:
            return assignment
        return greedy_fill(view, queue, fastest_first(view), free=free, assignment=assignment, backfill=self.backfill)

    def decide_changes(self, changes: Changes) -> Moves:
        if self.lines is None:
            self.lines = QueueLines(changes.workers, fastest_first_of(changes.throughput, changes.feasible))
        self.lines.join(changes.arrived)
        self.lines.rejoin(changes.evicted)  # an outage stopped them: they wait again, at their arrival's place
        jobs, types = self.lines.start(changes.free.tolist(), self.backfill)
        return Moves(np.array(jobs, dtype=np.int64), np.array(types, dtype=np.int64))


class QueueLines:
    """Waiting jobs in arrival order, one line per class of jobs with the same gang size and the
    same type preferences (``pref``: type indices, -1 padded), so that a whole class fits in the
    free GPUs or not. Lines hold engine job indices, which follow arrival order."""

    def __init__(self, workers: np.ndarray, pref: np.ndarray):
        rows, self.class_of = np.unique(np.column_stack([workers, pref]), axis=0, return_inverse=True)
        self.class_of = self.class_of.reshape(-1).tolist()
        self.width = rows[:, 0].tolist()
        self.pref = [[int(k) for k in row if k >= 0] for row in rows[:, 1:]]
        self.lines: list[deque[int]] = [deque() for _ in self.width]
        self.waiting: set[int] = set()  # the classes whose line is not empty

    def join(self, jobs: np.ndarray) -> None:
        for j in jobs.tolist():
            c = self.class_of[j]
            self.lines[c].append(j)
            self.waiting.add(c)

    def rejoin(self, jobs: np.ndarray) -> None:
        """Jobs that ran and wait again, each at its place in arrival order (engine index)."""
        for j in sorted(jobs.tolist()):
            c = self.class_of[j]
            line = self.lines[c]
            line.insert(bisect.bisect_left(line, j), j)
            self.waiting.add(c)

    def start(self, free: list[int], backfill: bool) -> tuple[list[int], list[int]]:
        """Start jobs as a first fit in arrival order would on ``free`` GPUs per type (updated):
        each on the first type of its preferences with room; with ``backfill`` a job that fits
        nowhere is passed over, without it the first such job stops the queue."""
        started, types = [], []
        while self.waiting and max(free) > 0:
            head, c, k = self._next(free, backfill)
            if c < 0:
                break
            self.lines[c].popleft()
            if not self.lines[c]:
                self.waiting.discard(c)
            started.append(head)
            types.append(k)
            free[k] -= self.width[c]
        return started, types

    def _next(self, free: list[int], backfill: bool) -> tuple[int, int, int]:
        """(job, class, type) of the earliest waiting job that fits (with backfill) or of the
        earliest waiting job if it fits (without); class -1 if none."""
        best, best_c, best_k = -1, -1, -1
        most = max(free)
        for c in self.waiting:
            head = self.lines[c][0]
            if best >= 0 and head > best:
                continue
            width = self.width[c]
            if width > most and backfill:
                continue  # fits nowhere; without backfill it may still be the head that stops the queue
            k = next((k for k in self.pref[c] if free[k] >= width), -1)
            if k >= 0 or not backfill:
                best, best_c, best_k = head, c, k
        return (best, best_c, best_k) if best_k >= 0 else (-1, -1, -1)
