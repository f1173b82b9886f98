"""The fluid max-min fair schedule of a trace: a policy-independent reference for finish-time fairness.

At every moment each arrived, unfinished job is offered an equal share of every GPU type. A
gang of d workers given s_k GPUs of type k can run there a fraction s_k / d of the time, and it
runs on one type at a time, so its fractions sum to at most 1; it fills them fastest type first
(the convention of ``fairsim.metrics.isolated_rate``). What a job cannot use is shared among the
others: per type, water-filling to a level s_k, so that every job gets min(s_k, what it can still
use of k) and the type is either full or every job on it is saturated. A job's use of a type
depends on the levels of its faster types, so the levels are the least fixed point of the
per-type water-filling (found by iterating from a lower bound, Y_k / number of jobs able to use
type k; with one speed order shared by all jobs this takes at most T + 1 passes). With no unused
share to pass on, every level is Y_k / N and a job's rate is its isolated rate on a 1/N share.

Rates are constant between events (arrivals and fluid completions), so the schedule is advanced
event by event and completion times are exact. Jobs with the same gang size and throughput row
are interchangeable and get the same rate, so the allocation is solved per such class: each event
costs O(active classes x types), not O(active jobs). The result depends only on the arrays passed
in (arrival, work, workers, throughput per type, type counts), never on a policy's run.
"""

from __future__ import annotations

import heapq

import numpy as np

from fairsim.errors import require

SOURCE = "fluid fair share"
_FINISH_RTOL = 1e-12  # a job is done when its class's progress reaches its target to this relative precision
_MAX_PASSES = 10_000


def fluid_finish_times(arrival: np.ndarray, work: np.ndarray, workers: np.ndarray, throughput: np.ndarray,
                       counts: np.ndarray) -> np.ndarray:
    """Each job's completion time (s, same clock as ``arrival``) in the fluid max-min fair schedule.

    arrival, work, workers: [J]; throughput: [J, T] work units/s with the gang packed on type k
    (0 = cannot run there); counts: [T] GPUs of each type.
    """
    arrival = np.asarray(arrival, dtype=np.float64)
    work = np.asarray(work, dtype=np.float64)
    workers = np.asarray(workers, dtype=np.float64)
    counts = np.asarray(counts, dtype=np.float64)
    tput = np.asarray(throughput, dtype=np.float64)
    n_jobs = len(arrival)
    require(tput.shape == (n_jobs, len(counts)), SOURCE, "throughput", f"must be [jobs, types] = [{n_jobs}, {len(counts)}], got {list(tput.shape)}")
    require(work.shape == (n_jobs,) and workers.shape == (n_jobs,), SOURCE, "work", "work and workers need one entry per job")
    finish = np.full(n_jobs, np.nan)
    if n_jobs == 0:
        return finish
    require(bool(np.isfinite(arrival).all() and (work >= 0).all() and (workers >= 1).all()), SOURCE, "work",
            "arrivals must be finite, work >= 0 and workers >= 1")
    # a gang cannot run on a type with fewer GPUs than workers (as in JobSet.feasible)
    tput = np.where((tput > 0) & np.isfinite(tput) & (workers[:, None] <= counts[None, :]), tput, 0.0)
    runnable = (tput > 0).any(axis=1)
    require(bool(runnable.all()), SOURCE, "throughput",
            f"job at row {int(np.argmin(runnable))} cannot run on any GPU type (throughput 0 or too few GPUs everywhere)")

    classes = _JobClasses(workers, tput)
    by_arrival = np.argsort(arrival, kind="stable")
    members = np.zeros(classes.size, dtype=np.int64)  # active jobs per class
    progress = np.zeros(classes.size)  # work units done by each job of the class since t = 0 (all share one rate)
    head = np.full(classes.size, np.inf)  # the smallest progress target among the class's active jobs
    targets: list[list[tuple[float, int]]] = [[] for _ in range(classes.size)]
    t, nxt, done = float(arrival[by_arrival[0]]), 0, 0
    while done < n_jobs:
        while nxt < n_jobs and arrival[by_arrival[nxt]] <= t:
            j = int(by_arrival[nxt])
            c = int(classes.of_job[j])
            heapq.heappush(targets[c], (progress[c] + work[j], j))
            head[c] = targets[c][0][0]
            members[c] += 1
            nxt += 1
        active = np.flatnonzero(members)
        next_arrival = float(arrival[by_arrival[nxt]]) if nxt < n_jobs else np.inf
        if active.size == 0:
            t = next_arrival
            continue
        rate = classes.rates(active, members[active], counts)
        until_done = np.maximum(head[active] - progress[active], 0.0) / rate
        first = int(np.argmin(until_done))
        step = float(until_done[first])
        if next_arrival < t + step:
            progress[active] += rate * (next_arrival - t)
            t = next_arrival
            continue
        progress[active] += rate * step
        progress[active[first]] = head[active[first]]  # exact for the job that defines the event
        t += step
        reached = active[head[active] <= progress[active] + _FINISH_RTOL * np.abs(head[active])]
        for c in reached:
            heap = targets[c]
            while heap and heap[0][0] <= progress[c] + _FINISH_RTOL * abs(heap[0][0]):
                _, j = heapq.heappop(heap)
                finish[j] = t
                members[c] -= 1
                done += 1
            head[c] = heap[0][0] if heap else np.inf
            if not heap:
                progress[c] = 0.0  # restart the clock: targets stay small next to the work they hold
    return finish


class _JobClasses:
    """Jobs grouped by (workers, throughput row): each class's speed order and its allocation."""

    def __init__(self, workers: np.ndarray, tput: np.ndarray):
        rows, self.of_job = np.unique(np.column_stack([workers, tput]), axis=0, return_inverse=True)
        self.of_job = self.of_job.reshape(-1)
        self.size = len(rows)
        self.gang = rows[:, 0]
        self.tput = rows[:, 1:]
        self.usable = (self.tput > 0).astype(np.float64)  # 1.0 where the class can run on the type
        # fastest first; unusable types (0) last, so they never count as "faster"
        self.order = np.argsort(-self.tput, axis=1, kind="stable")
        self.rank = np.argsort(self.order, axis=1, kind="stable")
        self.saturating_level = float(self.gang.max())  # no gang uses more GPUs of a type than its workers

    def rates(self, active: np.ndarray, members: np.ndarray, counts: np.ndarray) -> np.ndarray:
        """Work units/s of one job of each active class, given how many jobs each class has."""
        gang = self.gang[active]
        gpus = fair_gpus(gang, self.usable[active], self.order[active], self.rank[active], members.astype(np.float64),
                         counts, self.saturating_level)
        return (gpus / gang[:, None] * self.tput[active]).sum(axis=1)


def fair_gpus(gang: np.ndarray, usable: np.ndarray, order: np.ndarray, rank: np.ndarray, members: np.ndarray,
              counts: np.ndarray, saturating_level: float) -> np.ndarray:
    """GPUs of each type one job of each class holds in the max-min fair share. [A] / [A, T] in, [A, T] out.

    ``order``/``rank``: each class's types fastest first and its inverse permutation, unusable
    types last. ``saturating_level`` (>= every gang size) stands for "no limit" on a type."""
    n_cls, n_types = usable.shape
    row_start = (np.arange(n_cls) * n_types)[:, None]
    rank_flat = row_start + rank  # flat positions, so each pass gathers with one fancy index
    gang_col, jobs_total, cols = gang[:, None], members.sum(), np.arange(n_types)
    able = members @ usable  # jobs that can use each type
    level = np.where(able > 0, counts / np.maximum(able, 1.0), saturating_level)
    level = np.minimum(level, saturating_level)  # a lower bound of the fixed point: iteration only raises it
    for _ in range(_MAX_PASSES):
        # room: GPUs of each type a job could still use after its share of every faster type
        in_order = level[order]
        faster = (in_order.cumsum(axis=1) - in_order).ravel()[rank_flat]
        room = np.maximum(gang_col - faster, 0.0) * usable
        new = _water_level(room, members, jobs_total, counts, cols, saturating_level)
        rise = (new - level).max()
        if rise <= 0.0:  # mathematically non-decreasing: no rise means converged
            break
        level = np.maximum(new, level)
        if rise <= 1e-13 * saturating_level:
            in_order = level[order]
            faster = (in_order.cumsum(axis=1) - in_order).ravel()[rank_flat]
            room = np.maximum(gang_col - faster, 0.0) * usable
            break
    return np.minimum(level, room)


def _water_level(room: np.ndarray, members: np.ndarray, jobs_total: float, counts: np.ndarray, cols: np.ndarray,
                 saturating_level: float) -> np.ndarray:
    """Per type, the level s with sum_c members_c * min(s, room_c) = capacity, or ``saturating_level``
    if every job's room fits. [A, T] in, [T] out."""
    sort = room.argsort(axis=0, kind="stable")
    caps = room[sort, cols]
    jobs = members[sort]
    held = jobs * caps
    held_cum = held.cumsum(axis=0)
    asked = held_cum[-1]
    below = held_cum - held  # GPUs held by classes with less room (each capped at its room)
    rest = jobs_total - (jobs.cumsum(axis=0) - jobs)  # jobs with at least this much room
    full_at = (below + caps * rest >= counts).argmax(axis=0)  # first room the level does not exceed
    level = (counts - below[full_at, cols]) / rest[full_at, cols]
    return np.where(asked <= counts, saturating_level, level)


def fluid_gpus(workers: np.ndarray, throughput: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """GPUs of each type every job holds at one moment of the fluid schedule, all given jobs active. [J, T].

    ``throughput`` must already be 0 where a job cannot run (as ``fluid_finish_times`` makes it)."""
    workers = np.asarray(workers, dtype=np.float64)
    classes = _JobClasses(workers, np.asarray(throughput, dtype=np.float64))
    members = np.bincount(classes.of_job, minlength=classes.size).astype(np.float64)
    gpus = fair_gpus(classes.gang, classes.usable, classes.order, classes.rank, members,
                     np.asarray(counts, dtype=np.float64), classes.saturating_level)
    return gpus[classes.of_job]
