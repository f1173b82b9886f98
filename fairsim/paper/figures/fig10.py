"""Fig. 10: migration ablation on traces 1 and 2. FFT against its variant without the switching
penalty, overhead-agnostic SRTF, plain SRTF and Gavel (and ours_nofair / ours_constmu when a sweep
has them): migrations per run, share of GPU-type switches that go to a faster type (the paper's
shares beside ours), job-hours lost to overheads (mean over seeds, 95% interval cut at 0), and
average JCT and the number of GPU-type switches as ratios to FFT over both traces (geometric mean
over trace-seed pairs, 95% interval; the paper: 1.46x fewer switches than Gavel)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from fairsim.figures import style
from fairsim.figures.data import Inputs
from fairsim.figures.plots import (
    HOUR,
    ci_bars,
    footnote,
    paper_marks,
    pooled_ratio_panel,
    shown_name,
    value_table,
    with_paper,
    workload_colors,
)
from fairsim.figures.stats import REFERENCE
from fairsim.paper.values import paper_values

POLICIES = ["ours", "ours_noswitch", "ours_nofair", "ours_constmu", "srtf_agnostic", "srtf", "gavel"]
# metric -> (panel title, axis label, scale)
VALUES = {
    "migrations": ("migrations per run", "migrations", 1.0),
    "switches_to_faster_share": ("type switches to a faster type", "share of type switches", 1.0),
    "overhead_s_total": ("time lost to overheads", "job-hours", HOUR),
}
# baseline / FFT over both traces: the paper's "1.46x fewer type switches than Gavel" is testbed-wide
RATIOS = {"avg_jct_s": "avg JCT", "type_switches": "GPU-type switches"}


def draw(inputs: Inputs, out_dir: Path) -> list[Path]:
    cells = inputs.cells("testbed", "ablation")
    cells = cells[cells["policy"].isin(POLICIES)]
    policies = style.policy_order(cells["policy"])
    workloads = style.workload_order(cells["workload"])
    colors = workload_colors(workloads)
    tables = [value_table(cells, [m], s) for m, (_, _, s) in VALUES.items()]
    paper_rows = []
    with style.paper_style():
        fig, axes = style.new_figure(2, nrows=2, width=3.6)
        panels = axes.ravel()
        for ax, table, (metric, (title, ylabel, scale)) in zip(panels, tables, VALUES.items()):
            positions = ci_bars(
                ax, table, "policy", "workload", policies, workloads, colors, style.label, style.workload_label
            )
            marks = paper_values("testbed", "value", metric)
            paper_rows += [
                {**r, "panel_metric": shown_name(metric, scale)}
                for r in paper_marks(ax, marks, positions, "policy", "workload", policies)
            ]
            ax.set_ylabel(ylabel)
            ax.set_title(title)
        ax = panels[len(VALUES)]
        ratios, drawn = pooled_ratio_panel(
            ax, cells, RATIOS, [p for p in policies if p != REFERENCE], paper_values("testbed")
        )
        paper_rows += drawn
        ax.set_title("ratio to FFT, traces 1-2 pooled")
        style.panel_letters(panels)
        style.legend_outside(fig, panels)
        footnote(fig, *tables, extra="Panel (d): n = trace-seed pairs per point (both traces pooled).")
        fig.suptitle("Fig. 10: migration ablation, traces 1-2", fontsize=9)
        return style.save(
            fig, out_dir, "fig10", with_paper(pd.concat([*tables, ratios], ignore_index=True), paper_rows)
        )
