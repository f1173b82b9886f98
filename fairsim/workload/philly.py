"""Philly-based trace generator (the paper's traces follow the Philly trace's durations and
GPU counts; docs/workload.md).

For each job, in this order (all draws from one ``Generator(PCG64(seed))``, drawn whether or
not an option uses them, so switching an option leaves the other draws unchanged):

1. a (duration, GPU count) pair sampled jointly from the Philly table;
2. duration = Philly duration * ``duration_scale``, clipped to [min_duration_s, max_duration_s],
   then optionally compressed in log space around the median so that longest / shortest is at
   most ``spread_limit``;
3. group: large model with probability ``large_share`` (when set), else any model;
4. worker count: Philly's GPU count, or ``workers`` (one count or a {count: probability} mix);
   a Philly count is mapped to the nearest count (log2 scale, ties to the smaller) that some
   model of the job's group runs with on this cluster; an explicit count must be runnable;
5. model: uniform over the group's models that run with that worker count on this cluster;
6. work = duration * reference throughput, the capacity-weighted mean packed throughput over
   the cluster types the job can run on: the duration is the job's run time at that speed.

Arrivals are Poisson with rate lambda = load * load_scale * total_GPUs / mean(duration *
workers) over the generated jobs, so the offered GPU-time per second of cluster time is
``load * load_scale`` times the cluster's GPU count. The first job arrives at t = 0.

``arrivals: philly`` replaces steps 1 and the Poisson gaps by a window of consecutive real
Philly submissions (fairsim/workload/philly_window.py): the seed picks the window's first job,
each job keeps its own duration, GPU count and virtual cluster (its tenant), and the real gaps are stretched uniformly so the
mean gap is 1 / lambda. ``span_h: S`` fixes the arrival span instead (last arrival at S hours,
lambda = (n - 1) / S) and reaches ``load`` by multiplying every shaped duration by one factor,
clipped to [min_duration_s, max_duration_s] after the multiplication; ``duration_scale`` then
has no effect and is refused. ``jobs_per_gpu_hour: r`` sets the span instead as
num_jobs / (r * total GPUs): the same arrival intensity per GPU on any cluster and trace size.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from fairsim.cluster import ClusterSpec
from fairsim.errors import InputError
from fairsim.files import note_input
from fairsim.workload import options as opt
from fairsim.workload.catalog import Catalog
from fairsim.workload.philly_window import duration_factor, stretch_to, window, window_start, window_tenants
from fairsim.workload.sampling import eligible, nearest_slot, pick_uniform, poisson_arrivals, reference_throughput
from fairsim.workload.trace import MAX_GENERATED_JOBS

OPTIONS = (
    "num_jobs",
    "load",
    "load_scale",
    "duration_scale",
    "min_duration_s",
    "max_duration_s",
    "workers",
    "large_share",
    "spread_limit",
    "arrivals",
    "span_h",
    "jobs_per_gpu_hour",
)
ARRIVALS = ("poisson", "philly")


@dataclass(frozen=True)
class PhillyOptions:
    num_jobs: int = 300
    load: float = 0.8
    load_scale: float = 1.0  # multiplies load: a preset's arrival intensity relative to the sweep's load
    duration_scale: float = 1.0
    min_duration_s: float = 60.0
    max_duration_s: float | None = None
    workers: int | dict[int, float] | None = None
    large_share: float | None = None
    spread_limit: float | None = None
    arrivals: str = "poisson"
    span_h: float | None = None
    jobs_per_gpu_hour: float | None = None  # alternative to span_h: span = num_jobs / (this * total GPUs)

    @classmethod
    def from_config(cls, cfg: Mapping[str, Any], src: str) -> PhillyOptions:
        o = cls(
            num_jobs=opt.number(cfg, "num_jobs", src, cls.num_jobs, lo=1, hi=MAX_GENERATED_JOBS, integer=True),
            load=opt.number(cfg, "load", src, cls.load, lo=0, lo_open=True),
            load_scale=opt.number(cfg, "load_scale", src, cls.load_scale, lo=0, lo_open=True),
            duration_scale=opt.number(cfg, "duration_scale", src, cls.duration_scale, lo=0, lo_open=True),
            min_duration_s=opt.number(cfg, "min_duration_s", src, cls.min_duration_s, lo=0, lo_open=True),
            max_duration_s=opt.number(cfg, "max_duration_s", src, None, lo=0, lo_open=True, optional=True),
            workers=opt.worker_spec(cfg.get("workers"), src),
            large_share=opt.number(cfg, "large_share", src, None, lo=0, hi=1, optional=True),
            spread_limit=opt.number(cfg, "spread_limit", src, None, lo=1, lo_open=True, optional=True),
            arrivals=opt.choice(cfg, "arrivals", src, cls.arrivals, ARRIVALS),
            span_h=opt.number(cfg, "span_h", src, None, lo=0, lo_open=True, optional=True),
            jobs_per_gpu_hour=opt.number(cfg, "jobs_per_gpu_hour", src, None, lo=0, lo_open=True, optional=True),
        )
        if o.span_h is not None and o.jobs_per_gpu_hour is not None:
            raise InputError(src, "jobs_per_gpu_hour", "sets the span like span_h: give one of them, not both")
        if (o.span_h is not None or o.jobs_per_gpu_hour is not None) and o.duration_scale != 1.0:
            raise InputError(
                src,
                "duration_scale",
                "has no effect with span_h or jobs_per_gpu_hour (durations are scaled to reach load "
                f"over the span); remove it or set span_h: null, got {o.duration_scale:g}",
            )
        if o.max_duration_s is not None and o.max_duration_s < o.min_duration_s:
            raise InputError(
                src, "max_duration_s", f"must be >= min_duration_s ({o.min_duration_s:g}), got {o.max_duration_s:g}"
            )
        return o


def philly_pairs() -> tuple[np.ndarray, np.ndarray]:
    """(duration_s float [P], num_gpus int [P]) of the shipped Philly table, read-only."""
    path = Path(str(resources.files("fairsim.data").joinpath("philly", "philly_job_durations.csv")))
    note_input(path)
    return _philly_pairs(path)


@lru_cache(maxsize=1)
def _philly_pairs(path: Path) -> tuple[np.ndarray, np.ndarray]:
    df = pd.read_csv(path)
    dur = df["duration_s"].to_numpy(np.float64)
    gpus = df["num_gpus"].to_numpy(np.int64)
    dur.setflags(write=False)
    gpus.setflags(write=False)
    return dur, gpus


def shape_durations(raw: np.ndarray, o: PhillyOptions) -> np.ndarray:
    dur = np.clip(
        raw * o.duration_scale, o.min_duration_s, o.max_duration_s if o.max_duration_s is not None else np.inf
    )
    if o.spread_limit is not None and len(dur) > 1:
        logs = np.log(dur)
        width = logs.max() - logs.min()
        if width > np.log(o.spread_limit):
            center = np.median(logs)
            dur = np.exp(center + (logs - center) * (np.log(o.spread_limit) / width))
    return dur


def generate_philly(
    catalog: Catalog, cluster: ClusterSpec, seed: int, o: PhillyOptions, src: str = "workload"
) -> tuple[pd.DataFrame, dict]:
    """(trace in fairsim's schema, stats of the generated workload)."""
    rng = np.random.Generator(np.random.PCG64(seed))
    n = o.num_jobs
    pdur, pgpus = philly_pairs()
    pair = rng.integers(0, len(pdur), n)
    u_workers, u_large, u_model = rng.random(n), rng.random(n), rng.random(n)
    gaps = rng.standard_exponential(n)
    u_window = rng.random()  # drawn last, so poisson traces are unchanged by its existence

    first = None
    if o.arrivals == "philly":
        first = window_start(u_window, n, src)
        offsets, raw_dur, raw_gpus = window(first, n)
    else:
        raw_dur, raw_gpus = pdur[pair], pgpus[pair]

    runs = eligible(catalog, cluster)  # [M, W]
    if o.large_share is None:
        group_of_job = np.zeros(n, dtype=np.int64)
        group_models = np.ones((1, len(catalog.models)), dtype=bool)
    else:
        group_of_job = (u_large < o.large_share).astype(np.int64)  # 1 = large
        group_models = np.stack([~catalog.large, catalog.large])
    group_allowed = (group_models[:, :, None] & runs[None]).any(axis=1)  # [groups, W]
    for g in np.unique(group_of_job):
        if not group_allowed[g].any():
            kind = "large" if o.large_share is not None and g == 1 else "any"
            raise InputError(
                src,
                "large_share" if o.large_share is not None else "catalog",
                f"no {kind} model of catalog {catalog.name} fits any GPU type of cluster {cluster.name}",
            )
    allowed = group_allowed[group_of_job]  # [N, W]
    slot = _worker_slots(o.workers, raw_gpus, u_workers, catalog, allowed, src)

    model_mask = runs[:, slot].T & group_models[group_of_job]  # [N, M]
    model = pick_uniform(u_model, model_mask)
    workers = np.asarray(catalog.worker_counts, dtype=np.int64)[slot]
    ref = reference_throughput(catalog, cluster)[model, slot]
    intensity = o.load * o.load_scale * cluster.total_gpus  # offered GPU-seconds per second
    factor = None
    span_h = o.span_h if o.jobs_per_gpu_hour is None else n / (o.jobs_per_gpu_hour * cluster.total_gpus)
    if span_h is None:
        dur = shape_durations(raw_dur, o)
        rate = intensity / (dur * workers).mean()
        last = (n - 1) / rate
    else:
        last = span_h * 3600.0
        rate = (n - 1) / last if n > 1 else 1.0 / last
        base = shape_durations(raw_dur, replace(o, duration_scale=1.0, min_duration_s=0.0, max_duration_s=None))
        factor = duration_factor(base, workers, n * intensity / rate, o.min_duration_s, o.max_duration_s, src)
        dur = np.clip(base * factor, o.min_duration_s, np.inf if o.max_duration_s is None else o.max_duration_s)
    if o.arrivals == "philly":
        arrival = stretch_to(offsets, last)
    elif span_h is None:
        arrival = poisson_arrivals(gaps, rate)
    else:
        arrival = stretch_to(poisson_arrivals(gaps, 1.0), last)
    trace = pd.DataFrame(
        {
            "job_id": np.arange(n, dtype=np.int64),
            "arrival_s": arrival,
            "model": np.asarray(catalog.models, dtype=object)[model],
            "workers": workers,
            "work": dur * ref,
        }
    )
    if first is not None:  # real submissions carry their virtual cluster: the tenant
        trace["tenant"] = window_tenants(first, n)
    between = np.diff(arrival)
    stats = {
        "arrivals": o.arrivals,
        "rate_per_hour": float(rate * 3600.0),
        "offered_load": o.load * o.load_scale,
        "expected_span_h": float(n / rate / 3600.0),
        "arrival_span_h": float(arrival[-1] / 3600.0),
        "interarrival_cv": float(between.std() / between.mean())
        if len(between) > 1 and between.mean() > 0
        else float("nan"),
        "mean_duration_s": float(dur.mean()),
        "median_duration_s": float(np.median(dur)),
        "min_duration_s": float(dur.min()),
        "max_duration_s": float(dur.max()),
        "mean_workers": float(workers.mean()),
        "large_fraction": float(catalog.large[model].mean()),
    }
    if factor is not None:
        stats["duration_factor"] = float(factor)
    if first is not None:
        stats["philly_window_first_job"] = int(first)
    return trace, stats


def _worker_slots(
    spec, philly_gpus: np.ndarray, u: np.ndarray, catalog: Catalog, allowed: np.ndarray, src: str
) -> np.ndarray:
    counts = np.asarray(catalog.worker_counts)
    if spec is None:  # Philly's GPU count, mapped onto what the job's group can run
        return nearest_slot(philly_gpus, catalog.worker_counts, allowed)
    if isinstance(spec, dict):
        keys = np.asarray(list(spec), dtype=np.int64)
        cum = np.cumsum(np.asarray(list(spec.values())))
        requested = keys[np.minimum(np.searchsorted(cum / cum[-1], u, side="right"), len(keys) - 1)]
    else:
        requested = np.full(len(u), spec, dtype=np.int64)
    slot = np.searchsorted(counts, requested)
    ok = (slot < len(counts)) & (counts[np.minimum(slot, len(counts) - 1)] == requested)
    ok[ok] = allowed[np.flatnonzero(ok), slot[ok]]
    if not ok.all():
        bad = int(requested[~ok][0])
        runnable = ", ".join(str(c) for c, a in zip(counts, allowed[np.flatnonzero(~ok)[0]]) if a)
        raise InputError(
            src,
            "workers",
            f"no model of catalog {catalog.name} runs with {bad} workers on this cluster (allowed: {runnable})",
        )
    return slot
