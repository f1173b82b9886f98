"""Clusters whose config points at files: the node list of a trace (``cluster.node_list``), and
a table of GPU types of the user's own (``gpu_specs``), each read into the mapping
``ClusterSpec.from_config`` takes.

    name: openb
    node_format: openb        # a format module with cluster_config (fairsim.workload.formats)
    node_list: /path/to/openb_node_list_gpu_node.csv
    gpu_map: {G2: A100-80GB}  # the list's own GPU names -> datasheet types
    gpus_per_host: null       # null: the node size holding the most GPUs (host_size)

A format module may ship its node list (``shipped_node_list()``): ``node_list: null`` reads it.

    name: mine
    counts: {H100: 8, A100-80GB: 16}
    gpu_specs: my_gpus.csv    # rows in the columns of fairsim/data/gpu_specs.csv: more types

A ``gpu_specs`` file's rows become ``gpu_types`` entries (beside the preset's own); a row naming
a datasheet type must repeat its figures (the file may be a copy of the shipped one with rows
added), and a type both the file and ``gpu_types`` define is refused. The file is an input of
the run (its digest in provenance.json): editing it makes stale exactly the cells that read it.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np

from fairsim.cluster import CONFIG_KEYS, DATASHEET, FIGURES, gpu_specs
from fairsim.errors import check_keys, require
from fairsim.files import input_path
from fairsim.gpu_costs import CONFIG_KEYS as COST_KEYS
from fairsim.tables import read_csv_table
from fairsim.workload.formats import format_module, module_name
from fairsim.workload.formats._cells import numbers

KEYS = ("node_list", "node_format", "gpu_map")
LINKS = ("inter_host_gbps", "intra_host_gbps")
SPEC_COLUMNS = {
    "memory_gb": "memory_gb",
    "fp32_tflops": "fp32_tflops",
    "fp16_tflops": "fp16_tensor_tflops_dense",
    "mem_bw_gb_s": "mem_bw_gb_s",
}  # a type's figure -> its column in a gpu_specs file


def cluster_mapping(cfg: Mapping[str, Any], src: str) -> Mapping[str, Any]:
    """``cfg`` itself for a cluster written out (counts), with the types of its ``gpu_specs``
    file among its ``gpu_types``; else the one its node list defines."""
    if "node_list" not in cfg:
        return _with_spec_file(cfg, src)
    fmt = cfg.get("node_format")
    module = format_module(fmt, "cluster_config", src, "node_format")
    raw = cfg.get("node_list")
    if raw is None and hasattr(module, "shipped_node_list"):
        path = module.shipped_node_list()
    else:
        require(
            isinstance(raw, str) and raw.strip() != "",
            src,
            "node_list",
            f"is required: set cluster.node_list=/path/to/the {fmt} node list (docs/workload.md says where to get it)",
        )
        path = input_path(raw)
        require(path.exists(), src, "node_list", f"no such file: {raw}")
    built = module.cluster_config(
        path, cfg.get("gpu_map"), src, name=str(cfg.get("name", fmt)), gpus_per_host=cfg.get("gpus_per_host")
    )
    return {**built, **{k: cfg[k] for k in LINKS if k in cfg}}


def _with_spec_file(cfg: Mapping[str, Any], src: str) -> Mapping[str, Any]:
    check_keys(
        cfg, (*CONFIG_KEYS, *COST_KEYS, "gpu_specs"), src, noun="cluster key"
    )  # a misspelt gpu_types must not pass unseen
    if "gpu_specs" not in cfg:
        return cfg
    out = {k: v for k, v in cfg.items() if k != "gpu_specs"}
    if cfg["gpu_specs"] is None:
        return out
    raw = cfg["gpu_specs"]
    require(
        isinstance(raw, str) and raw.strip() != "",
        src,
        "gpu_specs",
        f"must be the path of a CSV like {DATASHEET}, got {raw!r}",
    )
    path = input_path(raw)
    require(path.is_file(), src, "gpu_specs", f"no such file: {raw}")
    listed = spec_file_types(path, src)
    inline = cfg.get("gpu_types") or {}
    both = sorted(set(map(str.lower, listed)) & set(map(str.lower, map(str, inline))))
    require(not both, src, f"gpu_types.{both[0] if both else ''}", f"is defined in {path} too: define a type once")
    return {**out, "gpu_types": {**listed, **inline}}


def spec_file_types(path, src: str) -> dict[str, dict[str, float]]:
    """The types of a gpu_specs file that the datasheet lacks, as ``gpu_types`` entries."""
    table = read_csv_table(
        path,
        src,
        required=("gpu", "memory_gb", "fp32_tflops", "mem_bw_gb_s"),
        hint=f"the columns of {DATASHEET}: gpu, memory_gb, fp32_tflops, fp16_tensor_tflops_dense, mem_bw_gb_s",
    )
    cells, where = table.cells, table.where
    if SPEC_COLUMNS["fp16_tflops"] not in cells:
        cells = cells.assign(**{SPEC_COLUMNS["fp16_tflops"]: ""})
    values = {
        key: numbers(cells[col], where, col, lo=0, empty_ok=key == "fp16_tflops", what="a number > 0")
        for key, col in SPEC_COLUMNS.items()
    }
    for key, column in values.items():
        zero = np.flatnonzero(column == 0)
        require(
            len(zero) == 0, where(int(zero[0]) if len(zero) else 0), SPEC_COLUMNS[key], "must be a number > 0, got 0"
        )
    values["fp16_tflops"] = np.where(
        np.isnan(values["fp16_tflops"]), values["fp32_tflops"], values["fp16_tflops"]
    )  # empty: no tensor cores
    datasheet = gpu_specs()
    out: dict[str, dict[str, float]] = {}
    for i, name in enumerate(cells["gpu"].str.strip()):
        require(name != "", where(i), "gpu", "is empty (a type's name)")
        figures = {key: float(v[i]) for key, v in values.items()}
        known = datasheet.get(name.lower())
        if known is not None:
            same = all(getattr(known, key) == figures[key] for key in FIGURES)
            require(
                same,
                where(i),
                "gpu",
                f"{known.name} is a datasheet type ({DATASHEET}) with other figures: give your row "
                "another name (memory_gb.<type> in the cluster preset changes a known type's memory)",
            )
            continue
        require(name.lower() not in map(str.lower, out), where(i), "gpu", f"{name!r} is listed twice")
        out[name] = figures
    return out


def host_size(gpus_per_node: Iterable[int]) -> int:
    """The node size that holds the most GPUs (ties: the larger size): fairsim's cluster has one
    host size, and with this one a gang is placed as most of the cluster's GPUs would place it."""
    held: Counter[int] = Counter()
    for gpus in gpus_per_node:
        held[int(gpus)] += int(gpus)
    require(len(held) > 0, "node list", "gpu", "no node has a GPU")
    return max(held, key=lambda size: (held[size], size))


def node_module(cfg: Mapping[str, Any]) -> str | None:
    """The module name that builds a node-list cluster (for provenance); None for a written-out one."""
    return module_name(str(cfg.get("node_format"))) if "node_list" in cfg else None
