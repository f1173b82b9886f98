"""PAL (Jain et al., "PAL: A Variability-Aware Policy for Scheduling ML Workloads in GPU
Clusters", SC'24), with GPU types as PAL's performance classes.

The paper's algorithm. PAL is a placement policy under an ordinary scheduler (FIFO, LAS or
SRTF decide the job order). Offline, GPUs are clustered (K-means) into performance bins per
application class, each bin with a slowdown factor sf relative to the median GPU; applications
are grouped into classes by how sensitive they are to that variability. Each round PAL takes
the jobs at the head of the queue that fit in the cluster, places the most variability-
sensitive classes first, and for each job walks a locality x variability ("LxV") list: every
(sf bin, within-node / across-nodes) pair, ranked by sf x locality factor (1 within one node,
``locality_penalty`` across nodes); the job takes the first entry that has enough free GPUs.
Single-GPU jobs and jobs wider than a node are placed by PM-First (best bins first). The round
stops at the first job that cannot be placed.

What the artifact does each round (facts from the authors' Blox-based code,
docs/baselines.md): release every job, cut the scheduler's queue where the cumulative GPU
demand would exceed the cluster's GPUs (the "head"), stably re-sort the head by class, place
jobs one by one and stop at the first that cannot be placed. In its single GPU pool every head
job fits, so the only job that fails is the first one past the head: FIFO with head-of-line
blocking at the cluster's size.

What this module adapts (a gang runs on one GPU type, so "fits the cluster's total" no longer
means "can be placed"):

- The head: the jobs the scheduler's order admits when each is placed, in that order, beside
  the ones before it. A job that fits on no type is passed over and never stops the round, so
  no GPU idles while a job that fits waits, and no job behind a failure (running ones included)
  is dropped. The head is then stably re-sorted by class and placed again; if that order
  fragments the types so that some head job no longer fits, the scheduler-order placement is
  used (counted in ``pal_class_order_fallbacks``), so every head job runs.
- ``head_of_line`` (default false): a job that fits on no type is passed over. In PAL's own
  setting (one GPU pool, gangs may span nodes) every job of the head fits, so the artifact's
  cut at the first job that cannot be placed never idles a GPU a head job could use; on typed
  GPUs the analogue that keeps that property is to pass the job over (a reading the setting
  forces, not a departure). ``true`` is the artifact's blocking in typed form: such a job
  reserves every type it could run on, and no job behind it starts there; on a one-type cluster
  this is exactly the artifact's cut, and it idles GPUs next to narrower jobs.
- Performance bins are GPU types; a job's slowdown on type k is sf[j, k] = best throughput /
  throughput[j, k] (1 on its fastest type), taken from the catalog instead of K-means over
  measured per-GPU variability, since the simulated GPUs of one type are identical.
- Sensitivity class: a job's spread across types, best / worst feasible throughput, binned by
  ``class_edges`` (PAL's classes A-D, most sensitive placed first).
- Locality: as in the artifact, the penalty only ranks placement options; it is not a speed
  model. The policy keeps its own host map (``cluster.host_sizes``) for the round, placing
  each job best-fit on one host when it can. For a job of 2..gpus_per_host workers the LxV walk
  chooses the type minimizing sf x (1 if some host of the type has that many free GPUs, else
  ``locality_penalty``), ties by sf, then cluster order. The slowdown a spread gang really
  suffers comes from the engine's network model (packed vs spread throughput), not from the
  penalty, and the engine does the real host placement.
- Re-placement (``replace``): ``all`` (default, the artifact): every job, running ones
  included, walks the LxV list afresh each round in the head's order, so a running job may move
  to another type (the artifact's migration, free in its simulator; fairsim's engine charges
  its overhead). ``waiting``: a job that ran last round stays on its type while that type has
  room; only jobs (re)starting choose a type (no opportunistic migration).
- Job order (``order``): ``fifo`` (arrival; the artifact's main results), ``las`` (least
  attained service, ``las_service``: ``wall``, the default, wall-clock seconds run as the
  artifact's ``Las`` counts it, or ``gpu_s``, GPU-seconds) or ``srtf`` (least remaining time on
  the best type); ties by arrival.

Options: ``order`` (default fifo), ``locality_penalty`` (default 1.7, the artifact's constant;
its sweep spans 1.0-3.0), ``class_edges`` (default [1.25, 1.6, 2.0]: four classes; ours),
``head_of_line`` (default false), ``replace`` (default all), ``las_service`` (default wall).
"""

from __future__ import annotations

import numpy as np

from fairsim.cluster import ClusterSpec
from fairsim.errors import Ascending, require
from fairsim.policies.base import NOT_RUN, Policy, PolicyView


def fifo_key(view: PolicyView) -> np.ndarray:
    return view.arrival


def las_key(view: PolicyView) -> np.ndarray:
    """Attained wall-clock service, as the artifact's ``Las`` counts it (round length per round run)."""
    return view.run_s


def las_gpu_key(view: PolicyView) -> np.ndarray:
    return view.attained_gpu_s


def srtf_key(view: PolicyView) -> np.ndarray:
    best = np.where(view.feasible, view.throughput, 0.0).max(axis=1)
    return view.remaining / best


ORDERS = {"fifo": fifo_key, "las": las_key, "srtf": srtf_key}
LAS_SERVICES = {"wall": las_key, "gpu_s": las_gpu_key}  # what order=las counts
REPLACES = ("all", "waiting")  # which jobs choose a type each round


class HostMap:
    """Free GPUs on each host of each type, for one round's placement decisions. Plain Python
    lists: a type has tens of hosts, where numpy's per-call overhead would dominate."""

    def __init__(self, cluster: ClusterSpec, capacity: np.ndarray):
        # the hosts that are up: a type's capacity below its hosts' GPUs (an outage) drops its last hosts
        self.free = []
        for k in range(cluster.num_types):
            sizes = cluster.host_sizes(k).tolist()
            while sum(sizes) > capacity[k]:
                sizes.pop()
            self.free.append(sizes)

    def free_per_type(self) -> list[int]:
        return [sum(f) for f in self.free]

    def largest_host(self) -> np.ndarray:
        return np.array([max(f, default=0) for f in self.free], dtype=np.int64)

    def take(self, k: int, d: int) -> None:
        """Best-fit on one host if possible, else the fullest-free hosts first (fewest hosts)."""
        free = self.free[k]
        best = -1
        for h, g in enumerate(free):
            if g >= d and (best < 0 or g < free[best]):
                best = h
        if best >= 0:
            free[best] -= d
            return
        for h in sorted(range(len(free)), key=lambda h: -free[h]):  # stable: ties by host order
            got = min(d, free[h])
            free[h] -= got
            d -= got
            if d == 0:
                return


class PalPolicy(Policy):
    def __init__(
        self,
        order: str = "fifo",
        locality_penalty: float = 1.7,
        class_edges=(1.25, 1.6, 2.0),
        head_of_line: bool = False,
        replace: str = "all",
        las_service: str = "wall",
    ):
        require(order in ORDERS, "policy", "order", f"{order!r} is not one of {', '.join(ORDERS)}")
        require(replace in REPLACES, "policy", "replace", f"{replace!r} is not one of {', '.join(REPLACES)}")
        require(
            las_service in LAS_SERVICES,
            "policy",
            "las_service",
            f"{las_service!r} is not one of {', '.join(LAS_SERVICES)}",
        )
        require(locality_penalty >= 1, "policy", "locality_penalty", f"must be >= 1, got {locality_penalty!r}")
        require(
            isinstance(head_of_line, bool), "policy", "head_of_line", f"must be true or false, got {head_of_line!r}"
        )
        edges = np.asarray(Ascending("increasing throughput ratios").check(class_edges, "policy", "class_edges"))
        self.order_key = LAS_SERVICES[las_service] if order == "las" else ORDERS[order]
        self.replace_all = replace == "all"
        self.locality_penalty = float(locality_penalty)
        self.edges = edges
        self.head_of_line = head_of_line
        # with FIFO order the decision only changes at arrivals and completions
        self.event_driven = order == "fifo"

    def reset(self, cluster: ClusterSpec, num_jobs: int, seed: int) -> None:
        self.class_order_fallbacks = 0  # rounds where the class order could not place the whole head

    def decide(self, view: PolicyView) -> np.ndarray:
        tput = np.where(view.feasible, view.throughput, np.nan)
        slowdown = np.nanmax(tput, axis=1, keepdims=True) / tput  # sf >= 1, nan where infeasible
        order = np.lexsort((np.arange(view.num_jobs), self.order_key(view)))
        # the head: the jobs the scheduler's order admits, each placed beside the ones before it
        admitted = self.place(view, order, slowdown)
        head = order[admitted[order] >= 0]
        spread = np.where(view.feasible, slowdown, 0.0).max(axis=1)  # best / worst feasible throughput
        sensitivity = np.searchsorted(self.edges, spread, side="right")
        by_class = head[np.argsort(-sensitivity[head], kind="stable")]
        rest = order[admitted[order] < 0]
        assignment = self.place(view, np.concatenate([by_class, rest]), slowdown)
        if (assignment[head] < 0).any():
            # the class order fragmented the types so that a head job no longer fits: keep the
            # scheduler-order placement, which runs every head job
            self.class_order_fallbacks += 1
            return admitted
        return assignment

    def place(self, view: PolicyView, rows: np.ndarray, slowdown: np.ndarray) -> np.ndarray:
        """Place ``rows`` in turn: every job walks the LxV list (``replace=all``), or a job that
        ran last round keeps its type while it has room and the others walk it (``waiting``). A job that fits nowhere is passed over, so it never idles GPUs
        or evicts anyone behind it; with ``head_of_line`` it reserves the types it could use
        (no job behind it starts there), the typed form of PAL's cut at the first job that
        does not fit."""
        hosts = HostMap(view.cluster, view.capacity)
        free = hosts.free_per_type()
        per_host = view.cluster.gpus_per_host
        assignment = view.empty_assignment()
        if len(rows) == 0:
            return assignment
        usable = np.ones(view.num_types, dtype=bool)  # types not reserved by a blocked job
        widths = view.workers[rows]
        narrowest_after = np.minimum.accumulate(widths[::-1])[::-1].tolist()
        ran_on = view.last_type[rows].tolist()
        last_type = [NOT_RUN] * len(rows) if self.replace_all else ran_on
        # a Python loop over Python ints: it runs once per placed job, kept ones included
        for pos, (row, d, k, was) in enumerate(zip(rows.tolist(), widths.tolist(), last_type, ran_on)):
            if narrowest_after[pos] > max(free) or not usable.any():
                break  # nothing behind this point can start
            if k < 0 or free[k] < d or not usable[k]:  # a (re)starting job, or its type is taken
                ok = view.feasible[row] & usable & (np.asarray(free) >= d)
                k = self.choose_type(slowdown[row], ok, hosts, d, per_host, was)
            if k < 0:
                if self.head_of_line:
                    usable &= ~view.feasible[row]
                continue
            assignment[row] = k
            hosts.take(k, d)
            free[k] -= d
        return assignment

    def choose_type(
        self, sf: np.ndarray, ok: np.ndarray, hosts: HostMap, d: int, per_host: int, was: int = NOT_RUN
    ) -> int:
        """Walk the LxV list: least sf x locality factor among types with room; ties by sf, then
        the type the job ran on last round (an equal placement is no move), then cluster order;
        -1 if none."""
        if not ok.any():
            return NOT_RUN
        cost = np.where(ok, sf, np.inf)
        if 1 < d <= per_host:  # single GPUs are always local, wider gangs always span hosts
            cost = cost * np.where(hosts.largest_host() >= d, 1.0, self.locality_penalty)
        elsewhere = np.arange(len(sf)) != was
        return int(np.lexsort((np.arange(len(sf)), elsewhere, np.where(ok, sf, np.inf), cost))[0])

    def stats(self) -> dict[str, float]:
        return {"pal_class_order_fallbacks": float(self.class_order_fallbacks)}
