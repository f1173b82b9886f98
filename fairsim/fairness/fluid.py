"""The fluid max-min fair schedule of a trace: a policy-independent reference for finish-time fairness.

At every moment each arrived, unfinished job is offered an equal share of every GPU type. A
gang of d workers given s_k GPUs of type k can run there a fraction s_k / d of the time, and it
runs on one type at a time, so its fractions sum to at most 1; it fills them fastest type first
(the convention of ``fairsim.fairness.share.share_rate``). What a job cannot use is shared among the
others: per type, water-filling to a level s_k, so that every job gets min(s_k, what it can still
use of k) and the type is either full or every job on it is saturated. A job's use of a type
depends on the levels of its faster types, so the levels are the least fixed point of the
per-type water-filling (found by iterating from a lower bound, Y_k / number of jobs able to use
type k; with one speed order shared by all jobs this takes at most T + 1 passes). With no unused
share to pass on, every level is Y_k / N and a job's rate is its isolated rate on a 1/N share.

Rates are constant between events (arrivals and fluid completions), so the schedule is advanced
event by event and completion times are exact. Jobs with the same gang size and throughput row
are interchangeable and get the same rate, so the allocation is solved per such class: each event
costs O(classes x types), not O(active jobs). Classes with the same gang size and speed order (a
kind) have the same room on every type, so rooms are worked out per kind, and a type's
water-filling passes over the classes of one room as a group. An event touches a few dozen
numbers, so the arithmetic runs on plain Python floats (numpy calls on arrays that small cost more
than the arithmetic) in a fixed order: each type's rooms sorted (equal rooms: by class) and summed
cumulatively in that order. A comparison is taken from a cheaper sum only where a rounding bound
makes its answer certain, so the results are reproducible to the bit. They depend only on the
arrays passed in (arrival, work, workers, throughput per type, type counts), never on a policy's run.
"""

from __future__ import annotations

import heapq
import math
from bisect import insort
from functools import reduce
from itertools import chain
from operator import add, mul, sub
from typing import NamedTuple

import numpy as np

from fairsim.errors import require

SOURCE = "fluid fair share"
_FINISH_RTOL = 1e-12  # a job is done when its class's progress reaches its target to this relative precision
_MAX_PASSES = 10_000
_UNIT_ROUNDOFF = 2.0**-53  # the largest relative error of one float64 operation


def fluid_finish_times(
    arrival: np.ndarray, work: np.ndarray, workers: np.ndarray, throughput: np.ndarray, counts: np.ndarray
) -> np.ndarray:
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
    require(
        tput.shape == (n_jobs, len(counts)),
        SOURCE,
        "throughput",
        f"must be [jobs, types] = [{n_jobs}, {len(counts)}], got {list(tput.shape)}",
    )
    require(
        work.shape == (n_jobs,) and workers.shape == (n_jobs,),
        SOURCE,
        "work",
        "work and workers need one entry per job",
    )
    finish = np.full(n_jobs, np.nan)
    if n_jobs == 0:
        return finish
    require(
        bool(np.isfinite(arrival).all() and (work >= 0).all() and (workers >= 1).all()),
        SOURCE,
        "work",
        "arrivals must be finite, work >= 0 and workers >= 1",
    )
    # a gang cannot run on a type with fewer GPUs than workers (as in JobSet.feasible)
    tput = np.where((tput > 0) & np.isfinite(tput) & (workers[:, None] <= counts[None, :]), tput, 0.0)
    runnable = (tput > 0).any(axis=1)
    require(
        bool(runnable.all()),
        SOURCE,
        "throughput",
        f"job at row {int(np.argmin(runnable))} cannot run on any GPU type (throughput 0 or too few GPUs everywhere)",
    )

    classes = _JobClasses(workers, tput)
    share = _FairShare(classes, counts)
    # the loop handles a few numbers per event: plain Python floats cost less than numpy calls on tiny
    # arrays, and their arithmetic is the same IEEE double arithmetic
    by_arrival = np.argsort(arrival, kind="stable")
    arrivals, arriving = arrival[by_arrival].tolist(), by_arrival.tolist()
    class_of, work_of = classes.of_job.tolist(), work.tolist()
    progress = [0.0] * classes.size  # work units done by each job of the class since t = 0 (all share one rate)
    head = [math.inf] * classes.size  # the smallest progress target among the class's active jobs
    targets: list[list[tuple[float, int]]] = [[] for _ in range(classes.size)]
    t, nxt, done = arrivals[0], 0, 0
    while done < n_jobs:
        while nxt < n_jobs and arrivals[nxt] <= t:
            j = arriving[nxt]
            c = class_of[j]
            heapq.heappush(targets[c], (progress[c] + work_of[j], j))
            head[c] = targets[c][0][0]
            share.join(c)
            nxt += 1
        next_arrival = arrivals[nxt] if nxt < n_jobs else math.inf
        active = share.active
        if not active:
            t = next_arrival
            continue
        rate = share.rates()
        # time to each class's next completion (r > 0: see fair_levels); a progress past its target counts as 0
        until_done = [(left if (left := head[c] - progress[c]) >= 0.0 else 0.0) / r for c, r in zip(active, rate)]
        step = min(until_done)
        if next_arrival < t + step:
            dt = next_arrival - t
            for c, r in zip(active, rate):
                progress[c] += r * dt
            t = next_arrival
            continue
        first = active[until_done.index(step)]
        reached = []
        for c, r in zip(active, rate):
            progress[c] += r * step
            if head[c] <= progress[c] + _FINISH_RTOL * abs(head[c]) or c == first:
                reached.append(c)
        progress[first] = head[first]  # exact for the job that defines the event
        t += step
        for c in reached:
            heap = targets[c]
            while heap and heap[0][0] <= progress[c] + _FINISH_RTOL * abs(heap[0][0]):
                _, j = heapq.heappop(heap)
                finish[j] = t
                share.leave(c)
                done += 1
            head[c] = heap[0][0] if heap else math.inf
            if not heap:
                progress[c] = 0.0  # restart the clock: targets stay small next to the work they hold
    return finish


class _Kind(NamedTuple):
    """Job classes with the same gang size and the same usable types in the same speed order: a job of
    any of them has the same room on every type."""

    gang: float
    fastest_first: tuple[int, ...]  # the usable types, fastest first (equal speeds: lower type index first)


class _JobClasses:
    """Jobs grouped by (workers, throughput row) into classes, and the classes into kinds."""

    def __init__(self, workers: np.ndarray, tput: np.ndarray):
        rows, self.of_job = np.unique(np.column_stack([workers, tput]), axis=0, return_inverse=True)
        self.of_job = self.of_job.reshape(-1)
        self.size = len(rows)
        self.tput = rows[:, 1:]
        # fastest first; unusable types (0) last, so they never count as "faster"
        order = np.argsort(-self.tput, axis=1, kind="stable")
        ids: dict[_Kind, int] = {}
        self.kind_of = [
            ids.setdefault(_Kind(float(g), tuple(o[row[o] > 0].tolist())), len(ids))
            for g, o, row in zip(rows[:, 0], order, self.tput)
        ]
        self.kinds = list(ids)
        self.saturating_level = float(rows[:, 0].max())  # no gang uses more GPUs of a type than its workers


class _FairShare:
    """The max-min fair share of the jobs present, kept up to date as jobs join and leave.

    Every class stays in the water-filling's ``_Column``s, with 0 jobs while it has none: the columns
    are built once, and a job joining or leaving changes one count in each."""

    def __init__(self, classes: _JobClasses, counts: np.ndarray):
        self.classes = classes
        self.counts = np.asarray(counts, dtype=np.float64).tolist()
        self.members = [0] * classes.size  # jobs of each class
        self.kind_jobs = [0] * len(classes.kinds)
        self.active: list[int] = []  # the classes with jobs, ascending
        self.jobs_total = 0.0
        self.prefixes = _Prefixes([kind.fastest_first for kind in classes.kinds])
        # a kind's room on a type follows from its gang and the prefix of its order that ends with the type
        self.ends = [list(zip(kind.fastest_first, nodes)) for kind, nodes in zip(classes.kinds, self.prefixes.of_order)]
        node_at = [dict(ends) for ends in self.ends]
        classes_of_kind: list[list[int]] = [[] for _ in classes.kinds]
        for c, kind in enumerate(classes.kind_of):
            classes_of_kind[kind].append(c)
        # a relative gap wider than the rounding of any sum over the classes (see fair_levels)
        margin = 1.0 - 8 * (classes.size + 8) * _UNIT_ROUNDOFF
        self.columns = [
            _Column(
                [(kind.gang, at[k]) if k in at else None for kind, at in zip(classes.kinds, node_at)],
                classes_of_kind,
                margin,
            )
            for k in range(len(self.counts))
        ]
        self._kind_of = np.array(classes.kind_of)
        self._chosen: tuple[np.ndarray, np.ndarray] | None = (
            None  # the active classes' kinds and throughputs (None: to take)
        )

    def join(self, c: int) -> None:
        if not self.members[c]:
            insort(self.active, c)
            self._chosen = None
        self._count(c, +1)

    def leave(self, c: int) -> None:
        self._count(c, -1)
        if not self.members[c]:
            self.active.remove(c)
            self._chosen = None

    def _count(self, c: int, change: int) -> None:
        self.members[c] += change
        self.kind_jobs[self.classes.kind_of[c]] += change
        self.jobs_total += change  # whole numbers: exact
        for column in self.columns:
            column.set_jobs(c, float(self.members[c]), change)

    def rates(self) -> list[float]:
        """Work units/s of one job of each active class."""
        kind_row, tput = self._active_rows()
        # np.add.reduce is what ndarray.sum calls, without its Python wrapper (the same sums)
        return np.add.reduce(np.array(self._holdings(per_worker=True)).take(kind_row, axis=0) * tput, axis=1).tolist()

    def gpus(self) -> np.ndarray:
        """GPUs of each type one job of each active class holds. [A, T]."""
        kind_row, _ = self._active_rows()
        return np.array(self._holdings(per_worker=False)).take(kind_row, axis=0)

    def _holdings(self, per_worker: bool) -> list[list[float]]:
        """GPUs of each type one job of each kind holds, min(level, room), or per worker: the fraction
        of time it runs there (a kind's classes share its gang, so this is each class's gpus / gang)."""
        level, faster = fair_levels(
            self.prefixes, self.columns, self.jobs_total, self.counts, self.classes.saturating_level
        )
        held = []
        for (gang, _), ends, jobs in zip(self.classes.kinds, self.ends, self.kind_jobs):
            row = [0.0] * len(level)  # 0 where the kind cannot run (or has no jobs: not asked for)
            per = gang if per_worker else 1.0  # dividing by 1.0 changes nothing
            for k, node in ends if jobs else ():
                left = gang - faster[node]
                room = left if left >= 0.0 else 0.0
                row[k] = (share if (share := level[k]) <= room else room) / per  # the smaller, as np.minimum picks it
            held.append(row)
        return held

    def _active_rows(self) -> tuple[np.ndarray, np.ndarray]:
        if self._chosen is None:  # most events keep the set of active classes
            chosen = np.array(self.active)
            self._chosen = (self._kind_of[chosen], self.classes.tput[chosen])
        return self._chosen


class _Prefixes:
    """The kinds' speed orders as a tree of their prefixes: a job's room on type k is what its gang has
    left after its share of every type before k in its order, and orders share prefixes."""

    def __init__(self, orders: list[tuple[int, ...]]):
        self.nodes: list[tuple[int, int]] = []  # (parent node, -1 at the root; last type), parents first
        ids: dict[tuple[int, int], int] = {}
        self.of_order: list[list[int]] = []  # each order's nodes, one per type
        for order in orders:
            nodes: list[int] = []
            for k in order:
                parent = nodes[-1] if nodes else -1
                node = ids.setdefault((parent, k), len(ids))
                if node == len(self.nodes):
                    self.nodes.append((parent, k))
                nodes.append(node)
            self.of_order.append(nodes)

    def faster(self, level: list[float]) -> list[float]:
        """For each prefix, the shares (``level``) of its types but the last: the running sum less the
        last term, as cumsum - x gives it along one job's order (bit for bit)."""
        running = [0.0] * (len(self.nodes) + 1)  # the root's at [-1]
        faster = [0.0] * len(self.nodes)
        for node, (parent, k) in enumerate(self.nodes):
            share = level[k]
            running[node] = total = running[parent] + share
            faster[node] = total - share
        return faster


class _Column:
    """One type's view of the job classes: how many jobs cannot use it, and the others in groups that
    always have the same room there (same gang, same faster types in the same order), each with its
    room's recipe (gang, prefix node), its classes (ascending) and their numbers of jobs."""

    def __init__(self, recipes: list[tuple[float, int] | None], classes_of_kind: list[list[int]], margin: float):
        """``recipes``: each kind's (gang, prefix node) on the type, None if it cannot use the type."""
        self.margin = margin  # x <= count * margin: every class-by-class sum near x is below count
        kinds_of: dict[tuple[float, int] | None, list[int]] = {}  # kinds by recipe: a group's classes
        for kind, recipe in enumerate(recipes):
            kinds_of.setdefault(recipe, []).append(kind)
        self.unusable = 0.0
        self.slot: dict[
            int, tuple[int, int] | None
        ] = {}  # each class's (group, index in it); None: cannot use the type
        self.recipes: list[tuple[float, int]] = []
        self.classes: list[list[int]] = []
        self.jobs: list[list[float]] = []
        self.totals: list[float] = []
        for recipe, kinds in kinds_of.items():
            classes = sorted(chain.from_iterable(classes_of_kind[kind] for kind in kinds))
            if recipe is None:
                self.slot.update(dict.fromkeys(classes))
                continue
            self.slot.update((c, (len(self.recipes), i)) for i, c in enumerate(classes))
            self.recipes.append(recipe)
            self.classes.append(classes)
            self.jobs.append([0.0] * len(classes))
            self.totals.append(0.0)

    def set_jobs(self, c: int, n: float, change: int) -> None:
        slot = self.slot[c]
        if slot is None:
            self.unusable += change
        else:
            g, i = slot
            self.jobs[g][i] = n
            self.totals[g] += change

    def level(
        self, rooms: list[float], asked: float, jobs_total: float, count: float, saturating_level: float
    ) -> float:
        """This type's new water level, given each group's room on it and the GPUs the jobs ask for,
        summed group by group (see ``fair_levels``)."""
        # the classes in the order of a stable sort on room (equal rooms: by class); no room, nothing held
        no_room, groups = self.unusable, []
        for g in sorted(range(len(rooms)), key=rooms.__getitem__):
            room = rooms[g]
            if not room:
                no_room += self.totals[g]
            elif groups and groups[-1][0] == room:  # equal rooms by coincidence: the classes interleave
                _, jobs, classes, total = groups[-1]
                merged = sorted(chain(zip(classes, jobs), zip(self.classes[g], self.jobs[g])))
                groups[-1] = (room, [n for _, n in merged], [c for c, _ in merged], total + self.totals[g])
            else:
                groups.append((room, self.jobs[g], self.classes[g], self.totals[g]))
        if asked * self.margin < count and _asked_exactly(groups) <= count:  # not surely more: sum exactly
            return saturating_level
        return _water_level(no_room, groups, jobs_total, count, self.margin)


def _asked_exactly(groups: list[tuple[float, list[float], list[int], float]]) -> float:
    """The GPUs the groups' classes ask for, added class by class in order, as the last term of a
    cumulative sum (classes with no room add 0 and are left out)."""
    asked = 0.0
    for room, jobs, _, _ in groups:
        asked = reduce(add, map(room.__mul__, jobs), asked)
    return asked


def fair_levels(
    prefixes: _Prefixes, columns: list[_Column], jobs_total: float, counts: list[float], saturating_level: float
) -> tuple[list[float], list[float]]:
    """Each type's water level, and the faster types' shares for each prefix (``_Prefixes.faster``) at
    that level: a job holds min(level, room) GPUs of a type.

    ``saturating_level`` (>= every gang size) stands for "no limit" on a type. Levels only rise from
    their start, and a job's room on its fastest type is its gang, so every active job gets a positive
    rate."""
    # a lower bound of the fixed point: iteration only raises it
    able = [jobs_total - column.unusable for column in columns]  # whole numbers: exact
    level = [min(count / n, saturating_level) if n > 0 else saturating_level for count, n in zip(counts, able)]
    filled_for: list[list[float] | None] = [None] * len(counts)  # the rooms each type's new level was found for
    new = [0.0] * len(counts)
    for _ in range(_MAX_PASSES):
        faster = prefixes.faster(level)
        for k, column in enumerate(columns):
            rooms = [left if (left := gang - faster[node]) >= 0.0 else 0.0 for gang, node in column.recipes]
            if rooms != filled_for[k]:  # a type's level depends only on the rooms on it
                filled_for[k] = rooms
                # Most types are saturated by a wide margin. The GPUs asked for, summed group by group,
                # and the class-by-class sum the saturation test takes are both within (classes + 1) *
                # 2^-53 of the exact sum: below count * margin, the test surely passes.
                asked = sum(map(mul, rooms, column.totals))
                if asked <= counts[k] * column.margin:
                    new[k] = saturating_level
                else:
                    new[k] = column.level(rooms, asked, jobs_total, counts[k], saturating_level)
        rise = max(map(sub, new, level))
        if rise <= 0.0:  # mathematically non-decreasing: no rise means converged
            break
        level = list(map(max, new, level))
        if rise <= 1e-13 * saturating_level:
            faster = prefixes.faster(level)
            break
    return level, faster


def _water_level(
    no_room: float,
    groups: list[tuple[float, list[float], list[int], float]],
    jobs_total: float,
    count: float,
    margin: float,
) -> float:
    """One type's level s with sum_c members_c * min(s, room_c) = count, when the jobs ask for more than
    ``count``. ``no_room``: jobs with no room on the type; ``groups``: (room, numbers of jobs of its
    classes, the classes, their sum) by rising room.

    Class by class in that order (classes without jobs are not there), with cumulative sums: the
    level follows from the first class whose room it does not exceed."""
    held_cum, rest = 0.0, jobs_total  # GPUs held by the classes so far (each capped at its room); jobs from here on
    if no_room:  # they come first and hold nothing: the test below reads the same for each of them
        if held_cum >= count:
            return (count - held_cum) / rest
        rest -= no_room
    for room, jobs, _, total in groups:
        # Within a group (one room) the tested sum, below + room * rest, is mathematically one number;
        # computed, it varies by less than (classes + 8) * 2^-53 relative. Below count * margin at the
        # group's start, it stays below count for every class of the group: pass the group in one go.
        held = jobs[0] * room
        if ((held_cum + held) - held) + room * rest <= count * margin:
            held_cum = reduce(add, map(room.__mul__, jobs), held_cum)
            rest -= total
            continue
        for n in jobs:
            if not n:  # a class without jobs is not there
                continue
            held = n * room
            held_cum += held
            below = held_cum - held
            if below + room * rest >= count:  # the level does not exceed this room
                return (count - below) / rest
            rest -= n
    return count / jobs_total  # rounding failed every test: the first class is taken (below 0, all jobs left)


def fluid_gpus(workers: np.ndarray, throughput: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """GPUs of each type every job holds at one moment of the fluid schedule, all given jobs active. [J, T].

    ``throughput`` must already be 0 where a job cannot run (as ``fluid_finish_times`` makes it)."""
    classes = _JobClasses(np.asarray(workers, dtype=np.float64), np.asarray(throughput, dtype=np.float64))
    share = _FairShare(classes, counts)
    for c in classes.of_job.tolist():
        share.join(c)
    return share.gpus()[classes.of_job]
