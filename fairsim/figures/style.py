"""Shared look of the paper figures and the byte-identical save.

Figures are built on ``matplotlib.figure.Figure`` (no pyplot, no global backend state) and saved
with fixed metadata: no creation date in the PDF, no software tag in the PNG, fixed DPI, so the
same results give the same bytes on every rerun.
"""

from __future__ import annotations

import contextlib
from pathlib import Path

import matplotlib as mpl
import pandas as pd
import seaborn as sns
from matplotlib.figure import Figure

# Display name and colour of each policy, in drawing order; a policy keeps its colour in every
# figure, and a family shares a hue (FFT variants blue/cyan, Gavel greens, SRTF pinks).
POLICIES = {
    "ours": ("FFT", "#1f77b4"), "ours_noswitch": ("FFT no-switch", "#aec7e8"),
    "ours_nofair": ("FFT no-fair", "#17becf"), "ours_constmu": ("FFT const-mu", "#9edae5"),
    "gavel": ("Gavel", "#2ca02c"), "gavel_mmf": ("Gavel-MMF", "#98df8a"), "gavel_ftf": ("Gavel-FTF", "#bcbd22"),
    "themis": ("Themis", "#d62728"), "tiresias": ("Tiresias", "#9467bd"), "tiresias_las": ("Tiresias-LAS", "#c5b0d5"),
    "allox": ("AlloX", "#8c564b"), "pal": ("PAL", "#ff7f0e"), "srtf": ("SRTF", "#e377c2"),
    "srtf_agnostic": ("SRTF-agnostic", "#f7b6d2"), "fifo": ("FIFO", "#7f7f7f"),
}
POLICY_LABELS = {k: v[0] for k, v in POLICIES.items()}
POLICY_COLORS = {k: v[1] for k, v in POLICIES.items()}
WORKLOAD_LABELS = {f"trace{i}": f"Trace {i}" for i in range(1, 10)}
DPI = 150


def label(policy: str) -> str:
    return POLICY_LABELS.get(policy, policy)


def color(policy: str) -> str:
    return POLICY_COLORS.get(policy, "#404040")


def policy_order(policies) -> list[str]:
    """Known policies in display order, then unknown ones sorted by name."""
    present = set(policies)
    return [p for p in POLICY_LABELS if p in present] + sorted(present - set(POLICY_LABELS))


def workload_order(workloads) -> list[str]:
    return sorted(set(workloads), key=lambda w: (len(w), w))


@contextlib.contextmanager
def paper_style():
    """Seaborn's whitegrid/paper look, applied only inside the block (rcParams restored after)."""
    rc = {**sns.axes_style("whitegrid"), **sns.plotting_context("paper"),
          "svg.hashsalt": "fairsim", "axes.titlesize": 9, "legend.fontsize": 7}
    with mpl.rc_context(rc):
        yield


def new_figure(ncols: int, nrows: int = 1, width: float = 3.2, height: float = 2.6):
    fig = Figure(figsize=(width * ncols, height * nrows), layout="constrained")
    axes = fig.subplots(nrows, ncols, squeeze=False)
    return fig, axes


def save(fig: Figure, out_dir: Path, stem: str, data: pd.DataFrame | None = None) -> list[Path]:
    """Write <stem>.pdf and <stem>.png (and the plotted numbers as data/<stem>.csv)."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    pdf, png = out_dir / f"{stem}.pdf", out_dir / f"{stem}.png"
    fig.draw_without_rendering()  # run the constrained layout once, then freeze it for both files
    fig.set_layout_engine("none")
    fig.savefig(pdf, metadata={"CreationDate": None, "ModDate": None, "Creator": "fairsim", "Producer": None})
    fig.savefig(png, dpi=DPI, metadata={"Software": None})
    paths = [pdf, png]
    if data is not None:
        csv = out_dir / "data" / f"{stem}.csv"
        csv.parent.mkdir(exist_ok=True)
        data.to_csv(csv, index=False, float_format="%.6g")
        paths.append(csv)
    return paths
