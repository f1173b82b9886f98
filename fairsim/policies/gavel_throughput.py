"""``gavel_throughput``: Gavel's max_sum_throughput_perf (Narayanan et al., OSDI'20,
scheduler/policies/max_sum_throughput.py), the heterogeneity-aware total-throughput objective,
through Gavel's round mechanism. It is the Gavel that Sia's artifact simulator runs
(sia-simulator gavel.py, ``--policy=gavel``), and the one fairsim replays it with
(``python -m fairsim.bench sia``, docs/baselines.md "Sia").

An LP over time fractions X under Gavel's base constraints:

    maximize  sum_j sum_k tput[j, k] X[j, k]

Throughputs are not normalised per job and priority weights are not read (Gavel's policy reads
neither), so the fastest GPUs go to whichever jobs gain the most on them, whatever they have
received: a throughput baseline, not a fair one. Identical jobs share symmetrically.
"""

from __future__ import annotations

import numpy as np

from fairsim.policies.base import PolicyView
from fairsim.policies.gavel import max_weighted_throughput
from fairsim.policies.mechanism import FractionPolicy, as_mechanism
from fairsim.solve.budget import DEFAULT_LIMITS


class GavelMaxThroughput(FractionPolicy):
    def __init__(self, mechanism=None, lp_iterations: int | None = DEFAULT_LIMITS.lp_iterations):
        super().__init__(as_mechanism(mechanism), lp_iterations)

    def fractions(self, view: PolicyView) -> np.ndarray:
        tput = np.where(view.feasible, view.throughput, 0.0)
        return max_weighted_throughput(tput, view.workers, view.capacity, self.budget)
