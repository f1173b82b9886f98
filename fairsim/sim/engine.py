"""The round loop.

Each round: admit arrivals -> ask the policy for an assignment (job -> GPU type or -1) ->
place on hosts -> charge overheads (migration, restart after preemption, profiling) -> advance
every running job by its throughput, with the exact finish time inside the round -> record.

Job state is a struct of numpy arrays over all jobs (``_State``); per-round work touches only
the active jobs. Event-driven policies (whose decision only changes when a job arrives or
finishes) let the engine jump over unchanged rounds in bulk (``fast_forward``).
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
import pandas as pd

from fairsim.cluster import ClusterSpec
from fairsim.policies.base import NOT_RUN, Policy, PolicyView
from fairsim.sim.config import SimConfig
from fairsim.sim.invariants import RoundChecker
from fairsim.sim.placement import HostPlacer
from fairsim.workload.jobs import JobSet


class PolicyContractError(RuntimeError):
    """A policy returned an assignment that breaks the rules (a bug in the policy)."""


@dataclass
class SimResult:
    jobs: pd.DataFrame  # one row per job
    rounds: pd.DataFrame  # one row per simulated round (a fast-forwarded stretch is one row)
    stats: dict  # engine and policy counters


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


class Engine:
    def __init__(self, jobs: JobSet, cluster: ClusterSpec, policy: Policy, config: SimConfig, seed: int = 0):
        self.jobs, self.cluster, self.policy, self.cfg, self.seed = jobs, cluster, policy, config, seed
        n = len(jobs)
        self.s = _State(n, cluster.num_types)
        ov = config.overheads
        transfer = jobs.state_bytes / cluster.inter_host_bytes_per_s
        self.migration_cost = (ov.restart_s + transfer) if ov.migration else np.zeros(n)
        self.restart_cost = (ov.restart_s + transfer) if ov.preemption else np.zeros(n)
        self.profiling_cost = ov.profiling_s_per_type * cluster.num_types if ov.profiling else 0.0
        self.placer = HostPlacer(cluster, n, int(jobs.workers.max()), config.consolidate) if config.placement else None
        self.capacity = cluster.counts.astype(np.int64)
        self.checker = RoundChecker() if config.check else None
        self._static_for: np.ndarray | None = None  # the active array the cached view fields belong to
        self._static: dict = {}
        # what policies believe each job's total work is (profiling error); the engine runs the truth
        err = config.profile_error
        noise = np.random.default_rng([seed, 0xF1]).uniform(1 - err, 1 + err, n) if err > 0 else 1.0
        self.work_seen = jobs.work * noise

    # ---- the loop -------------------------------------------------------------------------
    def run(self) -> SimResult:
        cfg, s, jobs = self.cfg, self.s, self.jobs
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
        wall0 = time.perf_counter()
        while next_arrival < n or len(active):
            if rounds >= cfg.max_rounds:
                raise RuntimeError(f"simulation stopped after sim.max_rounds={cfg.max_rounds} rounds at t={t:.0f} s with {len(active)} active jobs")
            if not len(active) and next_arrival < n:
                t = max(t, float(jobs.arrival[next_arrival]))  # idle cluster: jump to the next arrival
            k = int(np.searchsorted(jobs.arrival, t, side="right"))
            if k > next_arrival:
                active = np.concatenate([active, np.arange(next_arrival, k)])
                next_arrival = k
                changed = True
            if not changed and self._can_fast_forward(active, assignment):
                skipped = self._fast_forward(t, active, assignment, next_arrival)
                if skipped:
                    rows.append(self._record(t, skipped * cfg.round_len_s, skipped, active, assignment, False, 0.0))
                    t += skipped * cfg.round_len_s
                    rounds += skipped
                    continue
            if changed or not self.policy.event_driven:
                view = self._view(t, active, changed)
                tick = time.perf_counter()
                assignment = np.asarray(self.policy.decide(view), dtype=np.int64)
                policy_s = time.perf_counter() - tick
                decided = True
                policy_calls += 1
                self._check_assignment(active, assignment)
            else:
                decided, policy_s = False, 0.0  # an event-driven policy's decision reused
            duration, finished = self._step(t, active, assignment)
            rows.append(self._record(t, duration, 1, active, assignment, decided, policy_s))
            if self.checker is not None:
                self.checker(self, active, assignment, finished)
            t += duration
            rounds += 1
            changed = bool(finished.any())
            if changed:
                keep = ~finished
                if self.placer is not None:
                    self.placer.release(active[finished])
                active, assignment = active[keep], assignment[keep]
        wall = time.perf_counter() - wall0
        stats = {"rounds": rounds, "policy_calls": policy_calls, "sim_wall_s": wall, **self.policy.stats()}
        return SimResult(self._job_table(), pd.DataFrame(rows, columns=_ROUND_COLUMNS), stats)

    # ---- one round ------------------------------------------------------------------------
    def _step(self, t: float, active: np.ndarray, assignment: np.ndarray) -> tuple[float, np.ndarray]:
        cfg, s, jobs = self.cfg, self.s, self.jobs
        run_mask = assignment >= 0
        run = active[run_mask]
        new_type = assignment[run_mask]
        was_type = s.cur_type[run]

        # jobs stopped this round lose any unpaid overhead; the next start pays a restart
        stopped = active[(~run_mask) & (s.cur_type[active] >= 0)]
        s.preemptions[stopped] += 1
        s.penalty_left[stopped] = 0.0
        s.cur_type[stopped] = NOT_RUN

        kept = was_type == new_type
        if self.placer is not None and len(run):
            spread, host_moved = self.placer.place(run, new_type, kept, jobs.workers, jobs.state_bytes)
        else:
            spread = host_moved = np.zeros(len(run), dtype=bool)
        self._charge_overheads(run, new_type, was_type, host_moved)

        tput = np.where(spread, jobs.tput_spread[run, new_type], jobs.tput_packed[run, new_type])
        round_len = cfg.round_len_s
        pay = np.minimum(s.penalty_left[run], round_len)
        usable = round_len - pay
        remaining = jobs.work[run] - s.done[run]
        progress = tput * usable
        if cfg.integer_steps:
            progress = np.floor(progress)
        finishing = progress >= remaining
        progress = np.minimum(progress, remaining)
        busy = pay + progress / tput  # seconds the job holds its GPUs this round
        if cfg.round_end == "latest_finish" and len(run):
            duration = float(busy.max()) if busy.max() > 0 else round_len
        else:
            duration = round_len

        s.penalty_left[run] -= pay
        s.overhead_s[run] += pay
        s.done[run] += progress
        s.done[run[finishing]] = jobs.work[run[finishing]]  # exact, no float residue
        s.finish[run[finishing]] = t + busy[finishing]
        s.run_s[run] += busy
        gpu_s = busy * jobs.workers[run]
        s.attained_gpu_s[run] += gpu_s
        np.add.at(s.gpu_s_by_type, (run, new_type), gpu_s)
        s.spread_rounds[run] += spread
        fresh = np.isnan(s.first_start[run])
        s.first_start[run[fresh]] = t
        s.cur_type[run] = new_type
        s.prev_type[run] = new_type
        s.cur_type[run[finishing]] = NOT_RUN
        finished = np.zeros(len(active), dtype=bool)
        finished[np.flatnonzero(run_mask)[finishing]] = True
        return duration, finished

    def _charge_overheads(self, run, new_type, was_type, host_moved) -> None:
        s, jobs = self.s, self.jobs
        prev = s.prev_type[run]
        type_switch = (was_type >= 0) & (was_type != new_type)
        resumed = (was_type < 0) & (prev >= 0)
        first_run = np.isnan(s.first_start[run])
        moved = type_switch | host_moved
        if not (moved.any() or resumed.any() or first_run.any()):
            return  # every job continues where it was: nothing to charge or count
        cost = np.zeros(len(run))
        cost[moved] = self.migration_cost[run[moved]]
        cost[resumed] = self.restart_cost[run[resumed]]
        cost[first_run] = self.profiling_cost
        charged = moved | resumed | (first_run & (self.profiling_cost > 0))
        s.penalty_left[run[charged]] = cost[charged]
        switched = type_switch | (resumed & (prev != new_type))
        s.migrations[run[switched | host_moved]] += 1
        rows = np.flatnonzero(switched)
        if len(rows):
            from_type = np.where(type_switch[rows], was_type[rows], prev[rows])
            s.type_switches[run[rows]] += 1
            faster = jobs.tput_packed[run[rows], new_type[rows]] > jobs.tput_packed[run[rows], from_type]
            s.switches_to_faster[run[rows[faster]]] += 1

    # ---- fast-forward -----------------------------------------------------------------------
    def _can_fast_forward(self, active, assignment) -> bool:
        cfg = self.cfg
        return (cfg.fast_forward and self.policy.event_driven and not cfg.integer_steps
                and cfg.round_end == "fixed" and not cfg.check and len(active) > 0
                and not self.s.penalty_left[active[assignment >= 0]].any())

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
            self._static = _frozen(dict(
                job_id=active, arrival=jobs.arrival[active], workers=jobs.workers[active],
                weight=jobs.weight[active], throughput=jobs.tput_packed[active], feasible=jobs.feasible[active],
                state_bytes=jobs.state_bytes[active], work_seen=self.work_seen[active],
                migration_cost=self.migration_cost[active], restart_cost=self.restart_cost[active]))
            self._static_for = active
        st = self._static
        cur = s.cur_type[active]
        prev = s.prev_type[active]
        done = s.done[active]
        first_start = s.first_start[active]
        switch = np.where(cur >= 0, st["migration_cost"], 0.0)
        switch = np.where((cur < 0) & (prev >= 0), st["restart_cost"], switch)
        switch = np.where(np.isnan(first_start), self.profiling_cost, switch)
        switch_cost = np.repeat(switch[:, None], self.cluster.num_types, axis=1)
        rows = np.flatnonzero(cur >= 0)
        switch_cost[rows, cur[rows]] = 0.0
        dynamic = _frozen(dict(
            work=np.maximum(st["work_seen"], done),  # an estimate never below what is done
            done=done, last_type=cur, prev_type=prev, switch_cost_s=switch_cost,
            attained_gpu_s=s.attained_gpu_s[active], run_s=s.run_s[active], first_start=first_start))
        return PolicyView(now=t, round_len=self.cfg.round_len_s, cluster=self.cluster, capacity=self.capacity,
                          changed=changed, job_id=st["job_id"], arrival=st["arrival"], workers=st["workers"],
                          weight=st["weight"], throughput=st["throughput"], feasible=st["feasible"],
                          state_bytes=st["state_bytes"], **dynamic)

    def _check_assignment(self, active: np.ndarray, a: np.ndarray) -> None:
        name = type(self.policy).__name__
        if a.shape != active.shape:
            raise PolicyContractError(f"{name} returned {a.shape[0] if a.ndim else 'a scalar'} entries for {len(active)} jobs")
        if len(a) == 0:
            return
        if a.min() < NOT_RUN or a.max() >= self.cluster.num_types:
            raise PolicyContractError(f"{name} returned a type index outside -1..{self.cluster.num_types - 1}")
        run = a >= 0
        if not self.jobs.feasible[active[run], a[run]].all():
            j = active[run][~self.jobs.feasible[active[run], a[run]]][0]
            raise PolicyContractError(f"{name} put job {j} on a type it cannot run on (memory or gang size)")
        used = np.bincount(a[run], weights=self.jobs.workers[active[run]], minlength=self.cluster.num_types)
        if (used > self.capacity).any():
            k = int(np.argmax(used - self.capacity))
            raise PolicyContractError(f"{name} oversubscribed {self.cluster.gpu_types[k]}: {int(used[k])} GPUs of {int(self.capacity[k])}")

    def _record(self, t, duration, count, active, assignment, decided, policy_s) -> tuple:
        busy = np.bincount(assignment[assignment >= 0], weights=self.jobs.workers[active[assignment >= 0]],
                           minlength=self.cluster.num_types)
        return (t, duration, count, len(active), int((assignment >= 0).sum()), float(busy.sum()), decided, policy_s)

    def _job_table(self) -> pd.DataFrame:
        s, jobs = self.s, self.jobs
        table = pd.DataFrame({
            "job_id": jobs.job_id, "model": jobs.model_name, "workers": jobs.workers, "work": jobs.work,
            "weight": jobs.weight, "arrival_s": jobs.arrival, "first_start_s": s.first_start, "finish_s": s.finish,
            "jct_s": s.finish - jobs.arrival, "starvation_s": s.first_start - jobs.arrival, "run_s": s.run_s,
            "attained_gpu_s": s.attained_gpu_s, "overhead_s": s.overhead_s, "migrations": s.migrations,
            "type_switches": s.type_switches, "switches_to_faster": s.switches_to_faster,
            "preemptions": s.preemptions, "spread_rounds": s.spread_rounds,
        })
        for k, name in enumerate(self.cluster.gpu_types):
            table[f"gpu_s_{name}"] = s.gpu_s_by_type[:, k]
        return table


def _frozen(arrays: dict) -> dict:
    for a in arrays.values():
        a.setflags(write=False)
    return arrays


_ROUND_COLUMNS = ["t_s", "duration_s", "rounds", "active_jobs", "running_jobs", "busy_gpus", "decided", "policy_s"]


def simulate(jobs: JobSet, cluster: ClusterSpec, policy: Policy, config: SimConfig | None = None, seed: int = 0) -> SimResult:
    return Engine(jobs, cluster, policy, config or SimConfig(), seed).run()
