"""Does FFT's fairness machinery matter? FFT beside its ablations on traces 1-2 at the default
load (testbed + ablation sweeps): without rho (``ours_nofair``), with a constant learning rate
mu (``ours_constmu``), without the switching penalty s (``ours_noswitch``). The paper has no such
ablation (PAPER.md sec. 6). REPORT.md gets one table; data/fairness_ablation.csv the numbers.

A part "changes the outcome" of a metric when the paired difference (variant - FFT, same trace
and seed) has a 95% t-interval that excludes 0.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from fairsim.figures import style
from fairsim.figures.data import Inputs
from fairsim.figures.stats import REFERENCE, hours_name, mean_ci, nonneg_ci, paired_differences
from fairsim.paper.report_table import ReportTable

VARIANTS = {"ours_nofair": "no rho", "ours_constmu": "constant mu", "ours_noswitch": "no switching penalty"}
METRICS = {  # column: (label, scale, digits)
    "avg_jct_s": ("avg JCT (h)", 1 / 3600, 2),
    "rho_fluid_mean": ("mean rho, fluid", 1.0, 2),
    "rho_mean": ("mean rho, dynamic", 1.0, 2),
    "rho_static_mean": ("mean rho, static", 1.0, 2),
    "rho_fluid_max": ("max rho, fluid", 1.0, 2),
    "starvation_max_s": ("max starvation (h)", 1 / 3600, 1),
}


def ablation_table(cells: pd.DataFrame) -> pd.DataFrame:
    """Per (policy, metric): mean and interval over traces x seeds, and for a variant the paired
    difference to FFT with its interval."""
    rows = []
    for policy in [REFERENCE, *VARIANTS]:
        part = cells[cells["policy"] == policy]
        if part.empty:
            continue
        for metric, (_, scale, _) in METRICS.items():
            if metric not in part:
                continue
            ci = nonneg_ci(part[metric].astype(float) * scale)  # every metric here is >= 0
            row = {"policy": policy, "metric": metric, "mean": ci.mean, "lo": ci.lo, "hi": ci.hi, "n": ci.n}
            if policy != REFERENCE:
                diff = mean_ci(-paired_differences(cells, metric, policy) * scale)  # variant - FFT
                row.update({"diff": diff.mean, "diff_lo": diff.lo, "diff_hi": diff.hi, "changes": diff.excludes(0.0)})
            rows.append(row)
    return pd.DataFrame(rows)


def _cells(inputs: Inputs) -> pd.DataFrame:
    return inputs.cells("testbed", "ablation")


def draw(inputs: Inputs, out_dir: Path) -> list[Path]:
    table = ablation_table(_cells(inputs))
    return [style.save_data(table.assign(metric=table["metric"].map(unit_name)), out_dir, "fairness_ablation")]


def unit_name(metric: str) -> str:
    """The metric's name in the unit the section shows it in (seconds as hours end in _h)."""
    return hours_name(metric) if METRICS[metric][1] != 1.0 else metric


def report_section(inputs: Inputs, specs: Sequence[Mapping]) -> list:
    table = ablation_table(_cells(inputs))
    if table.empty or not set(VARIANTS) & set(table["policy"]):
        return []
    metrics = [m for m in METRICS if m in set(table["metric"])]
    lines = [
        "## Does FFT's fairness machinery matter? (ablations at the default load)",
        "",
        "Traces 1-2, mean over traces x seeds with a 95% t-interval; for each variant the paired difference to "
        "FFT (variant - FFT, same trace and seed) follows in parentheses, marked * where its interval excludes 0.",
        "",
    ]
    changed: dict[str, list[str]] = {}
    rows, frame = [], []
    for policy in [REFERENCE, *VARIANTS]:
        mine = table[table["policy"] == policy].set_index("metric")
        if mine.empty:
            continue
        cells = []
        values = {"policy": policy}
        for m in metrics:
            values |= {
                f"{unit_name(m)}_{k}": mine.at[m, k]
                for k in ("mean", "lo", "hi", "n", "diff", "diff_lo", "diff_hi", "changes")
                if k in mine
            }
            digits = METRICS[m][2]
            r = mine.loc[m]
            text = f"{r['mean']:.{digits}f}" + (
                f" [{r['lo']:.{digits}f}, {r['hi']:.{digits}f}]" if np.isfinite(r["hi"]) else ""
            )
            if policy != REFERENCE and np.isfinite(r["diff"]):
                text += f" ({r['diff']:+.{digits}f}{'*' if r['changes'] else ''})"
                if r["changes"]:
                    changed.setdefault(policy, []).append(METRICS[m][0])
            cells.append(text)
        name = style.label(policy) + (f" ({VARIANTS[policy]})" if policy in VARIANTS else "")
        rows.append([name, *cells])
        frame.append(values)
    header = ["policy", *(METRICS[m][0] for m in metrics)]
    lines += [ReportTable("fairness_ablation_table", header, rows, pd.DataFrame(frame)), ""]
    for policy, label in VARIANTS.items():
        if policy in set(table["policy"]):
            what = ", ".join(changed.get(policy, [])) or "none of these metrics"
            lines.append(f"- {label} ({style.label(policy)}) changes: {what}.")
    lines.append("")
    return lines
