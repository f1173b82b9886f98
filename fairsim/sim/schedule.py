"""The per-round schedule record (``sim.record_schedule=true``; off by default, it is large).

One row per (round, active job): every job that has arrived and not finished appears in every
round, running or not, so waiting shows as much as running. A fast-forwarded stretch of
unchanged rounds is one row per job with ``rounds`` > 1. Columns (written as schedule.parquet
beside jobs.parquet):

    t_s          round start, seconds since the start of the simulation
    duration_s   the round's (or stretch's) length in seconds
    rounds       how many rounds the row stands for (> 1 only for a fast-forwarded stretch)
    job_id       the job (the ``job_id`` of jobs.parquet)
    type         GPU type index of the cluster, -1 = not running this round
    gpu_type     the type's name (empty for a job not running)
    hosts        host index of each of the job's workers (cluster-wide numbering, hosts of type
                 0 first; empty when not running or without host placement)
    overhead_s   seconds of this round the job paid for a migration, restart or profiling
    busy_s       seconds the job held its GPUs this round (overhead + progress; a job that
                 finishes mid-round holds them until its exact finish)
    <policy>     extra per-job columns the policy reports (``Policy.schedule_columns``; FFT
                 adds ``rho``, its fairness compensation as of the round's decision)

Summing ``busy_s`` and ``overhead_s`` per job gives jobs.parquet's ``run_s`` and
``overhead_s``; consecutive running rows of a job on different types are its type switches.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

COLUMNS = ("t_s", "duration_s", "rounds", "job_id", "type", "gpu_type", "hosts", "overhead_s", "busy_s")


class ScheduleRecorder:
    """Collects one chunk of arrays per round; the table is built once at the end."""

    def __init__(self, gpu_types: tuple[str, ...]):
        self.gpu_types = gpu_types
        self.chunks: list[tuple] = []

    def add(
        self,
        t: float,
        duration: float,
        rounds: int,
        active: np.ndarray,
        assignment: np.ndarray,
        overhead: np.ndarray | float,
        busy: np.ndarray,
        worker_host: np.ndarray | None,
        extra: dict[str, np.ndarray],
    ) -> None:
        """``overhead`` and ``busy`` are over the running jobs (``assignment >= 0``, in order);
        ``worker_host`` [running, max workers] with -1 padding; ``extra``: columns over ``active``."""
        run_mask = assignment >= 0
        over = np.zeros(len(active))
        over[run_mask] = overhead
        held = np.zeros(len(active))
        held[run_mask] = busy
        hosts = np.full((len(active), 0 if worker_host is None else worker_host.shape[1]), -1, dtype=np.int64)
        if worker_host is not None:
            hosts[run_mask] = worker_host
        self.chunks.append(
            (
                t,
                duration,
                rounds,
                active.copy(),
                assignment.copy(),
                over,
                held,
                hosts,
                {k: np.array(v, dtype=np.float64) for k, v in extra.items()},
            )
        )

    def table(self, job_ids: np.ndarray) -> pd.DataFrame:
        if not self.chunks:
            return pd.DataFrame({c: [] for c in COLUMNS})
        sizes = np.array([len(c[3]) for c in self.chunks])
        rep = lambda k: np.repeat(np.array([c[k] for c in self.chunks], dtype=np.float64), sizes)  # noqa: E731
        active = np.concatenate([c[3] for c in self.chunks])
        types = np.concatenate([c[4] for c in self.chunks])
        names = np.array([*self.gpu_types, ""], dtype=object)  # -1 reads the trailing ""
        hosts = [row[row >= 0] for c in self.chunks for row in c[7]]
        table = pd.DataFrame(
            {
                "t_s": rep(0),
                "duration_s": rep(1),
                "rounds": rep(2).astype(np.int64),
                "job_id": job_ids[active],
                "type": types,
                "gpu_type": names[types],
                "hosts": hosts,
                "overhead_s": np.concatenate([c[5] for c in self.chunks]),
                "busy_s": np.concatenate([c[6] for c in self.chunks]),
            }
        )
        for key in sorted({k for c in self.chunks for k in c[8]}):
            table[key] = np.concatenate([c[8].get(key, np.full(len(c[3]), np.nan)) for c in self.chunks])
        return table


def type_switches(schedule: pd.DataFrame) -> pd.Series:
    """Per job: how often a run is on another type than the job's previous run (across pauses)."""
    running = schedule[schedule["type"] >= 0].sort_values(["job_id", "t_s"], kind="stable")
    prev = running.groupby("job_id")["type"].shift()
    return (prev.notna() & (prev != running["type"])).groupby(running["job_id"]).sum()


def preemptions(schedule: pd.DataFrame) -> pd.Series:
    """Per job: rounds it was paused right after a round it ran in (it stayed active)."""
    s = schedule.sort_values(["job_id", "t_s"], kind="stable")
    prev = s.groupby("job_id")["type"].shift()
    return ((prev >= 0) & (s["type"] < 0)).groupby(s["job_id"]).sum()


def migrations(schedule: pd.DataFrame) -> pd.Series:
    """Per job: type switches plus moves to other hosts between two consecutive rounds on the
    same type (consolidation); equals jobs.parquet's ``migrations`` when host placement is on."""
    s = schedule.sort_values(["job_id", "t_s"], kind="stable")
    prev_type = s.groupby("job_id")["type"].shift()
    prev_hosts = s.groupby("job_id")["hosts"].shift()
    kept = (prev_type == s["type"]) & (s["type"] >= 0)
    moved = [bool(k) and not np.array_equal(a, b) for k, a, b in zip(kept, s["hosts"], prev_hosts)]
    host_moves = pd.Series(moved, index=s.index).groupby(s["job_id"]).sum()
    return type_switches(schedule).reindex(host_moves.index, fill_value=0) + host_moves
