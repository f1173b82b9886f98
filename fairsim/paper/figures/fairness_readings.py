"""Finish-time fairness under each reading of the paper's T_id, on the testbed sweep (traces 1-2).

rho = JCT / T_id; the paper does not say which N its "1/N of the available resources" uses
(PAPER.md sec. 6), so every run carries three readings (fairsim/metrics.py):
    fluid    T_id = completion in a fluid max-min fair schedule of the same trace (policy-independent)
    dynamic  1/N share, N = time-average of active jobs over the job's life in this run
    static   1/N share, N = active jobs at the job's arrival in this run
REPORT.md's headline rows use ``DEFAULT``; this module adds the table of all three and writes
their numbers to data/fairness_readings.csv.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from fairsim.figures import style
from fairsim.figures.data import Inputs
from fairsim.figures.stats import nonneg_ci
from fairsim.paper.report_table import ReportTable

READINGS = {"fluid": "rho_fluid", "dynamic": "rho", "static": "rho_static"}
DEFAULT = "fluid"
WHY_DEFAULT = (
    "the fluid reading is the default because its T_id is the same for every policy (a fluid max-min fair "
    "schedule of the trace itself, N = the jobs that schedule still holds), so a ratio of rho between two "
    "policies compares their JCTs job by job; the dynamic and static readings take N from the run being "
    "judged, so a policy that builds a backlog raises its own N and looks fairer for it. It is also the "
    'reading closest to the policy\'s own reference, the completion time "under the max-min fair scheduler" '
    "(PAPER.md sec. 6)."
)
PAPER_SHARE = {"ours": 70.0, "gavel": 38.0, "tiresias": 49.0}  # Fig. 8(a), share of jobs with rho < 1 (%)


def readings_table(cells: pd.DataFrame) -> pd.DataFrame:
    """Per (policy, reading): mean rho, share of jobs with rho < 1 (%) and max rho, mean and 95%
    interval over traces and seeds, cut to the quantity's range (stats.nonneg_ci: >= 0, shares <= 100%)."""
    rows = []
    for policy in style.policy_order(cells["policy"]):
        part = cells[cells["policy"] == policy]
        for reading, prefix in READINGS.items():
            if f"{prefix}_mean" not in part:
                continue
            row = {"policy": policy, "reading": reading}
            for stat, scale, upper in (("mean", 1.0, None), ("lt1_share", 100.0, 100.0), ("max", 1.0, None)):
                ci = nonneg_ci(part[f"{prefix}_{stat}"].astype(float) * scale, upper)
                row.update({stat: ci.mean, f"{stat}_lo": ci.lo, f"{stat}_hi": ci.hi, "n": ci.n})
            rows.append(row)
    return pd.DataFrame(rows)


def draw(inputs: Inputs, out_dir: Path) -> list[Path]:
    return [style.save_data(readings_table(inputs.sweep("testbed").cells), out_dir, "fairness_readings")]


def _ci(row: pd.Series, stat: str, digits: int) -> str:
    if not np.isfinite(row[stat]):
        return "n/a"
    text = f"{row[stat]:.{digits}f}"
    return text + (
        f" [{row[f'{stat}_lo']:.{digits}f}, {row[f'{stat}_hi']:.{digits}f}]" if np.isfinite(row[f"{stat}_hi"]) else ""
    )


def section_table(table: pd.DataFrame, readings: list[str]) -> ReportTable:
    """The section's table: per policy, each reading's share of rho < 1 (%) and mean rho, with
    the paper's share beside the policy (data/fairness_readings_table.csv)."""
    rows, frame = [], []
    for policy in style.policy_order(table["policy"]):
        mine = table[table["policy"] == policy].set_index("reading")
        shares = [_ci(mine.loc[r], "lt1_share", 0) if r in mine.index else "n/a" for r in readings]
        means = [_ci(mine.loc[r], "mean", 2) if r in mine.index else "n/a" for r in readings]
        paper = f" (paper {PAPER_SHARE[policy]:.0f}%)" if policy in PAPER_SHARE else ""
        rows.append([f"{style.label(policy)}{paper}", *shares, *means])
        values = {"policy": policy, "paper_lt1_share_pct": PAPER_SHARE.get(policy, float("nan"))}
        for r in readings:
            if r in mine.index:
                for stat, name in (("lt1_share", "lt1_share_pct"), ("mean", "rho_mean")):
                    values |= {f"{name}_{r}": mine.at[r, stat], f"{name}_{r}_lo": mine.at[r, f"{stat}_lo"]}
                    values |= {f"{name}_{r}_hi": mine.at[r, f"{stat}_hi"]}
        frame.append(values)
    header = ["policy", *(f"share rho<1 (%), {r}" for r in readings), *(f"mean rho, {r}" for r in readings)]
    return ReportTable("fairness_readings_table", header, rows, pd.DataFrame(frame))


def report_section(inputs: Inputs, specs: Sequence[Mapping]) -> list:
    table = readings_table(inputs.sweep("testbed").cells)
    if table.empty:
        return []
    readings = [r for r in READINGS if r in set(table["reading"])]
    lines = [
        "## Finish-time fairness: three readings of T_id",
        "",
        f"Default reading of the headline rows: **{DEFAULT}**; {WHY_DEFAULT} Testbed sweep, traces 1-2 pooled, "
        "mean over traces x seeds with a 95% t-interval cut to the quantity's range (>= 0; shares <= 100%). Paper (Fig. 8a): share of jobs "
        "with rho < 1 FFT 70%, Gavel 38%, Tiresias 49%.",
        "",
        section_table(table, readings),
        "",
    ]
    return lines
