"""Which testbed claims survive a cluster that changes: every testbed policy on traces 1-2 under
host failures at a measured rate, at ten times that rate, and with a spot pool that lends and
reclaims a host of each type (sweep ``paper_capacity``, presets conf/capacity/), against the
same cells without outages (the ``paper_testbed`` sweep).

capacity.{pdf,png}: avg JCT and mean rho (fluid) of each baseline as a ratio to FFT, pooled over
traces x seeds, per reading (> 1: FFT better). data/capacity.csv: the plotted ratios;
data/capacity_values.csv and capacity_verdicts.csv: the section's two tables.
REPORT.md: per reading, what the outages cost each policy (availability, evictions, work
redone, avg JCT, mean rho), then every testbed headline claim's verdict per reading and which
verdicts the outages change.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from fairsim.figures import style
from fairsim.figures.data import Inputs, MissingInput
from fairsim.figures.plots import ci_points, log_axis, ratio_table
from fairsim.figures.stats import REFERENCE, hours_name, nonneg_ci, with_ratio_names
from fairsim.paper.readings import (
    DEFAULT,
    MARK,
    on_settings,
    reading_verdicts,
    settings,
    survivors,
    verdict_counts,
    verdict_report_table,
)
from fairsim.paper.report_table import ReportTable, interval_text

ROLE = "capacity"
COLUMN = "capacity.name"  # the cells' reading: the capacity preset they ran under
NONE = "none"  # the testbed sweep's cells: no outage
READINGS = {  # preset -> how the text names it
    NONE: "no outages",
    "failures": "failures",
    "failures_10x": "failures x10",
    "spot": "spot pool",
}
RATIOS = {"avg_jct_s": "avg JCT / FFT", "rho_fluid_mean": "mean rho / FFT"}
METRICS = {  # column: (label, scale, digits)
    "availability": ("availability", 1.0, 3),
    "evictions": ("evictions", 1.0, 1),
    "work_lost_gpu_h": ("work redone (GPU-h)", 1.0, 1),
    "avg_jct_s": ("avg JCT (h)", 1 / 3600, 2),
    "rho_fluid_mean": ("mean rho, fluid", 1.0, 2),
}


def readings(inputs: Inputs) -> dict[str, pd.DataFrame]:
    """Each capacity preset's cells, in READINGS' order, with the no-outage cells of the testbed
    sweep on the settings (trace, seed) the presets ran."""
    cells = inputs.sweep(ROLE).cells
    if COLUMN not in cells:  # a sweep of one preset: its name is in every cell's config, not a column
        raise MissingInput(f"the {ROLE} sweep's cells carry no {COLUMN} column (run make reproduce-capacity)")
    found = {name: cells[cells[COLUMN] == name] for name in READINGS if name != NONE and (cells[COLUMN] == name).any()}
    base = inputs.sweep("testbed").cells
    covered = settings(cells)
    return {NONE: on_settings(base[base["policy"].isin(set(cells["policy"]))], covered), **found}


def ratios(found: Mapping[str, pd.DataFrame]) -> pd.DataFrame:
    parts = []
    for name, cells in found.items():
        baselines = [p for p in style.policy_order(cells["policy"]) if p != REFERENCE]
        parts.append(ratio_table(cells, list(RATIOS), baselines, group=None).assign(reading=name))
    return pd.concat(parts, ignore_index=True)


def draw(inputs: Inputs, out_dir: Path) -> list[Path]:
    table = ratios(readings(inputs))
    names = list(dict.fromkeys(table["reading"]))
    palette = dict(zip(names, ["black", "tab:red", "tab:purple", "tab:blue"]))
    with style.paper_style():
        fig, axes = style.new_figure(len(RATIOS), width=4.2)
        for ax, (metric, ylabel) in zip(axes[0], RATIOS.items()):
            part = table[table["metric"] == metric]
            policies = style.policy_order(part["policy"])
            _, extent = ci_points(
                ax,
                part,
                "policy",
                "reading",
                policies,
                names,
                lambda r: palette.get(r, "gray"),
                style.label,
                lambda r: READINGS.get(r, r),
            )
            log_axis(ax, extent)
            ax.set_ylabel(ylabel)
            ax.set_title(ylabel.replace(" / FFT", ""))
        style.panel_letters(axes[0])
        style.legend_outside(fig, axes[0], title="capacity")
        fig.suptitle("Baselines / FFT under outages, traces 1-2 pooled (> 1: FFT better)", fontsize=9)
        return style.save(fig, out_dir, "capacity", with_ratio_names(table))


def value_table(found: Mapping[str, pd.DataFrame]) -> ReportTable:
    """Per reading and policy, what the outages cost (data/capacity_values.csv); without outages
    availability is 1 and nothing is evicted or redone."""
    rows, frame = [], []
    for name, cells in found.items():
        for policy in style.policy_order(cells["policy"]):
            part = cells[cells["policy"] == policy]
            shown, values = [], {"capacity": name, "policy": policy, "n": len(part)}
            for metric, (_, scale, d) in METRICS.items():
                column = hours_name(metric) if scale != 1.0 else metric
                if metric not in part or part[metric].isna().all():
                    if metric == "availability" or name == NONE:
                        values[f"{column}_mean"] = 1 if metric == "availability" else 0
                        shown.append(str(values[f"{column}_mean"]))
                    else:
                        shown.append("-")
                    continue
                ci = nonneg_ci(part[metric].astype(float) * scale)
                shown.append(interval_text(ci.mean, ci.lo, ci.hi, d))
                values |= {f"{column}_mean": ci.mean, f"{column}_lo": ci.lo, f"{column}_hi": ci.hi}
            rows.append([READINGS.get(name, name), style.label(policy), str(len(part)), *shown])
            frame.append(values)
    header = ["capacity", "policy", "n", *(label for label, _, _ in METRICS.values())]
    return ReportTable("capacity_values", header, rows, pd.DataFrame(frame))


def report_section(inputs: Inputs, specs: Sequence[Mapping]) -> list:
    try:
        found = readings(inputs)
    except MissingInput:
        return []
    shown = {name: cells for name, cells in found.items() if name != NONE}
    judged = reading_verdicts(specs, "testbed", found[NONE], shown)  # columns: DEFAULT, then the presets
    _, flips = survivors(judged)
    verdict = judged.rename(columns={DEFAULT: READINGS[NONE], **{n: READINGS.get(n, n) for n in shown}})
    seeds = ", ".join(map(str, sorted(np.unique(np.concatenate([c["seed"].unique() for c in shown.values()])))))
    names = list(verdict.columns)
    lines = [
        "## Which claims survive a cluster that changes",
        "",
        "Every testbed policy on traces 1-2 (seeds "
        + seeds
        + ") with hosts that leave and come back (docs/capacity.md): *failures*, a host "
        "failure rate per GPU as measured on Meta's RSC-1 cluster (6.5 per 1000 node-days of 8 A100s, "
        "Kokolis et al., HPCA'25) with repairs of a day on average (an assumption: no study of AI clusters "
        "publishes repair times); *failures x10*, ten times that rate; *spot pool*, the last host of each type "
        "lent for 12 h and reclaimed for 4 h on average (illustrative spans: no public reclaim trace may be "
        "shipped). Jobs checkpoint every hour; an evicted job loses its progress since, and pays a restart "
        "when it runs again. *no outages*: the testbed sweep's cells on the same traces and seeds. Mean over "
        "traces x seeds with a 95% t-interval cut at 0; n = cells.",
        "",
        value_table(found),
        "",
        "Every testbed headline claim under each reading, judged as the headline table judges it "
        "(Y = yes, w = weak, N = no, - = not measured):",
        "",
        verdict_report_table("capacity_verdicts", verdict, names),
        "",
        "Verdicts of these "
        + str(len(verdict))
        + " testbed numbers: "
        + "; ".join(f"{n} {verdict_counts(verdict[n])}" for n in names)
        + ". "
        + (
            f"The outages change {len(flips)}: "
            + "; ".join(
                f"{claim} ("
                + ", ".join(
                    f"{READINGS.get(r, r)}: {MARK.get(judged.at[claim, DEFAULT], '?')} -> {MARK.get(v, '?')}"
                    for r, v in moved.items()
                )
                + ")"
                for claim, moved in flips.items()
            )
            + "."
            if flips
            else "The outages change none of them."
        ),
        "",
    ]
    return lines
