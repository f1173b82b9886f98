"""Shared look of the paper figures and the byte-identical save.

Figures are built on ``matplotlib.figure.Figure`` (no pyplot, no global backend state) and saved
with fixed metadata: no creation date in the PDF, no software tag in the PNG, fixed DPI, so the
same results give the same bytes on every rerun. Log axes come from ``fairsim.figures.portable``
(``LogScale()``, ``SymmetricalLogScale()``), not matplotlib's "log", so they are the same bytes
on every CPU too.
"""

from __future__ import annotations

import contextlib
import hashlib
import textwrap
from pathlib import Path

import matplotlib as mpl
import pandas as pd
import seaborn as sns
from matplotlib.figure import Figure

# Display name and colour of each policy, in drawing order. A policy keeps its colour in every
# figure. Colours come from the Okabe-Ito and Paul Tol colour-blind-safe sets, one distinct colour
# per policy; policies drawn together (the baselines of Figs. 7-9 and 11-12, the variants of
# Fig. 10) get the most distinct ones. Lines also differ by marker, so no figure relies on hue alone.
POLICIES = {
    "ours": ("FFT", "#0072B2", "o"),
    "ours_noswitch": ("FFT no-switch", "#CC6677", "v"),
    "ours_nofair": ("FFT no-fair", "#DDCC77", "<"),
    "ours_constmu": ("FFT const-mu", "#AA4499", ">"),
    "gavel": ("Gavel", "#009E73", "s"),
    "gavel_mmf": ("Gavel-MMF", "#E69F00", "D"),
    "gavel_ftf": ("Gavel-FTF", "#999933", "d"),
    "themis": ("Themis", "#D55E00", "^"),
    "tiresias": ("Tiresias", "#CC79A7", "P"),
    "tiresias_random": ("Tiresias (random queue)", "#661100", "P"),
    "tiresias_las": ("Tiresias-LAS", "#882255", "p"),
    "tiresias_las2q": ("Tiresias-LAS 2q", "#6699CC", "p"),
    "allox": ("AlloX", "#56B4E9", "X"),
    "pal": ("PAL", "#332288", "*"),
    "srtf": ("SRTF", "#000000", "h"),
    "srtf_agnostic": ("SRTF-agnostic", "#44AA99", "H"),
    "fifo": ("FIFO", "#888888", "8"),
}
POLICY_LABELS = {k: v[0] for k, v in POLICIES.items()}
POLICY_COLORS = {k: v[1] for k, v in POLICIES.items()}
POLICY_MARKERS = {k: v[2] for k, v in POLICIES.items()}
# Unknown policies (a new module not listed above) get one of these, picked by a stable hash of
# the name, so the choice is the same on every machine and run.
FALLBACK_COLORS = ("#117733", "#88CCEE", "#661100", "#6699CC", "#AA4466", "#4477AA", "#228833", "#EE7733")
WORKLOAD_LABELS = {f"trace{i}": f"Trace {i}" for i in range(1, 10)}
PAPER_LABEL = "paper"  # legend label of every value read off the paper
PAPER_COLOR = "black"
PAPER_MARKER = "x"
DPI = 150


def label(policy: str) -> str:
    return POLICY_LABELS.get(policy, policy)


def _stable_index(name: str, size: int) -> int:
    return int(hashlib.sha256(name.encode()).hexdigest(), 16) % size


def color(policy: str) -> str:
    """The policy's fixed colour (a deterministic fallback colour for unknown names)."""
    if policy in POLICY_COLORS:
        return POLICY_COLORS[policy]
    return FALLBACK_COLORS[_stable_index(policy, len(FALLBACK_COLORS))]


def marker(policy: str) -> str:
    return POLICY_MARKERS.get(policy, "o")


def policy_order(policies) -> list[str]:
    """Known policies in display order, then unknown ones sorted by name."""
    present = set(policies)
    return [p for p in POLICY_LABELS if p in present] + sorted(present - set(POLICY_LABELS))


def workload_order(workloads) -> list[str]:
    return sorted(set(workloads), key=lambda w: (len(w), w))


def workload_label(workload: str) -> str:
    return WORKLOAD_LABELS.get(workload, workload)


@contextlib.contextmanager
def paper_style():
    """Seaborn's whitegrid/paper look, applied only inside the block (rcParams restored after)."""
    rc = {
        **sns.axes_style("whitegrid"),
        **sns.plotting_context("paper"),
        "svg.hashsalt": "fairsim",
        "axes.titlesize": 9,
        "legend.fontsize": 7,
    }
    with mpl.rc_context(rc):
        yield


def new_figure(ncols: int, nrows: int = 1, width: float = 3.2, height: float = 2.6):
    fig = Figure(figsize=(width * ncols, height * nrows), layout="constrained")
    axes = fig.subplots(nrows, ncols, squeeze=False)
    return fig, axes


def panel_letters(axes) -> None:
    """(a), (b), ... before each visible panel's title, in reading order."""
    visible = [ax for ax in axes if ax.get_visible()]
    for letter, ax in zip("abcdefghijklmnopqrstuvwxyz", visible):
        title = ax.get_title()
        ax.set_title(f"({letter}) {title}" if title else f"({letter})", loc="left")
        ax.set_title("")  # the centred title moved to the left-aligned one


def legend_outside(fig: Figure, axes, title: str | None = None, ncols: int | None = None) -> None:
    """One legend for the whole figure, right of the panels (never over data or the title): every
    distinct label of every panel, in first-seen order."""
    handles, labels = {}, []
    for ax in axes:
        for handle, text in zip(*ax.get_legend_handles_labels()):
            if text not in handles and not text.startswith("_"):
                handles[text] = handle
                labels.append(text)
    if labels:
        rows = max(4, int(fig.get_figheight() * 4.5))  # entries that fit in one column at 7 pt
        fig.legend(
            [handles[t] for t in labels],
            labels,
            loc="outside right center",
            title=title,
            ncols=ncols or -(-len(labels) // rows),
            frameon=False,
        )


def note(fig: Figure, text: str) -> None:
    """A small footnote under the panels (what the bars are, n)."""
    width = max(40, int(fig.get_figwidth() * 17))  # characters per line at 6.5 pt
    fig.supxlabel(textwrap.fill(text, width), fontsize=6.5, color="0.25")


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
        paths.append(save_data(data, out_dir, stem))
    return paths


def save_data(data: pd.DataFrame, out_dir: Path, stem: str) -> Path:
    """Write the numbers behind a figure or table as <out_dir>/data/<stem>.csv (fixed float format)."""
    csv = Path(out_dir) / "data" / f"{stem}.csv"
    csv.parent.mkdir(parents=True, exist_ok=True)
    data.to_csv(csv, index=False, float_format="%.6g")
    return csv
