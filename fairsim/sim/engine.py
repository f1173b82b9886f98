"""The simulation loop.

Each step: admit arrivals -> ask the policy for an assignment (job -> GPU type or -1) -> place on
hosts -> charge overheads (migration, restart after preemption, profiling) -> advance every
running job by its throughput, with the exact finish time inside the step -> record.

Two clocks (``sim.clock``): under ``rounds`` a step is one round of ``sim.round_len_s``; under
``events`` a step ends at the next arrival, the next completion or the next time the policy asked
to decide (``Policy.next_decision_s``), whichever comes first, so a freed GPU or a new job is used
at once. Overheads are charged the same way under both.

Job state is a struct of numpy arrays over all jobs (``_State``); per-step work touches only the
active jobs. Under rounds, a policy is asked again only when a job arrives or finishes or at the
time it declared its decision stands until (``Policy.next_decision_s``); the rounds in between
are applied in bulk (``fast_forward``): k rounds as one for event-driven policies, replayed with
the one-by-one arithmetic for the others.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pandas as pd

from fairsim.capacity_timeline import CapacityConfig
from fairsim.cluster import ClusterSpec
from fairsim.errors import InputError
from fairsim.policies.base import NOT_RUN, Allocation, Changes, Moves, Policy, PolicyView, decides_by_changes
from fairsim.sim.config import SimConfig
from fairsim.sim.invariants import RoundChecker
from fairsim.sim.outages import Outages
from fairsim.sim.overheads import job_costs, start_cost
from fairsim.sim.placement import HostPlacer, SiaRepacker
from fairsim.sim.running import CARRIED, RunningTable
from fairsim.sim.schedule import ScheduleRecorder
from fairsim.workload.jobs import JobSet
from fairsim.workload.trace import shown

# Steps in a row with jobs waiting, nothing running and nothing left to arrive, after which a run
# is stuck for good: every GPU is free then, so any policy that ever starts a waiting job has.
# (Gavel's reservations idle a few rounds at most, until its next recompute.)
STALLED_STEPS = 1000


class PolicyContractError(RuntimeError):
    """A policy returned an assignment that breaks the rules (a bug in the policy). Its message is
    one line naming the policy, the simulated time and, where one is at fault, the job (its
    trace job_id), the GPU type and why."""


@dataclass
class SimResult:
    jobs: pd.DataFrame  # one row per job
    rounds: pd.DataFrame  # one row per simulated round (a fast-forwarded stretch is one row)
    stats: dict  # engine and policy counters
    schedule: pd.DataFrame | None = None  # per (round, active job), with sim.record_schedule (fairsim.sim.schedule)


class _State:
    """Mutable per-job arrays, indexed by engine job index."""

    def __init__(self, n: int, num_types: int):
        # what a step adds to, side by side (a running job's row moves in and out in one piece):
        # work done, seconds run, GPU-seconds, overhead seconds still to pay before progress, overhead paid
        self.acc = np.zeros((n, len(CARRIED)))
        self.done, self.run_s, self.attained_gpu_s, self.penalty_left, self.overhead_s = (
            self.acc[:, CARRIED.index(name)] for name in CARRIED
        )
        self.finish = np.full(n, np.nan)
        self.first_start = np.full(n, np.nan)
        self.cur_type = np.full(n, NOT_RUN, dtype=np.int64)  # type in the previous round
        self.prev_type = np.full(n, NOT_RUN, dtype=np.int64)  # type of the most recent run
        self.gpu_s_by_type = np.zeros((n, num_types))
        self.migrations = np.zeros(n, dtype=np.int64)  # type switches + host moves
        self.type_switches = np.zeros(n, dtype=np.int64)
        self.switches_to_faster = np.zeros(n, dtype=np.int64)
        self.preemptions = np.zeros(n, dtype=np.int64)
        self.spread_rounds = np.zeros(n, dtype=np.int64)
        self.resizes = np.zeros(n, dtype=np.int64)  # an elastic job's GPU count changed on its type
        self.restarts = np.zeros(n, dtype=np.int64)  # starts after the first, and sim.replace=sia's split changes
        # switches and preemptions are logged per round and counted once at the end (integer
        # counts, order-free): a few numpy calls fewer in every round that has any
        self.switch_log: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []  # (jobs, from type, to type)
        self.stop_log: list[np.ndarray] = []

    def count_logged(self, tput_packed: np.ndarray, count_migrations: bool) -> None:
        """Fold the logs into the per-job counters (``count_migrations``: every type switch is a
        migration, i.e. no host placement counts them itself)."""
        n = len(self.preemptions)
        if self.stop_log:
            self.preemptions += np.bincount(np.concatenate(self.stop_log), minlength=n)
        if self.switch_log:
            jobs, from_type, to_type = (np.concatenate(part) for part in zip(*self.switch_log))
            switches = np.bincount(jobs, minlength=n)
            self.type_switches += switches
            if count_migrations:
                self.migrations += switches
            faster = tput_packed[jobs, to_type] > tput_packed[jobs, from_type]
            self.switches_to_faster += np.bincount(jobs[faster], minlength=n)
        self.switch_log, self.stop_log = [], []


class Engine:
    """``until``: engine job indices whose completion ends the run (None: every job's); jobs
    still active then keep a NaN finish time."""

    def __init__(
        self,
        jobs: JobSet,
        cluster: ClusterSpec,
        policy: Policy,
        config: SimConfig,
        seed: int = 0,
        until: np.ndarray | None = None,
        progress: Callable[[int], None] | None = None,
        capacity: CapacityConfig | None = None,
    ):
        self.jobs, self.cluster, self.policy, self.cfg, self.seed = jobs, cluster, policy, config, seed
        self.progress = progress  # called with the number of awaited jobs that finished in a round (display only)
        n = len(jobs)
        self.awaited = np.ones(n, dtype=bool)  # the jobs whose completion ends the run
        if until is not None:
            self.awaited[:] = False
            self.awaited[until] = True
        self.s = _State(n, cluster.num_types)
        self.table = RunningTable()
        self.migration_cost, self.restart_cost, self.first_cost = job_costs(jobs.state_bytes, cluster, config.overheads)
        # nothing to charge (e.g. sim=gavel_compat): rounds skip the penalty bookkeeping
        self.costless = not (np.any(self.migration_cost) or np.any(self.restart_cost) or np.any(self.first_cost))
        # GPUs each job holds when it runs: its gang, or the count a policy gave an elastic job
        self.gang = jobs.workers.copy()
        elastic = jobs.elastic
        self.elastic = None if elastic is None or not elastic.elastic.any() else elastic.elastic
        widest = (
            int(jobs.workers.max()) if self.elastic is None else int(max(jobs.workers.max(), elastic.max_gpus.max()))
        )
        sia = config.replace != "keep"
        self.placer = HostPlacer(cluster, n, widest, config.consolidate and not sia) if config.placement else None
        self.repacker = SiaRepacker(cluster, self._node_gpus(config), n, config.replace) if sia else None
        self._running_changed = False  # sim.replace=sia: jobs started or left since the last re-placement
        self.capacity = cluster.counts.astype(np.int64)
        self.capacity.setflags(write=False)  # handed to every view
        self._capacity_or_idle = np.r_[np.inf, self.capacity]  # GPUs per bincount(type + 1) slot
        self.used = np.zeros(cluster.num_types, dtype=np.int64)  # GPUs the running jobs hold, per type
        self.busy_gpus = 0  # their sum
        self.outages = None if capacity is None or not capacity.changes else Outages(self, capacity)
        self.checker = RoundChecker() if config.check else None
        self.recorder = ScheduleRecorder(cluster.gpu_types) if config.record_schedule else None
        self.by_changes = decides_by_changes(policy)
        # the active jobs (arrived, not finished), in arrival order, built when something reads them
        self.is_active = np.zeros(n, dtype=bool)
        self.n_active = 0
        self._active = np.empty(0, dtype=np.int64)
        self._active_behind = False  # jobs arrived or finished since _active was built
        self._arrived_since: list[np.ndarray] = []  # since the previous decision
        self._finished_since: list[np.ndarray] = []
        self._evicted_since: list[np.ndarray] = []
        self._stale = False  # the running jobs' rows moved on since the per-job arrays were written
        self._consolidated = np.empty(0, dtype=np.int64)  # jobs moved onto fewer hosts in the previous step
        self._static_for: np.ndarray | None = None  # the active array the cached view fields belong to
        self._static: dict = {}  # view fields fixed while the active set is
        self._costs: dict = {}  # per-job inputs of the switch costs, same lifetime
        self._row_index = np.arange(0)
        # what policies believe each job's total work is (profiling error); the engine runs the truth
        err = config.profile_error
        noise = np.random.default_rng([seed, 0xF1]).uniform(1 - err, 1 + err, n) if err > 0 else 1.0
        self.work_seen = jobs.work * noise
        # whole-trace arrays an incremental policy reads (Changes), read-only
        self._whole = {
            name: _read_only(a)
            for name, a in (
                ("current_type", self.s.cur_type),
                ("arrival", jobs.arrival),
                ("workers", jobs.workers),
                ("weight", jobs.weight),
                ("throughput", jobs.tput_packed),
                ("feasible", jobs.feasible),
            )
        }

    # ---- the loop -------------------------------------------------------------------------
    def run(self) -> SimResult:
        cfg, jobs = self.cfg, self.jobs
        n = len(jobs)
        self.policy.reset(self.cluster, n, self.seed)
        on_grid = cfg.round_origin == "zero" and cfg.clock == "rounds"
        t = self._first_round_at(float(jobs.arrival[0])) if on_grid else float(jobs.arrival[0])
        next_arrival = 0
        changed = True
        rows: list[tuple] = []
        policy_calls = 0
        rounds = 0
        bulk_rounds = 0  # rounds applied in bulk, their decision standing (fast-forward, replay)
        arrivals = jobs.arrival.tolist()
        awaited_left = int(self.awaited.sum())
        next_arrival_s = arrivals[0] if n else np.inf  # Python floats: most rounds admit nobody
        events = cfg.clock == "events"
        wake_s = math.inf  # events: when the policy asked to decide again
        # events with sim.min_gap_s: no decision before hold_until; a decision due sooner is held
        # (held: since when nothing else woke the engine; held_changed: a job arrived or finished meanwhile)
        hold_until, held, held_changed = -math.inf, False, False
        idle_steps = 0  # consecutive steps in which no job ran and none was left to arrive
        no_moves = (np.empty(0, dtype=np.int64), np.empty(0, dtype=np.int64), None)
        wall0 = time.perf_counter()
        while awaited_left and (next_arrival < n or self.n_active):
            if rounds >= cfg.max_rounds:  # the safety stop: an error, never a silent truncation
                raise InputError(
                    "sim",
                    "max_rounds",
                    f"the run stopped after {cfg.max_rounds} steps at t={t:.0f} s with "
                    f"{self.n_active} jobs still active; raise sim.max_rounds (a policy that leaves jobs waiting "
                    "forever ends here too)",
                )
            if not self.n_active and next_arrival < n:  # idle cluster: jump to the next arrival
                t = max(t, self._first_round_at(next_arrival_s) if on_grid else next_arrival_s)
            if self.outages is not None and self.outages.next_s <= t:  # hosts leave or return: decide at once
                self._outage(t)
                changed = True
            if next_arrival_s <= t:
                k = int(np.searchsorted(jobs.arrival, t, side="right"))
                self._admit(next_arrival, k)
                next_arrival = k
                next_arrival_s = arrivals[k] if k < n else np.inf
                changed = True
            if not events and not changed and self._can_fast_forward():
                skipped = self._fast_forward(t, next_arrival)
                if skipped:
                    span = skipped * cfg.round_len_s
                    if self.recorder is not None:
                        self._record_schedule(t, span, skipped, 0.0, np.full(len(self.table), span))
                    rows.append((t, span, skipped, self.n_active, len(self.table), float(self.busy_gpus), False, 0.0))
                    t += span
                    rounds += skipped
                    bulk_rounds += skipped
                    continue
            if not events and not changed and t < wake_s and self._can_skip_rounds():
                replayed = self._replay_rounds(
                    t, min(next_arrival_s, wake_s), cfg.max_rounds - rounds, self._next_outage_s()
                )
                if replayed:
                    rows += replayed
                    t = replayed[-1][0] + cfg.round_len_s
                    rounds += len(replayed)
                    bulk_rounds += len(replayed)
                    continue
            # rounds: a policy is asked again at an arrival or completion, or at the first round
            # that starts at or after the time it declared its decision stands until (``_round_wake``)
            due = changed or held or (t >= wake_s if not events else not self.policy.event_driven or wake_s <= t)
            if due and t < hold_until:
                held, held_changed = True, held_changed or changed
                moves, decided, policy_s = no_moves, False, 0.0  # the previous decision stands until the gap ends
            elif due:
                moves, policy_s, wake_s = self._decide(t, changed or held_changed, events)
                decided, held, held_changed = True, False, False
                policy_calls += 1
                hold_until = t + cfg.min_gap_s
            else:
                moves, decided, policy_s = no_moves, False, 0.0  # an event-driven policy's decision reused
            limit = min(next_arrival_s, wake_s, hold_until if held else math.inf) - t if events else cfg.round_len_s
            limit = min(limit, self._next_outage_s() - t)  # an outage ends the step, as an arrival ends an event's
            duration, finished = self._step(t, moves, limit)
            rows.append((t, duration, 1, self.n_active, self._last_running, self._last_busy_gpus, decided, policy_s))
            if self.checker is not None:
                self._check(finished)
            t += duration
            rounds += 1
            waiting_for_hosts = self.outages is not None and self.outages.any_down()
            idle_steps = 0 if self._last_running or next_arrival < n or waiting_for_hosts else idle_steps + 1
            if idle_steps == STALLED_STEPS:
                raise self._stalled(t, self.n_active)
            changed = finished is not None
            if changed:
                done = int(np.count_nonzero(self.awaited[finished]))
                awaited_left -= done
                if self.progress is not None:
                    self.progress(done)
                self._retire(finished)
        wall = time.perf_counter() - wall0
        self._sync()
        stats = {
            "rounds": rounds,
            "policy_calls": policy_calls,
            "bulk_rounds": bulk_rounds,
            "sim_wall_s": wall,
            "unarrived_jobs_at_end": n - int(np.searchsorted(jobs.arrival, t, side="right")),
            **self.policy.stats(),
        }
        if self.outages is not None:
            stats.update(self.outages.stats(t))
        schedule = None if self.recorder is None else self.recorder.table(jobs.job_id)
        rounds_table = pd.DataFrame(rows, columns=_ROUND_COLUMNS)
        if self.outages is not None:
            rounds_table["capacity_gpus"] = self.outages.capacity_at(rounds_table["t_s"].to_numpy())
        return SimResult(self._job_table(), rounds_table, stats, schedule)

    # ---- the active set ---------------------------------------------------------------------
    def _admit(self, lo: int, hi: int) -> None:
        arrived = np.arange(lo, hi)
        self.is_active[lo:hi] = True
        self.n_active += hi - lo
        self._arrived_since.append(arrived)
        self._active_behind = True

    def _retire(self, finished: np.ndarray) -> None:
        self.is_active[finished] = False
        self.n_active -= len(finished)
        self._finished_since.append(finished)
        self._active_behind = True
        if self.placer is not None:  # after the step's checks and records, which still see their hosts
            self.placer.vacate(finished, churn=True)

    def _active_ids(self) -> np.ndarray:
        """The active jobs in arrival order: one array object while the set stays the same (views
        and policies recognise an unchanged set by it)."""
        if self._active_behind:
            kept = self._active[self.is_active[self._active]]
            top = int(kept[-1]) + 1 if len(kept) else 0
            newer = (
                np.flatnonzero(self.is_active[top:]) + top if self.n_active > len(kept) else np.empty(0, dtype=np.int64)
            )
            self._active = np.concatenate([kept, newer])
            self._active.setflags(write=False)
            self._active_behind = False
        return self._active

    def _sync(self) -> None:
        """Write the running jobs' rows back to the per-job arrays before anything reads them."""
        if self._stale:
            self.table.flush(self.s)
            self._stale = False

    # ---- deciding ---------------------------------------------------------------------------
    def _decide(self, t: float, changed: bool, events: bool) -> tuple[tuple, float, float]:
        """Ask the policy; returns the moves (the jobs whose type or GPU count changes, their new
        types, and their GPU counts or None for their gangs), the policy's seconds, and the time
        it asked to decide again (events; inf otherwise)."""
        if self.by_changes:
            changes = self._changes(t, changed)
            tick = time.perf_counter()
            answer = self.policy.decide_changes(changes)
            policy_s = time.perf_counter() - tick
            moves = (*self._check_moves(t, answer), None)
            wake = self.policy.default_wake_s(t, self.cfg.round_len_s) if answer.wake_s is None else answer.wake_s
            wake_s = self._checked_wake(t, float(wake)) if events else self._round_wake(t, float(wake))
        else:
            active = self._active_ids()
            view = self._view(t, active, changed)
            tick = time.perf_counter()
            answer = self.policy.decide(view)
            policy_s = time.perf_counter() - tick
            sized = isinstance(answer, Allocation)  # the policy chose GPU counts too
            gpus = self._check_gpus(active, np.asarray(answer.types), np.asarray(answer.gpus), view) if sized else None
            assignment = self._check_assignment(active, np.asarray(answer.types if sized else answer), view, gpus)
            wake = float(self.policy.next_decision_s(view, assignment))
            wake_s = self._checked_wake(t, wake) if events else self._round_wake(t, wake)
            cur = self.s.cur_type[active]
            if self.elastic is None:  # every job runs on its gang
                rows = np.flatnonzero(assignment != cur)
                moves = (active[rows], assignment[rows], None)
            else:  # a job that keeps its type but not its GPU count moves too
                gpus = self.jobs.workers[active] if gpus is None else gpus
                rows = np.flatnonzero((assignment != cur) | ((cur >= 0) & (gpus != self.gang[active])))
                moves = (active[rows], assignment[rows], gpus[rows])
        self._arrived_since, self._finished_since, self._evicted_since = [], [], []
        return moves, policy_s, wake_s

    def _changes(self, t: float, changed: bool) -> Changes:
        free = self.capacity - self.used
        free.setflags(write=False)
        return Changes.assemble(
            dict(
                now=t,
                round_len=self.cfg.round_len_s,
                cluster=self.cluster,
                capacity=self.capacity,
                arrived=_joined(self._arrived_since),
                finished=_joined(self._finished_since),
                evicted=_joined(self._evicted_since),
                free=free,
                changed=changed,
                _remaining=self._remaining,
                _view=lambda: self._view(t, self._active_ids(), changed),
                **self._whole,
            )
        )

    def _remaining(self, ids: np.ndarray) -> np.ndarray:
        """PolicyView.remaining of some jobs, by the same arithmetic."""
        self._sync()
        done = self.s.done[ids]
        return np.maximum(self.work_seen[ids], done) - done

    def _round_wake(self, now: float, wake: float) -> float:
        """Under rounds: from when the engine asks the policy again though no job arrived or
        finished. A policy that keeps the default (one round after the decision) or names any time
        up to the next round is asked every round (-inf): a round can end early (``latest_finish``)
        and must not postpone it. A later time is taken a millionth of itself early: the policy's
        crossing times and the engine's clock are sums rounded differently, and asking early only
        repeats a decision (the policy said nothing changes before then), while asking late could
        miss a change a round-by-round run would see."""
        if not wake > now + self.cfg.round_len_s:  # also NaN
            return -math.inf
        return wake - 1e-6 * abs(wake) if math.isfinite(wake) else wake

    def _checked_wake(self, now: float, wake: float) -> float:
        if not wake > now:  # also NaN
            raise self._broken(now, f"asked to decide again at {wake!r}, not after now ({now!r})")
        return wake

    # ---- one step -------------------------------------------------------------------------
    def _step(self, t: float, moves: tuple, limit: float) -> tuple[float, np.ndarray | None]:
        """Apply the decision's moves, then run one step of at most ``limit`` seconds (a round, or
        the time to the next arrival or policy wake-up); returns its duration and the jobs that
        finished in it (None if none)."""
        cfg, table = self.cfg, self.table
        self._respread()
        started, kept_gpus = self._apply(t, *moves)
        if self.repacker is not None:
            if self._running_changed:
                self._repack(t, started)
        elif self.placer is not None and len(table):
            self._settle_hosts(t, started, kept_gpus)
        if self._elastic_running():
            self._refresh_goodput(t)
            limit = min(limit, cfg.round_len_s)  # goodput follows progress at least once a round
        self._last_running, self._last_busy_gpus = len(table), float(self.busy_gpus)
        if cfg.clock == "events":
            duration, pay, busy, finishing = table.advance_to_event(limit, self.costless)
            if not math.isfinite(duration):
                raise PolicyContractError(
                    f"policy {type(self.policy).__name__} at t={t:.1f} s runs no job, no job arrives, "
                    "and it asks for no later decision: the run would never end"
                )
        else:
            duration, pay, busy, finishing = table.advance_round(
                limit, self.costless, cfg.integer_steps, cfg.round_end == "latest_finish"
            )
        self._stale = True
        if self.recorder is not None:
            self._record_schedule(t, duration, 1, pay, busy)
        if not np.count_nonzero(finishing):
            return duration, None
        rows = np.flatnonzero(finishing)
        done_now = table.ids[rows]
        table.done[rows] = table.work[rows]  # exact, no float residue
        self.s.finish[done_now] = t + busy[rows]
        if self.checker is not None:
            self._finished_types = table.types[rows][np.argsort(done_now)]  # for _check, in arrival order
        self._leave(rows, finished=True)
        return duration, done_now

    def _apply(self, t: float, ids: np.ndarray, types: np.ndarray, gpus: np.ndarray | None) -> tuple[np.ndarray, int]:
        """Stop, move and start jobs as the decision says: stopped, moved and resized jobs leave
        the running rows (a stopped job loses any unpaid overhead; its next start pays a restart),
        starting, moved and resized ones are placed on their GPU counts (``gpus``; None: their
        gangs), charged their overhead and counted. Returns the started jobs and the GPUs held
        by the jobs that kept running where they were."""
        s = self.s
        if not len(ids):
            return ids, self.busy_gpus
        cur = s.cur_type[ids]
        leaving = cur >= 0  # stopped or moved to another type
        if np.count_nonzero(leaving):
            self._leave(np.flatnonzero(np.isin(self.table.ids, ids[leaving], assume_unique=True)))
            stopped = ids[leaving & (types < 0)]
            if len(stopped):
                s.stop_log.append(stopped)
                if not self.costless:
                    s.penalty_left[stopped] = 0.0
        kept_gpus = self.busy_gpus
        starting = types >= 0
        run, new_type, was_type = ids[starting], types[starting], cur[starting]
        if len(run):
            if gpus is not None:
                resized = (was_type == new_type) & (gpus[starting] != self.gang[run])
                s.resizes[run[resized]] += 1
                self.gang[run] = gpus[starting]
            self._start(t, run, new_type, was_type)
        return run, kept_gpus

    def _start(self, t: float, run: np.ndarray, new_type: np.ndarray, was_type: np.ndarray) -> None:
        s, jobs = self.s, self.jobs
        if self.placer is not None:
            spread = self.placer.place_new(run, new_type, self.gang)
        else:
            spread = np.zeros(len(run), dtype=bool)
        first_run = np.isnan(s.first_start[run])
        s.restarts[run[~first_run]] += 1
        self._running_changed = True
        self._count_switches(run, new_type)
        if not self.costless:
            self._charge_starts(run, new_type, was_type, first_run)
        workers = self.gang[run]
        tput = np.where(spread, jobs.tput_spread[run, new_type], jobs.tput_packed[run, new_type])
        if self.elastic is not None:
            elastic = self.elastic[run]
            if elastic.any():
                tput[elastic] = self._rates(t, run[elastic], new_type[elastic], s.done[run[elastic]])
        self.table.add(s, run, new_type, tput, workers, jobs.work[run], spread)
        np.add.at(self.used, new_type, workers)
        self.busy_gpus += int(workers.sum())
        if np.count_nonzero(first_run):
            s.first_start[run[first_run]] = t
        s.cur_type[run] = new_type
        s.prev_type[run] = new_type
        if self.outages is not None:
            self.outages.restored(t, run, s.done[run], s.penalty_left[run])

    def _respread(self) -> None:
        """Jobs consolidated in the previous step onto fewer hosts than before but more than they
        need count as spread again (their rate and ``spread_rounds`` follow their hosts)."""
        if not len(self._consolidated):
            return
        ids = self._consolidated[self.s.cur_type[self._consolidated] >= 0]
        self._consolidated = ids[:0]
        rows = self.table.rows_of(ids)
        spread = self.placer.hosts_spanned(ids) > self.placer.min_hosts(self.gang[ids])
        self.table.spread[rows] = spread
        self.table.tput[rows] = np.where(
            spread,
            self.jobs.tput_spread[ids, self.table.types[rows]],
            self.jobs.tput_packed[ids, self.table.types[rows]],
        )

    def _leave(self, rows: np.ndarray, finished: bool = False) -> None:
        """Rows ``rows`` (ascending) stop running (finished, stopped or moving): written back and dropped."""
        table = self.table
        ids, types, workers = table.ids[rows], table.types[rows], table.workers[rows]
        table.remove(self.s, rows)
        self._running_changed = True
        self.s.cur_type[ids] = NOT_RUN
        np.subtract.at(self.used, types, workers)
        self.busy_gpus -= int(workers.sum())
        if self.placer is not None and not finished:  # a finished job's GPUs are freed when it retires
            self.placer.vacate(ids)

    def _count_switches(self, run: np.ndarray, new_type: np.ndarray) -> None:
        """Log type switches (also across a pause) of jobs starting on a type; with host placement
        each is a migration at once (the placer counts host moves)."""
        prev = self.s.prev_type[run]
        switched = (prev != new_type) & (prev >= 0)
        if np.count_nonzero(switched):
            moved = run[switched]
            if self.placer is not None:
                self.s.migrations[moved] += 1
            self.s.switch_log.append((moved, prev[switched], new_type[switched]))

    def _charge_starts(self, run, new_type, was_type, first_run) -> None:
        """Set the overhead seconds each starting, resuming or moved job pays before progress
        (``fairsim.sim.overheads``)."""
        s = self.s
        prev = s.prev_type[run]
        moved = was_type >= 0  # to another type, or resized on its own (a job that keeps both is not here)
        resumed = (was_type < 0) & (prev >= 0)
        cost = start_cost(
            self.migration_cost[run], self.restart_cost[run], self.first_cost[run], was_type, prev, first_run
        )
        charged = moved | resumed | (first_run & (self.first_cost[run] > 0))
        s.penalty_left[run[charged]] = cost[charged]

    def _settle_hosts(self, t: float, started: np.ndarray, kept_gpus: int) -> None:
        """After churn (jobs started, stopped or finished, or a job moved last step), move spread
        jobs onto fewer hosts where room opened up, smallest state first; a job moved so that
        kept its type pays a migration (a host move)."""
        table, jobs, placer = self.table, self.jobs, self.placer
        if not placer.settle(len(started) > 0, kept_gpus, self.busy_gpus):
            return
        rows = np.flatnonzero(table.spread)
        if not len(rows):
            return
        ids = table.ids[rows]
        moved = placer.consolidate_spread(ids, table.types[rows], self.gang, jobs.state_bytes)
        if not np.count_nonzero(moved):
            return
        rows, ids = rows[moved], ids[moved]
        # packed for this step; from the next one on, spread again if the free GPUs only allowed fewer hosts
        table.spread[rows] = False
        table.tput[rows] = jobs.tput_packed[ids, table.types[rows]]
        self._consolidated = ids
        host_moved = ~np.isin(ids, started, assume_unique=True)  # a job that started now pays for its start only
        if np.count_nonzero(host_moved):
            rows, ids = rows[host_moved], ids[host_moved]
            self.s.migrations[ids] += 1
            self.s.restarts[ids] += 1
            if not self.costless:
                kind = table.types[rows]
                table.penalty[rows] = start_cost(
                    self.migration_cost[ids],
                    self.restart_cost[ids],
                    self.first_cost[ids],
                    kind,
                    kind,
                    np.zeros(len(ids), dtype=bool),
                )
            if self.outages is not None:  # a host move saves the job's state: its new restore point
                self.outages.restored(t, ids, table.done[rows], table.penalty[rows])

    def _node_gpus(self, config: SimConfig) -> np.ndarray:
        """int [T]: GPUs per node for sim.replace=sia, the cluster's host size unless replace_host_gpus names the type."""
        sizes = np.full(self.cluster.num_types, self.cluster.gpus_per_host, dtype=np.int64)
        for name, size in config.replace_host_gpus.items():
            sizes[self.cluster.type_index(name, "sim", f"replace_host_gpus.{name}")] = size
        return sizes

    def _repack(self, t: float, started: np.ndarray) -> None:
        """sim.replace=sia: re-place every running job (``SiaRepacker``); a job that kept running
        on its type and GPUs but whose per-node split changed pays a restore and counts a restart
        (a job that started now pays its start only). Rates and spread follow the new splits."""
        self._running_changed = False
        table, jobs = self.table, self.jobs
        ids, types, gpus = table.ids, table.types, table.workers.astype(np.int64)
        changed = self.repacker.place(ids, types, gpus)
        if not len(ids):
            return
        hosts = self.repacker.hosts(ids, types, gpus)
        spread = hosts > -(-gpus // self.cluster.gpus_per_host)
        table.spread[:] = spread
        rigid = np.ones(len(ids), dtype=bool) if self.elastic is None else ~self.elastic[ids]
        table.tput[rigid] = np.where(spread, jobs.tput_spread[ids, types], jobs.tput_packed[ids, types])[rigid]
        changed &= ~np.isin(ids, started)
        if not np.count_nonzero(changed):
            return
        rows = np.flatnonzero(changed)
        moved = ids[rows]
        self.s.restarts[moved] += 1
        self.s.migrations[moved] += 1
        if not self.costless:
            kind = table.types[rows]
            table.penalty[rows] = start_cost(
                self.migration_cost[moved],
                self.restart_cost[moved],
                self.first_cost[moved],
                kind,
                kind,
                np.zeros(len(moved), dtype=bool),
            )
        if self.outages is not None:
            self.outages.restored(t, moved, table.done[rows], table.penalty[rows])

    # ---- hosts that leave and return ------------------------------------------------------------
    def _next_outage_s(self) -> float:
        return math.inf if self.outages is None else self.outages.next_s

    def _outage(self, t: float) -> None:
        """Outages that begin or end by ``t``: jobs on hosts that go down are evicted, hosts that
        come back are free, and the capacity views show is the up hosts' GPUs."""
        went, came, capacity = self.outages.pop(t)
        if len(went):
            self._evict(t, went)
            self.placer.take_down(went)
        if len(came):
            self.placer.bring_up(came)
        if capacity is not None:
            capacity.setflags(write=False)
            self.capacity = capacity
            self._capacity_or_idle = np.r_[np.inf, capacity]
            self._active_behind = True  # a new active array: a policy's caches keyed on it start over

    def _evict(self, t: float, hosts: np.ndarray) -> None:
        """Stop the running jobs with a worker on ``hosts`` (going down): each loses the work
        since its last checkpoint and any unpaid overhead; its next start pays a restart."""
        table, s = self.table, self.s
        if not len(table):
            return
        rows = np.flatnonzero(np.isin(self.placer.worker_host[table.ids], hosts).any(axis=1))
        if not len(rows):
            return
        ids = table.ids[rows].copy()
        lost, lost_gpu_s = self.outages.lost_work(t, ids, table.done[rows], table.tput[rows], table.workers[rows])
        self._leave(rows)
        s.done[ids] -= lost
        s.penalty_left[ids] = 0.0
        self.outages.evicted(ids, lost, lost_gpu_s)
        self._evicted_since.append(ids)

    # ---- elastic jobs ---------------------------------------------------------------------------
    def _elastic_running(self) -> bool:
        return self.elastic is not None and bool(self.elastic[self.table.ids].any())

    def _hosts(self, ids: np.ndarray, gpus: np.ndarray) -> np.ndarray:
        """Hosts the running jobs ``ids`` span (as few as hold ``gpus`` without placement)."""
        if self.repacker is not None and not self._running_changed:
            return self.repacker.hosts(ids, self.s.cur_type[ids], gpus)
        if self.placer is not None:
            return self.placer.hosts_spanned(ids)
        return -(-gpus // self.cluster.gpus_per_host)

    def _rates(self, t: float, ids: np.ndarray, types: np.ndarray, done: np.ndarray) -> np.ndarray:
        """Goodput of elastic jobs where they now run (their types, GPU counts and hosts)."""
        gpus = self.gang[ids]
        rate = self.jobs.elastic.model.rate(ids, types, gpus, self._hosts(ids, gpus), done)
        if not (rate > 0).all():
            j = int(np.flatnonzero(~(rate > 0))[0])
            raise self._broken(
                t,
                f"runs elastic job {int(self.jobs.job_id[ids[j]])} on {int(gpus[j])} GPUs of "
                f"{self.cluster.gpu_types[int(types[j])]}, where its goodput model gives no progress ({rate[j]!r})",
            )
        return rate

    def _refresh_goodput(self, t: float) -> None:
        """The running elastic jobs' rates at their progress now (statistical efficiency moves on)."""
        table = self.table
        rows = np.flatnonzero(self.elastic[table.ids])
        table.tput[rows] = self._rates(t, table.ids[rows], table.types[rows], table.done[rows])

    def _goodput(self, active: np.ndarray, rows, types, gpus, hosts) -> np.ndarray:
        """PolicyView.goodput: rigid jobs at their gang's throughput (packed or spread), elastic
        ones by the goodput model they tell the scheduler (ElasticJobs.told) at their progress now."""
        ids = active[rows]
        gph = self.cluster.gpus_per_host
        hosts = -(-gpus // gph) if hosts is None else np.asarray(hosts)
        jobs = self.jobs
        packed = hosts <= -(-gpus // gph)
        rate = np.where(
            (gpus == jobs.workers[ids]) & (types >= 0),
            np.where(packed, jobs.tput_packed[ids, types], jobs.tput_spread[ids, types]),
            0.0,
        )
        if self.elastic is not None:
            elastic = self.elastic[ids] & (types >= 0)
            if elastic.any():
                self._sync()
                e = ids[elastic]
                rate[elastic] = jobs.elastic.told.rate(e, types[elastic], gpus[elastic], hosts[elastic], self.s.done[e])
        return rate

    def _first_round_at(self, s: float) -> float:
        """round_origin=zero: the first round that sees a job arriving at s, the first multiple of
        the round length at or after s (the first one is a round length in: a fixed clock from 0
        decides at the end of its first interval)."""
        length = self.cfg.round_len_s
        return max(length, math.ceil(s / length) * length)

    # ---- fast-forward -----------------------------------------------------------------------
    def _can_fast_forward(self) -> bool:
        return self.policy.event_driven and self._can_skip_rounds()

    def _can_skip_rounds(self) -> bool:
        """Whether rounds in which nothing changes may be applied in bulk: whole rounds of fixed
        length, nothing owed, no per-round checks or records."""
        cfg = self.cfg
        return (
            cfg.fast_forward
            and not cfg.integer_steps
            and cfg.round_end == "fixed"
            and not cfg.check
            and self.n_active > 0
            and not self.table.penalty.any()
            and not self._elastic_running()  # goodput changes with progress: step by step
        )

    def _fast_forward(self, t, next_arrival) -> int:
        """Apply k unchanged rounds at once; k stops before the next arrival or finish."""
        table, jobs = self.table, self.jobs
        self._respread()
        L = self.cfg.round_len_s
        k = float(np.ceil(table.rounds_to_first_finish(L))) - 1  # min of ceilings = ceiling of the min
        if next_arrival < len(jobs):
            k = min(k, float(np.ceil((jobs.arrival[next_arrival] - t) / L)))
        if self.outages is not None:  # whole rounds that end by the next outage
            k = min(k, math.floor((self.outages.next_s - t) / L) if math.isfinite(self.outages.next_s) else k)
        if not np.isfinite(k) or k < 2:
            return 0
        k = int(k)
        table.advance_rounds(L, k)
        self._stale = True
        return k

    def _replay_rounds(self, t: float, until: float, most: int, ends_by: float = math.inf) -> list[tuple]:
        """The rounds from ``t`` on that start before ``until`` (the next arrival or the time the
        policy asked to decide again) and end by ``ends_by`` (the next outage), at most ``most``, in
        bulk and exactly as one by one (``RunningTable.replay_rounds``): the policy's decision
        stands through them. Stops before a round in which a job finishes. Returns their rows of
        the rounds table, one per round."""
        if not len(self.table) or self.recorder is not None:
            return []  # nothing runs (the loop's stall check sees it), or the schedule record keeps a row per round and job
        if len(self._consolidated) or (self.placer is not None and self.placer.would_settle(self.busy_gpus)):
            return []  # the next step re-places hosts: taken one by one
        L = self.cfg.round_len_s
        # a round more than the estimates, so that the exact checks (start < until; a finish) decide
        most = min(most, max(2, _REPLAY_SIZE // len(self.table)), self.table.rounds_to_first_finish(L) + 2)
        if math.isfinite(until):
            most = min(most, (until - t) / L + 2)
        if t + L > ends_by:
            return []
        starts = [t]
        while len(starts) < most and starts[-1] + L < until and starts[-1] + L + L <= ends_by:
            starts.append(starts[-1] + L)  # the clock's own sums, t += duration
        if len(starts) < 2:
            return []
        applied = self.table.replay_rounds(L, len(starts))
        if not applied:
            return []
        self._stale = True
        running, busy = len(self.table), float(self.busy_gpus)
        return [(start, L, 1, self.n_active, running, busy, False, 0.0) for start in starts[:applied]]

    # ---- views, checks, records ----------------------------------------------------------------
    def _view(self, t: float, active: np.ndarray, changed: bool) -> PolicyView:
        self._sync()
        s, jobs = self.s, self.jobs
        if self._static_for is not active:  # the active set changed: gather its fixed attributes once
            self._static = _frozen(
                dict(
                    job_id=active,
                    arrival=jobs.arrival[active],
                    workers=jobs.workers[active],
                    weight=jobs.weight[active],
                    throughput=jobs.tput_packed[active],
                    feasible=jobs.feasible[active],
                    state_bytes=jobs.state_bytes[active],
                    model_name=jobs.model_name[active],
                    **self._elastic_fields(active),
                )
            )
            # engine-side inputs (never shown to a policy, so not frozen); per-job costs only when charged
            self._costs = dict(
                work_seen=self.work_seen[active],
                none=_frozen_array(np.zeros((len(active), self.cluster.num_types))),
                feasible_or_idle=np.concatenate(
                    [self._static["feasible"], np.ones((len(active), 1), dtype=bool)], axis=1
                ),
            )
            if not self.costless:
                self._costs.update(
                    migration=self.migration_cost[active],
                    restart=self.restart_cost[active],
                    first=self.first_cost[active],
                )
            self._static_for = active
        costs = self._costs
        cur = s.cur_type[active]
        prev = s.prev_type[active]
        done = s.done[active]
        first_start = s.first_start[active]
        if self.costless:
            switch_cost = costs["none"]
        else:
            switch = start_cost(costs["migration"], costs["restart"], costs["first"], cur, prev, np.isnan(first_start))
            switch_cost = np.repeat(switch[:, None], self.cluster.num_types, axis=1)
            rows = np.flatnonzero(cur >= 0)
            switch_cost[rows, cur[rows]] = 0.0
        dynamic = _frozen(
            dict(
                work=np.maximum(costs["work_seen"], done),  # an estimate never below what is done
                done=done,
                last_type=cur,
                prev_type=prev,
                switch_cost_s=switch_cost,
                attained_gpu_s=s.attained_gpu_s[active],
                run_s=s.run_s[active],
                first_start=first_start,
                gpus=np.where(cur >= 0, self.gang[active], 0),
                owed_s=s.penalty_left[active],
            )
        )
        return PolicyView.assemble(
            {
                "now": t,
                "round_len": self.cfg.round_len_s,
                "cluster": self.cluster,
                "capacity": self.capacity,
                "changed": changed,
                "_goodput": lambda rows, types, gpus, hosts: self._goodput(active, rows, types, gpus, hosts),
                **self._static,
                **dynamic,
            }
        )

    def _elastic_fields(self, active: np.ndarray) -> dict:
        """The view's elastic attributes of the active jobs (all rigid: their gangs)."""
        jobs = self.jobs
        if self.elastic is None:
            workers = jobs.workers[active]
            return dict(elastic=np.zeros(len(active), dtype=bool), min_gpus=workers, max_gpus=workers.copy())
        elastic = jobs.elastic
        return dict(
            elastic=elastic.elastic[active], min_gpus=elastic.min_gpus[active], max_gpus=elastic.max_gpus[active]
        )

    def _check_assignment(
        self, active: np.ndarray, a: np.ndarray, view: PolicyView, gpus: np.ndarray | None = None
    ) -> np.ndarray:
        """The policy's answer as int64 type indices, or a PolicyContractError saying what is wrong;
        ``gpus``: the GPU counts it chose (checked by ``_check_gpus``), None for the gangs.
        The checks cost a few numpy calls a decision; only a broken answer pays for the words."""
        if a.shape != active.shape:
            raise self._broken(
                view.now, f"returned {a.shape[0] if a.ndim else 'a scalar'} entries for {len(active)} active jobs"
            )
        if a.dtype.kind not in "iu":  # a float answer is truncated by a cast: -0.5 would read as type 0
            self._refuse_non_integers(active, a, view.now)
        a = a.astype(np.int64, copy=False)
        if not len(a):
            return a
        num_types = self.cluster.num_types
        try:  # GPUs used per type, index 0 for "not run"; a type below -1 makes bincount raise
            used = np.bincount(a + 1, weights=view.workers if gpus is None else gpus, minlength=num_types + 1)
        except ValueError:
            used = None
        if used is None or len(used) > num_types + 1:
            raise self._outside(active, a, view.now)
        # every running job on a type it can run on; "not run" (-1) reads the all-True last column
        ok = self._costs["feasible_or_idle"][self._rows(len(a)), a]
        if np.count_nonzero(ok) < len(ok):
            raise self._infeasible(view.now, active, a, int(np.flatnonzero(~ok)[0]))
        over = used > self._capacity_or_idle
        if np.count_nonzero(over):
            raise self._oversubscribed(view.now, active, a, used[1:], int(np.argmax(over)) - 1, gpus)
        return a

    def _check_gpus(self, active: np.ndarray, types: np.ndarray, gpus: np.ndarray, view: PolicyView) -> np.ndarray:
        """An Allocation's GPU counts as int64, or a PolicyContractError: one whole count per job,
        within the job's range where it runs (a rigid job's is its gang)."""
        if gpus.shape != active.shape or types.shape != active.shape:
            raise self._broken(
                view.now, f"allocated {types.shape} types and {gpus.shape} GPU counts for {len(active)} active jobs"
            )
        if gpus.dtype.kind not in "iu":
            raise self._broken(view.now, f"gave GPU counts as {gpus.dtype} values; an Allocation's gpus are integers")
        gpus = gpus.astype(np.int64, copy=False)
        run = types >= 0
        bad = run & ((gpus < view.min_gpus) | (gpus > view.max_gpus) | (gpus < 1))
        if bad.any():
            row = int(np.flatnonzero(bad)[0])
            kind = "elastic" if view.elastic[row] else "rigid"
            raise self._broken(
                view.now,
                f"gave {kind} job {self._job_id(active, row)} {int(gpus[row])} GPUs; it runs on "
                f"{int(view.min_gpus[row])}..{int(view.max_gpus[row])}",
            )
        return gpus

    def _check_moves(self, now: float, answer: Moves) -> tuple[np.ndarray, np.ndarray]:
        """An incremental answer as (jobs, int64 types), or a PolicyContractError saying what is
        wrong: the rules of a whole assignment, checked on the jobs that move. An answer moves a
        few jobs: plain Python is cheaper than numpy calls here."""
        ids, types = np.asarray(answer.jobs), np.asarray(answer.types)
        if ids.ndim != 1 or ids.shape != types.shape:
            raise self._broken(now, f"moved {ids.shape} jobs to {types.shape} types; Moves gives one type per job")
        if not len(ids):
            return ids.astype(np.int64), types.astype(np.int64)
        if ids.dtype.kind not in "iu":
            raise self._broken(now, f"named jobs by {ids.dtype} values; Moves.jobs are engine job indices (integers)")
        if types.dtype.kind not in "iu":
            self._refuse_non_integers(ids, types, now)
        num_types, feasible, workers, gang, cur_type = (
            self.cluster.num_types,
            self.jobs.feasible,
            self.jobs.workers,
            self.gang,
            self.s.cur_type,
        )
        used = self.used.tolist()
        seen = set()
        for row, (j, k) in enumerate(zip(ids.tolist(), types.tolist())):
            if not (0 <= j < len(self.jobs) and self.is_active[j]) or j in seen:
                raise self._broken(
                    now, f"moved engine job index {j}, which is {'moved twice' if j in seen else 'not active'}"
                )
            seen.add(j)
            if not -1 <= k < num_types:
                raise self._outside(ids, types, now)
            if k >= 0 and not feasible[j, k]:
                raise self._infeasible(now, ids, types, row)
            was = int(cur_type[j])
            if was >= 0:
                used[was] -= int(gang[j])
            if k >= 0:
                used[k] += int(workers[j])
        over = [k for k, (u, c) in enumerate(zip(used, self.capacity.tolist())) if u > c]
        if over:
            raise self._oversubscribed(now, ids, types, used, over[0])
        return ids.astype(np.int64, copy=False), types.astype(np.int64, copy=False)

    def _infeasible(self, now: float, ids: np.ndarray, a: np.ndarray, row: int) -> PolicyContractError:
        k = int(a[row])
        return self._broken(
            now,
            f"put job {self._job_id(ids, row)} on {self.cluster.gpu_types[k]}, a type it cannot run on: "
            f"{self._why_infeasible(int(ids[row]), k)}",
        )

    def _oversubscribed(
        self, now: float, ids: np.ndarray, a: np.ndarray, used: np.ndarray, k: int, gpus: np.ndarray | None = None
    ) -> PolicyContractError:
        on_k = np.flatnonzero(a == k)
        sizes = self.jobs.workers[ids] if gpus is None else gpus
        jobs = ", ".join(f"{self._job_id(ids, r)} ({int(sizes[r])})" for r in on_k[:6]) + (
            ", ..." if len(on_k) > 6 else ""
        )
        return self._broken(
            now,
            f"oversubscribed {self.cluster.gpu_types[k]}: {int(used[k])} GPUs of {int(self.capacity[k])} "
            f"(jobs and their gangs: {jobs})",
        )

    def _refuse_non_integers(self, ids: np.ndarray, a: np.ndarray, now: float) -> None:
        """An answer that is not whole numbers (0.5, NaN, True, None) is refused, never cast."""
        if a.dtype.kind == "f":
            with np.errstate(invalid="ignore"):
                whole = np.isfinite(a) & (a == np.round(a))
        else:  # bools, objects (None, text, ints past int64): entry by entry, a path only a broken answer takes
            whole = np.array(
                [isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_)) for v in a], dtype=bool
            )
        if not whole.all():
            row = int(np.flatnonzero(~whole)[0])
            raise self._broken(
                now,
                f"gave job {self._job_id(ids, row)} the type {shown(a[row])!r} ({a.dtype} answer); an "
                f"assignment is integers: a GPU type index 0..{self.cluster.num_types - 1}, or -1 to wait",
            )
        if ((a < -1) | (a >= self.cluster.num_types)).any():  # whole, but past what int64 holds, maybe
            raise self._outside(ids, a, now)

    def _outside(self, ids: np.ndarray, a: np.ndarray, now: float) -> PolicyContractError:
        row = int(np.flatnonzero((a < -1) | (a >= self.cluster.num_types))[0])
        names = ", ".join(f"{k} = {g}" for k, g in enumerate(self.cluster.gpu_types))
        return self._broken(
            now,
            f"put job {self._job_id(ids, row)} on type index {shown(a[row])!r}, outside "
            f"-1..{self.cluster.num_types - 1} (-1 waits; {names})",
        )

    def _why_infeasible(self, j: int, k: int) -> str:
        jobs, cluster = self.jobs, self.cluster
        if jobs.workers[j] > cluster.counts[k]:
            return f"its gang of {int(jobs.workers[j])} is wider than the type's {int(cluster.counts[k])} GPUs"
        if jobs.mem_per_worker_gb[j] > cluster.memory_gb[k]:
            return f"it needs {jobs.mem_per_worker_gb[j]:.1f} GB per worker, the type has {cluster.memory_gb[k]:.0f} GB"
        return "the type is outside the job's gpu_types, or its model has no throughput there"

    def _job_id(self, ids: np.ndarray, row: int) -> int:
        return int(self.jobs.job_id[ids[row]])

    def _broken(self, now: float, what: str) -> PolicyContractError:
        return PolicyContractError(f"policy {type(self.policy).__name__} at t={now:.1f} s {what}")

    def _stalled(self, t: float, waiting: int) -> PolicyContractError:
        return PolicyContractError(
            f"policy {type(self.policy).__name__} at t={t:.1f} s ran no job in {STALLED_STEPS} steps while "
            f"{waiting} jobs waited and no job was left to arrive: the run would never end (the policy, "
            "or options that keep it from starting a waiting job)"
        )

    def _rows(self, n: int) -> np.ndarray:
        if len(self._row_index) < n:
            self._row_index = np.arange(2 * n)
        return self._row_index[:n]

    def _in_force(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The active jobs (arrival order), the type of each this step (-1: not running) and, for the
        running ones in that order, their rows (jobs finishing in the step are still there)."""
        active = self._active_ids()
        assignment = self.s.cur_type[active]
        run = active[assignment >= 0]
        return active, assignment, self.table.rows_of(run)

    def _record_schedule(self, t, duration, count, overhead, busy) -> None:
        active, assignment, rows = self._in_force()
        hosts = None if self.placer is None else self.placer.worker_host[active[assignment >= 0]]
        overhead = overhead if np.isscalar(overhead) else overhead[rows]
        self.recorder.add(
            t, duration, count, active, assignment, overhead, busy[rows], hosts, self.policy.schedule_columns(active)
        )

    def _check(self, finished: np.ndarray | None) -> None:
        """sim.check: the invariants after a step, on the per-job arrays (written back first)."""
        self._sync()
        active = self._active_ids()
        assignment = self.s.cur_type[active]
        gone = np.zeros(len(active), dtype=bool)
        if finished is not None:  # they ran in the step: their types as they were
            gone = np.isin(active, finished, assume_unique=True)
            assignment[gone] = self._finished_types
        self.checker(self, active, assignment, gone)

    def _job_table(self) -> pd.DataFrame:
        s, jobs = self.s, self.jobs
        s.count_logged(jobs.tput_packed, count_migrations=self.placer is None)
        table = pd.DataFrame(
            {
                "job_id": jobs.job_id,
                "model": jobs.model_name,
                "workers": jobs.workers,
                "work": jobs.work,
                "weight": jobs.weight,
                "arrival_s": jobs.arrival,
                "first_start_s": s.first_start,
                "finish_s": s.finish,
                "jct_s": s.finish - jobs.arrival,
                "starvation_s": s.first_start - jobs.arrival,
                "run_s": s.run_s,
                "attained_gpu_s": s.attained_gpu_s,
                "overhead_s": s.overhead_s,
                "migrations": s.migrations,
                "type_switches": s.type_switches,
                "switches_to_faster": s.switches_to_faster,
                "preemptions": s.preemptions,
                "spread_rounds": s.spread_rounds,
            }
        )
        if self.elastic is not None:
            table["resizes"] = s.resizes
        if self.repacker is not None or self.cfg.overheads.restore_on_first_start:
            table["restarts"] = s.restarts  # sim=sia_compat: Sia's artifact's num_restarts
        if self.outages is not None:
            for name, column in self.outages.job_columns().items():
                table[name] = column
        for k, name in enumerate(self.cluster.gpu_types):
            table[f"gpu_s_{name}"] = s.gpu_s_by_type[:, k]
        return table


def _read_only(a: np.ndarray) -> np.ndarray:
    view = a.view()
    view.setflags(write=False)
    return view


def _joined(parts: list[np.ndarray]) -> np.ndarray:
    if not parts:
        return np.empty(0, dtype=np.int64)
    return parts[0] if len(parts) == 1 else np.concatenate(parts)


def _frozen_array(a: np.ndarray) -> np.ndarray:
    a.setflags(write=False)
    return a


def _frozen(arrays: dict) -> dict:
    for a in arrays.values():
        a.setflags(write=False)
    return arrays


_REPLAY_SIZE = 1 << 20  # rounds x running jobs replayed at once at most: bounds the sums held (8 MiB each)

_ROUND_COLUMNS = ["t_s", "duration_s", "rounds", "active_jobs", "running_jobs", "busy_gpus", "decided", "policy_s"]


def simulate(
    jobs: JobSet,
    cluster: ClusterSpec,
    policy: Policy,
    config: SimConfig | None = None,
    seed: int = 0,
    until: np.ndarray | None = None,
    progress: Callable[[int], None] | None = None,
    capacity: CapacityConfig | None = None,
) -> SimResult:
    return Engine(jobs, cluster, policy, config or SimConfig(), seed, until, progress, capacity).run()
