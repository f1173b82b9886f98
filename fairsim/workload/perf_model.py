"""The paper catalog: throughput and memory of the paper's Table 2 models on any datasheet GPU,
from a small analytical performance model. Every constant lives in one YAML file
(``fairsim/data/paper_catalog.yaml`` by default); docs/workload.md gives the equations and
the source of each number.

Per (model m, GPU g, workers d, placement):

    split        = d for pipeline jobs (each worker runs 1/d of the layers), else 1
    t_compute    = b * F / split / (peak_g * eff_g * eff_m)
    t_memory     = (b * act * traffic + reads * 2 * P) / split / (bw_mem_g * mem_eff_g)
    t_micro      = max(t_compute, t_memory)                       (roofline)
    t_optimizer  = opt_bytes * P / shards / (bw_mem_g * mem_eff_g)
    data/sharded: t_step = A * t_micro + t_opt + c * 2 (d-1)/d * grad_bytes * P / bw_link
    pipeline:     t_step = (A + d - 1) * max(t_micro, hop) + (d - 1) * hop + t_opt,
                  hop = 2 * b * boundary / bw_link  (sends overlap compute except in fill/drain)
    throughput   = samples_per_step / t_step / samples_per_epoch    (epochs/s, whole job)

with b the micro-batch, A the accumulation steps, c = 1 (data) or the sharded factor, and
bw_link the intra-host bandwidth when the job's d workers fit on one host and sit there
(packed), else the inter-host LAN (spread, or more workers than a host has).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from fairsim.cluster import ClusterSpec, GpuSpec, canonical_gpu_name, canonical_name, gpu_specs
from fairsim.errors import InputError, require
from fairsim.files import input_path, note_input
from fairsim.workload.catalog import Catalog

PARALLELISMS = ("data", "sharded", "pipeline")
GLOBAL_KEYS = (
    "state_bytes_per_param",
    "grad_bytes_per_param",
    "optimizer_bytes_per_param",
    "memory_overhead_gb",
    "activation_traffic",
    "weight_reads_per_micro_step",
    "sharded_comm_factor",
)
MODEL_NUMBERS = (
    "params_m",
    "train_gflop",
    "act_gb",
    "model_efficiency",
    "micro_batch",
    "accumulation",
    "samples_per_epoch",
)


@dataclass(frozen=True)
class PerfConstants:
    """The YAML file, checked and turned into per-model arrays."""

    name: str
    work_unit: str
    globals: dict[str, float]
    gpu_eff: dict[str, tuple[float, float]]  # canonical GPU name or "default" -> (compute, memory)
    models: tuple[str, ...]
    numbers: dict[str, np.ndarray]  # MODEL_NUMBERS + boundary_gb -> float [M]
    parallelism: np.ndarray  # object [M]
    workers: tuple[tuple[int, ...], ...]
    large: np.ndarray  # bool [M]
    source: str

    def efficiency(self, spec: GpuSpec) -> tuple[tuple[float, float], str]:
        """A type's achieved (compute, memory) fractions and the rule that gave them: the YAML's
        row for it (""), the type's own ``efficiency``, the row of the type it is ``like``, else
        the YAML's ``default`` (the last two are said in the run's summary: docs/clusters.md)."""
        if spec.name in self.gpu_eff:
            return self.gpu_eff[spec.name], ""
        if spec.efficiency is not None:
            return spec.efficiency, ""
        if spec.like in self.gpu_eff:
            return self.gpu_eff[spec.like], f"the efficiency of {spec.like} (its like)"
        compute, memory = self.gpu_eff["default"]
        return self.gpu_eff[
            "default"
        ], f"catalog {self.name}'s default efficiency (compute {compute:g}, memory {memory:g})"


def default_constants_path() -> Path:
    return Path(str(resources.files("fairsim.data").joinpath("paper_catalog.yaml")))


def load_constants(path: str | Path | None = None) -> PerfConstants:
    path = input_path(path) if path is not None else default_constants_path()
    src = str(path)
    require(
        path.is_file(), src, "path", "no such file (give a performance-model YAML like fairsim/data/paper_catalog.yaml)"
    )
    note_input(path)
    try:
        raw = yaml.safe_load(path.read_text())
    except yaml.YAMLError as exc:
        raise InputError(src, "file", f"is not valid YAML ({str(exc).splitlines()[0]})") from exc
    except UnicodeDecodeError:
        raise InputError(
            src, "file", "is not a text file (give a performance-model YAML like fairsim/data/paper_catalog.yaml)"
        ) from None
    require(isinstance(raw, Mapping), src, "file", "must be a mapping with keys name, work_unit, gpus, models, ...")
    return parse_constants(raw, src)


def parse_constants(raw: Mapping[str, Any], src: str = "catalog constants") -> PerfConstants:
    glob = {key: _positive(raw.get(key), src, key) for key in GLOBAL_KEYS}
    gpus = raw.get("gpus")
    require(
        isinstance(gpus, Mapping) and "default" in gpus,
        src,
        "gpus",
        "must map GPU names (and 'default') to {compute, memory}",
    )
    gpu_eff = {}
    for name, eff in gpus.items():
        key = "default" if name == "default" else canonical_gpu_name(name, src, f"gpus.{name}")
        require(isinstance(eff, Mapping), src, f"gpus.{name}", "must be {compute: <fraction>, memory: <fraction>}")
        gpu_eff[key] = tuple(_fraction(eff.get(k), src, f"gpus.{name}.{k}") for k in ("compute", "memory"))
    rows = raw.get("models")
    require(isinstance(rows, list) and rows, src, "models", "must be a non-empty list of model rows")
    names, par, workers, large = [], [], [], []
    numbers = {key: [] for key in (*MODEL_NUMBERS, "boundary_gb")}
    for i, row in enumerate(rows):
        where = f"models[{i}]"
        require(isinstance(row, Mapping), src, where, "must be a mapping")
        name = row.get("name")
        require(
            isinstance(name, str) and name and name not in names,
            src,
            f"{where}.name",
            f"must be a unique non-empty string, got {name!r}",
        )
        where = f"models.{name}"
        names.append(name)
        for key in MODEL_NUMBERS:
            numbers[key].append(_positive(row.get(key), src, f"{where}.{key}"))
        kind = row.get("parallelism")
        require(kind in PARALLELISMS, src, f"{where}.parallelism", f"{kind!r} is not one of {', '.join(PARALLELISMS)}")
        par.append(kind)
        numbers["boundary_gb"].append(
            _positive(row.get("boundary_gb"), src, f"{where}.boundary_gb") if kind == "pipeline" else 0.0
        )
        counts = row.get("workers")
        require(
            isinstance(counts, list)
            and counts
            and all(isinstance(c, int) and not isinstance(c, bool) and c >= 1 for c in counts),
            src,
            f"{where}.workers",
            f"must be a list of worker counts >= 1, got {counts!r}",
        )
        workers.append(tuple(sorted(set(counts))))
        require(isinstance(row.get("large", False), bool), src, f"{where}.large", "must be true or false")
        large.append(bool(row.get("large", False)))
    return PerfConstants(
        name=str(raw.get("name", "paper")),
        work_unit=str(raw.get("work_unit", "epochs")),
        globals=glob,
        gpu_eff=gpu_eff,
        models=tuple(names),
        numbers={k: np.asarray(v, dtype=np.float64) for k, v in numbers.items()},
        parallelism=np.asarray(par, dtype=object),
        workers=tuple(workers),
        large=np.asarray(large, dtype=bool),
        source=src,
    )


@dataclass(frozen=True)
class Links:
    """What the model needs to know about the cluster's interconnect."""

    gpus_per_host: int
    intra_bytes_per_s: float
    inter_bytes_per_s: float

    @classmethod
    def of(cls, cluster: ClusterSpec) -> Links:
        return cls(cluster.gpus_per_host, cluster.intra_host_bytes_per_s, cluster.inter_host_bytes_per_s)


def model_tables(c: PerfConstants, specs: Sequence[GpuSpec], worker_counts: tuple[int, ...], links: Links):
    """(packed [M,G,W], spread [M,G,W], mem_per_worker_gb [M,W]) in epochs/s and GB; NaN where
    the model does not run at that worker count."""
    n = {k: v[:, None, None] for k, v in c.numbers.items()}  # [M,1,1]
    g = c.globals
    gpus = [s.name for s in specs]
    peak = np.array([s.fp16_tflops for s in specs])[None, :, None] * 1e12
    mem_bw = np.array([s.mem_bw_gb_s for s in specs])[None, :, None] * 1e9
    eff = np.array([c.efficiency(s)[0] for s in specs])  # [G, 2]
    flops_rate = peak * eff[None, :, 0, None] * n["model_efficiency"]
    bytes_rate = mem_bw * eff[None, :, 1, None]
    d = np.asarray(worker_counts, dtype=np.float64)[None, None, :]
    pipeline = (c.parallelism == "pipeline")[:, None, None]
    sharded = (c.parallelism == "sharded")[:, None, None]
    split = np.where(pipeline, d, 1.0)  # share of the model's layers one worker computes
    shards = np.where(pipeline | sharded, d, 1.0)  # workers the training state is divided over
    params = n["params_m"] * 1e6
    b, accum = n["micro_batch"], n["accumulation"]

    t_compute = b * n["train_gflop"] * 1e9 / split / flops_rate
    micro_bytes = (
        b * n["act_gb"] * 1e9 * g["activation_traffic"] + g["weight_reads_per_micro_step"] * 2.0 * params
    ) / split
    t_micro = np.maximum(t_compute, micro_bytes / bytes_rate)
    t_opt = g["optimizer_bytes_per_param"] * params / shards / bytes_rate

    def step_time(link_bw: np.ndarray) -> np.ndarray:
        ring = 2.0 * (d - 1.0) / d * g["grad_bytes_per_param"] * params / link_bw
        allreduce = np.where(sharded, g["sharded_comm_factor"], 1.0) * ring
        replicated = accum * t_micro + allreduce + t_opt
        # activations forward, gradients back; overlapped with the other micro-batches' compute
        # except while the pipeline fills and drains
        hop = np.where(d > 1, 2.0 * b * n["boundary_gb"] * 1e9 / link_bw, 0.0)
        piped = (accum + d - 1.0) * np.maximum(t_micro, hop) + (d - 1.0) * hop + t_opt
        return np.where(pipeline, piped, replicated)

    one_host = d <= links.gpus_per_host
    packed_bw = np.where(one_host, links.intra_bytes_per_s, links.inter_bytes_per_s)
    samples = b * accum * np.where(pipeline, 1.0, d)
    per_epoch = n["samples_per_epoch"]
    packed = samples / step_time(packed_bw) / per_epoch
    spread = samples / step_time(np.full_like(d, links.inter_bytes_per_s)) / per_epoch
    spread = np.where(d > 1, spread, packed)  # one worker cannot be spread

    allowed = np.array([[w in ws for w in worker_counts] for ws in c.workers], dtype=bool)  # [M, W]
    packed = np.where(
        allowed[:, None, :], np.broadcast_to(packed, (len(c.models), len(gpus), len(worker_counts))), np.nan
    )
    spread = np.where(allowed[:, None, :], np.broadcast_to(spread, packed.shape), np.nan)
    state_gb = g["state_bytes_per_param"] * params / shards / 1e9
    mem = (state_gb + b * n["act_gb"] + g["memory_overhead_gb"])[:, 0, :]  # [M, W]
    mem = np.broadcast_to(mem, allowed.shape).copy()
    return packed, spread, mem


def paper_catalog(
    cluster: ClusterSpec | Links, path: str | Path | None = None, gpu_types: tuple[str, ...] | None = None
) -> Catalog:
    """Build the catalog for the cluster's GPU types (or ``gpu_types``, any datasheet names or
    the cluster's own) with the cluster's link bandwidths and host size. A type with a ``speed``
    is not modelled: its throughputs are its ``like``'s scaled (``with_own_types``), so its
    like is modelled in its place."""
    c = load_constants(path)
    links = cluster if isinstance(cluster, Links) else Links.of(cluster)
    if gpu_types is None:
        require(
            isinstance(cluster, ClusterSpec),
            c.source,
            "gpu_types",
            "give gpu_types when building from link figures only",
        )
        gpu_types = cluster.gpu_types
    known = cluster.known_types() if isinstance(cluster, ClusterSpec) else gpu_specs()
    wanted = [known[canonical_name(name, known, c.source, "gpu_types").lower()] for name in gpu_types]
    specs = list({m.name: m for m in (_modelled(s, known) for s in wanted)}.values())
    worker_counts = tuple(sorted({w for ws in c.workers for w in ws}))
    packed, spread, mem = model_tables(c, specs, worker_counts, links)
    params = c.numbers["params_m"] * 1e6
    in_cluster = set(cluster.gpu_types) if isinstance(cluster, ClusterSpec) else set()
    notes = tuple(
        f"{s.name} has no per-model speed (like and speed) or efficiency: modelled from its figures at {rule}"
        for s in specs
        if s.name in in_cluster and (rule := c.efficiency(s)[1])
    )
    return Catalog(
        name=c.name,
        work_unit=c.work_unit,
        models=c.models,
        gpu_types=tuple(s.name for s in specs),
        worker_counts=worker_counts,
        packed=packed,
        spread=spread,
        mem_per_worker_gb=mem,
        state_bytes=c.globals["state_bytes_per_param"] * params,
        param_count=params,
        large=c.large.copy(),
        source=c.source,
        notes=notes,
    )


def _modelled(spec: GpuSpec, known: Mapping[str, GpuSpec]) -> GpuSpec:
    """The type the model computes for ``spec``: itself, or for a type with a speed the first
    type up its chain of likes that has none (the speeds are applied to its throughputs)."""
    while spec.speed:
        spec = known[spec.like.lower()]
    return spec


def _positive(value: Any, src: str, field: str) -> float:
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and np.isfinite(value) and value > 0
    require(ok, src, field, f"must be a number > 0, got {value!r}")
    return float(value)


def _fraction(value: Any, src: str, field: str) -> float:
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and 0 < float(value) <= 1
    require(ok, src, field, f"must be a fraction in (0, 1], got {value!r}")
    return float(value)
