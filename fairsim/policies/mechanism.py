"""Gavel's round-based mechanism: turn a time-fraction matrix X into this round's assignment.

Gavel (Narayanan et al., OSDI'20) computes X[j, k], the share of wall time job j should spend on
GPU type k, and realizes it in rounds (its ``Scheduler._schedule_jobs_on_workers``):

- Each job's received time per type is counted since the last *reset*. The priority of job j on
  type k is ``X[j, k] / fraction``, with fraction = time j ran on k / time all jobs ran on k
  (job time, not GPU time: a gang of 8 counts its wall time once). A zero target gives priority
  0; a zero fraction gives ``X * 1e9``.
- Per type, jobs are sorted by (priority, deficit, X) descending, ties in arrival order. The
  types are visited fastest first, all of one type's queue before the next (``type_order``
  below); a job takes its whole gang from one type and is placed at most once; a job
  that does not fit in the GPUs left is skipped. Zero-priority jobs still fill GPUs left over.
- X is recomputed only when a job arrived or finished, and at most once every
  ``recompute_min_interval_s`` (Gavel: 1920 s). Recomputing is a reset: every active job's
  counters restart at half a round, and its deficit grows by ``X_old * elapsed - time received``.
- A job that arrived after the last recompute has no X yet. Gavel's simulator still lets it take
  GPUs in the greedy pass (at priority 0) but never dispatches it, so those GPUs idle for the
  round (``unallocated="reserve"``); ``"skip"`` leaves it out of the pass instead.
- Lease extension (a job scheduled on the same type again keeps its GPUs) does not change which
  type a job gets; in fairsim it is the engine's host placer that keeps the hosts of a job whose
  type is unchanged. ``stats()`` reports Gavel's lease-extension share.

Received time: a job's time in a round is how long it held its GPUs (the engine's ``run_s``
grows by it), which with ``round_end: latest_finish`` is shorter than the round when the job
finishes early or runs whole steps only -- as Gavel counts ``finish - round start`` per job.

Type order (``type_order``). Gavel's scheduler visits a fixed list, v100, p100, k80, for its
heterogeneity-aware policies (``_schedule_jobs_on_workers``; its agnostic ones shuffle it). On
its throughputs that list is fastest first for every job type, so ``fastest`` (the default)
generalises it to any cluster: at each recompute of X the types are ranked by the active jobs'
mean relative throughput (a job's throughput on the type over its best type's; 0 where it cannot
run), highest first, ties in the cluster's order. Where every job ranks the types alike (Gavel's
cluster, the paper catalog's T4 < A10 < V100) this is that one fixed list. ``cluster`` visits
the cluster file's order; a list of type names fixes the order by hand.

State lives in arrays indexed by the engine's stable job index (``view.job_id``).
"""

from __future__ import annotations

import inspect
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from fairsim.cluster import ClusterSpec
from fairsim.errors import is_number, require
from fairsim.policies.base import Policy, PolicyView
from fairsim.solve.budget import DEFAULT_LIMITS, LP_ITERATIONS, Budget, Limits, check_limits

FractionsFn = Callable[[PolicyView], np.ndarray]
UNALLOCATED = ("reserve", "skip")
QUEUES = ("per_type", "global")
TYPE_ORDERS = ("fastest", "cluster")  # or a list of the cluster's type names
TIME_COUNTED = ("held", "round")
_NO_FRACTION_BOOST = 1e9  # Gavel: priority of a job that has not run on k yet (finite so ties still order)


class GavelMechanism:
    def __init__(
        self,
        recompute_min_interval_s: float = 1920.0,
        unallocated: str = "reserve",
        initial_time_rounds: float = 0.5,
        type_order: str | Sequence[str] = "fastest",
        recompute_when_idle: bool = True,
        queue: str = "per_type",
        reset_counters: bool = True,
        time_counted: str = "held",
    ):
        require(
            is_number(recompute_min_interval_s) and recompute_min_interval_s >= 0,
            "policy",
            "mechanism.recompute_min_interval_s",
            f"must be a number of seconds >= 0, got {recompute_min_interval_s!r}",
        )
        require(
            unallocated in UNALLOCATED,
            "policy",
            "mechanism.unallocated",
            f"{unallocated!r} is not one of {', '.join(UNALLOCATED)}",
        )
        require(
            is_number(initial_time_rounds) and initial_time_rounds >= 0,
            "policy",
            "mechanism.initial_time_rounds",
            f"must be a number >= 0, got {initial_time_rounds!r}",
        )
        require(
            isinstance(recompute_when_idle, bool),
            "policy",
            "mechanism.recompute_when_idle",
            f"must be true or false, got {recompute_when_idle!r}",
        )
        require(
            type_order in TYPE_ORDERS or (isinstance(type_order, Sequence) and not isinstance(type_order, str)),
            "policy",
            "mechanism.type_order",
            f"must be one of {', '.join(TYPE_ORDERS)} or a list of GPU type names, got {type_order!r}",
        )
        require(queue in QUEUES, "policy", "mechanism.queue", f"{queue!r} is not one of {', '.join(QUEUES)}")
        require(
            isinstance(reset_counters, bool),
            "policy",
            "mechanism.reset_counters",
            f"must be true or false, got {reset_counters!r}",
        )
        require(
            time_counted in TIME_COUNTED,
            "policy",
            "mechanism.time_counted",
            f"{time_counted!r} is not one of {', '.join(TIME_COUNTED)}",
        )
        self.recompute_min_interval_s = float(recompute_min_interval_s)
        self.queue = queue
        self.reset_counters = reset_counters  # False: received time counted since arrival (Sia's artifact)
        self.time_counted = time_counted
        self.unallocated = unallocated
        self.initial_time_rounds = float(initial_time_rounds)
        self.by_speed = type_order == "fastest"
        self.type_order_names = None if type_order in TYPE_ORDERS else [str(t) for t in type_order]
        self.recompute_when_idle = recompute_when_idle  # Gavel forces a reset when nothing ran

    # ---- lifecycle -------------------------------------------------------------------------
    def reset(self, cluster: ClusterSpec, num_jobs: int) -> None:
        t = cluster.num_types
        self.order = self._type_order(cluster)
        self.order_list = self.order.tolist()
        self.job_time = np.zeros((num_jobs, t))  # time received on each type since the last reset
        self.deficit = np.zeros((num_jobs, t))
        self.target = np.zeros((num_jobs, t))  # X rows of the last recompute
        self.in_x = np.zeros(num_jobs, dtype=bool)
        self.seen = np.zeros(num_jobs, dtype=bool)
        self.row_of = np.full(num_jobs, -1, dtype=np.int64)  # job id -> row of the current view, -1 if absent
        self.ids = np.empty(0, dtype=np.int64)  # the job ids row_of maps
        self.epoch = 0  # counts recomputes: X, deficits and the queue tie order only change then
        self.fixed_key = None  # (ids, epoch) the cached per-epoch arrays below belong to
        self.worker_time = np.zeros(t)
        self.shares_positive = False  # every worker_time > 0: true from the first reset on when it starts > 0
        self.last_reset = 0.0
        self.pending = True
        self.prev = None  # the previous round: (its view, the rows that ran, their types)
        self.kept = None  # (ids, types) of last round's jobs still active: lease-extension candidates
        self.counters = {
            "recomputes": 0,
            "solver_s": 0.0,
            "lease_ext": 0,
            "lease_opp": 0,
            "reserved_gpu_rounds": 0,
            "fallbacks": 0,
        }

    def stats(self) -> dict[str, float]:
        c = self.counters
        share = 100.0 * c["lease_ext"] / c["lease_opp"] if c["lease_opp"] else 0.0
        return {
            "allocation_recomputes": c["recomputes"],
            "solver_s": c["solver_s"],
            "lease_extension_pct": share,
            "reserved_idle_gpu_rounds": c["reserved_gpu_rounds"],
            "solver_fallbacks": c["fallbacks"],
        }

    # ---- one round -----------------------------------------------------------------------------
    def assign(self, view: PolicyView, fractions: FractionsFn) -> np.ndarray:
        ids = view.job_id
        if not _same_frozen(ids, self.ids):  # the active set changed (the engine reuses a frozen array otherwise)
            self.row_of[self.ids] = -1
            self.row_of[ids] = np.arange(len(ids))
            self.ids = ids
            fresh = ~self.seen[ids]
            if np.count_nonzero(fresh):
                new = ids[fresh]
                self.seen[new] = True
                self.job_time[new] = self._initial_time(view)
                if not self.reset_counters:  # an arrival's initial time joins every type's total at once
                    self.worker_time += self._initial_time(view) * len(new)
                    self.shares_positive = self._initial_time(view) > 0
                self.deficit[new] = 0.0
                self.target[new] = 0.0
                self.pending = True
        nothing_ran = self._account_previous_round(view)
        if view.changed:
            self.pending = True
        if self.pending and len(ids) and self._may_recompute(view.now, nothing_ran):
            self._recompute(view, fractions)
        assignment = self._place(view)
        self._remember(view, assignment)
        return assignment

    # ---- bookkeeping ---------------------------------------------------------------------------
    def _initial_time(self, view: PolicyView) -> float:
        return self.initial_time_rounds * view.round_len

    def _account_previous_round(self, view: PolicyView) -> bool:
        """Add last round's busy time to the per-type counters; True if nothing ran."""
        if self.prev is None:
            return False
        before, rows0, types = self.prev  # the previous view, the rows that ran, their types
        if not len(rows0):
            return True
        ids = before.job_id[rows0]
        if self.time_counted == "round":  # a whole round per placement, finished or not
            busy = np.full(len(rows0), before.round_len)
            rows = self.row_of[ids]
            present = rows >= 0
            if np.count_nonzero(present) < len(present):
                self.pending = True
            self.job_time[ids, types] += busy
            self.worker_time += np.bincount(types, weights=busy, minlength=len(self.worker_time))
            self.counters["lease_opp"] += int(np.count_nonzero(present))
            self.kept = (rows[present], types[present])
            return False
        if _same_frozen(view.job_id, before.job_id):  # same active set: rows did not move
            busy = (view.run_s - before.run_s)[rows0]
            self.job_time[ids, types] += busy  # (job, type) pairs are unique
            self.worker_time += np.bincount(types, weights=busy, minlength=len(self.worker_time))
            self.counters["lease_opp"] += len(rows0)
            self.kept = (rows0, types)
            return False
        rows = self.row_of[ids]
        present = rows >= 0
        if np.count_nonzero(present) == len(present):
            busy = view.run_s[rows] - before.run_s[rows0]
        else:  # finished jobs leave the view: their busy time follows from the work they had left
            self.pending = True
            busy = np.empty(len(ids))
            busy[present] = view.run_s[rows[present]] - before.run_s[rows0[present]]
            r0, k = rows0[~present], types[~present]
            est = before.switch_cost_s[r0, k] + (before.work[r0] - before.done[r0]) / before.throughput[r0, k]
            busy[~present] = np.minimum(est, max(view.now - before.now, 0.0))
        self.job_time[ids, types] += busy  # (job, type) pairs are unique
        self.worker_time += np.bincount(types, weights=busy, minlength=len(self.worker_time))
        self.counters["lease_opp"] += int(np.count_nonzero(present))
        self.kept = (rows[present], types[present])
        return False

    def _may_recompute(self, now: float, nothing_ran: bool) -> bool:
        # Gavel's quirks kept on purpose: a reset at t=0 leaves last_reset at 0, which its code
        # reads as "never reset", and a round where nothing ran forces a reset.
        return (
            now - self.last_reset >= self.recompute_min_interval_s
            or self.last_reset == 0.0
            or (nothing_ran and self.recompute_when_idle)
        )

    def _recompute(self, view: PolicyView, fractions: FractionsFn) -> None:
        ids = view.job_id
        if self.reset_counters:
            init = self._initial_time(view)
            elapsed = view.now - self.last_reset
            self.deficit[ids] += self.target[ids] * elapsed - (self.job_time[ids] - init)
            self.job_time[ids] = init
            self.worker_time[:] = init * len(ids)
            self.shares_positive = init > 0  # and it only grows until the next reset
        tick = time.perf_counter()
        try:
            x = np.asarray(fractions(view), dtype=np.float64)
        except (RuntimeError, ValueError, ArithmeticError):  # an LP failure must not end the run
            x = equal_share(view)
            self.counters["fallbacks"] += 1
        self.counters["solver_s"] += time.perf_counter() - tick
        self.counters["recomputes"] += 1
        require(
            x.shape == (len(ids), view.num_types),
            "policy",
            "fractions",
            f"returned shape {x.shape}, expected {(len(ids), view.num_types)}",
        )
        self.target[ids] = np.clip(x, 0.0, 1.0) * view.feasible  # no target where the job cannot run
        self.in_x[ids] = True
        if self.by_speed:
            self.order = fastest_first(view)
            self.order_list = self.order.tolist()
        self.last_reset = view.now
        self.pending = False
        self.epoch += 1

    def _remember(self, view: PolicyView, assignment: np.ndarray) -> None:
        rows = (assignment >= 0).nonzero()[0]
        if self.kept is not None:  # last round's jobs still here (rows of this view) and their types
            kept_rows, kept_types = self.kept
            self.counters["lease_ext"] += int(np.count_nonzero(assignment[kept_rows] == kept_types))
            self.kept = None
        self.prev = (view, rows, assignment[rows])  # views are read-only snapshots: safe to keep

    def _type_order(self, cluster: ClusterSpec) -> np.ndarray:
        if self.type_order_names is None:
            return np.arange(cluster.num_types)
        names = [cluster.canonical(n, "policy", "mechanism.type_order") for n in self.type_order_names]
        require(
            sorted(names) == sorted(cluster.gpu_types),
            "policy",
            "mechanism.type_order",
            f"must list each cluster GPU type once ({', '.join(cluster.gpu_types)}), got {', '.join(names)}",
        )
        return np.array([cluster.gpu_types.index(n) for n in names], dtype=np.int64)

    # ---- placement -------------------------------------------------------------------------------
    def priorities(self, view: PolicyView, x: np.ndarray | None = None) -> np.ndarray:
        """Gavel's priority X / (share of type k's time received), [n, T]; 0 where X is 0."""
        ids = view.job_id
        x = self.target[ids] if x is None else x  # zero rows for jobs not in X yet
        return self._priority_formula(x, self.job_time[ids], self.worker_time)

    def _priority_formula(self, x: np.ndarray, job_time: np.ndarray, worker_time: np.ndarray) -> np.ndarray:
        if self.shares_positive:
            return x / (job_time / worker_time)  # every share positive (Gavel's float ops)
        with np.errstate(divide="ignore", invalid="ignore"):
            frac = np.where(worker_time > 0, job_time / worker_time, 0.0)
            return np.where(frac > 0, x / frac, x * _NO_FRACTION_BOOST)

    def _fixed(self, view: PolicyView) -> tuple:
        """Per-round inputs that only change at a recompute or when the active set changes, laid
        out per type [T, n] in each type's tie order -- (deficit, X) descending, then arrival:
        job ids, X, the rows themselves; plus as lists for the greedy pass: who has an X yet,
        where each job may go, gang sizes, capacities."""
        key = (view.job_id, self.epoch)
        if self.fixed_key is None or not (_same_frozen(key[0], self.fixed_key[0]) and key[1] == self.fixed_key[1]):
            ids = view.job_id
            x = self.target[ids]
            tie_rows = np.lexsort((-x, -self.deficit[ids]), axis=0).T  # stable: equal keys keep arrival order
            type_col = np.arange(view.num_types)[:, None]
            allocated = self.in_x[ids]
            eligible = view.feasible & allocated[:, None] if self.unallocated == "skip" else view.feasible
            self.fixed = (
                ids[tie_rows],
                x[tie_rows, type_col],
                tie_rows,
                type_col,
                allocated.tolist(),
                eligible.T.tolist(),
                view.workers.tolist(),
                view.capacity.tolist(),
            )
            self.fixed_key = key
        return self.fixed

    def _place(self, view: PolicyView) -> np.ndarray:
        if view.num_jobs == 0:
            return view.empty_assignment()
        tie_ids, tie_x, tie_rows, type_col, allocated, eligible, workers, capacity = self._fixed(view)
        if self.queue == "global":
            assignment, reserved = self._global_pass(view, eligible, workers, allocated, capacity)
            self.counters["reserved_gpu_rounds"] += reserved
            return np.array(assignment, dtype=np.int64)
        prio = self._priority_formula(tie_x, self.job_time[tie_ids, type_col], self.worker_time[:, None])
        # each type's queue: priority descending, ties in the fixed tie order; one stable sort of
        # priorities laid out in tie order equals Gavel's sort on (priority, deficit, X)
        by_prio = (-prio).argsort(axis=1, kind="stable")
        queues = tie_rows[type_col, by_prio].tolist()
        assignment, reserved = self._greedy_pass(queues, eligible, workers, allocated, capacity)
        self.counters["reserved_gpu_rounds"] += reserved
        return np.array(assignment, dtype=np.int64)

    def _global_pass(self, view: PolicyView, eligible, workers, allocated, capacity):
        """Sia's artifact's pass (``queue: global``): one queue of every (job, type) entry, in
        type order then arrival order, stably sorted by (priority, deficit, X) descending; a job
        is placed at most once, on the type of its first entry whose gang fits in the GPUs left."""
        ids = view.job_id
        x, deficit = self.target[ids], self.deficit[ids]
        prio = self._priority_formula(x, self.job_time[ids], self.worker_time[None, :])
        order = self.order
        n = len(ids)
        keys = [a[:, order].T.ravel() for a in (x, deficit, prio)]
        entry = np.lexsort((-keys[0], -keys[1], -keys[2]))  # stable: equal keys keep type, then arrival, order
        jobs = np.tile(np.arange(n), len(order))[entry].tolist()
        types = np.repeat(order, n)[entry].tolist()
        assignment = [-1] * n
        placed = [False] * n
        free = list(capacity)
        reserved = 0
        for j, k in zip(jobs, types):
            if free[k] == 0 or placed[j] or not eligible[k][j] or workers[j] > free[k]:
                continue
            free[k] -= workers[j]
            placed[j] = True
            if allocated[j]:
                assignment[j] = k
            else:
                reserved += workers[j]
        return assignment, reserved

    def _greedy_pass(self, queues, eligible, workers, allocated, capacity):
        """Gavel's pass: types in order, each type's queue in priority order; a job is placed at
        most once, on one type, if its whole gang fits in the GPUs left. Jobs without X take
        their GPUs but do not run ("reserve"). Plain Python over lists: for a sequential pass
        over ~100 jobs this beats numpy calls several times over."""
        n = len(workers)
        assignment = [-1] * n
        placed = [False] * n
        reserved = 0
        for k in self.order_list:
            free = capacity[k]
            elig_k = eligible[k]
            for j in queues[k]:
                if free == 0:
                    break
                if placed[j] or not elig_k[j] or workers[j] > free:
                    continue
                free -= workers[j]
                placed[j] = True
                if allocated[j]:
                    assignment[j] = k
                else:
                    reserved += workers[j]
        return assignment, reserved


def fastest_first(view: PolicyView) -> np.ndarray:
    """The view's GPU types ranked by the jobs' mean relative throughput, highest first, ties in
    the cluster's order: a job's throughput on a type over its best type's (0 where it cannot run;
    a job that can run nowhere counts for nothing)."""
    tput = np.where(view.feasible, view.throughput, 0.0)
    best = tput.max(axis=1, initial=0.0)
    relative = np.divide(tput, best[:, None], out=np.zeros_like(tput), where=best[:, None] > 0)
    return np.argsort(-relative.sum(axis=0), kind="stable").astype(np.int64)


def _same_frozen(a: np.ndarray, b: np.ndarray) -> bool:
    """The same read-only array object: its contents cannot have changed since it was seen."""
    return a is b and not a.flags.writeable


def as_mechanism(value: Any) -> GavelMechanism:
    """The ``mechanism`` option of a fraction policy: None (Gavel's defaults), a mechanism, or a
    mapping of GavelMechanism options (how the policy YAML files give it)."""
    if value is None:
        return GavelMechanism()
    if isinstance(value, GavelMechanism):
        return value
    require(isinstance(value, Mapping), "policy", "mechanism", f"must be a mapping of options, got {value!r}")
    opts = dict(value)
    opts.pop("_target_", None)
    allowed = [p for p in inspect.signature(GavelMechanism.__init__).parameters if p != "self"]
    for key in opts:
        require(key in allowed, "policy", f"mechanism.{key}", f"unknown option (allowed: {', '.join(allowed)})")
    return GavelMechanism(**opts)


def equal_share(view: PolicyView) -> np.ndarray:
    """The fallback allocation: every job an equal 1/n share of every type it can run on, split
    evenly across types (rows sum to <= 1 and sum_j d_j X[j, k] <= Y_k by construction)."""
    n, t = view.num_jobs, view.num_types
    share = view.capacity[None, :] / (max(n, 1) * view.workers[:, None] * t)
    return np.where(view.feasible, np.minimum(share, 1.0 / t), 0.0)


class FractionPolicy(Policy):
    """A policy that computes a time-fraction matrix X [n, T] (rows sum to <= 1,
    sum_j workers_j * X[j, k] <= capacity_k) and leaves the per-round choice to a mechanism.
    ``lp_iterations``: the simplex iterations one of its LP solves may take (None: no limit); an
    LP stopped there fails like any other (the mechanism's equal-share fallback), and each hit is
    counted in ``stats()`` with the kinds of ``limit_kinds``."""

    limit_kinds: tuple[str, ...] = (LP_ITERATIONS,)

    def __init__(self, mechanism=None, lp_iterations: int | None = DEFAULT_LIMITS.lp_iterations):
        check_limits("policy", lp_iterations=lp_iterations)
        self.mechanism = mechanism or GavelMechanism()
        self.limits = Limits(lp_iterations=lp_iterations)
        self.budget = Budget(self.limits)

    def reset(self, cluster: ClusterSpec, num_jobs: int, seed: int) -> None:
        self.mechanism.reset(cluster, num_jobs)
        self.budget = Budget(self.limits)  # a run's own count of hits

    def fractions(self, view: PolicyView) -> np.ndarray:
        raise NotImplementedError

    def decide(self, view: PolicyView) -> np.ndarray:
        return self.mechanism.assign(view, self.fractions)

    def stats(self) -> dict[str, float]:
        return {**self.mechanism.stats(), **self.budget.stats(self.limit_kinds)}
