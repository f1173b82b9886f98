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


def pointer_splits(node_gpus: int, num_nodes: int, gangs: list[int]) -> list[tuple[int, ...]]:
    """Sia's artifact's re-placement of one GPU type (``alloc_to_placement_fast`` in its sia.py,
    ``smart_placement=False``), every node free: the gangs, in the order given, are placed
    greedily by a node pointer that carries over from one gang to the next. A gang first takes
    whole free nodes (gang // node_gpus of them, scanning each node once from the pointer), then
    the rest anywhere from the pointer on, wrapping round, a piece of each node with free GPUs,
    the pointer moving past every node it looks at. Returns each gang's GPUs per node in the order
    taken (the artifact's per-node split, e.g. (8, 2))."""
    free = [node_gpus] * num_nodes
    if sum(gangs) > node_gpus * num_nodes:
        raise RuntimeError(f"placement: {sum(gangs)} GPUs asked of {node_gpus * num_nodes} (sim.replace=sia)")
    pointer = 0
    out = []
    for gpus in gangs:
        split: list[int] = []
        node = pointer
        whole = gpus // node_gpus
        checked = 0
        while checked < num_nodes and whole > 0:
            if free[node] == node_gpus:
                free[node] = 0
                gpus -= node_gpus
                split.append(node_gpus)
                whole -= 1
            node = (node + 1) % num_nodes
            checked += 1
        while gpus > 0:
            if free[node]:
                take = min(gpus, free[node])
                gpus -= take
                free[node] -= take
                split.append(take)
            node = (node + 1) % num_nodes
        out.append(tuple(split))
        pointer = node
    return out


def gavel_workers(
    node_gpus: int, num_nodes: int, gangs: list[tuple[int, int]], kept: dict[int, tuple[int, ...]]
) -> dict[int, tuple[int, ...]]:
    """The worker assignment of the Gavel in Sia's artifact (gavel.py ``schedule_jobs_on_workers``
    and ``assign_workers_to_job``) on one GPU type of ``num_nodes`` nodes of ``node_gpus``
    workers (worker w on node w // node_gpus). ``gangs``: (job, GPUs) in queue order; ``kept``:
    the workers each job held on this type in the previous round. Gang sizes are visited largest
    first; in each, a job keeps its previous workers if none was taken yet, then the others take
    workers from a pointer that walks the nodes' worker lists in order, skipping taken ones."""
    lists = [list(range(n * node_gpus, (n + 1) * node_gpus)) for n in range(num_nodes)]
    taken: set[int] = set()
    pointer = 0
    out: dict[int, tuple[int, ...]] = {}
    ordered = sorted(gangs, key=lambda g: -g[1])  # stable: queue order within a size
    for size in sorted({g for _, g in gangs}, reverse=True):
        group = [j for j, g in ordered if g == size]
        for j in group:
            prev = kept.get(j)
            if prev and len(prev) == size and not taken.intersection(prev):
                out[j] = prev
                taken.update(prev)
        for j in group:
            workers = list(out.get(j, ()))
            while len(workers) < size and pointer < num_nodes:
                if not lists[pointer]:
                    pointer += 1
                    continue
                w = lists[pointer].pop(0)
                if w not in taken:
                    workers.append(w)
                    taken.add(w)
            if len(workers) != size:
                raise RuntimeError(f"placement: no {size} workers left for job {j} (sim.replace=gavel)")
            out[j] = tuple(workers)
    return out


def node_split(workers: tuple[int, ...], node_gpus: int) -> tuple[int, ...]:
    """GPUs per node of a worker list, run by run in its order (the artifact's placement tuple)."""
    split: list[int] = []
    last = None
    for w in workers:
        node = w // node_gpus
        if node == last:
            split[-1] += 1
        else:
            split.append(1)
            last = node
    return tuple(split)


class SiaRepacker:
    """``sim.replace: sia``: every running job re-placed from scratch whenever the running set
    changes, as Sia's artifact does each round (``pointer_splits`` per GPU type, the gangs biggest
    first, then engine index, on nodes of ``node_gpus[t]`` GPUs). A job whose per-node split
    changed while it kept its type and GPU count is restarted on its new nodes (the engine
    charges its restore); one whose split is unchanged runs on, whichever nodes it is on."""

    def __init__(self, cluster: ClusterSpec, node_gpus: np.ndarray, num_jobs: int, mode: str = "sia"):
        self.node_gpus = np.asarray(node_gpus, dtype=np.int64)
        self.num_nodes = -(-cluster.counts.astype(np.int64) // self.node_gpus)
        self.gph = cluster.gpus_per_host
        self.mode = mode  # sia: pointer_splits from scratch | gavel: gavel_workers, kept workers first
        self.split: list[tuple[int, ...]] = [()] * num_jobs
        self.workers: dict[int, tuple[int, int, tuple[int, ...]]] = {}  # gavel: job -> (type, GPUs, workers)

    def place(self, ids: np.ndarray, types: np.ndarray, gpus: np.ndarray) -> np.ndarray:
        """Re-place the running jobs (engine indices ``ids`` on ``types`` with ``gpus``); returns
        which of them had a split before and have another now. Jobs not in ``ids`` hold none."""
        changed = np.zeros(len(ids), dtype=bool)
        new = {}
        for t in np.unique(types).tolist():
            rows = np.flatnonzero(types == t)
            rows = rows[np.lexsort((ids[rows], -gpus[rows]))]
            size, count = int(self.node_gpus[t]), int(self.num_nodes[t])
            if self.mode == "gavel":
                kept = {j: w for j, (k, g, w) in self.workers.items() if k == t}
                got = gavel_workers(size, count, list(zip(ids[rows].tolist(), gpus[rows].tolist())), kept)
                for j, w in got.items():
                    self.workers[j] = (t, len(w), w)
                splits = [node_split(got[j], size) for j in ids[rows].tolist()]
            else:
                splits = pointer_splits(size, count, gpus[rows].tolist())
            for row, split in zip(rows.tolist(), splits):
                j = int(ids[row])
                changed[row] = bool(self.split[j]) and self.split[j] != split
                new[j] = split
        self.split = [()] * len(self.split)
        for j, split in new.items():
            self.split[j] = split
        self.workers = {j: w for j, w in self.workers.items() if j in new}
        return changed

    def hosts(self, ids: np.ndarray, types: np.ndarray, gpus: np.ndarray) -> np.ndarray:
        """The hosts, in the cluster's host size, a job's rate is looked up at: as few as its GPUs
        need where it has as few nodes as they need, else as many as its nodes (at least one
        more than packed: a workload maps that to a split over that many nodes)."""
        nodes = np.array([len(self.split[j]) for j in ids.tolist()], dtype=np.int64)
        fewest_nodes = -(-gpus // self.node_gpus[types])
        packed = -(-gpus // self.gph)
        return np.where(nodes <= fewest_nodes, packed, np.maximum(nodes, packed + 1))
