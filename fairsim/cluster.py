"""The cluster model: GPU types with counts, hosts of several GPUs, memory and link bandwidths.

A cluster is written as a small mapping (a Hydra config under ``conf/cluster/``)::

    name: paper
    gpus_per_host: 4
    inter_host_gbps: 10      # the LAN between hosts
    intra_host_gbps: 100     # between GPUs of one host (PCIe / NVLink)
    counts: {T4: 12, A10: 12, V100: 12}
    memory_gb: {}            # optional per-type overrides of the datasheet memory

GPU type names are matched case-insensitively against ``fairsim/data/gpu_specs.csv``; the
order of ``counts`` is the cluster's type order (Gavel's greedy placement uses it).
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any, Mapping

import numpy as np

from fairsim.errors import InputError, is_number, require
from fairsim.files import note_input


@dataclass(frozen=True)
class GpuSpec:
    name: str
    memory_gb: float
    fp32_tflops: float
    fp16_tflops: float  # dense tensor-core FP16; equals fp32 for GPUs without tensor cores
    mem_bw_gb_s: float


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
        specs[row["gpu"].lower()] = GpuSpec(
            row["gpu"], float(row["memory_gb"]), fp32, fp16, float(row["mem_bw_gb_s"])
        )
    return specs


def canonical_gpu_name(name: str, source: str = "cluster", field: str = "counts") -> str:
    spec = gpu_specs().get(str(name).lower())
    if spec is None:
        allowed = ", ".join(s.name for s in gpu_specs().values())
        raise InputError(source, field, f"unknown GPU type {name!r} (allowed: {allowed})")
    return spec.name


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

    def type_index(self, name: str) -> int:
        canon = canonical_gpu_name(name)
        if canon not in self.gpu_types:
            raise InputError("cluster", "gpu type", f"{name!r} is not in this cluster (has: {', '.join(self.gpu_types)})")
        return self.gpu_types.index(canon)

    def host_sizes(self, t: int) -> np.ndarray:
        """GPUs on each host of type t."""
        n_hosts = int(self.hosts_per_type[t])
        sizes = np.full(n_hosts, self.gpus_per_host, dtype=np.int64)
        rest = int(self.counts[t]) - self.gpus_per_host * (n_hosts - 1)
        if n_hosts:
            sizes[-1] = rest
        return sizes

    def describe(self) -> str:
        mix = " + ".join(f"{c} {n}" for n, c in zip(self.gpu_types, self.counts))
        return f"{self.name}: {mix} ({self.total_gpus} GPUs, {self.gpus_per_host} per host)"

    @classmethod
    def from_config(cls, cfg: Mapping[str, Any], source: str = "cluster") -> "ClusterSpec":
        counts_cfg = cfg.get("counts")
        require(isinstance(counts_cfg, Mapping) and len(counts_cfg) > 0, source, "counts",
                "must map GPU type names to GPU counts, e.g. {T4: 12, A10: 12}")
        names, counts = [], []
        for raw_name, raw_count in counts_cfg.items():
            name = canonical_gpu_name(raw_name, source, f"counts.{raw_name}")
            require(name not in names, source, f"counts.{raw_name}", f"GPU type {name} is listed twice")
            count = _as_int(raw_count, source, f"counts.{raw_name}")
            require(0 <= count <= MAX_GPUS, source, f"counts.{raw_name}", f"must be a GPU count >= 0 and <= {MAX_GPUS}, got {count}")
            names.append(name)
            counts.append(count)
        require(sum(counts) > 0, source, "counts", "the cluster must have at least one GPU")
        gpus_per_host = _as_int(cfg.get("gpus_per_host", 4), source, "gpus_per_host")
        require(1 <= gpus_per_host <= MAX_GPUS, source, "gpus_per_host", f"must be >= 1 and <= {MAX_GPUS}, got {gpus_per_host}")
        overrides = {canonical_gpu_name(k, source, f"memory_gb.{k}"): v for k, v in (cfg.get("memory_gb") or {}).items()}
        memory = []
        for name in names:
            mem = overrides.get(name, gpu_specs()[name.lower()].memory_gb)
            require(is_number(mem) and mem > 0, source, f"memory_gb.{name}", f"must be a number of GB > 0, got {mem!r}")
            memory.append(mem)
        for key in ("inter_host_gbps", "intra_host_gbps"):
            if key in cfg:
                require(is_number(cfg[key]) and float(cfg[key]) > 0, source, key, f"must be a bandwidth > 0 in Gbit/s, got {cfg[key]!r}")
        return cls(
            name=str(cfg.get("name", "custom")),
            gpu_types=tuple(names),
            counts=_frozen(np.array(counts, dtype=np.int64)),
            memory_gb=_frozen(np.array(memory, dtype=np.float64)),
            gpus_per_host=gpus_per_host,
            inter_host_gbps=float(cfg.get("inter_host_gbps", 10.0)),
            intra_host_gbps=float(cfg.get("intra_host_gbps", 100.0)),
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
