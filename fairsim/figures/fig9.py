"""Fig. 9: starvation time (submission to first run) on traces 1 and 2: per-job CDF in hours (all
seeds pooled) and the longest starvation of a run (mean over seeds with 95% CI)."""

from __future__ import annotations

from pathlib import Path

from fairsim.figures.data import Inputs
from fairsim.figures.plots import distribution_figure

BARS = {"starvation_max_s": "max starvation (h)", "starvation_mean_s": "mean starvation (h)"}


def draw(inputs: Inputs, out_dir: Path) -> list[Path]:
    return distribution_figure(inputs.sweep("testbed"), "starvation_s", "starvation (h, log beyond 0.1)", BARS, out_dir, "fig9",
                               "Fig. 9: starvation, traces 1-2", scale=1 / 3600, xscale="symlog")
