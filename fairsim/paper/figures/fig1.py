"""Fig. 1: (a) speedup of the A10 over the T4 and (b) training-state size (log axis) of four jobs,
from the paper catalog's performance model (fairsim/data/paper_catalog.yaml) on the cluster of
conf/cluster/<cluster>.yaml. The paper's four jobs are ResNet on ImageNet, VGG on CIFAR-10,
GPT-neo 350M and OPT-6.7B; the catalog has ResNet50 (ImageNet), VGG16 (its dataset is
wikiart, 224x224 images like CIFAR upscaled), no GPT-neo 350M (GPT2-medium, 355M parameters,
stands in) and OPT-6.7B. Each job runs at its smallest worker count."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import yaml

from fairsim.cluster import ClusterSpec
from fairsim.figures import portable, style
from fairsim.figures.tables import Check
from fairsim.workload.perf_model import paper_catalog

ROOT = Path(__file__).resolve().parents[3]


def speedups(cluster_name: str, slow: str, fast: str) -> pd.DataFrame:
    """Every catalog model at its smallest worker count: throughput on ``fast`` over ``slow``
    (packed), the training state and whether one worker's memory fits each type."""
    cluster = ClusterSpec.from_config(yaml.safe_load((ROOT / "conf" / "cluster" / f"{cluster_name}.yaml").read_text()))
    cat = paper_catalog(cluster)
    s, f = cat.gpu_types.index(slow), cat.gpu_types.index(fast)
    rows = []
    for m, model in enumerate(cat.models):
        w = int(np.flatnonzero(cat.allowed_workers[m])[0])
        mem = float(cat.mem_per_worker_gb[m, w])
        rows.append(
            {
                "model": model,
                "workers": cat.worker_counts[w],
                "speedup": cat.packed[m, f, w] / cat.packed[m, s, w],
                "state_gb": cat.state_bytes[m] / 1e9,
                "mem_per_worker_gb": mem,
                f"fits_{slow}": mem <= cluster.memory_gb[cluster.type_index(slow)],
                f"fits_{fast}": mem <= cluster.memory_gb[cluster.type_index(fast)],
            }
        )
    return pd.DataFrame(rows)


def draw(
    inputs,
    out_dir: Path,
    models=("ResNet50", "VGG16", "GPT2-medium", "OPT-6.7B"),
    slow: str = "T4",
    fast: str = "A10",
    cluster: str = "paper",
) -> list[Check]:
    every = speedups(cluster, slow, fast)
    shown = every.set_index("model").loc[list(models)].reset_index()
    with style.paper_style():
        fig, axes = style.new_figure(2, width=3.2, height=2.6)
        ax = axes[0, 0]
        x = np.arange(len(shown))
        fits = (shown[f"fits_{slow}"] & shown[f"fits_{fast}"]).to_numpy()  # one worker's memory fits both GPUs
        ax.bar(x[fits], shown["speedup"][fits], color="#0072B2")
        ax.bar(x[~fits], shown["speedup"][~fits], color="white", edgecolor="#0072B2", hatch="///")
        for k, v in enumerate(shown["speedup"]):
            ax.text(k, v + 0.05, f"{v:.2f}x", ha="center", fontsize=7)
        ax.set_xticks(
            x, [f"{m}\n({w} GPU{'s' if w > 1 else ''})" for m, w in zip(shown["model"], shown["workers"])], fontsize=6
        )
        ax.set_ylabel(f"{fast} / {slow} throughput")
        ax.set_title(f"(a) {fast} / {slow} speedup" + (" (hatched: does not fit)" if (~fits).any() else ""))
        ax = axes[0, 1]
        ax.bar(x, shown["state_gb"], color="#D55E00")
        ax.set_yscale(portable.LogScale())
        ax.set_ylim(top=shown["state_gb"].max() * 4)  # room for the labels
        for k, v in enumerate(shown["state_gb"]):
            ax.text(k, v * 1.15, f"{v:.3g} GB", ha="center", fontsize=7)
        ax.set_xticks(x, shown["model"], fontsize=6)
        ax.set_ylabel("training state (GB, log)")
        ax.set_title("(b) parameters + gradients + Adam state")
        fig.suptitle("Fig. 1: heterogeneity and state size (paper catalog)", fontsize=9)
        style.save(fig, out_dir, "fig1", shown)
    lo, hi = every["speedup"].min(), every["speedup"].max()
    opt = every.set_index("model").loc["OPT-6.7B", "state_gb"] if "OPT-6.7B" in set(every["model"]) else float("nan")
    return [
        Check(
            "Fig. 1a",
            f"{fast} / {slow} speedup across the Table 2 models",
            "1.6x-2.71x",
            f"{lo:.2f}x-{hi:.2f}x",
            {"speedup_min_ratio": lo, "speedup_max_ratio": hi},
        ),
        Check(
            "Fig. 1a",
            f"{fast} / {slow} speedup, the four jobs shown",
            "1.6x-2.71x",
            ", ".join(f"{m} {v:.2f}x" for m, v in zip(shown["model"], shown["speedup"])),
            {
                "models": ", ".join(shown["model"]),
                **{f"speedup_{m}_ratio": v for m, v in zip(shown["model"], shown["speedup"])},
            },
        ),
        Check("Fig. 1b", "OPT-6.7B training state", "about 107 GB", f"{opt:.1f} GB", {"state_gb": opt}),
    ]
