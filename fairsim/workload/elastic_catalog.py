"""Elastic jobs over any fairsim catalog, and the workload option that makes a trace's jobs elastic.

    workload.elastic: {fraction: 1.0, min_gpus: 1, max_gpus: null, like: {}}

``CatalogGoodput`` rates a job of a catalog model on n GPUs as the catalog's throughput at n
(linear between the worker counts the catalog has for the model, 0 outside them) times the
statistical efficiency of the Pollux application the model is mapped to (``pollux_mapping.csv``,
or ``like``), with the job's batch at its requested count in the role of Pollux's initial batch
and the batch growing with the GPU count (data parallelism, a fixed per-GPU batch): scale =
n / requested. At its requested count an elastic job therefore runs exactly as its rigid self.
Progress is in the catalog's work unit. docs/elastic.md has the equations and the mapping.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from fairsim.cluster import ClusterSpec
from fairsim.errors import InputError, Integer, Number, check_keys, require
from fairsim.files import note_input
from fairsim.workload.catalog import Catalog
from fairsim.workload.elastic import ElasticJobs
from fairsim.workload.goodput import PolluxCatalog, PolluxGoodput, efficiency
from fairsim.workload.jobs import JobSet, type_mask

ELASTIC_KEYS = ("fraction", "min_gpus", "max_gpus", "like")
_BATCH_SUFFIX = re.compile(r"\s*\(batch size \d+\)$")  # Gavel's job types: "ResNet-18 (batch size 64)"


def mapping_path() -> Path:
    return Path(str(resources.files("fairsim.data").joinpath("pollux_mapping.csv")))


@dataclass(frozen=True)
class ElasticOptions:
    """``workload.elastic``, checked. The jobs made elastic are drawn with the run's seed."""

    fraction: float = 1.0  # share of the trace's jobs that are elastic, each drawn independently
    min_gpus: int = 1  # fewest GPUs (raised to the fewest the catalog rates the model at)
    max_gpus: int | None = None  # most GPUs; None: the most the catalog rates the model at
    like: tuple[tuple[str, str], ...] = ()  # (catalog model, Pollux model) beyond or over the shipped mapping

    @classmethod
    def from_config(cls, raw: Any, src: str) -> ElasticOptions | None:
        """None when ``raw`` is None or false (every job rigid, the default)."""
        if raw is None or raw is False:
            return None
        if raw is True:
            return cls()
        if not isinstance(raw, Mapping):
            raise InputError(
                src, "elastic", f"must be a mapping like {{fraction: 1.0, min_gpus: 1, max_gpus: null}}, got {raw!r}"
            )
        check_keys(raw, ELASTIC_KEYS, src, prefix="elastic.")
        fraction = Number(lo=0.0, hi=1.0).check(raw.get("fraction", 1.0), src, "elastic.fraction")
        min_gpus = Integer(lo=1).check(raw.get("min_gpus", 1), src, "elastic.min_gpus")
        max_gpus = raw.get("max_gpus")
        if max_gpus is not None:
            max_gpus = Integer(lo=1, what=f"null or an integer >= min_gpus ({min_gpus})").check(
                max_gpus, src, "elastic.max_gpus"
            )
            require(
                max_gpus >= min_gpus,
                src,
                "elastic.max_gpus",
                f"must be null or >= min_gpus ({min_gpus}), got {max_gpus}",
            )
        like = raw.get("like") or {}
        require(
            isinstance(like, Mapping), src, "elastic.like", f"must map catalog models to Pollux models, got {like!r}"
        )
        return cls(
            fraction=float(fraction),
            min_gpus=int(min_gpus),
            max_gpus=None if max_gpus is None else int(max_gpus),
            like=tuple((str(k), str(v)) for k, v in like.items()),
        )

    def chosen(self, n_jobs: int, seed: int) -> np.ndarray:
        """bool [n_jobs]: which jobs are elastic (all at fraction 1, none at 0)."""
        if self.fraction >= 1.0:
            return np.ones(n_jobs, dtype=bool)
        rng = np.random.default_rng([int(seed), 0xE1A5])  # a stream of its own: the trace's draws are untouched
        return rng.random(n_jobs) < self.fraction


def pollux_models_of(catalog: Catalog, pollux: PolluxCatalog, like: Mapping[str, str], src: str) -> np.ndarray:
    """int [M]: the Pollux application each catalog model's statistical efficiency follows: ``like``
    first, then the shipped mapping (by exact name, then by name without Gavel's batch-size
    suffix); a model in neither is an error naming the option to set."""
    table = pd.read_csv(mapping_path())
    note_input(mapping_path())
    shipped = dict(zip(table.model.astype(str), table.pollux_model.astype(str)))
    for name in like:
        require(name in catalog.models, src, f"elastic.like.{name}", f"is not a model of catalog {catalog.name}")
    out = np.empty(len(catalog.models), dtype=np.int64)
    for i, name in enumerate(catalog.models):
        target = like.get(name) or shipped.get(name) or shipped.get(_BATCH_SUFFIX.sub("", name))
        if target is None:
            raise InputError(
                src,
                f"elastic.like.{name}",
                f"model {name!r} has no Pollux application for its statistical efficiency: set "
                f"workload.elastic.like.{name}=<one of {', '.join(pollux.models)}>",
            )
        out[i] = pollux.index(target, src, f"elastic.like.{name}")
    return out


class CatalogGoodput:
    """GoodputModel over a fairsim catalog (module docstring). Rates in the catalog's work unit/s."""

    def __init__(
        self,
        catalog: Catalog,
        cluster: ClusterSpec,
        model: np.ndarray,
        workers: np.ndarray,
        work: np.ndarray,
        allowed: np.ndarray,
        pollux: PolluxCatalog,
        pollux_model: np.ndarray,
    ):
        """``model``, ``workers``, ``work``: per job, its catalog row, requested GPUs and work;
        ``allowed``: bool [J, T], the cluster types each job may run on; ``pollux_model``: int
        [M], each catalog model's Pollux application (``pollux_models_of``)."""
        cols = catalog.type_columns(cluster)
        self.gpus_per_host = cluster.gpus_per_host
        self.model, self.workers, self.work = model, workers, work
        self.allowed = allowed
        self.pollux, self.pollux_model = pollux, pollux_model
        # the rate at every whole count 0..most, per (packed or spread, model, type): 0 = cannot run
        counts = np.asarray(catalog.worker_counts)
        self.most = int(counts.max())
        n = np.arange(self.most + 1)
        self.table = np.zeros((2, len(catalog.models), len(cols), self.most + 1))
        for k, figures in enumerate((catalog.packed[:, cols, :], catalog.spread[:, cols, :])):
            for m in range(len(catalog.models)):
                for t in range(len(cols)):
                    rated = np.flatnonzero(np.isfinite(figures[m, t]))
                    if not len(rated):
                        continue
                    xs, ys = counts[rated], figures[m, t, rated]
                    below = rated[np.clip(np.searchsorted(xs, n, side="right") - 1, 0, None)]  # largest rated <= n
                    fits = catalog.mem_per_worker_gb[m, below] <= cluster.memory_gb[t]
                    ok = (n >= xs[0]) & (n <= xs[-1]) & fits
                    self.table[k, m, t] = np.where(ok, np.interp(n, xs, ys), 0.0)

    def throughput(self, jobs, types, gpus, hosts) -> np.ndarray:
        """Catalog units/s at ``gpus`` GPUs: linear in the GPU count between the counts the
        catalog rates the model at on that type, 0 outside them, where the job may not run on
        the type, or where a worker needs more memory than the type has (the memory of the
        largest rated count <= gpus). Packed figures when the job is on the fewest hosts its GPUs
        need, spread figures otherwise."""
        jobs, types = np.asarray(jobs, dtype=np.int64), np.asarray(types, dtype=np.int64)
        gpus, hosts = np.asarray(gpus, dtype=np.int64), np.asarray(hosts, dtype=np.int64)
        spread = (hosts > -(-gpus // self.gpus_per_host)).astype(np.int64)
        rated = (gpus >= 1) & (gpus <= self.most) & self.allowed[jobs, types]
        return np.where(rated, self.table[spread, self.model[jobs], types, np.clip(gpus, 0, self.most)], 0.0)

    def efficiency(self, jobs, gpus, done) -> np.ndarray:
        """Statistical efficiency at ``gpus`` GPUs relative to the job's requested count, with the
        gradient statistics of its Pollux application at the same fraction of training done."""
        jobs = np.asarray(jobs, dtype=np.int64)
        scale = np.asarray(gpus, dtype=np.float64) / self.workers[jobs]
        frac = np.clip(np.asarray(done, dtype=np.float64) / self.work[jobs], 0.0, 1.0)
        out = np.ones(len(jobs))
        pm = self.pollux_model[self.model[jobs]]
        for p in np.unique(pm):
            sel = pm == p
            init = self.pollux.limits[p].init_batch
            epoch = self.pollux.epoch(int(p), frac[sel] * self.pollux.target_examples[p])
            sqr, var = self.pollux.grad_stats(int(p), epoch, init * scale[sel])
            out[sel] = efficiency(sqr, var, init * scale[sel], init)
        return out

    def rate(
        self, jobs: np.ndarray, types: np.ndarray, gpus: np.ndarray, hosts: np.ndarray, done: np.ndarray
    ) -> np.ndarray:
        tput = self.throughput(jobs, types, gpus, hosts)
        good = tput > 0
        out = np.zeros(len(tput))
        if good.any():
            out[good] = tput[good] * self.efficiency(
                np.asarray(jobs)[good], np.asarray(gpus)[good], np.asarray(done)[good]
            )
        return out


def gpu_bounds(catalog: Catalog, cluster: ClusterSpec, model: np.ndarray, workers: np.ndarray, o: ElasticOptions):
    """(min_gpus, max_gpus) per job: the options' bounds within the counts the catalog rates the
    model at (on any of the cluster's types) and the largest type's GPU count, widened to hold
    the job's requested count."""
    cols = catalog.type_columns(cluster)
    rated = np.isfinite(catalog.packed[:, cols, :]).any(axis=1)  # [M, W]
    counts = np.asarray(catalog.worker_counts)
    fewest = np.array([counts[r].min() if r.any() else 1 for r in rated])[model]
    most = np.array([counts[r].max() if r.any() else 1 for r in rated])[model]
    most = np.minimum(most, int(cluster.counts.max()))
    lo = np.maximum(o.min_gpus, fewest)
    hi = most if o.max_gpus is None else np.minimum(o.max_gpus, most)
    lo = np.minimum(lo, workers)
    hi = np.maximum(np.maximum(hi, workers), lo)
    return lo.astype(np.int64), hi.astype(np.int64)


def elastic_jobs(
    jobs: JobSet,
    trace: pd.DataFrame,
    catalog: Catalog,
    cluster: ClusterSpec,
    o: ElasticOptions,
    chosen: np.ndarray,
    src: str,
) -> ElasticJobs:
    """The elastic attributes of ``jobs`` (built from ``trace`` and ``catalog``): the ``chosen``
    jobs may run on ``gpu_bounds`` GPUs at CatalogGoodput's rate (PolluxGoodput's for the
    pollux catalog); the others keep their requested count."""
    if catalog.name == "sia":  # Sia's own jobs: the true goodput of Sia's simulator, epoch by epoch
        from fairsim.workload.sia_trace import sia_elastic

        require(not o.like, src, "elastic.like", "is for other catalogs: Sia's jobs have their own statistics")
        lo, hi = gpu_bounds(catalog, cluster, jobs.model, jobs.workers, o)
        return sia_elastic(jobs, catalog, cluster, chosen, lo, hi)
    pollux = PolluxCatalog.load()
    if catalog.name == "pollux":  # Pollux's own jobs: its goodput model, epoch by epoch
        require(not o.like, src, "elastic.like", "is for other catalogs: Pollux's jobs have their own statistics")
        goodput = PolluxGoodput(pollux, jobs.model_name, cluster.gpu_types)
    else:
        goodput = CatalogGoodput(
            catalog,
            cluster,
            jobs.model,
            jobs.workers,
            jobs.work,
            type_mask(trace, cluster, src),
            pollux,
            pollux_models_of(catalog, pollux, dict(o.like), src),
        )
    lo, hi = gpu_bounds(catalog, cluster, jobs.model, jobs.workers, o)
    chosen = np.asarray(chosen, dtype=bool)
    return ElasticJobs(
        elastic=chosen.copy(),
        min_gpus=np.where(chosen, lo, jobs.workers).astype(np.int64),
        max_gpus=np.where(chosen, hi, jobs.workers).astype(np.int64),
        model=goodput,
    )
