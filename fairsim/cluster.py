"""The cluster model: GPU types with counts, hosts of several GPUs, memory and link bandwidths.

A cluster is written as a small mapping (a Hydra config under ``conf/cluster/``)::

    name: paper
    gpus_per_host: 4
    inter_host_gbps: 10      # the LAN between hosts
    intra_host_gbps: 100     # between GPUs of one host (PCIe / NVLink)
    counts: {T4: 12, A10: 12, V100: 12}
    memory_gb: {}            # optional per-type overrides of the datasheet memory
    gpu_types:               # optional: types of its own, beside the datasheet's (docs/clusters.md)
      H100: {memory_gb: 80, fp32_tflops: 67, fp16_tflops: 989, mem_bw_gb_s: 3350}
      L40S: {like: A40, speed: 1.6}   # a known type's figures, and its throughputs x 1.6 (or per model)

GPU type names are matched case-insensitively against ``fairsim/data/gpu_specs.csv`` and the
cluster's own ``gpu_types`` (a ``gpu_specs`` file of the user's own becomes ``gpu_types`` entries
in fairsim.workload.formats.clusters, which reads files); the order of ``counts`` is the
cluster's type order (Gavel's greedy placement uses it).
"""

from __future__ import annotations

import csv
import difflib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import cached_property, lru_cache
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np

from fairsim.errors import InputError, Number, check_keys, is_number, require
from fairsim.files import note_input
from fairsim.tables import shown

DATASHEET = "fairsim/data/gpu_specs.csv"
FIGURES = (
    "memory_gb",
    "fp32_tflops",
    "fp16_tflops",
    "mem_bw_gb_s",
)  # a type's datasheet figures, as a preset writes them
TYPE_KEYS = (*FIGURES, "like", "speed", "efficiency")
HOW_TO_ADD = (
    "a type of your own: the cluster preset's gpu_types.<name>: {memory_gb, fp32_tflops, fp16_tflops, mem_bw_gb_s} "
    f"or {{like: <a known type>, speed: <its throughput ratio>}}, or gpu_specs: <a CSV like {DATASHEET}>; docs/clusters.md"
)


@dataclass(frozen=True)
class GpuSpec:
    name: str
    memory_gb: float
    fp32_tflops: float
    fp16_tflops: float  # dense tensor-core FP16; equals fp32 for GPUs without tensor cores
    mem_bw_gb_s: float
    like: str | None = None  # a known type whose throughputs this one's are scaled from, by ``speed``
    speed: tuple[
        tuple[str, float], ...
    ] = ()  # (model or "default", throughput / like's); () = modelled from the figures
    efficiency: tuple[float, float] | None = None  # achieved (compute, memory) fractions for the paper catalog's model

    def speed_of(self, model: str) -> float:
        """Throughput on this type / on ``like`` for a model; NaN: the model does not run here."""
        table = dict(self.speed)
        return float(table.get(model, table.get("default", float("nan"))))


def gpu_specs() -> dict[str, GpuSpec]:
    """Datasheet table keyed by lower-case name."""
    path = Path(str(resources.files("fairsim.data").joinpath("gpu_specs.csv")))
    note_input(path)
    return _gpu_specs(path)


@lru_cache(maxsize=1)
def _gpu_specs(path: Path) -> dict[str, GpuSpec]:
    text = path.read_text()
    specs = {}
    for row in csv.DictReader(text.splitlines()):
        fp32 = float(row["fp32_tflops"])
        fp16 = float(row["fp16_tensor_tflops_dense"]) if row["fp16_tensor_tflops_dense"] else fp32
        specs[row["gpu"].lower()] = GpuSpec(row["gpu"], float(row["memory_gb"]), fp32, fp16, float(row["mem_bw_gb_s"]))
    return specs


def closest_names(name: str, known: Iterable[str], n: int = 3) -> list[str]:
    """Known names that contain ``name`` (a100 -> A100-40GB), then the most alike ones, any case."""
    known = list(known)
    low = {k.lower(): k for k in known}
    holding = [k for k in known if str(name).lower() in k.lower()]
    alike = [low[k] for k in difflib.get_close_matches(str(name).lower(), list(low), n=n, cutoff=0.5)]
    return list(dict.fromkeys([*holding, *alike]))[:n]


def canonical_name(name: Any, specs: Mapping[str, GpuSpec], source: str, field: str, hint: str = "") -> str:
    """The spelling of ``name`` in ``specs`` (any case); an unknown name refused naming the
    allowed ones, the closest ones and ``hint`` (how to add one)."""
    spec = specs.get(str(name).lower())
    if spec is None:
        names = [s.name for s in specs.values()]
        close = closest_names(str(name), names) if len(str(name)) <= 100 else []
        raise InputError(
            source,
            field,
            f"unknown GPU type {shown(name)} (allowed: {', '.join(names)})"
            + (f"; closest: {', '.join(close)}" if close else "")
            + (f"; {hint}" if hint else ""),
        )
    return spec.name


def canonical_gpu_name(name: str, source: str = "cluster", field: str = "counts") -> str:
    """A datasheet type's spelling (fairsim/data/gpu_specs.csv)."""
    return canonical_name(name, gpu_specs(), source, field)


def own_types(raw: Any, source: str) -> tuple[GpuSpec, ...]:
    """A cluster's ``gpu_types``, checked: each a new name, with its figures, or ``like`` a type
    known before it (the datasheet's, or one listed earlier) whose figures it takes unless given."""
    if raw is None:
        return ()
    require(
        isinstance(raw, Mapping),
        source,
        "gpu_types",
        f"must map type names to their figures ({HOW_TO_ADD}), got {raw!r}",
    )
    specs = dict(gpu_specs())
    out = []
    for name, entry in raw.items():
        field = f"gpu_types.{name}"
        require(isinstance(name, str) and name.strip() != "", source, field, "a type's name must be a non-empty string")
        if name.lower() in specs:
            where = DATASHEET if name.lower() in gpu_specs() else "listed earlier"
            raise InputError(
                source,
                field,
                f"{specs[name.lower()].name} is a known type already ({where}): give yours "
                "another name (memory_gb.<type> changes a known type's memory)",
            )
        require(
            isinstance(entry, Mapping),
            source,
            field,
            f"must be {{memory_gb, fp32_tflops, fp16_tflops, mem_bw_gb_s}} or "
            f"{{like: <a known type>, speed: <ratio>}}, got {entry!r}",
        )
        out.append(_own_type(name, entry, specs, source, field))
        specs[name.lower()] = out[-1]
    return tuple(out)


def _own_type(name: str, entry: Mapping[str, Any], specs: Mapping[str, GpuSpec], source: str, field: str) -> GpuSpec:
    check_keys(entry, TYPE_KEYS, source, prefix=f"{field}.", noun="key of a GPU type")
    like = (
        None
        if entry.get("like") is None
        else specs[canonical_name(entry["like"], specs, source, f"{field}.like").lower()]
    )
    base = (
        {}
        if like is None
        else {
            "memory_gb": like.memory_gb,
            "fp32_tflops": like.fp32_tflops,
            "fp16_tflops": like.fp16_tflops,
            "mem_bw_gb_s": like.mem_bw_gb_s,
        }
    )
    figures = {}
    for key in FIGURES:
        value = entry.get(key, base.get(key, entry.get("fp32_tflops") if key == "fp16_tflops" else None))
        require(
            value is not None, source, f"{field}.{key}", "is required (or like: <a known type> to take its figures)"
        )
        figures[key] = Number(lo=0, lo_open=True).check(value, source, f"{field}.{key}")
    speed = _speed(entry.get("speed"), like, source, f"{field}.speed")
    eff = entry.get("efficiency")
    if eff is not None:
        require(
            isinstance(eff, Mapping) and set(eff) == {"compute", "memory"},
            source,
            f"{field}.efficiency",
            f"must be {{compute: <fraction>, memory: <fraction>}}, got {eff!r}",
        )
        eff = tuple(
            Number(lo=0, lo_open=True, hi=1).check(eff[k], source, f"{field}.efficiency.{k}")
            for k in ("compute", "memory")
        )
    return GpuSpec(name, **figures, like=None if like is None else like.name, speed=speed, efficiency=eff)


def _speed(raw: Any, like: GpuSpec | None, source: str, field: str) -> tuple[tuple[str, float], ...]:
    """``speed``: one ratio for every model, or {model: ratio, default: ratio}; a model neither
    lists nor ``default`` covers does not run on the type (as in a throughput table)."""
    if raw is None:
        return ()
    require(like is not None, source, field, "needs like: <a known type> (the throughputs it is a ratio of)")
    table = raw if isinstance(raw, Mapping) else {"default": raw}
    require(len(table) > 0, source, field, "must be a ratio > 0 or {<model>: <ratio>, default: <ratio>}, got {}")
    rule = Number(lo=0, lo_open=True, what="a throughput ratio > 0")
    return tuple(
        (str(model), rule.check(ratio, source, field if table is not raw else f"{field}.{model}"))
        for model, ratio in table.items()
    )


CONFIG_KEYS = (
    "name",
    "counts",
    "gpus_per_host",
    "inter_host_gbps",
    "intra_host_gbps",
    "memory_gb",
    "gpu_types",
)  # a cluster written out

# GPUs of one type (and on one host) a cluster may have: beyond the largest clusters built, and
# the engine keeps arrays per host and GPU, so a corrupt count fails here, not in memory.
MAX_GPUS = 1_000_000


@dataclass(frozen=True, eq=False)
class ClusterSpec:
    name: str
    gpu_types: tuple[str, ...]
    counts: np.ndarray  # int64 [T]
    memory_gb: np.ndarray  # float64 [T]
    gpus_per_host: int = 4
    inter_host_gbps: float = 10.0
    intra_host_gbps: float = 100.0
    own_types: tuple[GpuSpec, ...] = ()  # the types the cluster's config defines (gpu_types), in its order

    @property
    def num_types(self) -> int:
        return len(self.gpu_types)

    @property
    def total_gpus(self) -> int:
        return int(self.counts.sum())

    @property
    def hosts_per_type(self) -> np.ndarray:
        """Hosts of each type; the last host of a type holds the remainder when the count is not a multiple."""
        return -(-self.counts // self.gpus_per_host)

    @property
    def inter_host_bytes_per_s(self) -> float:
        return self.inter_host_gbps * 1e9 / 8

    @property
    def intra_host_bytes_per_s(self) -> float:
        return self.intra_host_gbps * 1e9 / 8

    def known_types(self) -> dict[str, GpuSpec]:
        """Every type a name may mean here, by lower-case name: the datasheet's and the cluster's own."""
        return {**gpu_specs(), **{t.name.lower(): t for t in self.own_types}}

    def canonical(self, name: Any, source: str = "cluster", field: str = "gpu type") -> str:
        """A type's spelling among the known types (any case); unknown: one line saying how to add one."""
        return canonical_name(name, self.known_types(), source, field, HOW_TO_ADD)

    @property
    def specs(self) -> tuple[GpuSpec, ...]:
        """Each cluster type's figures, in the cluster's type order."""
        known = self.known_types()
        return tuple(known[name.lower()] for name in self.gpu_types)

    def type_index(self, name: str, source: str = "cluster", field: str = "gpu type") -> int:
        canon = self.canonical(name, source, field)
        if canon not in self.gpu_types:
            raise InputError(source, field, f"{name!r} is not in this cluster (has: {', '.join(self.gpu_types)})")
        return self.gpu_types.index(canon)

    def host_sizes(self, t: int) -> np.ndarray:
        """GPUs on each host of type t."""
        n_hosts = int(self.hosts_per_type[t])
        sizes = np.full(n_hosts, self.gpus_per_host, dtype=np.int64)
        rest = int(self.counts[t]) - self.gpus_per_host * (n_hosts - 1)
        if n_hosts:
            sizes[-1] = rest
        return sizes

    # Hosts are numbered type after type, in the cluster's type order: the hosts of type t are
    # host_offsets[t] .. host_offsets[t + 1] - 1 (placement, outages and Pollux's search share it).
    @cached_property
    def host_offsets(self) -> np.ndarray:
        """int [T + 1]: the first host of each type, then the number of hosts."""
        return _frozen(np.concatenate([[0], np.cumsum(self.hosts_per_type)]).astype(np.int64))

    @cached_property
    def host_types(self) -> np.ndarray:
        """int [hosts]: each host's type."""
        return _frozen(np.repeat(np.arange(self.num_types), self.hosts_per_type))

    @cached_property
    def host_gpus(self) -> np.ndarray:
        """int [hosts]: the GPUs on each host."""
        return _frozen(np.concatenate([self.host_sizes(t) for t in range(self.num_types)]).astype(np.int64))

    def gpus_on(self, hosts: np.ndarray) -> np.ndarray:
        """int [T]: the GPUs of each type on ``hosts`` (global host indices)."""
        return np.bincount(self.host_types[hosts], weights=self.host_gpus[hosts], minlength=self.num_types).astype(
            np.int64
        )

    def describe(self) -> str:
        mix = " + ".join(f"{c} {n}" for n, c in zip(self.gpu_types, self.counts))
        return f"{self.name}: {mix} ({self.total_gpus} GPUs, {self.gpus_per_host} per host)"

    @classmethod
    def from_config(cls, cfg: Mapping[str, Any], source: str = "cluster") -> ClusterSpec:
        own = own_types(cfg.get("gpu_types"), source)
        known = {**gpu_specs(), **{t.name.lower(): t for t in own}}
        counts_cfg = cfg.get("counts")
        require(
            isinstance(counts_cfg, Mapping) and len(counts_cfg) > 0,
            source,
            "counts",
            "must map GPU type names to GPU counts, e.g. {T4: 12, A10: 12}",
        )
        names, counts = [], []
        for raw_name, raw_count in counts_cfg.items():
            name = canonical_name(raw_name, known, source, f"counts.{raw_name}", HOW_TO_ADD)
            require(name not in names, source, f"counts.{raw_name}", f"GPU type {name} is listed twice")
            count = _as_int(raw_count, source, f"counts.{raw_name}")
            require(
                0 <= count <= MAX_GPUS,
                source,
                f"counts.{raw_name}",
                f"must be a GPU count >= 0 and <= {MAX_GPUS}, got {count}",
            )
            names.append(name)
            counts.append(count)
        require(sum(counts) > 0, source, "counts", "the cluster must have at least one GPU")
        gpus_per_host = _as_int(cfg.get("gpus_per_host", 4), source, "gpus_per_host")
        require(
            1 <= gpus_per_host <= MAX_GPUS,
            source,
            "gpus_per_host",
            f"must be >= 1 and <= {MAX_GPUS}, got {gpus_per_host}",
        )
        overrides = {
            canonical_name(k, known, source, f"memory_gb.{k}", HOW_TO_ADD): v
            for k, v in (cfg.get("memory_gb") or {}).items()
        }
        memory = []
        for name in names:
            mem = overrides.get(name, known[name.lower()].memory_gb)
            require(is_number(mem) and mem > 0, source, f"memory_gb.{name}", f"must be a number of GB > 0, got {mem!r}")
            memory.append(mem)
        for key in ("inter_host_gbps", "intra_host_gbps"):
            if key in cfg:
                require(
                    is_number(cfg[key]) and float(cfg[key]) > 0,
                    source,
                    key,
                    f"must be a bandwidth > 0 in Gbit/s, got {cfg[key]!r}",
                )
        return cls(
            name=str(cfg.get("name", "custom")),
            gpu_types=tuple(names),
            counts=_frozen(np.array(counts, dtype=np.int64)),
            memory_gb=_frozen(np.array(memory, dtype=np.float64)),
            gpus_per_host=gpus_per_host,
            inter_host_gbps=float(cfg.get("inter_host_gbps", 10.0)),
            intra_host_gbps=float(cfg.get("intra_host_gbps", 100.0)),
            own_types=own,
        )


def _as_int(value: Any, source: str, field: str) -> int:
    """An int, or a float with a whole value (5.0); not a bool, not NaN or infinite."""
    whole = isinstance(value, (int, np.integer)) or (isinstance(value, float) and value.is_integer())
    if isinstance(value, bool) or not whole:
        raise InputError(source, field, f"must be an integer, got {value!r}")
    return int(value)


def _frozen(a: np.ndarray) -> np.ndarray:
    a.setflags(write=False)
    return a
