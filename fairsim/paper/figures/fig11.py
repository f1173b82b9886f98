"""Fig. 11: average JCT and makespan of each baseline as a ratio to FFT on the simulated traces
3-9 (baseline / FFT, geometric mean over seeds with 95% interval)."""

from __future__ import annotations

from pathlib import Path

from fairsim.figures.data import Inputs
from fairsim.figures.plots import ratio_figure
from fairsim.paper.values import paper_values

METRICS = {"avg_jct_s": "avg JCT / FFT", "makespan_s": "makespan / FFT"}


def draw(inputs: Inputs, out_dir: Path) -> list[Path]:
    return ratio_figure(
        inputs.sweep("simulated").cells,
        METRICS,
        out_dir,
        "fig11",
        "Fig. 11: baselines vs FFT, simulated traces 3-9 (ratio > 1: FFT better)",
        paper_values("simulated"),
        by_trace=True,
    )
