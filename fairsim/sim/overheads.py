"""The overhead rule: how many seconds a job pays, before it makes progress, to run this round.

- a job that ran last round and now runs on another type (or on other hosts) pays a migration:
  a restart plus moving its training state across the inter-host link;
- a job that ran before but not last round (preempted) pays a restart, with the same transfer;
- a job that never ran pays the profiling of every GPU type (and, under
  ``restore_on_first_start``, a restart as well);
- a job that keeps its type and hosts pays nothing new (an unpaid rest carries over).
Each cost is switched off by its ``sim.overheads`` flag. The engine charges it when a job starts
(``start_cost`` on the running jobs) and shows it to policies in the view's ``switch_cost_s``
(``start_cost`` on every active job, for every type): one rule for both, so they cannot disagree.
"""

from __future__ import annotations

import numpy as np

from fairsim.cluster import ClusterSpec
from fairsim.sim.config import Overheads


def job_costs(
    state_bytes: np.ndarray, cluster: ClusterSpec, ov: Overheads
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per job: seconds of a migration, of a restart after preemption, and of its first start."""
    transfer = state_bytes / cluster.inter_host_bytes_per_s
    n = len(state_bytes)
    migration = (ov.restart_s + transfer) if ov.migration else np.zeros(n)
    restart = (ov.restart_s + transfer) if ov.preemption else np.zeros(n)
    first = np.full(n, ov.profiling_s_per_type * cluster.num_types if ov.profiling else 0.0)
    if ov.restore_on_first_start:
        first = first + ov.restart_s + transfer
    return migration, restart, first


def start_cost(
    migration: np.ndarray,
    restart: np.ndarray,
    first: np.ndarray,
    last_type: np.ndarray,
    prev_type: np.ndarray,
    never_ran: np.ndarray,
) -> np.ndarray:
    """Seconds each job pays to run now on a type (or hosts) other than ``last_type`` (its type
    last round, -1 if it did not run): a migration if it ran last round, a restart if it ran
    before (``prev_type`` >= 0), its first-start cost if it ``never_ran``. Arrays over the same jobs."""
    cost = np.where(last_type >= 0, migration, 0.0)
    cost = np.where((last_type < 0) & (prev_type >= 0), restart, cost)
    return np.where(never_ran, first, cost)
