"""Gavel's job generator (its ``simulate_scheduler_with_generated_jobs``), re-implemented on
numpy for the ``gavel_generated`` workload.

Per job (draws from one ``Generator(PCG64(seed))``; a different random stream than Gavel's, so
the jobs match Gavel's distribution, not its exact sequence):

- arrival: Poisson, mean inter-arrival 3600 / rate_per_hour s; the first job at t = 0;
- duration on one reference GPU (V100): with probability 0.8, 10^U(1.5, 3) minutes, else
  10^U(3, 4) minutes;
- workers: all 1 (Gavel's default), or with ``multi_gpu`` (its ``--generate-multi-gpu-jobs``)
  1, 2, 4, 8 with probability 0.70, 0.10, 0.15, 0.05;
- job type: uniform over the catalog models that have a reference-GPU throughput at that worker
  count (Gavel's rejection loop: multi-worker jobs only draw its distributed templates, which
  are exactly the ones with multi-worker measurements) and run on this cluster;
- work (steps) = duration * the reference GPU's throughput for (job type, workers), as Gavel
  computes ``total_steps``. Gavel's wording says "duration on one V100", but its code
  multiplies by the throughput at the job's scale factor; we follow the code.

A worker count no job type can run on this cluster (e.g. 8 on a cluster with 4 GPUs of each
type) is mapped to the nearest runnable count (log2 scale, ties to the smaller).

The measurement window: Gavel averages JCT over job ids [4000, 5000) in steady state; the
window is returned with the trace so metrics can use it.

Why single-GPU jobs by default: Gavel's drivers generate multi-GPU jobs only when asked, and
its artifact sweeps put 36:36:36 at 0-6 jobs/h in steps of 0.4 for single-GPU jobs (its Fig. 8,
which contains the 3.2 jobs/h paper point) but at 0-3 jobs/h for multi-GPU jobs (Figs. 9-10).
With multi-GPU jobs 3.2 jobs/h asks for 1.13x the most any allocation of that cluster can
deliver (docs/gavel_compat.md, "Steady state"), so no steady state exists there.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from fairsim.cluster import ClusterSpec, canonical_gpu_name
from fairsim.errors import InputError, require
from fairsim.workload import options as opt
from fairsim.workload.catalog import Catalog
from fairsim.workload.sampling import eligible, nearest_slot, pick_uniform, poisson_arrivals
from fairsim.workload.trace import MAX_GENERATED_JOBS

OPTIONS = ("num_jobs", "rate_per_hour", "reference_gpu", "multi_gpu", "window")
WORKER_MIX = ((1, 0.70), (2, 0.10), (4, 0.15), (8, 0.05))
SHORT_SHARE = 0.8
SHORT_LOG10_MIN = (1.5, 3.0)
LONG_LOG10_MIN = (3.0, 4.0)


@dataclass(frozen=True)
class GavelGenOptions:
    num_jobs: int = 6000
    rate_per_hour: float = 3.2
    reference_gpu: str = "V100"
    multi_gpu: bool = False
    window: tuple[int, int] | None = (4000, 5000)

    @classmethod
    def from_config(cls, cfg: Mapping[str, Any], src: str) -> GavelGenOptions:
        multi = cfg.get("multi_gpu", cls.multi_gpu)
        require(isinstance(multi, bool), src, "multi_gpu", f"must be true or false, got {multi!r}")
        o = cls(
            num_jobs=opt.number(cfg, "num_jobs", src, cls.num_jobs, lo=1, hi=MAX_GENERATED_JOBS, integer=True),
            rate_per_hour=opt.number(cfg, "rate_per_hour", src, cls.rate_per_hour, lo=0, lo_open=True),
            reference_gpu=canonical_gpu_name(cfg.get("reference_gpu", cls.reference_gpu), src, "reference_gpu"),
            multi_gpu=multi,
            window=opt.window(cfg.get("window", cls.window), src),
        )
        if o.window is not None:
            require(
                o.window[1] <= o.num_jobs,
                src,
                "window",
                f"ends at job {o.window[1]} but only {o.num_jobs} jobs are generated (raise num_jobs)",
            )
        return o


def generate_gavel(
    catalog: Catalog, cluster: ClusterSpec, seed: int, o: GavelGenOptions, src: str = "workload"
) -> tuple[pd.DataFrame, dict]:
    if o.reference_gpu not in catalog.gpu_types:
        raise InputError(
            src,
            "reference_gpu",
            f"{o.reference_gpu} has no throughputs in catalog {catalog.name} (has: {', '.join(catalog.gpu_types)})",
        )
    rng = np.random.Generator(np.random.PCG64(seed))
    n = o.num_jobs
    gaps = rng.standard_exponential(n)
    u_long, u_log, u_workers, u_model = rng.random(n), rng.random(n), rng.random(n), rng.random(n)

    lo = np.where(u_long < SHORT_SHARE, SHORT_LOG10_MIN[0], LONG_LOG10_MIN[0])
    hi = np.where(u_long < SHORT_SHARE, SHORT_LOG10_MIN[1], LONG_LOG10_MIN[1])
    duration = 60.0 * 10.0 ** (lo + (hi - lo) * u_log)

    counts, probs = zip(*WORKER_MIX)
    requested = np.asarray(counts)[
        np.minimum(np.searchsorted(np.cumsum(probs), u_workers, side="right"), len(counts) - 1)
    ]
    if not o.multi_gpu:
        requested = np.ones(n, dtype=np.int64)
    ref_col = catalog.gpu_types.index(o.reference_gpu)
    ref_tput = catalog.packed[:, ref_col, :]  # [M, W]
    runs = eligible(catalog, cluster) & np.isfinite(ref_tput)
    require(
        runs.any(),
        src,
        "catalog",
        f"no model of catalog {catalog.name} has a {o.reference_gpu} throughput and runs on cluster {cluster.name}",
    )
    slot = nearest_slot(requested, catalog.worker_counts, runs.any(axis=0))
    model = pick_uniform(u_model, runs[:, slot].T)
    trace = pd.DataFrame(
        {
            "job_id": np.arange(n, dtype=np.int64),
            "arrival_s": poisson_arrivals(gaps, o.rate_per_hour / 3600.0),
            "model": np.asarray(catalog.models, dtype=object)[model],
            "workers": np.asarray(catalog.worker_counts, dtype=np.int64)[slot],
            "work": duration * ref_tput[model, slot],
        }
    )
    stats = {
        "rate_per_hour": o.rate_per_hour,
        "expected_span_h": n / o.rate_per_hour,
        "mean_duration_s": float(duration.mean()),
        "median_duration_s": float(np.median(duration)),
        "mean_workers": float(trace["workers"].mean()),
        "offered_load": float(
            (duration * trace["workers"]).sum() / (n / o.rate_per_hour * 3600.0) / cluster.total_gpus
        ),
    }
    return trace, stats
