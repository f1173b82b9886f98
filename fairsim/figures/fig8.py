"""Fig. 8: finish-time fairness rho = T_shared / T_isolated on traces 1 and 2: per-job CDF (all
seeds pooled), and the mean and max rho of a run (mean over seeds with 95% CI). Lower is fairer;
rho < 1 means a job finished sooner than on its 1/N share of the cluster."""

from __future__ import annotations

from pathlib import Path

from fairsim.figures.data import Inputs
from fairsim.figures.plots import distribution_figure

BARS = {"rho_mean": "mean rho", "rho_max": "max rho", "rho_lt1_share": "share of jobs with rho < 1"}


def draw(inputs: Inputs, out_dir: Path) -> list[Path]:
    return distribution_figure(inputs.sweep("testbed"), "rho", "rho (log scale)", BARS, out_dir, "fig8",
                               "Fig. 8: finish-time fairness, traces 1-2", xscale="log")
