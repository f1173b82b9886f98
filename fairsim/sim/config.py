"""Engine settings (the ``sim`` config group). Every overhead can be switched off on its own."""

from __future__ import annotations

import math
from dataclasses import dataclass, field, fields
from typing import Any, Mapping

from fairsim.errors import require

ROUND_ENDS = ("fixed", "latest_finish")
# Round length bounds. Below 1 s a run needs more rounds than any scheduler decides (the paper's
# FFT, Gavel and Themis use minutes) and a tiny value (1e-9 s) would spin to max_rounds; above a
# day a round outlasts most jobs and every decision is stale.
ROUND_LEN_S = (1.0, 86_400.0)
UNTIL = ("all", "window")


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
    """

    migration: bool = True
    preemption: bool = True
    profiling: bool = False
    restart_s: float = 30.0  # container restart + NCCL init
    profiling_s_per_type: float = 60.0

    def any(self) -> bool:
        return self.migration or self.preemption or self.profiling


@dataclass(frozen=True)
class SimConfig:
    round_len_s: float = 300.0
    round_end: str = "fixed"  # "latest_finish": Gavel's jump to the last finish in the round (no backfill)
    integer_steps: bool = False  # Gavel: a round runs floor(tput * round) whole steps
    placement: bool = True  # host-level placement (packing, consolidation); off = every job packed
    consolidate: bool = True  # at churn, move spread multi-worker jobs onto one host, smallest state first
    fast_forward: bool = True  # skip unchanged rounds in bulk for event-driven policies
    check: bool = False  # validate invariants every round
    max_rounds: int = 10_000_000  # safety stop; hitting it is an error, never a silent truncation
    record_schedule: bool = False  # keep a row per (round, active job): schedule.parquet (fairsim.sim.schedule)
    profile_error: float = 0.0  # policies see each job's work off by a seeded factor in [1 - e, 1 + e] (paper Fig. 13b)
    # when the run ends: "all" jobs finished, or the workload's measurement "window" (Gavel's
    # generated-jobs mode: the rest of the trace only keeps the cluster loaded; no window = all)
    until: str = "all"
    overheads: Overheads = field(default_factory=Overheads)

    @classmethod
    def from_config(cls, cfg: Mapping[str, Any] | None, source: str = "sim") -> "SimConfig":
        cfg = dict(cfg or {})
        cfg.pop("name", None)
        known = {f.name for f in fields(cls)}
        for key in cfg:
            require(key in known, source, key, f"unknown setting (allowed: {', '.join(sorted(known))})")
        ov = dict(cfg.pop("overheads", None) or {})
        ov_known = {f.name for f in fields(Overheads)}
        for key in ov:
            require(key in ov_known, source, f"overheads.{key}", f"unknown setting (allowed: {', '.join(sorted(ov_known))})")
        # a switch given as a string ("maybe", "yes") would be truthy and silently change the run
        for f in fields(cls):
            if f.type == "bool" and f.name in cfg:
                require(isinstance(cfg[f.name], bool), source, f.name, f"must be true or false, got {cfg[f.name]!r}")
        for f in fields(Overheads):
            if f.type == "bool" and f.name in ov:
                require(isinstance(ov[f.name], bool), source, f"overheads.{f.name}", f"must be true or false, got {ov[f.name]!r}")
        for key in ("restart_s", "profiling_s_per_type"):
            if key in ov:
                require(_num(ov[key]) and ov[key] >= 0, source, f"overheads.{key}", f"must be a number of seconds >= 0, got {ov[key]!r}")
        if "round_len_s" in cfg:
            lo, hi = ROUND_LEN_S
            require(_num(cfg["round_len_s"]) and lo <= cfg["round_len_s"] <= hi, source, "round_len_s",
                    f"must be a number of seconds in [{lo:g}, {hi:g}], got {cfg['round_len_s']!r}")
        round_len = cfg.get("round_len_s", cls.round_len_s)
        restart = ov.get("restart_s", Overheads.restart_s)
        if ov.get("migration", True) or ov.get("preemption", True):  # the engine drops unpaid overhead when a job
            # stops: a restart as long as a round leaves a job that a policy pauses every other round without progress, forever
            require(restart < round_len, source, "overheads.restart_s",
                    f"must be shorter than a round (sim.round_len_s={round_len:g} s), got {restart!r}")
        if "round_end" in cfg:
            require(cfg["round_end"] in ROUND_ENDS, source, "round_end", f"{cfg['round_end']!r} is not one of {', '.join(ROUND_ENDS)}")
        if "until" in cfg:
            require(cfg["until"] in UNTIL, source, "until", f"{cfg['until']!r} is not one of {', '.join(UNTIL)}")
        if "profile_error" in cfg:
            require(_num(cfg["profile_error"]) and 0 <= cfg["profile_error"] < 1, source, "profile_error",
                    f"must be a relative error in [0, 1), got {cfg['profile_error']!r}")
        if "max_rounds" in cfg:
            require(isinstance(cfg["max_rounds"], int) and cfg["max_rounds"] > 0, source, "max_rounds", f"must be an integer > 0, got {cfg['max_rounds']!r}")
        return cls(overheads=Overheads(**ov), **cfg)

    def check_horizon(self, last_arrival_s: float, source: str = "sim") -> None:
        """Refuse a run that cannot finish within max_rounds: it needs a round per round length
        until the last job arrives, whatever the policy does."""
        needed = math.ceil(last_arrival_s / self.round_len_s)
        require(needed < self.max_rounds, source, "max_rounds",
                f"{self.max_rounds} rounds of {self.round_len_s:g} s end before the last job arrives at {last_arrival_s:.0f} s "
                f"(needs more than {needed}); raise sim.max_rounds or sim.round_len_s")


def _num(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)
