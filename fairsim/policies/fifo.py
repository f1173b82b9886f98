"""FIFO: jobs start in arrival order, each on its fastest feasible type with room for its gang,
and then run to completion where they started (no preemption, no migration).

With ``backfill`` (default) a job that fits nowhere is skipped and later, smaller jobs may start;
without it the queue head blocks everyone behind it (strict FIFO).
"""

from __future__ import annotations

import numpy as np

from fairsim.policies.base import NOT_RUN, Policy, PolicyView
from fairsim.policies.queues import fastest_first, greedy_fill


class FifoPolicy(Policy):
    event_driven = True  # the decision only changes when a job arrives or finishes

    def __init__(self, backfill: bool = True):
        self.backfill = backfill

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
