"""The simulation loop.

Each step: admit arrivals -> ask the policy for an assignment (job -> GPU type or -1) -> place on
hosts -> charge overheads (migration, restart after preemption, profiling) -> advance every
running job by its throughput, with the exact finish time inside the step -> record.

Two clocks (``sim.clock``): under ``rounds`` a step is one round of ``sim.round_len_s``; under
``events`` a step ends at the next arrival, the next completion or the next time the policy asked
to decide (``Policy.next_decision_s``), whichever comes first, so a freed GPU or a new job is used
at once. Overheads are charged the same way under both.

Job state is a struct of numpy arrays over all jobs (``_State``); per-step work touches only the
active jobs. Under rounds, event-driven policies (whose decision only changes when a job arrives
or finishes) let the engine jump over unchanged rounds in bulk (``fast_forward``).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pandas as pd

from fairsim.cluster import ClusterSpec
from fairsim.errors import InputError
from fairsim.policies.base import NOT_RUN, Policy, PolicyView
from fairsim.sim.config import SimConfig
from fairsim.sim.invariants import RoundChecker
from fairsim.sim.overheads import job_costs, start_cost
from fairsim.sim.placement import HostPlacer
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
        self.done = np.zeros(n)
        self.finish = np.full(n, np.nan)
        self.first_start = np.full(n, np.nan)
        self.cur_type = np.full(n, NOT_RUN, dtype=np.int64)  # type in the previous round
        self.prev_type = np.full(n, NOT_RUN, dtype=np.int64)  # type of the most recent run
        self.penalty_left = np.zeros(n)  # overhead seconds still to pay before progress
        self.run_s = np.zeros(n)
        self.attained_gpu_s = np.zeros(n)
        self.gpu_s_by_type = np.zeros((n, num_types))
        self.overhead_s = np.zeros(n)
        self.migrations = np.zeros(n, dtype=np.int64)  # type switches + host moves
        self.type_switches = np.zeros(n, dtype=np.int64)
        self.switches_to_faster = np.zeros(n, dtype=np.int64)
        self.preemptions = np.zeros(n, dtype=np.int64)
        self.spread_rounds = np.zeros(n, dtype=np.int64)
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
    ):
        self.jobs, self.cluster, self.policy, self.cfg, self.seed = jobs, cluster, policy, config, seed
        self.progress = progress  # called with the number of awaited jobs that finished in a round (display only)
        n = len(jobs)
        self.awaited = np.ones(n, dtype=bool)  # the jobs whose completion ends the run
        if until is not None:
            self.awaited[:] = False
            self.awaited[until] = True
        self.s = _State(n, cluster.num_types)
        self.migration_cost, self.restart_cost, self.profiling_cost = job_costs(
            jobs.state_bytes, cluster, config.overheads
        )
        # nothing to charge (e.g. sim=gavel_compat): rounds skip the penalty bookkeeping
        self.costless = not (np.any(self.migration_cost) or np.any(self.restart_cost) or self.profiling_cost)
        self.placer = HostPlacer(cluster, n, int(jobs.workers.max()), config.consolidate) if config.placement else None
        self.capacity = cluster.counts.astype(np.int64)
        self.capacity.setflags(write=False)  # handed to every view
        self._capacity_or_idle = np.r_[np.inf, self.capacity]  # GPUs per bincount(type + 1) slot
        self.checker = RoundChecker() if config.check else None
        self.recorder = ScheduleRecorder(cluster.gpu_types) if config.record_schedule else None
        self._static_for: np.ndarray | None = None  # the active array the cached view fields belong to
        self._static: dict = {}  # view fields fixed while the active set is
        self._costs: dict = {}  # per-job inputs of the switch costs, same lifetime
        self._row_index = np.arange(0)
        # what policies believe each job's total work is (profiling error); the engine runs the truth
        err = config.profile_error
        noise = np.random.default_rng([seed, 0xF1]).uniform(1 - err, 1 + err, n) if err > 0 else 1.0
        self.work_seen = jobs.work * noise

    # ---- the loop -------------------------------------------------------------------------
    def run(self) -> SimResult:
        cfg, jobs = self.cfg, self.jobs
        n = len(jobs)
        self.policy.reset(self.cluster, n, self.seed)
        t = float(jobs.arrival[0])
        next_arrival = 0
        active = np.empty(0, dtype=np.int64)
        assignment = np.empty(0, dtype=np.int64)
        changed = True
        rows: list[tuple] = []
        policy_calls = 0
        rounds = 0
        arrivals = jobs.arrival.tolist()
        awaited_left = int(self.awaited.sum())
        next_arrival_s = arrivals[0] if n else np.inf  # Python floats: most rounds admit nobody
        events = cfg.clock == "events"
        wake_s = math.inf  # events: when the policy asked to decide again
        idle_steps = 0  # consecutive steps in which no job ran and none was left to arrive
        wall0 = time.perf_counter()
        while awaited_left and (next_arrival < n or len(active)):
            if rounds >= cfg.max_rounds:  # the safety stop: an error, never a silent truncation
                raise InputError(
                    "sim",
                    "max_rounds",
                    f"the run stopped after {cfg.max_rounds} steps at t={t:.0f} s with "
                    f"{len(active)} jobs still active; raise sim.max_rounds (a policy that leaves jobs waiting "
                    "forever ends here too)",
                )
            if not len(active) and next_arrival < n:
                t = max(t, next_arrival_s)  # idle cluster: jump to the next arrival
            if next_arrival_s <= t:
                k = int(np.searchsorted(jobs.arrival, t, side="right"))
                active = np.concatenate([active, np.arange(next_arrival, k)])
                next_arrival = k
                next_arrival_s = arrivals[k] if k < n else np.inf
                changed = True
            if not events and not changed and self._can_fast_forward(active, assignment):
                skipped = self._fast_forward(t, active, assignment, next_arrival)
                if skipped:
                    if self.recorder is not None:
                        run = active[assignment >= 0]
                        self._record_schedule(
                            t,
                            skipped * cfg.round_len_s,
                            skipped,
                            active,
                            assignment,
                            run,
                            0.0,
                            np.full(len(run), skipped * cfg.round_len_s),
                        )
                    rows.append(self._record(t, skipped * cfg.round_len_s, skipped, active, assignment, False, 0.0))
                    t += skipped * cfg.round_len_s
                    rounds += skipped
                    continue
            if changed or not self.policy.event_driven or (events and wake_s <= t):
                view = self._view(t, active, changed)
                tick = time.perf_counter()
                answer = np.asarray(self.policy.decide(view))
                policy_s = time.perf_counter() - tick
                decided = True
                policy_calls += 1
                assignment = self._check_assignment(active, answer, view)
                if events:
                    wake_s = self._next_wake(view, assignment)
            else:
                decided, policy_s = False, 0.0  # an event-driven policy's decision reused
            limit = min(next_arrival_s, wake_s) - t if events else cfg.round_len_s
            duration, finished = self._step(t, active, assignment, limit)
            rows.append((t, duration, 1, len(active), self._last_running, self._last_busy_gpus, decided, policy_s))
            if self.checker is not None:
                self.checker(
                    self, active, assignment, np.zeros(len(active), dtype=bool) if finished is None else finished
                )
            t += duration
            rounds += 1
            idle_steps = 0 if self._last_running or next_arrival < n else idle_steps + 1
            if idle_steps == STALLED_STEPS:
                raise self._stalled(t, len(active))
            changed = finished is not None
            if changed:
                done = int(np.count_nonzero(self.awaited[active[finished]]))
                awaited_left -= done
                if self.progress is not None:
                    self.progress(done)
                keep = ~finished
                if self.placer is not None:
                    self.placer.release(active[finished])
                active, assignment = active[keep], assignment[keep]
        wall = time.perf_counter() - wall0
        stats = {
            "rounds": rounds,
            "policy_calls": policy_calls,
            "sim_wall_s": wall,
            "unarrived_jobs_at_end": n - int(np.searchsorted(jobs.arrival, t, side="right")),
            **self.policy.stats(),
        }
        schedule = None if self.recorder is None else self.recorder.table(jobs.job_id)
        return SimResult(self._job_table(), pd.DataFrame(rows, columns=_ROUND_COLUMNS), stats, schedule)

    # ---- one step -------------------------------------------------------------------------
    def _step(
        self, t: float, active: np.ndarray, assignment: np.ndarray, limit: float
    ) -> tuple[float, np.ndarray | None]:
        """Run one step of at most ``limit`` seconds (a round, or the time to the next arrival or
        policy wake-up); returns its duration and the mask of active jobs that finished (None if none)."""
        cfg, s, jobs = self.cfg, self.s, self.jobs
        run_mask = assignment >= 0
        run = active[run_mask]
        new_type = assignment[run_mask]
        cur = s.cur_type[active]

        # jobs stopped this round lose any unpaid overhead; the next start pays a restart
        stopped = active[(cur >= 0) > run_mask]  # ran last round (True) and not now (False)
        if len(stopped):
            s.stop_log.append(stopped)
            if not self.costless:
                s.penalty_left[stopped] = 0.0
            s.cur_type[stopped] = NOT_RUN

        was_type = cur[run_mask] if self.placer is not None or not self.costless else None
        if self.placer is not None and len(run):
            spread, host_moved = self.placer.place(run, new_type, was_type == new_type, jobs.workers, jobs.state_bytes)
            tput = np.where(spread, jobs.tput_spread[run, new_type], jobs.tput_packed[run, new_type])
            s.spread_rounds[run] += spread
        else:
            host_moved = None
            tput = jobs.tput_packed[run, new_type]
        first_run = np.isnan(s.first_start[run])
        self._count_moves(run, new_type, host_moved)
        if not self.costless:
            self._charge_overheads(run, new_type, was_type, host_moved, first_run)

        remaining = jobs.work[run] - s.done[run]
        penalty = 0.0 if self.costless else s.penalty_left[run]
        if cfg.clock == "events":
            duration, pay, progress, busy, finishing = self._advance_to_event(t, limit, remaining, tput, penalty)
        else:
            duration, pay, progress, busy, finishing = self._advance_round(limit, remaining, tput, penalty)
        if not self.costless:
            s.penalty_left[run] -= pay
            s.overhead_s[run] += pay
        any_finishing = np.count_nonzero(finishing) > 0  # count_nonzero: ~3x cheaper than any() on these sizes

        s.done[run] += progress
        s.run_s[run] += busy
        workers = jobs.workers[run]
        gpu_s = busy * workers
        s.attained_gpu_s[run] += gpu_s
        s.gpu_s_by_type[run, new_type] += gpu_s  # each job appears once in run: plain += is exact
        if np.count_nonzero(first_run):
            s.first_start[run[first_run]] = t
        s.cur_type[run] = new_type
        s.prev_type[run] = new_type
        self._last_running, self._last_busy_gpus = len(run), float(workers.sum())
        if self.recorder is not None:
            self._record_schedule(t, duration, 1, active, assignment, run, pay, busy)
        if not any_finishing:
            return duration, None
        done_now = run[finishing]
        s.done[done_now] = jobs.work[done_now]  # exact, no float residue
        s.finish[done_now] = t + busy[finishing]
        s.cur_type[done_now] = NOT_RUN
        finished = np.zeros(len(active), dtype=bool)
        finished[np.flatnonzero(run_mask)[finishing]] = True
        return duration, finished

    def _advance_round(self, round_len, remaining, tput, penalty):
        """One round: each running job pays what it owes of overhead, then progresses for the rest
        of the round or until it finishes. Returns (duration, pay, progress, busy, finishing)."""
        cfg = self.cfg
        pay = np.minimum(penalty, round_len) if not self.costless else 0.0
        progress = tput * (round_len - pay)
        if cfg.integer_steps:
            progress = np.floor(progress, out=progress)
        finishing = progress >= remaining
        if np.count_nonzero(finishing):
            progress = np.minimum(progress, remaining)
        busy = progress / tput + pay  # seconds the job holds its GPUs
        if cfg.round_end == "latest_finish" and len(busy):
            longest = float(busy.max())
            duration = longest if longest > 0 else round_len
        else:
            duration = round_len
        return duration, pay, progress, busy, finishing

    def _advance_to_event(self, t, limit, remaining, tput, penalty):
        """Up to the first completion, or ``limit`` seconds if that comes first. Completion times
        are computed once (overhead still owed plus remaining work at the job's rate) and compared
        as they are, so the job that sets the step's end finishes in it exactly."""
        to_finish = penalty + np.maximum(remaining, 0.0) / tput
        duration = min(limit, float(to_finish.min())) if len(to_finish) else limit
        if not math.isfinite(duration):
            raise PolicyContractError(
                f"policy {type(self.policy).__name__} at t={t:.1f} s runs no job, no job arrives, and "
                "it asks for no later decision: the run would never end"
            )
        finishing = to_finish <= duration
        pay = np.minimum(penalty, duration) if not self.costless else 0.0
        progress = np.where(finishing, remaining, tput * (duration - pay))
        # a job whose finish falls within float rounding of the step's end finishes with it
        finishing |= progress >= remaining
        busy = np.where(finishing, np.minimum(to_finish, duration), duration)
        return duration, pay, np.minimum(progress, remaining), busy, finishing

    def _next_wake(self, view: PolicyView, assignment: np.ndarray) -> float:
        wake = float(self.policy.next_decision_s(view, assignment))
        if not wake > view.now:  # also NaN
            raise self._broken(view, f"asked to decide again at {wake!r}, not after now ({view.now!r})")
        return wake

    def _count_moves(self, run, new_type, host_moved) -> None:
        """Count migrations: type switches (also across a pause) and host moves."""
        s = self.s
        prev = s.prev_type[run]  # equals the running type for a job that ran last round
        switched = (prev != new_type) & (prev >= 0)
        if host_moved is not None:
            s.migrations[run[switched | host_moved]] += 1
        if np.count_nonzero(switched):
            s.switch_log.append((run[switched], prev[switched], new_type[switched]))

    def _charge_overheads(self, run, new_type, was_type, host_moved, first_run) -> None:
        """Set the overhead seconds each starting, resuming or moved job pays before progress
        (``fairsim.sim.overheads``); a job that continues where it was keeps its unpaid rest."""
        s = self.s
        prev = s.prev_type[run]
        type_switch = (was_type >= 0) & (was_type != new_type)
        moved = type_switch if host_moved is None else type_switch | host_moved
        resumed = (was_type < 0) & (prev >= 0)
        if not (moved.any() or resumed.any() or first_run.any()):
            return  # every job continues where it was: nothing to charge
        cost = start_cost(
            self.migration_cost[run], self.restart_cost[run], self.profiling_cost, was_type, prev, first_run
        )
        charged = moved | resumed | (first_run & (self.profiling_cost > 0))
        s.penalty_left[run[charged]] = cost[charged]

    # ---- fast-forward -----------------------------------------------------------------------
    def _can_fast_forward(self, active, assignment) -> bool:
        cfg = self.cfg
        return (
            cfg.fast_forward
            and self.policy.event_driven
            and not cfg.integer_steps
            and cfg.round_end == "fixed"
            and not cfg.check
            and len(active) > 0
            and not self.s.penalty_left[active[assignment >= 0]].any()
        )

    def _fast_forward(self, t, active, assignment, next_arrival) -> int:
        """Apply k unchanged rounds at once; k stops before the next arrival or finish."""
        cfg, s, jobs = self.cfg, self.s, self.jobs
        L = cfg.round_len_s
        run_mask = assignment >= 0
        run, types = active[run_mask], assignment[run_mask]
        spread = np.zeros(len(run), dtype=bool)
        if self.placer is not None:
            spread = self.placer.hosts_spanned(run) > self.placer.min_hosts(jobs.workers[run])
        tput = np.where(spread, jobs.tput_spread[run, types], jobs.tput_packed[run, types])
        k = np.inf
        if len(run):
            k = float(np.min(np.ceil((jobs.work[run] - s.done[run]) / (tput * L)))) - 1
        if next_arrival < len(jobs):
            k = min(k, float(np.ceil((jobs.arrival[next_arrival] - t) / L)))
        if not np.isfinite(k) or k < 2:
            return 0
        k = int(k)
        s.done[run] += tput * (L * k)
        s.run_s[run] += L * k
        gpu_s = jobs.workers[run] * (L * k)
        s.attained_gpu_s[run] += gpu_s
        np.add.at(s.gpu_s_by_type, (run, types), gpu_s)
        s.spread_rounds[run] += spread * k
        return k

    # ---- views, checks, records ----------------------------------------------------------------
    def _view(self, t: float, active: np.ndarray, changed: bool) -> PolicyView:
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
                self._costs.update(migration=self.migration_cost[active], restart=self.restart_cost[active])
            self._static_for = active
        costs = self._costs
        cur = s.cur_type[active]
        prev = s.prev_type[active]
        done = s.done[active]
        first_start = s.first_start[active]
        if self.costless:
            switch_cost = costs["none"]
        else:
            switch = start_cost(
                costs["migration"], costs["restart"], self.profiling_cost, cur, prev, np.isnan(first_start)
            )
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
            )
        )
        return PolicyView.assemble(
            {
                "now": t,
                "round_len": self.cfg.round_len_s,
                "cluster": self.cluster,
                "capacity": self.capacity,
                "changed": changed,
                **self._static,
                **dynamic,
            }
        )

    def _check_assignment(self, active: np.ndarray, a: np.ndarray, view: PolicyView) -> np.ndarray:
        """The policy's answer as int64 type indices, or a PolicyContractError saying what is wrong.
        The checks cost a few numpy calls a decision; only a broken answer pays for the words."""
        if a.shape != active.shape:
            raise self._broken(
                view, f"returned {a.shape[0] if a.ndim else 'a scalar'} entries for {len(active)} active jobs"
            )
        if a.dtype.kind not in "iu":  # a float answer is truncated by a cast: -0.5 would read as type 0
            self._refuse_non_integers(active, a, view)
        a = a.astype(np.int64, copy=False)
        if not len(a):
            return a
        num_types = self.cluster.num_types
        try:  # GPUs used per type, index 0 for "not run"; a type below -1 makes bincount raise
            used = np.bincount(a + 1, weights=view.workers, minlength=num_types + 1)
        except ValueError:
            used = None
        if used is None or len(used) > num_types + 1:
            raise self._outside(active, a, view)
        # every running job on a type it can run on; "not run" (-1) reads the all-True last column
        ok = self._costs["feasible_or_idle"][self._rows(len(a)), a]
        if np.count_nonzero(ok) < len(ok):
            row = int(np.flatnonzero(~ok)[0])
            k = int(a[row])
            raise self._broken(
                view,
                f"put job {self._job_id(active, row)} on {self.cluster.gpu_types[k]}, a type it cannot run on: "
                f"{self._why_infeasible(int(active[row]), k)}",
            )
        over = used > self._capacity_or_idle
        if np.count_nonzero(over):
            k = int(np.argmax(over)) - 1
            on_k = np.flatnonzero(a == k)
            jobs = ", ".join(f"{self._job_id(active, r)} ({int(view.workers[r])})" for r in on_k[:6]) + (
                ", ..." if len(on_k) > 6 else ""
            )
            raise self._broken(
                view,
                f"oversubscribed {self.cluster.gpu_types[k]}: {int(used[k + 1])} GPUs of {int(self.capacity[k])} "
                f"(jobs and their gangs: {jobs})",
            )
        return a

    def _refuse_non_integers(self, active: np.ndarray, a: np.ndarray, view: PolicyView) -> None:
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
                view,
                f"gave job {self._job_id(active, row)} the type {shown(a[row])!r} ({a.dtype} answer); an "
                f"assignment is integers: a GPU type index 0..{self.cluster.num_types - 1}, or -1 to wait",
            )
        if ((a < -1) | (a >= self.cluster.num_types)).any():  # whole, but past what int64 holds, maybe
            raise self._outside(active, a, view)

    def _outside(self, active: np.ndarray, a: np.ndarray, view: PolicyView) -> PolicyContractError:
        row = int(np.flatnonzero((a < -1) | (a >= self.cluster.num_types))[0])
        names = ", ".join(f"{k} = {g}" for k, g in enumerate(self.cluster.gpu_types))
        return self._broken(
            view,
            f"put job {self._job_id(active, row)} on type index {shown(a[row])!r}, outside "
            f"-1..{self.cluster.num_types - 1} (-1 waits; {names})",
        )

    def _why_infeasible(self, j: int, k: int) -> str:
        jobs, cluster = self.jobs, self.cluster
        if jobs.workers[j] > cluster.counts[k]:
            return f"its gang of {int(jobs.workers[j])} is wider than the type's {int(cluster.counts[k])} GPUs"
        if jobs.mem_per_worker_gb[j] > cluster.memory_gb[k]:
            return f"it needs {jobs.mem_per_worker_gb[j]:.1f} GB per worker, the type has {cluster.memory_gb[k]:.0f} GB"
        return "the type is outside the job's gpu_types, or its model has no throughput there"

    def _job_id(self, active: np.ndarray, row: int) -> int:
        return int(self.jobs.job_id[active[row]])

    def _broken(self, view: PolicyView, what: str) -> PolicyContractError:
        return PolicyContractError(f"policy {type(self.policy).__name__} at t={view.now:.1f} s {what}")

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

    def _record(self, t, duration, count, active, assignment, decided, policy_s) -> tuple:
        busy = np.bincount(
            assignment[assignment >= 0],
            weights=self.jobs.workers[active[assignment >= 0]],
            minlength=self.cluster.num_types,
        )
        return (t, duration, count, len(active), int((assignment >= 0).sum()), float(busy.sum()), decided, policy_s)

    def _record_schedule(self, t, duration, count, active, assignment, run, overhead, busy) -> None:
        hosts = None if self.placer is None else self.placer.worker_host[run]
        self.recorder.add(
            t, duration, count, active, assignment, overhead, busy, hosts, self.policy.schedule_columns(active)
        )

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
        for k, name in enumerate(self.cluster.gpu_types):
            table[f"gpu_s_{name}"] = s.gpu_s_by_type[:, k]
        return table


def _frozen_array(a: np.ndarray) -> np.ndarray:
    a.setflags(write=False)
    return a


def _frozen(arrays: dict) -> dict:
    for a in arrays.values():
        a.setflags(write=False)
    return arrays


_ROUND_COLUMNS = ["t_s", "duration_s", "rounds", "active_jobs", "running_jobs", "busy_gpus", "decided", "policy_s"]


def simulate(
    jobs: JobSet,
    cluster: ClusterSpec,
    policy: Policy,
    config: SimConfig | None = None,
    seed: int = 0,
    until: np.ndarray | None = None,
    progress: Callable[[int], None] | None = None,
) -> SimResult:
    return Engine(jobs, cluster, policy, config or SimConfig(), seed, until, progress).run()
