"""Hosts that leave and return during a run (``fairsim.capacity_timeline``), as the engine applies them.

At an outage's start the jobs with a worker on the host are evicted: each goes back to its last
checkpoint, losing the work since then, and pays a restart (the preemption rule of
``fairsim.sim.overheads``: restart plus its state over the link) when it runs again. A job's
restore point is set whenever it starts, resumes, moves or is resized (its state is saved then),
and it checkpoints every ``checkpoint_interval_s`` of progress after its start's overhead; with
no interval its last start is its only restore point. The work lost is the job's rate where it
ran times its progress time since the last checkpoint, never more than it made since its
restore point (exact for a rigid job, whose rate is fixed between its starts; an elastic job's
goodput drifts slowly with its progress). Checkpoint writes are taken to overlap training (no
pause is charged for them).

The capacity the policy sees is the up hosts' GPUs; a host that comes back is free at once.
"""

from __future__ import annotations

import math

import numpy as np

from fairsim.capacity_timeline import CAUSES, CapacityConfig, CapacityTimeline
from fairsim.errors import InputError


class Outages:
    def __init__(self, engine, cfg: CapacityConfig):
        if engine.placer is None:
            raise InputError(
                "sim", "placement", "must be true with a capacity timeline (capacity=...): outages take down hosts"
            )
        if engine.cfg.round_origin != "first_arrival":
            raise InputError(
                "sim",
                "round_origin",
                "must be first_arrival with a capacity timeline: an outage ends a round where it falls",
            )
        self.engine = engine
        self.timeline = CapacityTimeline(cfg, engine.cluster, engine.seed)
        n = len(engine.jobs)
        self.interval = cfg.intervals(engine.jobs.model_name)
        self.restore_done = np.zeros(n)  # work done at the job's latest restore point (start, move)
        self.productive_from = np.full(n, np.nan)  # when its progress since then began (after the start's overhead)
        self.evictions = np.zeros(n, dtype=np.int64)
        self.lost = np.zeros(n)  # work redone, in the catalog's units
        self.lost_gpu_s = np.zeros(n)  # GPU-seconds spent on work that was lost
        self._log = [(-math.inf, int(engine.cluster.counts.sum()))]  # (from when, GPUs up)

    @property
    def next_s(self) -> float:
        return self.timeline.next_s

    def any_down(self) -> bool:
        return bool(self.timeline.holds.any())

    def pop(self, t: float) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
        """The outages that begin or end by ``t``: the hosts that go down, those that come back,
        and the GPUs per type up from now on (None: unchanged)."""
        went, came = self.timeline.pop(t)
        if not (len(went) or len(came)):
            return went, came, None
        cluster = self.engine.cluster
        capacity = cluster.counts - cluster.gpus_on(self.timeline.down_hosts())
        self._log.append((t, int(capacity.sum())))
        return went, came, capacity

    def restored(self, t: float, ids: np.ndarray, done: np.ndarray, owed: np.ndarray) -> None:
        """Jobs whose state was saved now (started, resumed, moved): their new restore point."""
        self.restore_done[ids] = done
        self.productive_from[ids] = t + owed

    def lost_work(self, t: float, ids, done, rate, gpus) -> tuple[np.ndarray, np.ndarray]:
        """Work each evicted job loses at ``t`` (since its last checkpoint), and the GPU-seconds it took."""
        ran = np.maximum(t - self.productive_from[ids], 0.0)  # progress time since the restore point
        interval = self.interval[ids]
        since = np.where(np.isfinite(interval), np.fmod(ran, np.where(np.isfinite(interval), interval, 1.0)), ran)
        lost = np.clip(rate * since, 0.0, np.maximum(done - self.restore_done[ids], 0.0))
        return lost, lost / rate * gpus

    def evicted(self, ids: np.ndarray, lost: np.ndarray, lost_gpu_s: np.ndarray) -> None:
        self.evictions[ids] += 1
        self.lost[ids] += lost
        self.lost_gpu_s[ids] += lost_gpu_s

    def capacity_at(self, times: np.ndarray) -> np.ndarray:
        """GPUs up at each of ``times`` (a step never spans an outage's start or end)."""
        starts = np.array([s for s, _ in self._log])
        gpus = np.array([g for _, g in self._log])
        return gpus[np.searchsorted(starts, times, side="right") - 1]

    def job_columns(self) -> dict[str, np.ndarray]:
        return {"evictions": self.evictions, "lost_work": self.lost, "lost_gpu_s": self.lost_gpu_s}

    def stats(self, end: float) -> dict:
        """The run's outage counters (``fairsim.metrics.capacity_summary`` reads them)."""
        seen = self.timeline.outage_seconds(end)
        out = {f"outages_{c}": int(self.timeline.events[i]) for i, c in enumerate(CAUSES)}
        out.update({f"gpu_s_down_{c}": float(seen["by_cause"][i]) for i, c in enumerate(CAUSES)})
        out.update({f"gpu_s_down_{name}": float(v) for name, v in zip(self.engine.cluster.gpu_types, seen["by_type"])})
        return out
