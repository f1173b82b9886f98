"""Vectorized pieces the trace generators share: which (model, worker count) pairs can run on
a cluster, a job's reference speed, worker-count mapping, uniform choice under a mask, and
Poisson arrivals."""

from __future__ import annotations

import numpy as np

from fairsim.cluster import ClusterSpec
from fairsim.workload.catalog import Catalog


def runnable(catalog: Catalog, cluster: ClusterSpec) -> np.ndarray:
    """bool [M, T, W]: model m with the slot's worker count runs on cluster type t (has a
    throughput, fits the type's GPU memory, and the type has that many GPUs)."""
    cols = catalog.type_columns(cluster)
    tput = catalog.packed[:, cols, :]
    mem_ok = catalog.mem_per_worker_gb[:, None, :] <= cluster.memory_gb[None, :, None]
    count_ok = np.asarray(catalog.worker_counts)[None, None, :] <= cluster.counts[None, :, None]
    return np.isfinite(tput) & mem_ok & count_ok


def eligible(catalog: Catalog, cluster: ClusterSpec) -> np.ndarray:
    """bool [M, W]: the model runs with that worker count on at least one type of the cluster."""
    return runnable(catalog, cluster).any(axis=1)


def reference_throughput(catalog: Catalog, cluster: ClusterSpec) -> np.ndarray:
    """float [M, W]: the capacity-weighted mean packed throughput over the cluster types the
    job can run on (NaN where it runs on none). A job's generated duration is its run time at
    this speed, so work = duration * reference throughput."""
    ok = runnable(catalog, cluster)
    cols = catalog.type_columns(cluster)
    tput = np.where(ok, catalog.packed[:, cols, :], 0.0)
    weight = np.where(ok, cluster.counts[None, :, None].astype(np.float64), 0.0)
    total = weight.sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(total > 0, (weight * tput).sum(axis=1) / total, np.nan)


def nearest_slot(requested: np.ndarray, worker_counts: tuple[int, ...], allowed: np.ndarray) -> np.ndarray:
    """Slot of the allowed worker count nearest to each request on a log2 scale (1 -> 2 is as
    far as 4 -> 8); ties go to the smaller count. ``allowed`` is bool [W] or [N, W]."""
    counts = np.log2(np.asarray(worker_counts, dtype=np.float64))
    dist = np.abs(np.log2(np.asarray(requested, dtype=np.float64))[:, None] - counts[None, :])
    dist = np.where(np.broadcast_to(allowed, dist.shape), dist, np.inf)
    return np.argmin(dist, axis=1)  # first minimum = the smaller count


def pick_uniform(u: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """For each row, the floor(u * count)-th True column of ``mask`` [N, M]: a uniform choice
    among the allowed columns driven by one uniform draw per row. Rows must have a True."""
    counts = mask.sum(axis=1)
    k = np.minimum((u * counts).astype(np.int64), counts - 1)
    return np.argmax(np.cumsum(mask, axis=1) > k[:, None], axis=1)


def poisson_arrivals(gaps_unit: np.ndarray, rate_per_s: float) -> np.ndarray:
    """Arrival times from unit-mean exponential gaps; the first job arrives at t = 0."""
    gaps = gaps_unit / rate_per_s
    arrivals = np.cumsum(gaps) - gaps[0]
    return arrivals
