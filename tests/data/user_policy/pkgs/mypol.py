"""A policy kept outside fairsim, as a user would write one: jobs start in arrival order (ORDER
"fifo"; "lifo" starts the newest first) on their fastest type, through fairsim's queue helpers
and a helper module of its own. tests/test_provenance.py and tests/test_user_config.py copy it
to a temporary folder on PYTHONPATH and edit it there."""

import myhelp
import numpy as np

from fairsim.policies.base import NOT_RUN, Policy, PolicyView
from fairsim.policies.queues import fastest_first, greedy_fill

ORDER = "fifo"


class MyPolicy(Policy):
    event_driven = True

    def __init__(self, backfill: bool = True):
        self.backfill = backfill

    def decide(self, view: PolicyView) -> np.ndarray:
        assignment = view.last_type.copy()
        running = assignment != NOT_RUN
        free = view.capacity - np.bincount(
            assignment[running], weights=view.workers[running], minlength=view.num_types
        ).astype(np.int64)
        queue = myhelp.waiting(running)
        if ORDER == "lifo":
            queue = queue[::-1]
        if len(queue) == 0 or free.max() <= 0:
            return assignment
        return greedy_fill(view, queue, fastest_first(view), free=free, assignment=assignment, backfill=self.backfill)
