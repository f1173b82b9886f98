"""FFT against the field's newer baselines: Sia (SOSP'23) and Pollux (OSDI'21) on the testbed
traces, beside FFT and the paper's baselines (the ``paper_testbed`` cells).

Two readings of the newcomers: ``rigid`` (sweep ``paper_field``: every job a rigid gang, so Sia
and Pollux choose only a GPU type and hosts) and ``elastic`` (sweep ``paper_field_elastic``: the
same traces with elastic jobs, sized by the newcomers through their goodput; FFT and the paper's
baselines run every job at its requested count, which is the rigid run, so their cells are the
testbed sweep's). The newcomers decide every 60 s as in their authors' simulator; the others keep
FFT's 5-minute rounds. The sweeps' default grid has Sia only (Pollux's search costs seconds a
decision; ``policy=sia,pollux`` adds it); the section shows whichever newcomers ran.

field.{pdf,png}: avg JCT and mean rho (fluid) of each policy as a ratio to FFT (> 1: FFT better).
data/field.csv: the plotted ratios. REPORT.md: the per-policy table (data/field_values.csv) and
one row per distinct comparison of FFT with each newcomer's reading: avg JCT, makespan, mean and
max rho, max starvation and type switches, paired per trace and seed (data/field_comparisons.csv).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import pandas as pd

from fairsim.figures.data import Inputs, MissingInput
from fairsim.figures.plots import ratio_figure
from fairsim.figures.stats import (
    REFERENCE,
    hours_name,
    mean_ci,
    nonneg_ci,
    paired_differences,
    paired_ratios,
    ratio_ci,
    ratio_name,
)
from fairsim.paper.headlines import fmt, verdict
from fairsim.paper.report_table import ReportTable, interval_text

READINGS = {"rigid": "field", "elastic": "field_elastic"}  # reading -> sweep role
NEWCOMERS = {"sia": "Sia", "pollux": "Pollux"}  # policy -> name in the text
LEFT_OUT = {  # why a newcomer's cells may be missing: the default grid leaves it out
    "pollux": " (the preset leaves Pollux out for its cost, about 1.6 s of CPU per decision at 100 jobs; the sweeps "
    "`paper_field` and `paper_field_elastic` take `policy=sia,pollux` to add it)",
}
BASELINES = ("gavel", "themis", "tiresias")
METRICS = {  # cell column: (label, scale, digits, the column in data/ with its unit)
    "avg_jct_s": ("avg JCT (h)", 1 / 3600, 2, "avg_jct_h"),
    "makespan_s": ("makespan (h)", 1 / 3600, 1, "makespan_h"),
    "rho_fluid_mean": ("mean rho, fluid", 1.0, 2, "rho_fluid_mean"),
    "rho_fluid_max": ("max rho, fluid", 1.0, 1, "rho_fluid_max"),
    "starvation_max_s": ("max starvation (h)", 1 / 3600, 1, "starvation_max_h"),
}
RATIOS = {"avg_jct_s": "avg JCT / FFT", "rho_fluid_mean": "mean rho / FFT"}
# one row per distinct comparison of FFT with a newcomer: (metric, what the row says, how it is
# paired: "ratio" newcomer / FFT per (trace, seed), > 1 = FFT better; "difference" newcomer -
# FFT in hours, > 0 = FFT better)
COMPARISONS = (
    ("avg_jct_s", "avg JCT, newcomer / FFT", "ratio"),
    ("makespan_s", "makespan, newcomer / FFT", "ratio"),
    ("rho_fluid_mean", "mean rho (fluid), newcomer / FFT", "ratio"),
    ("rho_fluid_max", "max rho (fluid), newcomer / FFT", "ratio"),
    ("starvation_max_s", "max starvation, newcomer - FFT (h)", "difference"),
    ("type_switches", "GPU-type switches, newcomer / FFT", "ratio"),
)


def newcomer_cells(inputs: Inputs) -> pd.DataFrame:
    """The newcomers' cells of every reading that ran, their policy named ``<policy> (<reading>)``."""
    parts = []
    for reading, role in READINGS.items():
        if role in inputs.sweeps:
            cells = inputs.sweep(role).cells
            parts.append(cells.assign(policy=cells["policy"] + f" ({reading})"))
    if not parts:
        raise MissingInput("neither the paper_field nor the paper_field_elastic sweep has run (make reproduce-field)")
    return pd.concat(parts, ignore_index=True)


def all_cells(inputs: Inputs) -> pd.DataFrame:
    """FFT and the paper's baselines from the testbed sweep, with the newcomers' cells, on the
    settings (trace, seed) the newcomers ran."""
    mine = newcomer_cells(inputs)
    base = inputs.sweep("testbed").cells
    base = base[base["policy"].isin((REFERENCE, *BASELINES))]
    keys = ["workload", "cluster", "seed"]
    covered = pd.MultiIndex.from_frame(mine[keys].drop_duplicates())
    base = base[pd.MultiIndex.from_frame(base[keys]).isin(covered)]
    return pd.concat([base, mine], ignore_index=True)


def policies_shown(cells: pd.DataFrame) -> list[str]:
    present = set(cells["policy"])
    named = [REFERENCE, *BASELINES] + [f"{p} ({r})" for p in NEWCOMERS for r in READINGS]
    return [p for p in named if p in present]


def value_table(cells: pd.DataFrame) -> ReportTable:
    """Each policy's own values, mean over traces x seeds (data/field_values.csv)."""
    rows, frame = [], []
    for policy in policies_shown(cells):
        part = cells[cells["policy"] == policy]
        shown, values = [], {"policy": policy, "n": len(part)}
        for metric, (_, scale, d, column) in METRICS.items():
            ci = nonneg_ci(part[metric].astype(float) * scale)
            shown.append(interval_text(ci.mean, ci.lo, ci.hi, d))
            values |= {f"{column}_mean": ci.mean, f"{column}_lo": ci.lo, f"{column}_hi": ci.hi}
        rows.append([policy, str(len(part)), *shown])
        frame.append(values)
    header = ["policy", "n", *(label for label, _, _, _ in METRICS.values())]
    return ReportTable("field_values", header, rows, pd.DataFrame(frame))


def newcomers_ran(cells: pd.DataFrame) -> list[str]:
    """The newcomers' (policy, reading) names that have cells, in NEWCOMERS' and READINGS' order."""
    names = set(cells["policy"])
    return [f"{p} ({r})" for p in NEWCOMERS for r in READINGS if f"{p} ({r})" in names]


def comparison_table(cells: pd.DataFrame) -> ReportTable:
    """One row per distinct comparison: FFT against one newcomer's reading on one metric, paired
    per (trace, seed), with its verdict for FFT (data/field_comparisons.csv)."""
    rows, frame = [], []
    for name in newcomers_ran(cells):
        for metric, what, pairing in COMPARISONS:
            if pairing == "ratio":
                ci = ratio_ci(paired_ratios(cells, metric, name))
                text, column, threshold = fmt(ci), ratio_name(metric), 1.0
            else:
                ci = mean_ci(-paired_differences(cells, metric, name) / 3600)
                text, column, threshold = (
                    interval_text(ci.mean, ci.lo, ci.hi, 1),
                    hours_name(metric) + "_difference",
                    0.0,
                )
            judged = verdict(ci, threshold, expect_above=True)
            rows.append([name, what, text, str(ci.n), judged])
            frame.append(
                {
                    "newcomer": name,
                    "comparison": what,
                    "metric": column,
                    "mean": ci.mean,
                    "lo": ci.lo,
                    "hi": ci.hi,
                    "n": ci.n,
                    "fft_better_verdict": judged,
                }
            )
    header = ["newcomer", "comparison", "value [95% interval]", "n", "FFT better?"]
    return ReportTable("field_comparisons", header, rows, pd.DataFrame(frame))


def ran(cells: pd.DataFrame) -> list[str]:
    """The newcomers with cells in some reading, in NEWCOMERS' order."""
    names = set(cells["policy"])
    return [p for p in NEWCOMERS if any(f"{p} ({r})" in names for r in READINGS)]


def draw(inputs: Inputs, out_dir: Path) -> list[Path]:
    cells = all_cells(inputs)
    shown = ", ".join(["Gavel", "Themis", "Tiresias", *(NEWCOMERS[p] for p in ran(cells))])
    return ratio_figure(
        cells,
        RATIOS,
        out_dir,
        "field",
        f"FFT vs {shown}, traces 1-2 (ratio > 1: FFT better)",
        [],
        baselines=[p for p in policies_shown(cells) if p != REFERENCE],
    )


def report_section(inputs: Inputs, specs: Sequence[Mapping]) -> list:
    try:
        cells = all_cells(inputs)
    except MissingInput:
        return []
    seeds = ", ".join(map(str, sorted(cells["seed"].unique())))
    present = ran(cells)
    absent = [NEWCOMERS[p] + LEFT_OUT.get(p, "") for p in NEWCOMERS if p not in present]
    not_run = f" Not run here: {' and '.join(absent)}." if absent else ""
    comparisons = comparison_table(cells)
    counts = comparisons.frame["fft_better_verdict"].value_counts()
    return [
        "## FFT against the field's newer baselines (" + ", ".join(NEWCOMERS[p] for p in present) + ")",
        "",
        " and ".join(NEWCOMERS[p] for p in present)
        + " on traces 1-2 (seeds "
        + seeds
        + "), beside FFT and the paper's baselines from the testbed "
        "sweep on the same traces and seeds. *rigid*: every job a gang of its requested size, so the newcomers choose "
        "only a GPU type (Pollux, unaware of types, only a GPU count it believes interchangeable); *elastic*: the same "
        "jobs elastic, sized by the newcomers through their goodput (docs/elastic.md); the other policies run an "
        "elastic job at its requested count, which is the rigid run. Clocks: the newcomers decide every 60 s, "
        "their authors' simulator's interval (`sim.round_len_s=60`); FFT and the paper's baselines keep FFT's "
        "5-minute rounds. Mean over traces x seeds with a 95% t-interval cut at 0; n = cells." + not_run,
        "",
        value_table(cells),
        "",
        "FFT against each newcomer, one row per distinct comparison, paired per trace and seed (ratios: geometric "
        "mean with a t-interval of the log ratios, > 1: FFT better; the starvation difference: mean with a "
        "t-interval, > 0: FFT better). *yes* = the whole interval is on FFT's side, *weak* = the mean is, *no* = "
        "the mean is on the newcomer's side:",
        "",
        comparisons,
        "",
        f"FFT better in {int(counts.get('yes', 0))} of {len(comparisons.frame)} comparisons (yes), "
        f"{int(counts.get('weak', 0))} weak, {int(counts.get('no', 0))} no.",
        "",
    ]
