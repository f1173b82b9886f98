"""Tiresias (Gu et al., "Tiresias: A GPU Cluster Manager for Distributed Deep Learning", NSDI'19),
in two forms.

``TiresiasPolicy`` (``policy=tiresias``) is the adaptation the FFT paper (ICS'25, sec. 5) compares
against on heterogeneous clusters:

- one queue per GPU type; a job is bound to one queue when it arrives and stays there for good
  (no cross-type migration);
- the queue (``queue_choice``): the FFT paper describes it two ways (its sec. 6.1.4; see
  docs/baselines.md). ``least_service`` (default): the type whose queue holds the least total
  remaining service, a job's remaining service on type k being its remaining run time there
  times its gang size (``remaining / throughput[k] * workers``, GPU-seconds); the more specific
  of the two descriptions, the one that also states the no-migration rule. ``random``: a type
  drawn uniformly among those the job can run on, one draw per job from the run seed;
- inside a queue, shortest remaining service first, preemptive, re-ranked every round; a job
  that does not fit is skipped and smaller ones behind it may start (backfill).

``TiresiasLasPolicy`` (``policy=tiresias_las``) is the paper's own Discretized 2D-LAS for jobs
with unknown durations:

- a job's priority is its attained service in GPU-seconds (GPUs x time), discretized into K
  queues by ``thresholds_gpu_s`` (new jobs start in the top queue and are demoted when they
  cross a threshold); inside a queue, first come first served, except that, as in Tiresias'
  simulator, the jobs running at a decision are lined up ahead of the pending ones of the same
  queue (a pending job never preempts a running job of its own queue), and a job entering a
  queue (new, demoted or promoted) joins its back, behind its pending jobs;
- jobs are admitted in priority order, preemptively; a job that does not fit is skipped
  (Tiresias' simulator does the same);
- starvation prevention (``promote_knob``, Tiresias' PromoteKnob): a job below the top queue
  that has waited, since it was last promoted, at least ``promote_knob`` times the wall time it
  has run since then, goes back to the top queue and its service count restarts from zero
  (0 disables it, the default of Tiresias' simulator);
- GPU types: Tiresias does not know about them. Type choice is heterogeneity-agnostic: a job
  goes back to the type it last ran on when that has room (no needless moves), otherwise to the
  feasible type with the most free GPUs (Tiresias' consolidation instinct), ties by cluster
  order. Throughputs are never looked at.

- when a running job is next checked for demotion (``jump_time``): ``exact`` (default) at the
  crossing itself, as the paper's 2D-LAS demotes; ``simulator``, as Tiresias' simulator computes
  it (``run_sim.py`` ``dlas_sim_jobs``), a slip of its Python 2 code not replicated by default
  (as Gavel's known defects are not): floor((threshold -
  floor(wall seconds run in the queue)) / GPUs) seconds from now, a GPU-second threshold less
  wall seconds divided under Python 2's integer division, so a multi-GPU job is checked before it
  crosses, stays, and is demoted at a later check (an 8-GPU job from 0 at 3,250 GPU-s: checked at
  406 s with 3,248, demoted at 761 s). It decides when the
  policy is asked again (``next_decision_s``), so it acts under ``sim.clock=events`` and, under
  rounds, on the rounds the engine skips.

Defaults: ``thresholds_gpu_s = [3250, 7200]`` (three queues) are the values in Tiresias'
published simulator (SymbioticLab/Tiresias, ``jobs.py``); with them, Philly-sized jobs (hours
of several GPUs) drop to the last queue almost at once. ``policy=tiresias_las2q`` sets
``thresholds_gpu_s = [57600]``: two queues split at 16 GPU-hours, the setting Pollux's
re-implementation of Tiresias uses for such jobs.
"""

from __future__ import annotations

import math

import numpy as np

from fairsim.cluster import ClusterSpec
from fairsim.errors import Ascending, require
from fairsim.policies.base import NOT_RUN, Changes, Moves, Policy, PolicyView
from fairsim.policies.queues import fill_queue


def fill_bound_queues(
    view: PolicyView, bound: np.ndarray, key: np.ndarray, free: np.ndarray | None = None
) -> np.ndarray:
    """Run, per type, the jobs bound to it in ascending ``key`` (ties by view order) while they
    fit. ``bound[row]`` is the row's type (-1 = not queued anywhere)."""
    assignment = view.empty_assignment()
    free = view.capacity.astype(np.int64) if free is None else free
    queued = np.flatnonzero(bound >= 0)
    order = queued[np.lexsort((queued, key[queued], bound[queued]))]  # by type, then key, then row
    starts = np.searchsorted(bound[order], np.arange(view.num_types + 1))
    for k in range(view.num_types):
        rows = order[starts[k] : starts[k + 1]]
        take = fill_queue(view.workers[rows], int(free[k]))
        assignment[rows[take]] = k
    return assignment


QUEUE_CHOICES = ("least_service", "random")
JUMP_TIMES = ("simulator", "exact")  # when 2D-LAS next checks a running job for demotion
CROSSED = 1e-9  # relative: 2D-LAS service this close below a threshold has crossed it
RANDOM_STREAM = 0x71E5  # tags the policy's random stream apart from the engine's (seed, stream)


class TiresiasPolicy(Policy):
    """FFT's Tiresias: per-type queues, a queue chosen on arrival, SRSF inside a queue."""

    def __init__(self, queue_choice: str = "least_service"):
        require(
            queue_choice in QUEUE_CHOICES,
            "policy",
            "queue_choice",
            f"{queue_choice!r} is not one of {', '.join(QUEUE_CHOICES)}",
        )
        self.random_choice = queue_choice == "random"

    def reset(self, cluster: ClusterSpec, num_jobs: int, seed: int) -> None:
        self.bound = np.full(num_jobs, NOT_RUN, dtype=np.int64)  # queue (type) of each job, for good
        # one draw per job, fixed by the run seed: the choice does not depend on when the
        # policy is called or which jobs share the view
        self.draw = np.random.default_rng([seed, RANDOM_STREAM]).random(num_jobs)
        # decide_changes: each queue's active jobs in ascending engine index (= view order)
        self.queues: list[np.ndarray] | None = None

    def decide(self, view: PolicyView) -> np.ndarray:
        bound = self.bound[view.job_id]
        tput = np.where(view.feasible, view.throughput, np.nan)
        service = view.remaining[:, None] / tput * view.workers[:, None]  # GPU-seconds on each type
        rows = np.flatnonzero(bound >= 0)
        load = np.bincount(bound[rows], weights=service[rows, bound[rows]], minlength=view.num_types)
        for row in np.flatnonzero(bound < 0):  # new arrivals, in arrival order
            if self.random_choice:  # uniformly among the types the job can run on
                types = np.flatnonzero(view.feasible[row])
                k = int(types[int(self.draw[view.job_id[row]] * len(types))])
            else:
                k = int(np.argmin(np.where(view.feasible[row], load, np.inf)))  # ties -> cluster order
            bound[row] = k
            load[k] += service[row, k]
        self.bound[view.job_id] = bound
        own_service = service[np.arange(view.num_jobs), bound]
        return fill_bound_queues(view, bound, own_service)

    def next_decision_s(self, view: PolicyView, assignment: np.ndarray) -> float:
        # as SRTF: between events only running jobs' remaining service shrinks, so no queue's
        # start set changes (Tiresias' own system decides at arrivals and completions)
        return math.inf

    def decide_changes(self, changes: Changes) -> Moves:
        """``decide`` from what changed: only a queue that a job joined or left can start or stop
        a job. Between decisions the running jobs' keys only shrink and the waiting ones' stay,
        so in a queue nobody joined or left, every job that waits still meets, at its turn in
        the new order, no more free GPUs than at the previous decision: the same jobs run."""
        if self.queues is None:
            self.queues = [np.empty(0, dtype=np.int64) for _ in changes.capacity]
            self.capacity = changes.capacity
        touched = set(self.bound[changes.finished].tolist())
        # an outage: the evicted jobs' queues, and every queue whose type's capacity changed
        touched.update(self.bound[changes.evicted].tolist())
        touched.update(np.flatnonzero(changes.capacity != self.capacity).tolist())
        self.capacity = changes.capacity
        for k in touched:
            self.queues[k] = self.queues[k][~np.isin(self.queues[k], changes.finished, assume_unique=True)]
        if len(changes.arrived):
            touched.update(self._bind(changes))
        moved, types = [], []
        for k in sorted(touched):
            queue = self.queues[k]
            key = changes.remaining(queue) / changes.throughput[queue, k] * changes.workers[queue]
            queue = queue[np.lexsort((queue, key))]
            runs = np.where(fill_queue(changes.workers[queue], int(changes.capacity[k])), k, NOT_RUN)
            change = runs != changes.current_type[queue]
            moved.append(queue[change])
            types.append(runs[change])
        if not moved:
            return Moves(np.empty(0, dtype=np.int64), np.empty(0, dtype=np.int64), wake_s=math.inf)
        return Moves(np.concatenate(moved), np.concatenate(types), wake_s=math.inf)

    def _bind(self, changes: Changes) -> list[int]:
        """Bind the new jobs to their queues as ``decide`` does, in arrival order; returns their queues."""
        arrived = changes.arrived
        if self.random_choice:
            chosen = []
            for j in arrived.tolist():
                types = np.flatnonzero(changes.feasible[j])
                chosen.append(int(types[int(self.draw[j] * len(types))]))
        else:
            # the remaining service in each queue, summed in view order as decide's bincount does
            queued = np.concatenate(self.queues)
            bins = np.repeat(np.arange(len(self.queues)), [len(q) for q in self.queues])
            service = changes.remaining(queued) / changes.throughput[queued, bins] * changes.workers[queued]
            load = np.bincount(bins, weights=service, minlength=len(self.queues))
            remaining = changes.remaining(arrived)
            chosen = []
            for j, rem in zip(arrived.tolist(), remaining.tolist()):
                k = int(np.argmin(np.where(changes.feasible[j], load, np.inf)))  # ties -> cluster order
                load[k] += rem / changes.throughput[j, k] * changes.workers[j]
                chosen.append(k)
        self.bound[arrived] = chosen
        for k in set(chosen):
            self.queues[k] = np.concatenate([self.queues[k], arrived[self.bound[arrived] == k]])
        return chosen


class TiresiasLasPolicy(Policy):
    """Tiresias' Discretized 2D-LAS with a heterogeneity-agnostic type choice."""

    def __init__(self, thresholds_gpu_s=(3250.0, 7200.0), promote_knob: float = 0.0, jump_time: str = "exact"):
        require(jump_time in JUMP_TIMES, "policy", "jump_time", f"{jump_time!r} is not one of {', '.join(JUMP_TIMES)}")
        self.simulator_jumps = jump_time == "simulator"
        thresholds = np.asarray(
            Ascending("increasing GPU-second values > 0", lo=0).check(thresholds_gpu_s, "policy", "thresholds_gpu_s")
        )
        require(promote_knob >= 0, "policy", "promote_knob", f"must be >= 0 (0 = off), got {promote_knob!r}")
        self.thresholds = thresholds
        self.promote_knob = float(promote_knob)

    def reset(self, cluster: ClusterSpec, num_jobs: int, seed: int) -> None:
        # service and run time already counted at the job's last promotion (Tiresias resets them)
        self.service_base = np.zeros(num_jobs)
        self.run_base = np.zeros(num_jobs)
        self.since = np.full(num_jobs, np.nan)  # time of the last promotion (or first start)
        self.promotions = 0
        self.queue = np.full(num_jobs, -1, dtype=np.int64)  # each job's queue at the last decision
        self.pos = np.zeros(num_jobs, dtype=np.int64)  # place inside its queue (smaller = ahead)
        self.next_pos = 0

    def queue_of(self, view: PolicyView) -> np.ndarray:
        """Each job's queue (0 = top), after applying starvation promotions."""
        ids = view.job_id
        started = ~np.isnan(view.first_start)
        fresh = started & np.isnan(self.since[ids])
        self.since[ids[fresh]] = view.first_start[fresh]
        service = view.attained_gpu_s - self.service_base[ids]
        # within CROSSED of a threshold counts as past it: the event clock steps a job to its exact
        # crossing time, where float rounding may leave its service an ulp short
        queue = np.searchsorted(self.thresholds, service * (1 + CROSSED), side="right")
        if self.promote_knob > 0:
            ran, waited = self._since_promotion(view)
            promote = started & (queue > 0) & (view.last_type < 0) & (ran > 0) & (waited >= self.promote_knob * ran)
            self.service_base[ids[promote]] = view.attained_gpu_s[promote]
            self.run_base[ids[promote]] = view.run_s[promote]
            self.since[ids[promote]] = view.now
            queue[promote] = 0
            self.promotions += int(promote.sum())
        return queue

    def _since_promotion(self, view: PolicyView) -> tuple[np.ndarray, np.ndarray]:
        """Per job, wall seconds run and seconds waited since its last promotion (or first start)."""
        ids = view.job_id
        ran = view.run_s - self.run_base[ids]
        return ran, (view.now - self.since[ids]) - ran

    def queue_order(self, view: PolicyView, queue: np.ndarray) -> np.ndarray:
        """Rows in priority order: by queue, then by place inside it. As in Tiresias' simulator,
        at each decision the jobs that stay in their queue are re-lined with the running ones
        ahead of the pending ones (each group in its old order), then the jobs that enter a queue
        (new, demoted, promoted) join its back in arrival order, behind its pending jobs."""
        ids = view.job_id
        n = view.num_jobs
        stay = self.queue[ids] == queue
        rows = np.flatnonzero(stay)
        rows = rows[np.lexsort((self.pos[ids[rows]], view.last_type[rows] < 0, queue[rows]))]
        entering = np.flatnonzero(~stay)
        entering = entering[np.lexsort((entering, view.arrival[entering]))]
        lined = np.concatenate([rows, entering])
        self.pos[ids[lined]] = self.next_pos + np.arange(n)
        self.next_pos += n
        self.queue[ids] = queue
        return np.lexsort((np.arange(n), self.pos[ids], queue))

    def decide(self, view: PolicyView) -> np.ndarray:
        queue = self.queue_of(view)
        order = self.queue_order(view, queue)
        assignment = view.empty_assignment()
        room = view.capacity.tolist()
        widths = view.workers[order]
        narrowest_after = np.minimum.accumulate(widths[::-1])[::-1].tolist()
        feasible = view.feasible[order].tolist()
        # Python ints in the loop: one cheap step per job that runs, kept ones included
        for pos, (row, d, k, ok) in enumerate(
            zip(order.tolist(), widths.tolist(), view.prev_type[order].tolist(), feasible)
        ):
            most = max(room)
            if most <= 0 or narrowest_after[pos] > most:
                break  # nothing behind this point can start
            if k < 0 or not ok[k] or room[k] < d:
                # agnostic choice: the feasible type with the most free GPUs, ties -> cluster order
                k = max((t for t in range(len(room)) if ok[t] and room[t] >= d), key=lambda t: room[t], default=-1)
                if k < 0:
                    continue  # skipped; smaller jobs behind it may still start
            assignment[row] = k
            room[k] -= d
        return assignment

    def next_decision_s(self, view: PolicyView, assignment: np.ndarray) -> float:
        """The next threshold crossing of a job that runs now (its service grows by its gang size
        per second, overhead included) and, with promotion on, the next time a paused job's wait
        reaches promote_knob times its run time."""
        ids = view.job_id
        service = view.attained_gpu_s - self.service_base[ids]
        queue = self.queue[ids]
        wake = math.inf
        run = np.flatnonzero((assignment >= 0) & (queue < len(self.thresholds)))
        if len(run):
            if self.simulator_jumps:
                # Tiresias' simulator: (limit - int(wall seconds run)) // GPUs, a GPU-second limit
                # less wall seconds under Python 2's integer division
                wall = np.floor(service[run] / view.workers[run] * (1 + CROSSED))
                gap = np.floor((self.thresholds[queue[run]] - wall) / view.workers[run])
            else:
                gap = (self.thresholds[queue[run]] - service[run]) / view.workers[run]
            wake = view.now + float(np.maximum(gap, 0.0).min())
        if self.promote_knob > 0:
            ran, waited = self._since_promotion(view)
            paused = np.flatnonzero((assignment < 0) & (queue > 0) & (ran > 0) & ~np.isnan(self.since[ids]))
            if len(paused):
                wake = min(
                    wake, view.now + float(np.maximum(self.promote_knob * ran[paused] - waited[paused], 0.0).min())
                )
        return wake if wake > view.now else math.nextafter(view.now, math.inf)

    def stats(self) -> dict[str, float]:
        return {"tiresias_promotions": float(self.promotions)}
