"""Fig. 7: average JCT and makespan of each baseline as a ratio to FFT on traces 1 and 2
(baseline / FFT, geometric mean over seeds with 95% interval; above the dashed line = FFT is better)."""

from __future__ import annotations

from pathlib import Path

from fairsim.figures.data import Inputs
from fairsim.figures.plots import ratio_figure
from fairsim.paper.values import paper_values

METRICS = {"avg_jct_s": "avg JCT / FFT", "makespan_s": "makespan / FFT"}


def draw(inputs: Inputs, out_dir: Path) -> list[Path]:
    return ratio_figure(
        inputs.sweep("testbed").cells,
        METRICS,
        out_dir,
        "fig7",
        "Fig. 7: baselines vs FFT, traces 1-2 (ratio > 1: FFT better)",
        paper_values("testbed"),
    )
