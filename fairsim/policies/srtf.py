"""SRTF: shortest remaining time first, preemptive, heterogeneity-aware placement.

The textbook baseline (Schrage's SRPT, as used for DL clusters by e.g. Tiresias' and Gavel's
comparisons): every round, jobs are ranked by their remaining time on their fastest feasible
type (``remaining work / best throughput``), shortest first, ties by arrival; in that order each
job takes its fastest feasible type that still has room for its whole gang, else the next
fastest, else it waits (later, smaller jobs may still start: backfill).

It is migration-oblivious: it never looks at ``switch_cost_s``, so a job whose fast type is
taken by a shorter newcomer moves to a slower type, or is paused, and pays the engine's
migration / restart overhead for it. A job that keeps its rank keeps its type. This is the plain
baseline; ``srtf_agnostic`` (the policy behind the FFT paper's Fig. 2 motivation) is a separate
module that studies the overhead-agnostic case on purpose.
"""

from __future__ import annotations

import numpy as np

from fairsim.policies.base import Policy, PolicyView, fastest_first, greedy_fill


def best_remaining_time(view: PolicyView) -> np.ndarray:
    """Seconds each job still needs on its fastest feasible type."""
    best = np.where(view.feasible, view.throughput, 0.0).max(axis=1)
    return view.remaining / best


class SrtfPolicy(Policy):
    def __init__(self, backfill: bool = True):
        self.backfill = backfill

    def decide(self, view: PolicyView) -> np.ndarray:
        order = np.lexsort((np.arange(view.num_jobs), best_remaining_time(view)))
        return greedy_fill(view, order, fastest_first(view), backfill=self.backfill)
