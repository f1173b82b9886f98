"""Check mode (``sim.check=true``): validate the engine's invariants after every round.

A violation raises ``InvariantError`` with the round time and the offending job, so a policy or
engine bug stops the run where it happens instead of skewing the numbers.
"""

from __future__ import annotations

import numpy as np


class InvariantError(AssertionError):
    pass


class RoundChecker:
    """Remembers the previous round's progress, to check that it never decreases."""

    def __init__(self) -> None:
        self.prev_ids = np.empty(0, dtype=np.int64)
        self.prev_done = np.empty(0)

    def __call__(self, engine, active: np.ndarray, assignment: np.ndarray, finished: np.ndarray) -> None:
        _ensure((engine.s.done[self.prev_ids] >= self.prev_done).all(), "progress decreased")
        check_round(engine, active, assignment, finished)
        self.prev_ids, self.prev_done = active.copy(), engine.s.done[active].copy()


def check_round(engine, active: np.ndarray, assignment: np.ndarray, finished: np.ndarray) -> None:
    s, jobs, cluster = engine.s, engine.jobs, engine.cluster
    run = assignment >= 0
    gpus = engine.gang[active[run]]  # a rigid job's gang, an elastic job's allocated count
    used = np.bincount(assignment[run], weights=gpus, minlength=cluster.num_types)
    _ensure((used <= cluster.counts).all(), f"a type is oversubscribed: {used.tolist()} > {cluster.counts.tolist()}")
    _ensure(len(np.unique(active)) == len(active), "a job is active twice")
    bad = ~jobs.feasible[active[run], assignment[run]]
    _ensure(
        not bad.any(),
        lambda: (
            f"job {int(jobs.job_id[active[run][bad][0]])} runs on a GPU type it may not use "
            "(outside its gpu_types, or without the memory or a throughput there)"
        ),
    )
    done = s.done[active]
    _ensure((done >= 0).all() and (done <= jobs.work[active] * (1 + 1e-12)).all(), "progress outside [0, work]")
    gone = active[finished]
    _ensure(np.isfinite(s.finish[gone]).all(), "a finished job has no finish time")
    _ensure(
        (np.abs(s.done[gone] - jobs.work[gone]) <= 1e-9 * jobs.work[gone]).all(),
        "a finished job did not complete its work",
    )
    ended = np.isfinite(s.finish)
    ended[gone] = False
    _ensure(not ended[active].any(), "a finished job is active again")
    if engine.placer is not None and run.any():
        placer = engine.placer
        _ensure(
            (placer.free >= 0).all() and (placer.free <= placer.host_size).all(),
            "a host has a negative or excess free-GPU count",
        )
        hosts = placer.worker_host[active[run]]
        for_type = np.searchsorted(placer.host_offset, np.where(hosts >= 0, hosts, 0), side="right") - 1
        _ensure(
            ((hosts < 0) | (for_type == assignment[run][:, None])).all(), "a job has workers on a host of another type"
        )
        counts = (hosts >= 0).sum(axis=1)
        _ensure((counts == gpus).all(), "a running job's worker count differs from its allocated GPU count")
    rigid = np.ones(len(gpus), dtype=bool) if jobs.elastic is None else ~jobs.elastic.elastic[active[run]]
    _ensure((gpus[rigid] == jobs.workers[active[run]][rigid]).all(), "a rigid job runs on other than its gang size")
    if jobs.elastic is not None:
        e = jobs.elastic
        ids = active[run]
        _ensure(
            ((gpus >= e.min_gpus[ids]) & (gpus <= e.max_gpus[ids])).all(),
            "an elastic job runs outside its GPU-count range",
        )


def _ensure(ok: bool, message) -> None:
    if not ok:
        raise InvariantError(message() if callable(message) else message)
