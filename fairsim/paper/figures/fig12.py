"""Fig. 12: mean and max finish-time fairness rho of each baseline as a ratio to FFT on the
simulated traces 3-9 (baseline / FFT, geometric mean over seeds with 95% interval)."""

from __future__ import annotations

from pathlib import Path

from fairsim.figures.data import Inputs
from fairsim.figures.plots import ratio_figure
from fairsim.paper.values import paper_values

METRICS = {
    "rho_fluid_mean": "mean rho / FFT",
    "rho_fluid_max": "max rho / FFT",
}  # fluid T_id, REPORT.md's default reading


def draw(inputs: Inputs, out_dir: Path) -> list[Path]:
    return ratio_figure(
        inputs.sweep("simulated").cells,
        METRICS,
        out_dir,
        "fig12",
        "Fig. 12: fairness vs FFT, simulated traces 3-9 (ratio > 1: FFT fairer)",
        paper_values("simulated"),
        by_trace=True,
    )
