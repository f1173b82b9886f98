"""Fig. 8: finish-time fairness rho = T_shared / T_isolated on traces 1 and 2: per-job CDF (all
seeds pooled, dashed line at rho = 1), mean and max rho of each baseline as a ratio to FFT over
both traces (geometric mean over trace x seed pairs), and per trace the mean rho, max rho (log
axes: one starved job can reach rho 100) and share of jobs with rho < 1. Lower rho is fairer;
rho < 1 means a job finished sooner than on its 1/N share of the cluster. The paper's values
are drawn beside ours."""

from __future__ import annotations

from pathlib import Path

from fairsim.figures import style
from fairsim.figures.data import Inputs
from fairsim.figures.plots import pooled_ratio_panel
from fairsim.figures.stats import REFERENCE
from fairsim.paper.values import paper_values

# rho under REPORT.md's default reading of T_id: the fluid max-min fair schedule of the trace, the
# same for every policy (fairsim/paper/figures/fairness_readings.py says why; the other readings are in
# REPORT.md's "three readings" table)
PANELS = {
    "rho_fluid_mean": ("mean rho (log scale)", "log"),
    "rho_fluid_max": ("max rho (log scale)", "log"),
    "rho_fluid_lt1_share": ("share of jobs with rho < 1", "bars"),
}
RATIOS = {"rho_fluid_mean": "mean rho", "rho_fluid_max": "max rho"}


def draw(inputs: Inputs, out_dir: Path) -> list[Path]:
    from fairsim.figures.plots import distribution_figure

    sweep = inputs.sweep("testbed")
    baselines = [p for p in style.policy_order(sweep.cells["policy"]) if p != REFERENCE]

    def ratios(ax):
        """Both traces pooled: the paper gives testbed-wide ratios."""
        table, drawn = pooled_ratio_panel(ax, sweep.cells, RATIOS, baselines, paper_values("testbed"))
        ax.set_title("rho ratio to FFT (> 1: FFT fairer)")
        return table, drawn

    return distribution_figure(
        sweep,
        "rho_fluid",
        "rho, fluid T_id (log scale)",
        PANELS,
        out_dir,
        "fig8",
        "Fig. 8: finish-time fairness (T_id: fluid max-min fair schedule), traces 1-2 (lower rho is fairer)",
        xscale="log",
        paper=paper_values("testbed"),
        cdf_reference=1.0,
        extra_panel=ratios,
    )
