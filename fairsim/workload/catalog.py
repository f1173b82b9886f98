"""The job catalog: which models exist, how fast each trains on each GPU type and worker count,
how much memory a worker needs and how large its training state is.

A catalog is built either from the performance model (``perf_model.py``, the paper's Table 2
models on any datasheet GPU) or from a measured throughput table (Gavel's, or a user's own
profile). Either way it ends up as the same arrays, indexed [model, gpu type, worker-count slot].

Throughput is in *work units per second for the whole job* (the unit is the catalog's
``work_unit``: epochs for the paper catalog, steps for Gavel's). ``packed`` is the throughput
when the job's workers sit on the fewest hosts; ``spread`` when they span more hosts than that.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

import numpy as np

from fairsim.cluster import ClusterSpec, GpuSpec
from fairsim.errors import InputError


@dataclass(frozen=True, eq=False)
class Catalog:
    name: str
    work_unit: str
    models: tuple[str, ...]
    gpu_types: tuple[str, ...]  # canonical datasheet names
    worker_counts: tuple[int, ...]  # ascending; the last axis of the arrays below
    packed: np.ndarray  # float [M, G, W]; NaN where the model does not run at that worker count
    spread: np.ndarray  # float [M, G, W]
    mem_per_worker_gb: np.ndarray  # float [M, W]; GPU memory one worker needs
    state_bytes: np.ndarray  # float [M]; parameters + gradients + optimizer state
    param_count: np.ndarray  # float [M]
    large: np.ndarray  # bool [M]; "large model" (trace 6 mixes these in)
    source: str = "catalog"
    notes: tuple[str, ...] = ()  # the rules a GPU type of the cluster fell back to (a run's summary says them)
    _model_pos: dict = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        m, g, w = len(self.models), len(self.gpu_types), len(self.worker_counts)
        for name, arr, shape in (
            ("packed", self.packed, (m, g, w)),
            ("spread", self.spread, (m, g, w)),
            ("mem_per_worker_gb", self.mem_per_worker_gb, (m, w)),
            ("state_bytes", self.state_bytes, (m,)),
            ("param_count", self.param_count, (m,)),
            ("large", self.large, (m,)),
        ):
            if arr.shape != shape:
                raise InputError(self.source, name, f"shape {arr.shape} does not match {shape}")
        finite = self.packed[np.isfinite(self.packed)]
        if (finite <= 0).any():
            raise InputError(
                self.source, "throughput", "every throughput must be > 0 (use NaN or leave it out for 'does not run')"
            )
        if (np.isfinite(self.packed) != np.isfinite(self.spread)).any():
            raise InputError(
                self.source,
                "throughput",
                "packed and spread throughputs must be given for the same (model, gpu, workers)",
            )
        self._model_pos.update({name: i for i, name in enumerate(self.models)})
        for arr in (self.packed, self.spread, self.mem_per_worker_gb, self.state_bytes, self.param_count, self.large):
            arr.setflags(write=False)

    @property
    def allowed_workers(self) -> np.ndarray:
        """bool [M, W]: the model runs at this worker count on at least one GPU type."""
        return np.isfinite(self.packed).any(axis=1)

    def model_indices(self, names, source: str = "trace") -> np.ndarray:
        names = np.asarray(names, dtype=object)
        uniq, inverse = np.unique(names, return_inverse=True)
        pos = np.empty(len(uniq), dtype=np.int64)
        for k, name in enumerate(uniq):
            if name not in self._model_pos:
                allowed = ", ".join(self.models[:8]) + (", ..." if len(self.models) > 8 else "")
                raise InputError(
                    source, "model", f"unknown model {name!r} for catalog {self.name} (allowed: {allowed})"
                )
            pos[k] = self._model_pos[name]
        return pos[inverse]

    def worker_slots(self, workers: np.ndarray, source: str = "trace") -> np.ndarray:
        counts = np.asarray(self.worker_counts)
        workers = np.asarray(workers)
        slot = np.searchsorted(counts, workers)
        bad = (slot >= len(counts)) | (counts[np.minimum(slot, len(counts) - 1)] != workers)
        if bad.any():
            raise InputError(
                source,
                "workers",
                f"{int(workers[bad][0])} workers is not in the catalog (allowed: {', '.join(map(str, counts))})",
            )
        return slot

    def bind_jobs(self, jobs, cluster: ClusterSpec):
        """The jobs (a JobSet: not imported here, jobs.py imports this module) JobSet.build made
        from this catalog, as this catalog rates them: a job's rate
        is its model's at its gang, so unchanged here; a catalog whose jobs of one model differ
        (Sia's at their own fixed batch) rates each job itself."""
        return jobs

    def type_columns(self, cluster: ClusterSpec) -> np.ndarray:
        """Column of each cluster type in this catalog's arrays; a clear error when one is missing."""
        cols = []
        for name in cluster.gpu_types:
            if name not in self.gpu_types:
                raise InputError(
                    self.source,
                    "gpu",
                    f"no throughputs for GPU type {name}, which the cluster has (catalog {self.name} has: "
                    f"{', '.join(self.gpu_types)}; add rows for {name}, give it like: <one of these> and speed in the "
                    f"cluster's gpu_types, or drop it from cluster.counts)",
                )
            cols.append(self.gpu_types.index(name))
        return np.asarray(cols, dtype=np.int64)


def with_own_types(catalog: Catalog, cluster: ClusterSpec, source: str = "cluster") -> Catalog:
    """The catalog with a column for each type the cluster defines that it lacks and that is
    ``like`` one it has: that type's throughputs times ``speed`` (per model; a model the speed
    table does not cover does not run there), or, without a speed, unchanged (a fallback the
    catalog's notes say). Other catalogs are returned as they are."""
    packed, spread, names, notes = catalog.packed, catalog.spread, list(catalog.gpu_types), list(catalog.notes)
    for t in cluster.own_types:  # in their order: a type may be like one defined before it
        if t.name in names or t.like not in names:
            continue
        factor = _speeds(t, catalog, source)[:, None, None]
        like = names.index(t.like)
        packed = np.concatenate([packed, packed[:, like : like + 1, :] * factor], axis=1)
        spread = np.concatenate([spread, spread[:, like : like + 1, :] * factor], axis=1)
        names.append(t.name)
        if not t.speed:
            notes.append(
                f"{t.name}: no per-model speed, and catalog {catalog.name} has no figures for it: the throughputs of "
                f"{t.like} (its like) taken unchanged"
            )
    if len(names) == len(catalog.gpu_types):
        return catalog
    return dataclasses.replace(
        catalog, gpu_types=tuple(names), packed=packed, spread=spread, notes=tuple(notes), _model_pos={}
    )


def _speeds(t: GpuSpec, catalog: Catalog, source: str) -> np.ndarray:
    """float [M]: each model's throughput on ``t`` over its like's (1 without a speed table)."""
    unknown = [m for m, _ in t.speed if m != "default" and m not in catalog.models]
    if unknown:
        raise InputError(
            source,
            f"gpu_types.{t.name}.speed.{unknown[0]}",
            f"is not a model of catalog {catalog.name} (models: {', '.join(catalog.models)}; default: every other)",
        )
    return np.array([t.speed_of(m) if t.speed else 1.0 for m in catalog.models], dtype=np.float64)
