"""Host-level placement inside each GPU type (paper sec. 4.3).

The policy picks a GPU type per job; this module picks the hosts:
- a job that stays on its type keeps its GPUs (no host migration);
- new placements go biggest gang first: a gang that fits one host takes the fullest host
  that still has room for it (best fit, keeping whole hosts free for big gangs); a wider
  gang takes the hosts with the most free GPUs first, so it spans as few hosts as possible;
- consolidation at churn: a spread job (more hosts than its gang needs) moves onto fewer hosts
  when room has opened up, smallest training state first, since those are the cheapest moves.

State is two arrays: free GPUs per host and, per job, the host of each of its workers; both
change only for the jobs that start, stop, move or finish.
"""

from __future__ import annotations

import numpy as np

from fairsim.cluster import ClusterSpec

_NO_ROOM = np.iinfo(np.int64).max  # marks a host without room for the gang in a best-fit search


class HostPlacer:
    def __init__(self, cluster: ClusterSpec, num_jobs: int, max_workers: int, consolidate: bool = True):
        self.cluster = cluster
        self.consolidate = consolidate
        self.host_offset, self.host_size, self.host_type = cluster.host_offsets, cluster.host_gpus, cluster.host_types
        self.free = self.host_size.copy()
        self.worker_host = np.full((num_jobs, max(1, max_workers)), -1, dtype=np.int64)
        self.gph = cluster.gpus_per_host
        self._held = 0  # GPUs held after the previous placement; fewer kept now = churn
        self._churn = False
        # a consolidation that failed fails again until a GPU of its type is freed (taking GPUs
        # only lowers the free counts, so a job needs as many hosts as before or more): each
        # type's freed GPUs have a version, and a spread job remembers the version it failed at
        self.version = np.zeros(cluster.num_types, dtype=np.int64)
        self.failed_at = np.full(num_jobs, -1, dtype=np.int64)

    def min_hosts(self, workers: np.ndarray) -> np.ndarray:
        return -(-workers // self.gph)

    def hosts_spanned(self, jobs: np.ndarray) -> np.ndarray:
        """Distinct hosts per job (workers of one job are stored host-sorted)."""
        wh = self.worker_host[jobs]
        distinct = (wh[:, :1] >= 0).astype(np.int64).ravel()
        if wh.shape[1] > 1:
            distinct = distinct + ((wh[:, 1:] != wh[:, :-1]) & (wh[:, 1:] >= 0)).sum(axis=1)
        return distinct

    def vacate(self, jobs: np.ndarray, churn: bool = False) -> None:
        """Free the GPUs of jobs that stop, move to another type or finish (``churn``: they
        finished, so room may have opened for spread jobs at the next placement)."""
        hosts = self.worker_host[jobs].ravel()
        hosts = hosts[hosts >= 0]
        self.free += np.bincount(hosts, minlength=len(self.free))
        self.version[self.host_type[hosts]] += 1
        self.worker_host[jobs] = -1
        self._churn |= churn

    def take_down(self, hosts: np.ndarray) -> None:
        """Hosts that leave (failed, in maintenance, reclaimed): no GPU of theirs is free until
        they return. The jobs on them were vacated first."""
        if (self.free[hosts] != self.host_size[hosts]).any():
            raise RuntimeError("placement: a host went down with a job still on it; the engine evicts them first")
        self.free[hosts] = 0

    def bring_up(self, hosts: np.ndarray) -> None:
        """Hosts that return, every GPU free (room that spread jobs may consolidate into)."""
        self.free[hosts] = self.host_size[hosts]
        self.version[np.unique(self.host_type[hosts])] += 1
        self._churn = True

    def place_new(self, jobs: np.ndarray, types: np.ndarray, workers: np.ndarray) -> np.ndarray:
        """Place jobs that start on a type (new, resumed or moved; the others keep their hosts),
        biggest gang first, then engine index, for a deterministic packing. ``workers`` is per job
        (indexed by engine job index). Returns whether each spans more hosts than it needs."""
        widths = workers[jobs]
        hosts = np.empty(len(jobs), dtype=np.int64)
        for row in np.lexsort((jobs, -widths)) if len(jobs) > 1 else (0,):
            hosts[row] = self._take(int(jobs[row]), int(types[row]), int(widths[row]))
        return hosts > self.min_hosts(widths)

    def settle(self, started: bool, kept_gpus: int, running_gpus: int) -> bool:
        """Whether spread jobs should try to consolidate now: at churn, i.e. jobs started, or the
        jobs that kept running hold fewer GPUs than all held at the previous placement (some
        stopped or moved), or a job finished or was consolidated since (its GPUs may make room)."""
        settle = (self.consolidate and started) or self.would_settle(kept_gpus)
        self._churn = False
        self._held = running_gpus
        return settle

    def would_settle(self, running_gpus: int) -> bool:
        """Whether ``settle`` would say yes at a step in which no job starts and the jobs that kept
        running hold ``running_gpus`` GPUs."""
        return self.consolidate and (self._churn or running_gpus < self._held)

    def consolidate_spread(
        self, jobs: np.ndarray, types: np.ndarray, workers: np.ndarray, state_bytes: np.ndarray
    ) -> np.ndarray:
        """Move spread jobs onto fewer hosts where the free GPUs allow, smallest training state
        first (the cheapest moves), then engine index. Returns which moved."""
        moved = np.zeros(len(jobs), dtype=bool)
        if not np.count_nonzero(self.failed_at[jobs] != self.version[types]):
            return moved  # every one would fail as it did
        for row in np.lexsort((jobs, state_bytes[jobs])):
            if self.failed_at[jobs[row]] == self.version[types[row]]:
                continue
            if self._consolidate(int(jobs[row]), int(types[row]), int(workers[jobs[row]])):
                moved[row] = True
                self._churn = True  # the move freed GPUs: earlier spread jobs may fit next round
        return moved

    def _take(self, job: int, t: int, d: int) -> int:
        """Place a gang of d on type t; returns the number of hosts it spans."""
        lo, hi = self.host_offset[t], self.host_offset[t + 1]
        free = self.free[lo:hi]
        self.failed_at[job] = -1
        room = np.where(free >= d, free, _NO_ROOM)
        host = int(room.argmin())  # best fit: the fullest host with room (the first of equals)
        if room[host] < _NO_ROOM:
            free[host] -= d
            self.worker_host[job, :d] = lo + host
            return 1
        by_free = np.argsort(-free, kind="stable")
        counts = np.minimum(free[by_free], np.maximum(0, d - (np.cumsum(free[by_free]) - free[by_free])))
        chosen = np.sort(np.repeat(by_free, counts))
        if len(chosen) < d:
            raise RuntimeError(
                f"placement: type {t} has {int(free.sum())} free GPUs for a gang of {d}; the capacity check should have caught this"
            )
        np.subtract.at(free, chosen, 1)
        self.worker_host[job, :d] = lo + chosen
        return int(np.count_nonzero(counts))

    def _consolidate(self, job: int, t: int, d: int) -> bool:
        """Move a spread job onto as few hosts as the current free GPUs allow, if that is fewer."""
        lo, hi = self.host_offset[t], self.host_offset[t + 1]
        if not self.free[lo:hi].any():  # a full type: the job's own hosts are the only room, so no fewer
            self.failed_at[job] = self.version[t]
            return False
        own = self.worker_host[job, :d] - lo
        free = self.free[lo:hi].copy()
        np.add.at(free, own, 1)
        by_free = np.sort(free)[::-1]
        needed = int(np.searchsorted(np.cumsum(by_free), d) + 1)
        if needed >= len(np.unique(own)):
            self.failed_at[job] = self.version[t]
            return False
        self.free[lo:hi] = free
        self.version[t] += 1  # the job's own GPUs were freed before it takes its new ones
        self._take(job, t, d)
        return True
