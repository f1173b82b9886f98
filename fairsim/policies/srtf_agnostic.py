"""Overhead-agnostic SRTF (the strawman of the paper's Fig. 2).

Every round, from scratch: jobs in order of shortest remaining time (remaining work over the
job's fastest feasible throughput; ties by arrival order), each on its fastest feasible type with
room for its gang. Switching costs are ignored, so a job migrates whenever a faster type frees up
or a shorter job displaces it, and pays the engine's migration overhead every time.
"""

from __future__ import annotations

import numpy as np

from fairsim.policies.base import Policy, PolicyView
from fairsim.policies.queues import fastest_first, greedy_fill


class OverheadAgnosticSRTF(Policy):
    event_driven = False  # remaining times shift every round, so the order can change between events

    def decide(self, view: PolicyView) -> np.ndarray:
        if view.num_jobs == 0:
            return view.empty_assignment()
        best = view.throughput.max(axis=1)
        remaining_s = np.where(best > 0, view.remaining / np.where(best > 0, best, 1.0), np.inf)
        order = np.lexsort((np.arange(view.num_jobs), remaining_s))
        return greedy_fill(view, order, fastest_first(view), backfill=True)
