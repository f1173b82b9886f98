"""The testbed calibration table: one anchor metric of a sweep, per (arrivals, load), pooled
over the sweep's traces and seeds, and the load whose mean lands nearest the anchor.

    python -m fairsim.paper.calibrate results/sweeps/calibrate_testbed [--anchor-h 25]

Reads the sweep's results.parquet (run ``python run.py -m +experiment=calibrate_testbed``
first), prints a Markdown table and writes it as <sweep>/calibration.csv. The rule is fixed in
advance (docs/workload.md): the anchor is FFT's longest wait on traces 1-2, about 25 h in the
paper (Fig. 9); the default load is the swept load whose pooled mean is nearest to it.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pandas as pd

from fairsim.errors import InputError, require
from fairsim.experiment.run_folder import RESULTS
from fairsim.figures.stats import nonneg_ci
from fairsim.figures.tables import markdown

HOUR = 3600.0
CONTEXT = {
    "avg_jct_s": "avg JCT h",
    "makespan_s": "makespan h",
    "rho_lt1_share": "share rho<1 (dynamic N)",
    "gpu_utilization": "GPU util",
    "arrival_span_h": "span h",
}


def calibration_table(cells: pd.DataFrame, metric: str = "starvation_max_s", policy: str = "ours") -> pd.DataFrame:
    """Per (arrivals, load): the metric in hours, mean and 95% interval over traces x seeds,
    per-trace means, and context columns (means)."""
    cells = cells[cells["policy"] == policy]
    require(len(cells) > 0, "calibration", "policy", f"no cells of policy {policy!r} in the sweep")
    rows = []
    for (arrivals, load), part in cells.groupby(["arrivals", "load"], sort=True):
        ci = nonneg_ci(part[metric].astype(float) / HOUR)  # a wait cannot be negative: the interval stops at 0
        row = {"arrivals": arrivals, "load": float(load), "mean_h": ci.mean, "lo_h": ci.lo, "hi_h": ci.hi, "n": ci.n}
        for workload, w in part.groupby("workload", sort=True):
            row[f"{workload}_h"] = float(w[metric].astype(float).mean() / HOUR)
        for col, name in CONTEXT.items():
            if col in part:
                scale = 1 / HOUR if col.endswith("_s") else 1.0
                row[name] = float(part[col].astype(float).mean() * scale)
        rows.append(row)
    return pd.DataFrame(rows)


def nearest(table: pd.DataFrame, anchor_h: float) -> pd.DataFrame:
    """Per arrival model, the row whose mean is nearest the anchor (ties: the lower load)."""
    picks = []
    for _, part in table.groupby("arrivals", sort=True):
        gap = (part["mean_h"] - anchor_h).abs()
        picks.append(part.loc[gap.sort_index().idxmin()] if gap.notna().any() else part.iloc[0])
    return pd.DataFrame(picks)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("sweep", type=Path, help="the calibration sweep's folder (holds results.parquet)")
    ap.add_argument(
        "--anchor-h", type=float, default=25.0, help="the anchor value in hours (default 25: PAPER.md Fig. 9)"
    )
    ap.add_argument("--metric", default="starvation_max_s", help="a per-run summary metric in seconds")
    args = ap.parse_args(argv)
    try:
        path = args.sweep / RESULTS
        require(
            path.is_file(), str(path), "file", "not found: run python run.py -m +experiment=calibrate_testbed first"
        )
        cells = pd.read_parquet(path)
        require(args.metric in cells, str(path), "metric", f"no column {args.metric!r}")
        table = calibration_table(cells, args.metric)
    except InputError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    table.to_csv(args.sweep / "calibration.csv", index=False, float_format="%.6g")
    print(markdown(table, ".2f"))
    print(f"\nnearest to {args.anchor_h:g} h, per arrival model:")
    print(markdown(nearest(table, args.anchor_h)[["arrivals", "load", "mean_h", "lo_h", "hi_h", "n"]], ".2f"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
