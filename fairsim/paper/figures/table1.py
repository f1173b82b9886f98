"""Table 1: two jobs of 16 epochs on a fast (8 epochs/min) and a slow (1 epoch/min) GPU.
Gavel's time-fraction split (its LP), the JCTs it implies, the same split realized by Gavel's
round mechanism in the engine, and the optimal order (FFT through the engine)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from fairsim.figures.tables import Check, save_table
from fairsim.paper.examples import (
    gavel_round_len_s,
    table1_fluid_jct_min,
    table1_gavel_fractions,
)
from fairsim.paper.figures.fig3 import results


def table() -> pd.DataFrame:
    """One row per allocation: each job's share of its run time on the fast GPU and its JCT."""
    example, runs = results()
    x = table1_gavel_fractions(example)
    fluid = table1_fluid_jct_min(x, example)
    fast = int(np.argmax(example.jobs.tput_packed[0]))  # the fast GPU's column
    fast_name = example.cluster.gpu_types[fast]
    gavel, fft = (runs[k].jobs["jct_s"].to_numpy() / 60 for k in ("gavel", "ours"))
    fast_share = lambda r: r.jobs[f"gpu_s_{fast_name}"].to_numpy() / r.jobs["run_s"].to_numpy()  # noqa: E731
    fft_round = runs["ours"].schedule["duration_s"].iloc[0]
    rows = [
        ("Gavel time fractions (LP, fluid)", "-", *x[:, fast], *fluid),
        (
            f"Gavel's mechanism in the engine ({gavel_round_len_s():g}-s rounds)",
            "-",
            *fast_share(runs["gavel"]),
            *gavel,
        ),
        (f"optimal order (FFT in the engine, {fft_round:g}-s rounds)", "-", *fast_share(runs["ours"]), *fft),
    ]
    t = pd.DataFrame(
        rows,
        columns=[
            "allocation",
            "paper total JCT (min)",
            "A: fast-GPU share",
            "B: fast-GPU share",
            "A: JCT (min)",
            "B: JCT (min)",
        ],
    )
    t["total JCT (min)"] = t["A: JCT (min)"] + t["B: JCT (min)"]
    t["paper total JCT (min)"] = ["7.11", "7.11", "5.75"]  # the paper's Table 1
    return t


def draw(inputs, out_dir: Path) -> list[Check]:
    t = table()
    save_table(
        t,
        out_dir,
        "table1",
        "Table 1: Gavel's time-fraction split vs the optimal order",
        [
            "Fast-GPU share: the share of the job's run time spent on the fast GPU.",
            "Instance: table1 in experiments/paper_examples.yaml (no migration cost, as in the paper's example).",
        ],
        floatfmt=".4g",
    )
    fluid, engine, opt = t["total JCT (min)"]
    return [
        Check(
            "Table 1",
            "total JCT, Gavel's split",
            "7.11 min",
            f"{fluid:.2f} min (LP), {engine:.2f} min (engine)",
            {"lp_total_jct_min": fluid, "engine_total_jct_min": engine},
        ),
        Check("Table 1", "total JCT, optimal order", "5.75 min", f"{opt:.2f} min (FFT)", {"total_jct_min": opt}),
        Check(
            "Table 1",
            "optimal below Gavel's split",
            "20% less",
            f"{1 - opt / fluid:.1%} less",
            {"reduction_pct": 100 * (1 - opt / fluid)},
        ),
    ]
