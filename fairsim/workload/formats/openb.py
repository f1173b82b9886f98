"""Alibaba's heterogeneous GPU trace "openb" (alibaba/clusterdata, cluster-trace-gpu-v2023):
its pod lists as a normalized job log, its node list as a cluster (docs/workload.md, "openb").

A pod list row is one pod: ``name, cpu_milli, memory_mib, num_gpu, gpu_milli, gpu_spec, qos,
pod_phase, creation_time, deletion_time, scheduled_time`` (times in seconds from the trace's
start). A job is a pod that holds whole GPUs: submitted at ``creation_time``, running from
``scheduled_time`` to ``deletion_time``, on any of the ``|``-separated types of ``gpu_spec``
(empty: any type). The trace names no user or group, so ``tenant`` is missing, and it does not
say which type a pod ran on, so ``gpu_type`` is missing too.

Each pod is dropped for the first of these reasons that applies, counted under its name:

- ``cpu_only``: ``num_gpu`` is 0;
- ``gpu_sharing``: ``gpu_milli`` < 1000, a slice of one GPU (option ``gpu_sharing: whole`` keeps
  these as one whole GPU instead);
- ``never_scheduled``: no ``scheduled_time`` (the trace's Pending pods);
- ``running_at_end``: no ``deletion_time``, or deleted at the file's last deletion time, which is
  the end of the collection: the pods "deleted" then were still running, so their durations are
  cut short;
- ``nonpositive_duration``: ``deletion_time`` <= ``scheduled_time``.

A zero time is a time, not a missing one: the trace's first pod is created and scheduled at 0.

The node list (``sn, cpu_milli, memory_mib, gpu, model``) gives the cluster. Raw models map to
datasheet types by ``KNOWN_TYPES``; the undisclosed G1, G2, G3 have no datasheet type until the
user maps them (``gpu_map: {G2: A100-80GB, ...}``), which can also override a known one.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from fairsim.cluster import MAX_GPUS, gpu_specs
from fairsim.errors import InputError, require
from fairsim.tables import CsvTable, read_csv_table
from fairsim.workload import options as opt
from fairsim.workload.formats import LOG_COLUMNS, LogRead, placed
from fairsim.workload.formats._cells import numbers
from fairsim.workload.formats._gpu_names import datasheet_types, name_table
from fairsim.workload.formats._log_build import keep_after_drops
from fairsim.workload.formats.clusters import host_size

OPTIONS = ("gpu_sharing",)
GPU_SHARING = ("drop", "whole")  # drop slices of a GPU, or keep each as one whole GPU
POD_COLUMNS = ("name", "num_gpu", "gpu_milli", "creation_time", "deletion_time", "scheduled_time")
NODE_COLUMNS = ("sn", "gpu", "model")
FULL_GPU_MILLI = 1000
_POD_HINT = "the openb_pod_list_multigpu*.csv variants carry no times; use another variant"
KNOWN_TYPES = {"T4": "T4", "P100": "P100", "V100M16": "V100", "V100M32": "V100-32GB", "A10": "A10"}
UNDISCLOSED = ("G1", "G2", "G3")


# ---- pod lists: the job log ----------------------------------------------------------------------


def read(path: Path, cfg: Mapping[str, Any], src: str) -> LogRead:
    """The pods that held whole GPUs and ran to completion inside the trace, one row each."""
    sharing = opt.choice(cfg, "gpu_sharing", src, "drop", GPU_SHARING)
    pods = read_csv_table(Path(path), src, required=POD_COLUMNS, hint=_POD_HINT)
    cells = pods.cells
    names = cells["name"].str.strip().to_numpy(dtype=object)
    _require_unique(names, pods)
    num_gpu = numbers(cells["num_gpu"], pods.where, "num_gpu", lo=0, whole=True, empty_ok=False)
    gpu_milli = numbers(cells["gpu_milli"], pods.where, "gpu_milli", lo=0, hi=FULL_GPU_MILLI, empty_ok=False)
    created = numbers(cells["creation_time"], pods.where, "creation_time", lo=0, empty_ok=False)
    scheduled = numbers(cells["scheduled_time"], pods.where, "scheduled_time", lo=0)
    deleted = numbers(cells["deletion_time"], pods.where, "deletion_time", lo=0)
    end = float(np.nanmax(deleted)) if np.isfinite(deleted).any() else float("inf")
    shared = gpu_milli < FULL_GPU_MILLI
    with np.errstate(invalid="ignore"):
        duration = deleted - scheduled
        ended_inside = np.isfinite(deleted) & (deleted < end)
    keep, dropped = keep_after_drops(
        np.ones(len(names), dtype=bool),
        [
            ("cpu_only", num_gpu == 0),
            ("gpu_sharing", shared & (sharing == "drop")),
            ("never_scheduled", np.isnan(scheduled)),
            ("running_at_end", ~ended_inside),
            ("nonpositive_duration", ~(duration > 0)),
        ],
    )
    log = pd.DataFrame(
        {
            "job_id": names[keep].astype(str),
            "submit_s": created[keep],
            "duration_s": duration[keep],
            "gpus": num_gpu[keep],
            "gpu_type": None,
            "gpu_types": _type_sets(cells, keep),
            "model": None,
            "tenant": None,
            "status": _optional_text(cells, "pod_phase", keep),
        },
        columns=list(LOG_COLUMNS),
    )
    meta = {
        "rows": len(names),
        "kept": int(keep.sum()),
        "trace_end_s": end,
        "gpu_sharing": sharing,
        "gpu_sharing_kept_whole": int((keep & shared).sum()),
    }
    return LogRead(
        log=log,
        source=f"{src}: {pods.path}",
        where=placed(pods.where, np.flatnonzero(keep)),
        dropped=dropped,
        meta=meta,
    )


def _type_sets(pods: pd.DataFrame, keep: np.ndarray) -> list[str | None]:
    """gpu_spec as a |-separated set, each name once (the raw data repeats some, V100M32|V100M32)."""
    if "gpu_spec" not in pods.columns:
        return [None] * int(keep.sum())
    return [_type_set(text) for text in pods["gpu_spec"].to_numpy(dtype=object)[keep]]


def _type_set(text: str) -> str | None:
    """Empty or "nan" (how pandas shows an empty cell) is no constraint."""
    names = list(dict.fromkeys(n.strip() for n in str(text).split("|") if n.strip()))
    names = [n for n in names if n.lower() != "nan"]
    return "|".join(names) if names else None


def _optional_text(pods: pd.DataFrame, col: str, keep: np.ndarray) -> list[str | None]:
    if col not in pods.columns:
        return [None] * int(keep.sum())
    return [v.strip() or None for v in pods[col].to_numpy(dtype=object)[keep]]


def _require_unique(names: np.ndarray, pods: CsvTable) -> None:
    seen: dict[str, int] = {}
    for row, name in enumerate(names):
        require(name not in seen, pods.where(row), "name", f"{name!r} repeats (line {pods.lines[seen.get(name, row)]})")
        seen[name] = row


# ---- node list: the cluster ------------------------------------------------------------------------


def cluster_config(
    nodes_path: Path,
    gpu_map: Mapping[str, Any] | None,
    src: str,
    *,
    name: str = "openb",
    gpus_per_host: int | None = None,
) -> dict:
    """A mapping ClusterSpec.from_config accepts: name, counts {datasheet type: GPUs} in the
    datasheet's order, gpus_per_host (given, or the node size holding the most GPUs). Also, for
    reporting (from_config ignores them): node_sizes {type: {GPUs per node: nodes}} and
    cpu_only_nodes (ignored: they hold no GPU)."""
    nodes, cpu_only = read_gpu_nodes(nodes_path, src)
    types = canonical_types(nodes["model"], gpu_map, src, Path(nodes_path))
    nodes = nodes.assign(gpu_type=nodes["model"].map(types))
    order = [spec.name for spec in gpu_specs().values()]
    used = sorted(set(nodes["gpu_type"]), key=order.index)
    sizes = {t: dict(sorted(Counter(nodes.loc[nodes["gpu_type"] == t, "gpus"]).items())) for t in used}
    return {
        "name": name,
        "counts": {t: int(nodes.loc[nodes["gpu_type"] == t, "gpus"].sum()) for t in used},
        "gpus_per_host": gpus_per_host if gpus_per_host is not None else host_size(nodes["gpus"]),
        "node_sizes": {t: {int(k): int(v) for k, v in s.items()} for t, s in sizes.items()},
        "cpu_only_nodes": cpu_only,
    }


def read_gpu_nodes(nodes_path: Path, src: str) -> tuple[pd.DataFrame, int]:
    """The nodes with GPUs (sn, gpus, model) and the number of CPU-only nodes left out."""
    table = read_csv_table(Path(nodes_path), src, required=NODE_COLUMNS)
    nodes = table.cells
    gpus = numbers(nodes["gpu"], table.where, "gpu", lo=0, hi=MAX_GPUS, whole=True, empty_ok=False)
    models = nodes["model"].str.strip().to_numpy(dtype=object)
    has_gpu = gpus > 0
    blank = has_gpu & (models == "")
    if blank.any():
        row = int(np.flatnonzero(blank)[0])
        raise InputError(
            table.where(row), "model", f"node {nodes['sn'].iloc[row]} has {int(gpus[row])} GPUs but no model"
        )
    gpu_nodes = pd.DataFrame(
        {"sn": nodes["sn"].to_numpy()[has_gpu], "gpus": gpus[has_gpu].astype(np.int64), "model": models[has_gpu]}
    )
    return gpu_nodes, int((~has_gpu).sum())


# ---- GPU type names: one mapping for pods and nodes ---------------------------------------------------


def type_map(gpu_map: Mapping[str, Any] | None, src: str) -> dict[str, str | None]:
    """Raw model -> datasheet type: KNOWN_TYPES, then the user's gpu_map over it (None: unmapped)."""
    return name_table(KNOWN_TYPES, UNDISCLOSED, gpu_map, src, "{G2: A100-80GB}")


def canonical_types(
    raw_names: Iterable[str], gpu_map: Mapping[str, Any] | None, src: str, file: Path | None = None
) -> dict[str, str]:
    """{raw model: datasheet type} for every name in ``raw_names`` (single names or |-joined
    sets, as in gpu_spec; missing ones skipped), read from ``file``. Refuses, in one line (naming
    the file), the names with no type."""
    names = {n.strip() for text in raw_names if isinstance(text, str) for n in text.split("|") if n.strip()}
    return datasheet_types(
        names, type_map(gpu_map, src), f"{src}: {file}" if file else src, "openb", "G1-G3 are undisclosed"
    )
