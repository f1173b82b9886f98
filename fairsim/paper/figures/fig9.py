"""Fig. 9: starvation time (submission to first run) on traces 1 and 2: per-job CDF in hours (all
seeds pooled) and per trace the longest and the mean starvation of a run (mean over seeds, 95%
interval cut at 0; max on a log axis beside the paper's testbed hours)."""

from __future__ import annotations

from pathlib import Path

from fairsim.figures.data import Inputs
from fairsim.figures.plots import HOUR, distribution_figure
from fairsim.paper.values import paper_values

PANELS = {
    "starvation_max_s": ("max starvation (h, log scale)", "log"),
    "starvation_mean_s": ("mean starvation (h)", "bars"),
}


def draw(inputs: Inputs, out_dir: Path) -> list[Path]:
    return distribution_figure(
        inputs.sweep("testbed"),
        "starvation_s",
        "starvation (h, log beyond 0.1)",
        PANELS,
        out_dir,
        "fig9",
        "Fig. 9: starvation, traces 1-2 (lower is better; paper: testbed hours)",
        scale=HOUR,
        xscale="symlog",
        paper=paper_values("testbed"),
    )
