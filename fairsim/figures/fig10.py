"""Fig. 10: migration ablation on traces 1 and 2. FFT against its variant without the switching
penalty, overhead-agnostic SRTF, plain SRTF and Gavel (and ours_nofair / ours_constmu when a sweep
has them): migrations per run, share of GPU-type switches that go to a faster type, time lost to
overheads, and average JCT as a ratio to FFT (mean over seeds with 95% CI)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from fairsim.figures import style
from fairsim.figures.data import Inputs
from fairsim.figures.plots import ci_bars, ci_points, ratio_table, value_table, workload_colors
from fairsim.figures.stats import REFERENCE

POLICIES = ["ours", "ours_noswitch", "ours_nofair", "ours_constmu", "srtf_agnostic", "srtf", "gavel"]
# metric -> (axis label, scale)
VALUES = {"migrations": ("migrations per run", 1.0), "switches_to_faster_share": ("to a faster type (share)", 1.0),
          "overhead_s_total": ("overhead time (job-hours)", 1 / 3600)}


def draw(inputs: Inputs, out_dir: Path) -> list[Path]:
    cells = inputs.cells("testbed", "ablation")
    cells = cells[cells["policy"].isin(POLICIES)]
    policies = style.policy_order(cells["policy"])
    workloads = style.workload_order(cells["workload"])
    colors = workload_colors(workloads)
    trace_label = lambda w: style.WORKLOAD_LABELS.get(w, w)  # noqa: E731
    tables = [value_table(cells, [m], s) for m, (_, s) in VALUES.items()]
    ratios = ratio_table(cells, ["avg_jct_s"], [p for p in policies if p != REFERENCE])
    with style.paper_style():
        fig, axes = style.new_figure(2, nrows=2, width=3.6)
        panels = axes.ravel()
        for ax, table, (ylabel, _) in zip(panels, tables, VALUES.values()):
            ci_bars(ax, table, "policy", "workload", policies, workloads, colors, style.label, trace_label)
            ax.set_ylabel(ylabel)
        ax = panels[len(VALUES)]
        present = [p for p in policies if p in set(ratios["policy"])]
        ci_points(ax, ratios, "policy", "workload", present, workloads, colors, style.label, trace_label)
        ax.set_ylabel("avg JCT / FFT")
        axes[0][0].legend(loc="upper left")
        fig.suptitle("Fig. 10: migration ablation, traces 1-2", fontsize=9)
        return style.save(fig, out_dir, "fig10", pd.concat([*tables, ratios], ignore_index=True))
