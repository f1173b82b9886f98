"""Jobs as arrays: a validated trace bound to a catalog and a cluster.

This is the boundary between the workload layer and the engine: everything the engine and the
policies need to know about a job that does not change while it runs, one numpy array per
attribute, indexed by job (the trace's sorted row order).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from fairsim.cluster import ClusterSpec
from fairsim.errors import InputError
from fairsim.workload.catalog import Catalog
from fairsim.workload.elastic import ElasticJobs
from fairsim.workload.trace import LONGEST_JOB_S, SHORTEST_JOB_S, allowed_types


@dataclass(frozen=True, eq=False)
class JobSet:
    job_id: np.ndarray  # int [J], the trace's ids
    arrival: np.ndarray  # float [J], seconds
    model: np.ndarray  # int [J], catalog row
    model_name: np.ndarray  # object [J]
    workers: np.ndarray  # int [J]
    work: np.ndarray  # float [J], catalog work units
    weight: np.ndarray  # float [J]
    tput_packed: np.ndarray  # float [J, T], units/s on each cluster type, workers on fewest hosts; 0 = cannot run
    tput_spread: np.ndarray  # float [J, T], units/s when spread over more hosts than needed
    feasible: np.ndarray  # bool [J, T]: allowed for the job, fits the type's GPU memory and count, has a throughput
    state_bytes: np.ndarray  # float [J]
    mem_per_worker_gb: np.ndarray  # float [J]
    tenant: np.ndarray  # object [J]: who submitted it ("" = not given)
    work_unit: str
    elastic: ElasticJobs | None = None  # None: every job is a rigid gang (fairsim.workload.elastic)

    def __len__(self) -> int:
        return len(self.arrival)

    def shortest_run_s(self) -> np.ndarray:
        """float [J]: each job's run time at its fastest type and placement, overheads aside."""
        return self.work / np.maximum(self.tput_packed, self.tput_spread).max(axis=1)

    @classmethod
    def build(cls, trace: pd.DataFrame, catalog: Catalog, cluster: ClusterSpec, source: str = "trace") -> JobSet:
        model = catalog.model_indices(trace["model"].to_numpy(), source)
        workers = trace["workers"].to_numpy(np.int64)
        widest = int(cluster.counts.max())
        if (workers > widest).any():
            j = int(np.flatnonzero(workers > widest)[0])
            raise InputError(
                source,
                "workers",
                f"job {int(trace['job_id'].iloc[j])} needs {int(workers[j])} GPUs, more than the largest GPU type has ({widest}; allowed: 1..{widest})",
            )
        slot = catalog.worker_slots(workers, source)
        cols = catalog.type_columns(cluster)
        packed = catalog.packed[model[:, None], cols[None, :], slot[:, None]]
        spread = catalog.spread[model[:, None], cols[None, :], slot[:, None]]
        mem = catalog.mem_per_worker_gb[model, slot]
        has_tput = np.isfinite(packed)
        if not has_tput.any(axis=1).all():
            j = int(np.flatnonzero(~has_tput.any(axis=1))[0])
            raise InputError(
                source,
                "workers",
                f"job {int(trace['job_id'].iloc[j])}: model {trace['model'].iloc[j]} does not run with {int(workers[j])} workers on any GPU type of this cluster",
            )
        allowed = type_mask(trace, cluster, source)
        if not (allowed & has_tput).any(axis=1).all():
            j = int(np.flatnonzero(~(allowed & has_tput).any(axis=1))[0])
            raise InputError(
                source,
                "gpu_types",
                f"job {int(trace['job_id'].iloc[j])} may run only on {trace['gpu_types'].iloc[j]!r}, "
                f"and model {trace['model'].iloc[j]} has no throughput there with {int(workers[j])} workers "
                f"(this cluster has: {', '.join(cluster.gpu_types)})",
            )
        feasible = (
            allowed
            & has_tput
            & (mem[:, None] <= cluster.memory_gb[None, :])
            & (workers[:, None] <= cluster.counts[None, :])
        )
        if not feasible.any(axis=1).all():
            j = int(np.flatnonzero(~feasible.any(axis=1))[0])
            raise InputError(
                source,
                "model",
                f"job {int(trace['job_id'].iloc[j])} ({trace['model'].iloc[j]}, {int(workers[j])} workers) needs {mem[j]:.1f} GB per worker, which fits no GPU type of this cluster (largest: {cluster.memory_gb.max():.0f} GB)",
            )
        fastest = np.where(feasible, np.fmax(packed, spread), 0.0).max(axis=1)
        _check_run_times(trace, fastest, catalog.work_unit, source)
        arrays = dict(
            job_id=trace["job_id"].to_numpy(np.int64),
            arrival=trace["arrival_s"].to_numpy(np.float64),
            model=model,
            model_name=trace["model"].to_numpy(object),
            workers=workers,
            work=trace["work"].to_numpy(np.float64),
            weight=trace["weight"].to_numpy(np.float64) if "weight" in trace else np.ones(len(trace)),
            tput_packed=np.where(feasible, packed, 0.0),
            tput_spread=np.where(feasible, spread, 0.0),
            feasible=feasible,
            state_bytes=catalog.state_bytes[model].astype(np.float64),
            mem_per_worker_gb=mem.astype(np.float64),
            tenant=trace["tenant"].to_numpy(object) if "tenant" in trace else np.full(len(trace), "", dtype=object),
        )
        for a in arrays.values():
            a.setflags(write=False)
        return cls(work_unit=catalog.work_unit, **arrays)


def _check_run_times(trace: pd.DataFrame, fastest: np.ndarray, unit: str, source: str) -> None:
    """Every job runs SHORTEST_JOB_S to LONGEST_JOB_S at its fastest: compared as work against
    speed x bound, so that a work of 1e308 is refused, not overflowed."""
    work = trace["work"].to_numpy(np.float64)
    bad = (work < SHORTEST_JOB_S * fastest) | (work > LONGEST_JOB_S * fastest)
    if bad.any():
        j = int(np.flatnonzero(bad)[0])
        with np.errstate(over="ignore"):
            run = work[j] / fastest[j]
        took = f"{run:.3g} s" if np.isfinite(run) else "beyond any number of seconds"
        raise InputError(
            source,
            "work",
            f"job {int(trace['job_id'].iloc[j])} ({work[j]:.6g} {unit}) runs {took} at its "
            f"fastest; a job runs {SHORTEST_JOB_S:g} to {LONGEST_JOB_S:g} s (a millisecond to about 31.7 years)",
        )


def type_mask(trace: pd.DataFrame, cluster: ClusterSpec, source: str = "trace") -> np.ndarray:
    """bool [J, T]: the cluster types each job may run on (its ``gpu_types``; empty = all)."""
    if "gpu_types" not in trace:
        return np.ones((len(trace), cluster.num_types), dtype=bool)
    lists, row_of = np.unique(trace["gpu_types"].to_numpy(str), return_inverse=True)
    column = {name: k for k, name in enumerate(cluster.gpu_types)}
    masks = np.ones((len(lists), cluster.num_types), dtype=bool)
    for u, names in enumerate(allowed_types(lists)):
        if names:
            masks[u] = False
            first = int(trace["job_id"].iloc[int(np.flatnonzero(row_of == u)[0])])
            for name in names:
                k = column.get(cluster.canonical(name, source, f"gpu_types (job {first})"))
                if k is not None:  # a type this cluster lacks only narrows the job's choice
                    masks[u, k] = True
    return masks[row_of.reshape(-1)]
