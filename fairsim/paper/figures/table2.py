"""Table 2: the workload catalog. The paper's models, datasets and worker counts, and what our
paper catalog (fairsim/data/paper_catalog.yaml, performance model in docs/workload.md) assigns
them on the cluster of conf/cluster/<cluster>.yaml: throughput per GPU type at the smallest
worker count (epochs per hour, packed on one host), memory per worker and the state size."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import yaml

from fairsim.cluster import ClusterSpec
from fairsim.figures.tables import Check, save_table
from fairsim.workload.perf_model import (
    default_constants_path,
    load_constants,
    paper_catalog,
)

ROOT = Path(__file__).resolve().parents[3]


def catalog_table(cluster_name: str = "paper") -> pd.DataFrame:
    cluster = ClusterSpec.from_config(yaml.safe_load((ROOT / "conf" / "cluster" / f"{cluster_name}.yaml").read_text()))
    cat = paper_catalog(cluster)
    consts = load_constants()
    raw = {m["name"]: m for m in yaml.safe_load(default_constants_path().read_text())["models"]}
    rows = []
    for m, model in enumerate(cat.models):
        w = int(np.flatnonzero(cat.allowed_workers[m])[0])
        mem = float(cat.mem_per_worker_gb[m, w])
        row = {
            "model": model,
            "dataset": raw.get(model, {}).get("dataset", ""),
            "workers": "/".join(map(str, consts.workers[m])),
            "parallelism": str(consts.parallelism[m]),
            "params (M)": cat.param_count[m] / 1e6,
            "state (GB)": cat.state_bytes[m] / 1e9,
            "min workers": cat.worker_counts[w],
            "mem/worker (GB)": mem,
        }
        for k, gpu in enumerate(cat.gpu_types):
            fits = mem <= cluster.memory_gb[k]
            row[f"{gpu} epochs/h"] = cat.packed[m, k, w] * 3600 if fits else float("nan")
        rows.append(row)
    return pd.DataFrame(rows)


def draw(inputs, out_dir: Path, cluster: str = "paper") -> list[Check]:
    table = catalog_table(cluster)
    save_table(
        table,
        out_dir,
        "table2",
        "Table 2: workload catalog (paper models; our performance model's numbers)",
        [
            "Memory and throughput at the model's smallest worker count ('min workers'), packed on one host; '-' where one worker's memory does not fit the GPU.",
            "Datasets are the catalog's stand-ins where the paper's are not public or not sized (docs/workload.md).",
            f"Cluster: conf/cluster/{cluster}.yaml.",
        ],
        floatfmt=".4g",
    )
    return [
        Check(
            "Table 2",
            "models in the catalog",
            "16 (VGG16/19, ResNet50/152, DenseNet121/201, Bark x2, BERT x2, "
            "GPT-neo 1.3B/2.7B, GPT-2 medium/large, OPT 2.7B/6.7B)",
            f"{len(table)}",
            {"models": len(table)},
        )
    ]
