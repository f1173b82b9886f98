"""Fig. 10: migration ablation on traces 1 and 2. FFT against its variant without the switching
penalty, overhead-agnostic SRTF, plain SRTF and Gavel (and ours_nofair / ours_constmu when a sweep
has them): migrations per run, share of GPU-type switches that go to a faster type (the paper's
shares beside ours), job-hours lost to overheads (mean over seeds, 95% interval cut at 0), and
average JCT as a ratio to FFT (geometric mean over seeds, 95% interval)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from fairsim.figures import style
from fairsim.figures.data import Inputs
from fairsim.figures.paper import paper_values
from fairsim.figures.plots import (HOUR, ci_bars, footnote, paper_marks, ratio_panel, ratio_table, shown_name,
                                   value_table, with_paper, workload_colors)
from fairsim.figures.stats import REFERENCE

POLICIES = ["ours", "ours_noswitch", "ours_nofair", "ours_constmu", "srtf_agnostic", "srtf", "gavel"]
# metric -> (panel title, axis label, scale)
VALUES = {"migrations": ("migrations per run", "migrations", 1.0),
          "switches_to_faster_share": ("type switches to a faster type", "share of type switches", 1.0),
          "overhead_s_total": ("time lost to overheads", "job-hours", HOUR)}


def draw(inputs: Inputs, out_dir: Path) -> list[Path]:
    cells = inputs.cells("testbed", "ablation")
    cells = cells[cells["policy"].isin(POLICIES)]
    policies = style.policy_order(cells["policy"])
    workloads = style.workload_order(cells["workload"])
    colors = workload_colors(workloads)
    tables = [value_table(cells, [m], s) for m, (_, _, s) in VALUES.items()]
    ratios = ratio_table(cells, ["avg_jct_s"], [p for p in policies if p != REFERENCE])
    paper_rows = []
    with style.paper_style():
        fig, axes = style.new_figure(2, nrows=2, width=3.6)
        panels = axes.ravel()
        for ax, table, (metric, (title, ylabel, scale)) in zip(panels, tables, VALUES.items()):
            positions = ci_bars(ax, table, "policy", "workload", policies, workloads, colors, style.label,
                                style.workload_label)
            marks = paper_values("testbed", "value", metric)
            paper_rows += [{**r, "panel_metric": shown_name(metric, scale)}
                           for r in paper_marks(ax, marks, positions, "policy", "workload", policies)]
            ax.set_ylabel(ylabel)
            ax.set_title(title)
        ax = panels[len(VALUES)]
        present = [p for p in policies if p in set(ratios["policy"])]
        paper_rows += ratio_panel(ax, ratios, present, workloads, False, paper_values("testbed", "ratio", "avg_jct_s"))
        ax.set_ylabel("avg JCT / FFT")
        ax.set_title("avg JCT / FFT (> 1: FFT better)")
        style.panel_letters(panels)
        style.legend_outside(fig, panels)
        footnote(fig, *tables, ratios)
        fig.suptitle("Fig. 10: migration ablation, traces 1-2", fontsize=9)
        return style.save(fig, out_dir, "fig10", with_paper(pd.concat([*tables, ratios], ignore_index=True), paper_rows))
