"""Clusters that a trace's own machine list defines (``cluster.node_list``): the node list read
by its format's ``cluster_config`` into the mapping ``ClusterSpec.from_config`` takes.

    name: openb
    node_format: openb        # a format module with cluster_config (fairsim.workload.formats)
    node_list: /path/to/openb_node_list_gpu_node.csv
    gpu_map: {G2: A100-80GB}  # the list's own GPU names -> datasheet types
    gpus_per_host: null       # null: the node size holding the most GPUs (host_size)

A format module may ship its node list (``shipped_node_list()``): ``node_list: null`` reads it.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from pathlib import Path
from typing import Any, Mapping

from fairsim.errors import require
from fairsim.workload.formats import format_module, module_name

KEYS = ("node_list", "node_format", "gpu_map")
LINKS = ("inter_host_gbps", "intra_host_gbps")


def cluster_mapping(cfg: Mapping[str, Any], src: str) -> Mapping[str, Any]:
    """``cfg`` itself for a cluster written out (counts), else the one its node list defines."""
    if "node_list" not in cfg:
        return cfg
    fmt = cfg.get("node_format")
    module = format_module(fmt, "cluster_config", src, "node_format")
    raw = cfg.get("node_list")
    if raw is None and hasattr(module, "shipped_node_list"):
        path = module.shipped_node_list()
    else:
        require(isinstance(raw, str) and raw.strip() != "", src, "node_list",
                f"is required: set cluster.node_list=/path/to/the {fmt} node list (docs/workload.md says where to get it)")
        path = Path(raw).expanduser()
        require(path.exists(), src, "node_list", f"no such file: {raw}")
    built = module.cluster_config(path, cfg.get("gpu_map"), src, name=str(cfg.get("name", fmt)), gpus_per_host=cfg.get("gpus_per_host"))
    return {**built, **{k: cfg[k] for k in LINKS if k in cfg}}


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
