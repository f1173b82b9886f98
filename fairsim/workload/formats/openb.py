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

from fairsim.cluster import canonical_gpu_name, gpu_specs
from fairsim.errors import InputError, Number, require
from fairsim.files import note_input
from fairsim.workload import options as opt
from fairsim.workload.formats import LOG_COLUMNS, LogRead
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
    pods, fsrc = _read_table(path, POD_COLUMNS, src, _POD_HINT)
    names = pods["name"].to_numpy(dtype=object)
    _require_unique(names, fsrc)
    num_gpu = _numbers(pods, "num_gpu", fsrc, Number(lo=0, integer=True))
    gpu_milli = _numbers(pods, "gpu_milli", fsrc, Number(lo=0, hi=FULL_GPU_MILLI))
    created = _numbers(pods, "creation_time", fsrc, Number(lo=0))
    scheduled = _numbers(pods, "scheduled_time", fsrc, Number(lo=0), optional=True)
    deleted = _numbers(pods, "deletion_time", fsrc, Number(lo=0), optional=True)
    end = float(np.nanmax(deleted)) if np.isfinite(deleted).any() else float("inf")
    shared = gpu_milli < FULL_GPU_MILLI
    with np.errstate(invalid="ignore"):
        duration = deleted - scheduled
        ended_inside = np.isfinite(deleted) & (deleted < end)
    reasons = {
        "cpu_only": num_gpu == 0,
        "gpu_sharing": shared & (sharing == "drop"),
        "never_scheduled": np.isnan(scheduled),
        "running_at_end": ~ended_inside,
        "nonpositive_duration": ~(duration > 0),
    }
    keep, dropped = _first_reasons(reasons, len(pods))
    log = pd.DataFrame({
        "job_id": names[keep].astype(str),
        "submit_s": created[keep],
        "duration_s": duration[keep],
        "gpus": num_gpu[keep].astype(np.int64),
        "gpu_type": None,
        "gpu_types": _type_sets(pods, keep),
        "model": None,
        "tenant": None,
        "status": _optional_text(pods, "pod_phase", keep),
    }, columns=list(LOG_COLUMNS))
    meta = {"rows": len(pods), "kept": int(keep.sum()), "trace_end_s": end, "gpu_sharing": sharing,
            "gpu_sharing_kept_whole": int((keep & shared).sum())}
    return LogRead(log=log, dropped=dropped, meta=meta)


def _first_reasons(reasons: Mapping[str, np.ndarray], n: int) -> tuple[np.ndarray, dict[str, int]]:
    """Each row is counted under the first reason that applies; rows with none are kept."""
    keep = np.ones(n, dtype=bool)
    dropped = {}
    for reason, hit in reasons.items():
        dropped[reason] = int((keep & hit).sum())
        keep &= ~hit
    return keep, dropped


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


def _require_unique(names: np.ndarray, fsrc: str) -> None:
    seen: dict[str, int] = {}
    for row, name in enumerate(names, start=1):
        require(name not in seen, fsrc, "name", f"{name!r} repeats (rows {seen.get(name)} and {row})")
        seen[name] = row


# ---- node list: the cluster ------------------------------------------------------------------------

def cluster_config(nodes_path: Path, gpu_map: Mapping[str, Any] | None, src: str, *, name: str = "openb",
                   gpus_per_host: int | None = None) -> dict:
    """A mapping ClusterSpec.from_config accepts: name, counts {datasheet type: GPUs} in the
    datasheet's order, gpus_per_host (given, or the node size holding the most GPUs). Also, for
    reporting (from_config ignores them): node_sizes {type: {GPUs per node: nodes}} and
    cpu_only_nodes (ignored: they hold no GPU)."""
    nodes, cpu_only = read_gpu_nodes(nodes_path, src)
    types = canonical_types(nodes["model"], gpu_map, src)
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
    nodes, fsrc = _read_table(nodes_path, NODE_COLUMNS, src, "")
    gpus = _numbers(nodes, "gpu", fsrc, Number(lo=0, integer=True))
    models = nodes["model"].str.strip().to_numpy(dtype=object)
    has_gpu = gpus > 0
    blank = has_gpu & (models == "")
    if blank.any():
        row = int(np.flatnonzero(blank)[0])
        raise InputError(fsrc, "model", f"row {row + 1} ({nodes['sn'].iloc[row]}) has {int(gpus[row])} GPUs but no model")
    gpu_nodes = pd.DataFrame({"sn": nodes["sn"].to_numpy()[has_gpu], "gpus": gpus[has_gpu].astype(np.int64),
                              "model": models[has_gpu]})
    return gpu_nodes, int((~has_gpu).sum())


# ---- GPU type names: one mapping for pods and nodes ---------------------------------------------------

def type_map(gpu_map: Mapping[str, Any] | None, src: str) -> dict[str, str | None]:
    """Raw model -> datasheet type: KNOWN_TYPES, then the user's gpu_map over it (None: unmapped)."""
    require(gpu_map is None or isinstance(gpu_map, Mapping), src, "gpu_map",
            f"must map openb models to datasheet types, e.g. {{G2: A100-80GB}}, got {gpu_map!r}")
    table: dict[str, str | None] = {**KNOWN_TYPES, **{u: None for u in UNDISCLOSED}}
    for raw, value in (gpu_map or {}).items():
        table[str(raw)] = None if value is None else canonical_gpu_name(value, src, f"gpu_map.{raw}")
    return table


def canonical_types(raw_names: Iterable[str], gpu_map: Mapping[str, Any] | None, src: str) -> dict[str, str]:
    """{raw model: datasheet type} for every name in ``raw_names`` (single names or |-joined
    sets, as in gpu_spec; missing ones skipped). Refuses, in one line, the names with no type."""
    names = sorted({n.strip() for text in raw_names if isinstance(text, str) for n in text.split("|") if n.strip()})
    table = type_map(gpu_map, src)
    unmapped = [n for n in names if table.get(n) is None]
    if unmapped:
        allowed = ", ".join(spec.name for spec in gpu_specs().values())
        example = ", ".join(f"{n}: <type>" for n in unmapped)
        raise InputError(src, "gpu_map", f"no datasheet type for openb model(s) {', '.join(unmapped)} "
                         f"(G1-G3 are undisclosed): set gpu_map: {{{example}}} with types among {allowed}")
    return {n: table[n] for n in names}


# ---- reading the CSVs --------------------------------------------------------------------------------

def _read_table(path: Path, columns: tuple[str, ...], src: str, hint: str) -> tuple[pd.DataFrame, str]:
    """The CSV as text cells (empty = missing), and the source that names the file in errors."""
    path = Path(path)
    fsrc = f"{src} ({path})"
    require(path.is_file(), fsrc, "path", "no such file")
    note_input(path)
    try:
        table = pd.read_csv(path, dtype=str, keep_default_na=False)
    except Exception as exc:  # pandas raises several types for unreadable files
        raise InputError(fsrc, "file", f"cannot be read as CSV ({type(exc).__name__})") from exc
    missing = [c for c in columns if c not in table.columns]
    require(not missing, fsrc, "columns", f"missing {', '.join(missing)} (required: {', '.join(columns)})"
            + (f"; {hint}" if hint else ""))
    return table, fsrc


def _numbers(table: pd.DataFrame, col: str, fsrc: str, rule: Number, optional: bool = False) -> np.ndarray:
    """The column as floats (NaN where an optional cell is empty); the first bad cell is refused
    naming its row (1 = the first data row) and the row's id (its name or sn)."""
    text = table[col].str.strip()
    values = pd.to_numeric(text, errors="coerce").to_numpy(dtype=np.float64)
    empty = (text == "").to_numpy()
    good = np.zeros(len(values), dtype=bool)
    finite = np.isfinite(values)
    good[finite] = [rule.ok(float(v)) for v in values[finite]]
    bad = ~good & ~(empty & optional)
    if bad.any():
        row = int(np.flatnonzero(bad)[0])
        raise InputError(fsrc, col, f"must be {rule.words()} (row {row + 1}, {_row_id(table, row)}, has "
                         f"{table[col].iloc[row]!r})")
    return values


def _row_id(table: pd.DataFrame, row: int) -> str:
    return str(table["name" if "name" in table.columns else "sn"].iloc[row])
