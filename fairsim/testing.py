"""Tiny hand-made instances for tests and notebooks: a cluster, a job set and a policy view
from a few numbers, with no catalog or trace file involved."""

from __future__ import annotations

import dataclasses

import numpy as np

from fairsim.cluster import ClusterSpec
from fairsim.policies.base import PolicyView
from fairsim.workload.elastic import ElasticJobs
from fairsim.workload.jobs import JobSet


def toy_cluster(counts: dict[str, int], gpus_per_host: int = 4, **kw) -> ClusterSpec:
    return ClusterSpec.from_config({"name": "toy", "counts": counts, "gpus_per_host": gpus_per_host, **kw})


def toy_elastic(model, n: int, lo: int = 1, hi: int = 8, elastic: bool = True) -> ElasticJobs:
    """n jobs the scheduler may size from ``lo`` to ``hi`` GPUs (or not, ``elastic=False``), all
    progressing at ``model``'s goodput: the ``elastic`` argument of ``toy_jobs``."""
    return ElasticJobs(
        elastic=np.full(n, elastic),
        min_gpus=np.full(n, lo, dtype=np.int64),
        max_gpus=np.full(n, hi, dtype=np.int64),
        model=model,
    )


def toy_jobs(
    throughput,
    work,
    arrival=None,
    workers=None,
    state_bytes=None,
    spread=None,
    feasible=None,
    weight=None,
    tenant=None,
    work_unit: str = "unit",
    elastic: ElasticJobs | None = None,
) -> JobSet:
    """Jobs from a throughput table [J, T] (units/s on each cluster type; 0 = cannot run);
    ``elastic``: which of them the scheduler may size, and their goodput model."""
    tput = np.asarray(throughput, dtype=np.float64)
    n = tput.shape[0]
    feas = tput > 0 if feasible is None else np.asarray(feasible, dtype=bool) & (tput > 0)
    arrays = dict(
        job_id=np.arange(n, dtype=np.int64),
        arrival=np.zeros(n) if arrival is None else np.asarray(arrival, dtype=np.float64),
        model=np.zeros(n, dtype=np.int64),
        model_name=np.array(["toy"] * n, dtype=object),
        workers=np.ones(n, dtype=np.int64) if workers is None else np.asarray(workers, dtype=np.int64),
        work=np.asarray(work, dtype=np.float64),
        weight=np.ones(n) if weight is None else np.asarray(weight, dtype=np.float64),
        tput_packed=np.where(feas, tput, 0.0),
        tput_spread=np.where(feas, tput if spread is None else np.asarray(spread, dtype=np.float64), 0.0),
        feasible=feas,
        state_bytes=np.zeros(n) if state_bytes is None else np.asarray(state_bytes, dtype=np.float64),
        mem_per_worker_gb=np.zeros(n),
        tenant=np.full(n, "", dtype=object) if tenant is None else np.asarray(tenant, dtype=object),
    )
    for a in arrays.values():
        a.setflags(write=False)
    return JobSet(work_unit=work_unit, elastic=elastic, **arrays)


def toy_mixed_jobs(
    seed: int, n: int, work: tuple[float, float], span_s: float, max_state_bytes: float
) -> tuple[JobSet, np.ndarray]:
    """n random jobs on three types: throughputs in [0.2, 2) units/s (70% of that spread over
    hosts), work uniform in ``work``, arrivals uniform over ``span_s``, gangs of 1, 2 or 4, state
    up to ``max_state_bytes``. Returns the jobs and their packed throughput table."""
    rng = np.random.default_rng(seed)
    tput = rng.uniform(0.2, 2.0, size=(n, 3))
    jobs = toy_jobs(
        tput,
        work=rng.uniform(*work, n),
        arrival=np.sort(rng.uniform(0, span_s, n)),
        workers=rng.choice([1, 2, 4], n),
        state_bytes=rng.uniform(0, max_state_bytes, n),
        spread=tput * 0.7,
    )
    return jobs, tput


def toy_view(
    throughput,
    capacity,
    workers=None,
    work=None,
    done=None,
    arrival=None,
    now: float = 0.0,
    round_len: float = 300.0,
    last_type=None,
    prev_type=None,
    switch_cost_s=None,
    feasible=None,
    state_bytes=None,
    attained_gpu_s=None,
    weight=None,
    changed: bool = True,
    gpus_per_host: int = 4,
    run_s=None,
    first_start=None,
) -> PolicyView:
    """A policy view over n jobs and T types from small arrays; unspecified fields get neutral
    values (nothing done, never run: ``run_s`` 0, ``first_start`` NaN)."""
    tput = np.asarray(throughput, dtype=np.float64)
    n, t = tput.shape
    cap = np.asarray(capacity, dtype=np.int64)
    cluster = ClusterSpec(
        name="toy",
        gpu_types=tuple(f"type{k}" for k in range(t)),
        counts=cap,
        memory_gb=np.full(t, 80.0),
        gpus_per_host=gpus_per_host,
    )
    wk = np.ones(n, dtype=np.int64) if workers is None else np.asarray(workers, dtype=np.int64)
    feas = (tput > 0) & (wk[:, None] <= cap[None, :])
    if feasible is not None:
        feas &= np.asarray(feasible, dtype=bool)

    def arr(value, default, dtype=np.float64):
        return np.asarray(default if value is None else value, dtype=dtype)

    return PolicyView(
        now=float(now),
        round_len=float(round_len),
        cluster=cluster,
        capacity=cap,
        job_id=np.arange(n, dtype=np.int64),
        arrival=arr(arrival, np.zeros(n)),
        workers=wk,
        work=arr(work, np.ones(n)),
        done=arr(done, np.zeros(n)),
        weight=arr(weight, np.ones(n)),
        throughput=np.where(feas, tput, 0.0),
        feasible=feas,
        last_type=arr(last_type, np.full(n, -1), np.int64),
        prev_type=arr(prev_type, np.full(n, -1), np.int64),
        switch_cost_s=arr(switch_cost_s, np.zeros((n, t))),
        state_bytes=arr(state_bytes, np.zeros(n)),
        attained_gpu_s=arr(attained_gpu_s, np.zeros(n)),
        run_s=arr(run_s, np.zeros(n)),
        first_start=arr(first_start, np.full(n, np.nan)),
        changed=changed,
    )


def with_job_ids(view: PolicyView, ids) -> PolicyView:
    """The same view with other engine job ids (a job seen again in a later round keeps its id)."""
    return dataclasses.replace(view, job_id=np.asarray(ids, dtype=np.int64))


def fractions_on(policy, view: PolicyView) -> np.ndarray:
    """A fraction policy's X for one view, the policy freshly reset for the view's jobs."""
    policy.reset(view.cluster, view.num_jobs, 0)
    return policy.fractions(view)
