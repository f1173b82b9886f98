"""Engine settings (the ``sim`` config group). Every overhead can be switched off on its own."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any

import numpy as np

from fairsim.errors import (
    Bool,
    Integer,
    Number,
    OneOf,
    check_keys,
    check_values,
    require,
)
from fairsim.workload.jobs import JobSet

ROUND_ENDS = ("fixed", "latest_finish")
# Where rounds fall: from the first arrival (and from each arrival that finds the cluster idle), or
# on the multiples of the round length (round_len_s, 2 x round_len_s, ...), as a simulator that
# steps a fixed clock from 0 and decides at the end of each interval (Sia's artifact) has them.
ROUND_ORIGINS = ("first_arrival", "zero")
# When the engine decides: "rounds" at every round boundary (FFT's 5-minute rounds); "events" at
# every arrival and completion, and whenever the policy asks (Policy.next_decision_s), with
# round_len_s the longest gap a round-based policy leaves between its decisions.
CLOCKS = ("rounds", "events")
# Round length bounds. Below 1 s a run needs more rounds than any scheduler decides (the paper's
# FFT, Gavel and Themis use minutes) and a tiny value (1e-9 s) would spin to max_rounds; above a
# day a round outlasts most jobs and every decision is stale.
ROUND_LEN_S = (1.0, 86_400.0)
UNTIL = ("all", "window")
REPLACES = ("keep", "sia", "gavel")
MAX_ROUNDS = 10**12


@dataclass(frozen=True)
class Overheads:
    """Seconds a job loses before it makes progress in a round.

    - migration: the job runs on another GPU type, or on other hosts, than in the previous
      round: its training state crosses the inter-host link, plus a fixed restart
      (container start, NCCL group init).
    - preemption restart: the job resumes after at least one round paused: it reloads its
      checkpoint (state over the link from shared storage) plus the fixed restart. When it
      resumes on a different type than it last ran on, it is also counted as a migration.
    - profiling: a new job's first run profiles it on every GPU type (paper sec. 4).
    - restore_on_first_start: a job's first start also pays a restart (the fixed restart plus its
      state over the link), as Sia's simulator charges its checkpoint-restore delay on every
      start (sim=sia_compat); off elsewhere: a new job has no checkpoint to load.
    """

    migration: bool = True
    preemption: bool = True
    profiling: bool = False
    restart_s: float = 30.0  # container restart + NCCL init
    profiling_s_per_type: float = 60.0
    restore_on_first_start: bool = False

    def any(self) -> bool:
        return self.migration or self.preemption or self.profiling or self.restore_on_first_start


@dataclass(frozen=True)
class SimConfig:
    clock: str = "rounds"  # rounds | events (CLOCKS; docs/DESIGN.md "Clocks")
    round_len_s: float = 300.0
    # events: no decision sooner than this after the previous one (0: at every event); a job that
    # arrives or a GPU freed meanwhile waits for the gap's end (docs/DESIGN.md "Clocks")
    min_gap_s: float = 0.0
    round_end: str = "fixed"  # "latest_finish": Gavel's jump to the last finish in the round (no backfill)
    round_origin: str = "first_arrival"  # ROUND_ORIGINS: "zero" puts every round on a multiple of round_len_s
    integer_steps: bool = False  # Gavel: a round runs floor(tput * round) whole steps
    placement: bool = True  # host-level placement (packing, consolidation); off = every job packed
    consolidate: bool = True  # at churn, move spread multi-worker jobs onto one host, smallest state first
    # keep: a job keeps its hosts while it keeps its type and GPU count (consolidation aside);
    # sia: Sia's artifact's re-placement, every running job placed from scratch whenever the running
    # set changes, a changed per-node split a restart (fairsim.sim.placement.SiaRepacker); gavel: the
    # worker assignment of the Gavel in Sia's artifact (kept workers first, then a pointer over nodes)
    replace: str = "keep"
    # replace: sia: GPUs per node of the types whose nodes differ from the cluster's hosts (Sia's 8-GPU hosts)
    replace_host_gpus: Mapping[str, int] = field(default_factory=dict)
    fast_forward: bool = True  # apply rounds a standing decision carries through in bulk (docs/DESIGN.md "Clocks")
    check: bool = False  # validate invariants every round
    max_rounds: int = 10_000_000  # safety stop; hitting it is an error, never a silent truncation
    record_schedule: bool = False  # keep a row per (round, active job): schedule.parquet (fairsim.sim.schedule)
    profile_error: float = 0.0  # policies see each job's work off by a seeded factor in [1 - e, 1 + e] (paper Fig. 13b)
    # when the run ends: "all" jobs finished, or the workload's measurement "window" (Gavel's
    # generated-jobs mode: the rest of the trace only keeps the cluster loaded; no window = all)
    until: str = "all"
    overheads: Overheads = field(default_factory=Overheads)

    @classmethod
    def from_config(cls, cfg: Mapping[str, Any] | None, source: str = "sim") -> SimConfig:
        cfg = dict(cfg or {})
        cfg.pop("name", None)
        check_keys(cfg, (f.name for f in fields(cls)), source, noun="setting")
        ov = dict(cfg.pop("overheads", None) or {})
        check_keys(ov, (f.name for f in fields(Overheads)), source, noun="setting", prefix="overheads.")
        check_values(cfg, SWITCHES, source)
        check_values(ov, OVERHEADS, source, prefix="overheads.")
        check_values(cfg, SETTINGS, source)
        round_len = cfg.get("round_len_s", cls.round_len_s)
        restart = ov.get("restart_s", Overheads.restart_s)
        events = cfg.get("clock", cls.clock) == "events"
        if not events and (
            ov.get("migration", True) or ov.get("preemption", True)
        ):  # the engine drops unpaid overhead when a job
            # stops: a restart as long as a round leaves a job that a policy pauses every other round without progress, forever
            require(
                restart < round_len,
                source,
                "overheads.restart_s",
                f"must be shorter than a round (sim.round_len_s={round_len:g} s), got {restart!r}",
            )
        check_values(cfg, LATE_SETTINGS, source)
        if events:  # Gavel's round semantics have no meaning between events
            require(
                cfg.get("round_end", cls.round_end) == "fixed",
                source,
                "round_end",
                "must be fixed under sim.clock=events (a step already ends at the next arrival, completion or decision)",
            )
            require(
                cfg.get("round_origin", cls.round_origin) == "first_arrival",
                source,
                "round_origin",
                "must be first_arrival under sim.clock=events (events have no rounds to align)",
            )
            require(
                not cfg.get("integer_steps", cls.integer_steps),
                source,
                "integer_steps",
                "must be false under sim.clock=events (whole steps are a property of Gavel's rounds)",
            )
        else:
            require(
                cfg.get("min_gap_s", cls.min_gap_s) == 0,
                source,
                "min_gap_s",
                "must be 0 under sim.clock=rounds (rounds already decide once per sim.round_len_s); "
                f"it spaces decisions under sim.clock=events, got {cfg.get('min_gap_s')!r}",
            )
        hosts = cfg.get("replace_host_gpus") or {}
        require(
            isinstance(hosts, Mapping),
            source,
            "replace_host_gpus",
            f"must map GPU types to GPUs per node, got {hosts!r}",
        )
        for name, size in hosts.items():
            require(
                isinstance(size, int) and not isinstance(size, bool) and size >= 1,
                source,
                f"replace_host_gpus.{name}",
                f"must be a whole number of GPUs >= 1, got {size!r}",
            )
        if "replace_host_gpus" in cfg:
            cfg["replace_host_gpus"] = {str(k): int(v) for k, v in hosts.items()}
        if cfg.get("replace", cls.replace) != "keep":
            require(
                cfg.get("placement", cls.placement),
                source,
                "replace",
                f"{cfg.get('replace')} needs sim.placement=true (it re-places jobs on hosts)",
            )
        return cls(overheads=Overheads(**ov), **cfg)

    def check_horizon(self, jobs: JobSet, workload: str = "the workload", source: str = "sim") -> None:
        """Refuse a run that cannot finish within max_rounds, whatever the policy does: from its
        arrival until it could end at its fastest a job is active, and every round while some
        job is active is a step (an idle cluster jumps to the next arrival without one)."""
        if self.clock == "events":  # steps follow the jobs' own events, not the time they span
            return
        busy_s = busy_time(jobs.arrival, jobs.arrival + jobs.shortest_run_s())
        needed = math.ceil(busy_s / self.round_len_s)
        require(
            needed < self.max_rounds,
            source,
            "max_rounds",
            f"{self.max_rounds} rounds of {self.round_len_s:g} s end before {workload} can finish: its jobs keep the "
            f"cluster busy for at least {busy_s:.4g} s, {needed:.4g} rounds; raise sim.max_rounds or sim.round_len_s",
        )


def busy_time(start: np.ndarray, end: np.ndarray) -> float:
    """Length of the union of the intervals [start, end) (start sorted)."""
    if not len(start):
        return 0.0
    reach = np.maximum.accumulate(end)  # the latest end among the intervals so far
    opens = np.r_[True, start[1:] > reach[:-1]]  # an interval that begins after all earlier ones ended
    first = np.flatnonzero(opens)
    last = np.r_[first[1:] - 1, len(start) - 1]
    return float((reach[last] - start[first]).sum())


# What each setting may be (fairsim.errors rules), checked in this order: the first bad one is reported.
SWITCHES = {f.name: Bool() for f in fields(SimConfig) if f.type == "bool"}
OVERHEADS = {
    **{f.name: Bool() for f in fields(Overheads) if f.type == "bool"},
    "restart_s": Number(lo=0, what="a number of seconds >= 0"),
    "profiling_s_per_type": Number(lo=0, what="a number of seconds >= 0"),
}
SETTINGS = {
    "round_len_s": Number(*ROUND_LEN_S, what="a number of seconds in [{:g}, {:g}]".format(*ROUND_LEN_S)),
    "clock": OneOf(CLOCKS, wording="is_not"),
    # as a round: past a day every decision is stale
    "min_gap_s": Number(0.0, ROUND_LEN_S[1], what=f"a number of seconds in [0, {ROUND_LEN_S[1]:g}]"),
}
LATE_SETTINGS = {  # after the restart-vs-round check, as before
    "round_end": OneOf(ROUND_ENDS, wording="is_not"),
    "round_origin": OneOf(ROUND_ORIGINS, wording="is_not"),
    "until": OneOf(UNTIL, wording="is_not"),
    "replace": OneOf(REPLACES, wording="is_not"),
    "profile_error": Number(lo=0, hi=1, hi_open=True, what="a relative error in [0, 1)"),
    # a safety stop, not a budget: past 1e12 rounds it stops nothing (and counts would overflow)
    "max_rounds": Integer(lo=1, hi=MAX_ROUNDS, what=f"an integer in [1, {MAX_ROUNDS:.0e}]"),
}
