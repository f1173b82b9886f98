"""SRTF: shortest remaining time first, preemptive, with heterogeneity-aware placement of the
jobs it starts and no voluntary migration of the jobs it keeps.

The textbook baseline (Schrage's SRPT rule, as the DL-cluster papers use it): every round, jobs
are ranked by their remaining time on their fastest feasible type (``remaining work / best
throughput``), shortest first, ties by arrival. In that order:

- a job that ran last round stays on its type if that type still has room for its gang (it is
  not moved to a faster type that freed up);
- any other job, or one whose type was taken by shorter jobs, takes its fastest feasible type
  with room, else the next fastest, else it waits (later, smaller jobs may still start: backfill).

It is not migration-free: a job displaced by shorter jobs is paused or moved to another type,
and resumes wherever there is room, paying the engine's restart / migration overheads; it never
reads ``switch_cost_s``. The FFT paper's Fig. 2 strawman, ``srtf_agnostic``
(``fairsim.policies.srtf_agnostic``), differs in one point: it re-places every job from scratch
each round, so running jobs also chase faster types as they free up, migrating far more often.
"""

from __future__ import annotations

import math

import numpy as np

from fairsim.policies.base import Policy, PolicyView
from fairsim.policies.queues import fastest_first, greedy_fill


def best_remaining_time(view: PolicyView) -> np.ndarray:
    """Seconds each job still needs on its fastest feasible type."""
    best = np.where(view.feasible, view.throughput, 0.0).max(axis=1)
    return view.remaining / best


def sticky_preferences(view: PolicyView) -> np.ndarray:
    """Fastest-first type preferences, with a running job's current type moved to the front."""
    pref = fastest_first(view)
    rows = np.flatnonzero(view.last_type >= 0)
    if len(rows):
        sub = pref[rows]
        current_last = np.where(sub == view.last_type[rows, None], 0, 1)  # 0 = the current type
        pref[rows] = np.take_along_axis(sub, np.argsort(current_last, axis=1, kind="stable"), axis=1)
    return pref


class SrtfPolicy(Policy):
    def __init__(self, backfill: bool = True):
        self.backfill = backfill

    def next_decision_s(self, view: PolicyView, assignment: np.ndarray) -> float:
        # between arrivals and completions only running jobs progress, so they only move up the
        # order: every job that waits still waits behind the same jobs and nothing new can start
        return math.inf

    def decide(self, view: PolicyView) -> np.ndarray:
        order = np.lexsort((np.arange(view.num_jobs), best_remaining_time(view)))
        return greedy_fill(view, order, sticky_preferences(view), backfill=self.backfill)
