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
        # progress only goes back by the work an outage lost (counted in the outages' ledger; done
        # less lost plus lost may differ from done in the last bit)
        slack = 0.0 if engine.outages is None else 1e-12 * engine.jobs.work[self.prev_ids]
        _ensure((_gross_done(engine, self.prev_ids) >= self.prev_done - slack).all(), "progress decreased")
        check_round(engine, active, assignment, finished)
        if engine.outages is not None:
            check_outages(engine, active, assignment)
        self.prev_ids, self.prev_done = active.copy(), _gross_done(engine, active)


def _gross_done(engine, ids: np.ndarray) -> np.ndarray:
    """Work done plus work lost to outages: what a step may only add to."""
    done = engine.s.done[ids]
    return done if engine.outages is None else done + engine.outages.lost[ids]


def check_outages(engine, active: np.ndarray, assignment: np.ndarray) -> None:
    """A capacity timeline's invariants: no worker on a host that is down, a down host's GPUs
    never free, the capacity shown to policies equal to the up hosts' GPUs, and no job that lost
    more than it had done since its restore point."""
    outages, placer = engine.outages, engine.placer
    down = outages.timeline.down_hosts()
    running = active[assignment >= 0]
    on_down = np.isin(placer.worker_host[running], down).any(axis=1) if len(down) else np.zeros(len(running), bool)
    _ensure(
        not on_down.any(), lambda: f"job {int(engine.jobs.job_id[running[on_down][0]])} runs on a host that is down"
    )
    _ensure((placer.free[down] == 0).all(), "a host that is down has free GPUs")
    up = engine.cluster.counts - engine.cluster.gpus_on(down)
    _ensure(
        (engine.capacity == up).all(),
        f"the capacity shown {engine.capacity.tolist()} is not the up hosts' {up.tolist()}",
    )
    _ensure((outages.lost >= 0).all() and (outages.lost_gpu_s >= 0).all(), "negative work lost")
    _ensure(
        (engine.s.done[active] >= outages.restore_done[active] - 1e-9 * engine.jobs.work[active]).all(),
        "a job went back before its restore point",
    )


def check_round(engine, active: np.ndarray, assignment: np.ndarray, finished: np.ndarray) -> None:
    s, jobs, cluster = engine.s, engine.jobs, engine.cluster
    run = assignment >= 0
    gpus = engine.gang[active[run]]  # a rigid job's gang, an elastic job's allocated count
    used = np.bincount(assignment[run], weights=gpus, minlength=cluster.num_types)
    capacity = engine.capacity  # the up hosts' GPUs (all of them without a capacity timeline)
    _ensure((used <= capacity).all(), f"a type is oversubscribed: {used.tolist()} > {capacity.tolist()}")
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
