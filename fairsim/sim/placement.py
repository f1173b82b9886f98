"""Host-level placement inside each GPU type (paper sec. 4.3).

The policy picks a GPU type per job; this module picks the hosts:
- a job that stays on its type keeps its GPUs (no host migration);
- new placements go biggest gang first: a gang that fits one host takes the fullest host
  that still has room for it (best fit, keeping whole hosts free for big gangs); a wider
  gang takes the hosts with the most free GPUs first, so it spans as few hosts as possible;
- consolidation at churn: a spread job (more hosts than its gang needs) moves onto fewer hosts
  when room has opened up, smallest training state first, since those are the cheapest moves.

State is two arrays: free GPUs per host and, per job, the host of each of its workers.
"""

from __future__ import annotations

import numpy as np

from fairsim.cluster import ClusterSpec


class HostPlacer:
    def __init__(self, cluster: ClusterSpec, num_jobs: int, max_workers: int, consolidate: bool = True):
        self.cluster = cluster
        self.consolidate = consolidate
        self.host_offset = np.concatenate([[0], np.cumsum(cluster.hosts_per_type)]).astype(np.int64)
        self.host_size = np.concatenate([cluster.host_sizes(t) for t in range(cluster.num_types)])
        self.free = self.host_size.copy()
        self.worker_host = np.full((num_jobs, max(1, max_workers)), -1, dtype=np.int64)
        self.gph = cluster.gpus_per_host
        self._held = 0  # GPUs held after the previous placement; fewer kept now = churn
        self._churn = False

    def min_hosts(self, workers: np.ndarray) -> np.ndarray:
        return -(-workers // self.gph)

    def hosts_spanned(self, jobs: np.ndarray) -> np.ndarray:
        """Distinct hosts per job (workers of one job are stored host-sorted)."""
        wh = self.worker_host[jobs]
        distinct = (wh[:, :1] >= 0).astype(np.int64).ravel()
        if wh.shape[1] > 1:
            distinct = distinct + ((wh[:, 1:] != wh[:, :-1]) & (wh[:, 1:] >= 0)).sum(axis=1)
        return distinct

    def place(
        self, running: np.ndarray, new_type: np.ndarray, kept: np.ndarray, workers: np.ndarray, state_bytes: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        """Place this round's running jobs.

        running: engine job indices that run this round; new_type: their types; kept: bool, the
        job ran on the same type last round (it keeps its hosts); workers/state_bytes: per job
        (indexed by engine job index). Returns (spread, moved): bool per running job, the job
        spans more hosts than it needs, and a kept job was moved to other hosts (a host migration).
        """
        self.free[:] = self.host_size
        stale = running[~kept]
        self.worker_host[stale] = -1
        kept_jobs = running[kept]
        hosts = self.worker_host[kept_jobs].ravel()
        hosts = hosts[hosts >= 0]
        self.free -= np.bincount(hosts, minlength=len(self.free))
        moved = np.zeros(len(running), dtype=bool)
        new_rows = np.flatnonzero(~kept)
        churn = self._churn or len(new_rows) > 0 or len(hosts) < self._held
        self._churn = False
        if len(new_rows):
            # biggest gang first, then engine index, for a deterministic packing
            order = new_rows[np.lexsort((running[new_rows], -workers[running[new_rows]]))]
            for row in order:
                self._take(running[row], int(new_type[row]), int(workers[running[row]]))
        spread = self.hosts_spanned(running) > self.min_hosts(workers[running])
        self._held = int(workers[running].sum())
        if self.consolidate and churn and spread.any():
            rows = np.flatnonzero(spread)
            rows = rows[np.lexsort((running[rows], state_bytes[running[rows]]))]
            for row in rows:
                if self._consolidate(running[row], int(new_type[row]), int(workers[running[row]])):
                    spread[row] = False
                    moved[row] = kept[row]
                    self._churn = True  # the move freed GPUs: earlier spread jobs may fit next round
        return spread, moved

    def release(self, jobs: np.ndarray) -> None:
        self.worker_host[jobs] = -1
        self._churn = True

    def _take(self, job: int, t: int, d: int) -> None:
        lo, hi = self.host_offset[t], self.host_offset[t + 1]
        free = self.free[lo:hi]
        fits = np.flatnonzero(free >= d)
        if len(fits):
            host = fits[np.argmin(free[fits])]  # best fit: fullest host with room
            chosen = np.full(d, host)
        else:
            by_free = np.argsort(-free, kind="stable")
            counts = np.minimum(free[by_free], np.maximum(0, d - (np.cumsum(free[by_free]) - free[by_free])))
            chosen = np.sort(np.repeat(by_free, counts))
            if len(chosen) < d:
                raise RuntimeError(
                    f"placement: type {t} has {int(free.sum())} free GPUs for a gang of {d}; the capacity check should have caught this"
                )
        np.subtract.at(free, chosen, 1)
        self.worker_host[job, :d] = lo + chosen

    def _consolidate(self, job: int, t: int, d: int) -> bool:
        """Move a spread job onto as few hosts as the current free GPUs allow, if that is fewer."""
        lo, hi = self.host_offset[t], self.host_offset[t + 1]
        if not self.free[lo:hi].any():  # a full type: the job's own hosts are the only room, so no fewer
            return False
        own = self.worker_host[job, :d] - lo
        free = self.free[lo:hi].copy()
        np.add.at(free, own, 1)
        by_free = np.sort(free)[::-1]
        needed = int(np.searchsorted(np.cumsum(by_free), d) + 1)
        if needed >= len(np.unique(own)):
            return False
        self.free[lo:hi] = free
        self._take(job, t, d)
        return True
