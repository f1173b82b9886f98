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
data/field.csv: the plotted ratios. REPORT.md: the per-policy table and every testbed headline
claim re-judged with each newcomer standing in for the claim's baselines.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import pandas as pd

from fairsim.figures.data import Inputs, MissingInput
from fairsim.figures.plots import ratio_figure
from fairsim.figures.stats import REFERENCE, nonneg_ci
from fairsim.paper.readings import claims_of, judge, verdict_table_lines

READINGS = {"rigid": "field", "elastic": "field_elastic"}  # reading -> sweep role
NEWCOMERS = {"sia": "Sia", "pollux": "Pollux"}  # policy -> name in the text
LEFT_OUT = {  # why a newcomer's cells may be missing: the default grid leaves it out
    "pollux": " (the preset leaves Pollux out for its cost, about 1.6 s of CPU per decision at 100 jobs; the sweeps "
    "`paper_field` and `paper_field_elastic` take `policy=sia,pollux` to add it)",
}
BASELINES = ("gavel", "themis", "tiresias")
METRICS = {  # column: (label, scale, digits)
    "avg_jct_s": ("avg JCT (h)", 1 / 3600, 2),
    "makespan_s": ("makespan (h)", 1 / 3600, 1),
    "rho_fluid_mean": ("mean rho, fluid", 1.0, 2),
    "rho_fluid_max": ("max rho, fluid", 1.0, 1),
    "starvation_max_s": ("max starvation (h)", 1 / 3600, 1),
}
RATIOS = {"avg_jct_s": "avg JCT / FFT", "rho_fluid_mean": "mean rho / FFT"}


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


def value_rows(cells: pd.DataFrame) -> list[str]:
    lines = []
    for policy in policies_shown(cells):
        part = cells[cells["policy"] == policy]
        values = []
        for metric, (_, scale, d) in METRICS.items():
            ci = nonneg_ci(part[metric].astype(float) * scale)
            values.append(f"{ci.mean:.{d}f} [{ci.lo:.{d}f}, {ci.hi:.{d}f}]")
        lines.append(f"| {policy} | {len(part)} | " + " | ".join(values) + " |")
    return lines


def stood_in(specs: Sequence[Mapping], newcomer: str) -> list[dict]:
    """The testbed claims with ``newcomer`` standing in for every baseline each names: a ratio
    claim's baselines become the newcomer, a comparison's other policies too."""
    out = []
    for spec in claims_of(specs, "testbed"):
        spec = dict(spec)
        if spec["kind"] == "ratio":
            spec["baselines"] = [newcomer]
        else:
            spec["policies"] = [REFERENCE, newcomer]
        out.append(spec)
    return out


def verdicts(inputs: Inputs, specs: Sequence[Mapping]) -> pd.DataFrame:
    """claim x (newcomer, reading) -> verdict of the claim with the newcomer as its baseline."""
    cells = all_cells(inputs)
    columns = {}
    for newcomer in NEWCOMERS:
        for reading in READINGS:
            name = f"{newcomer} ({reading})"
            if name not in set(cells["policy"]):
                continue
            mine = cells[cells["policy"].isin((REFERENCE, name))].replace({"policy": {name: newcomer}})
            rows = judge(stood_in(specs, newcomer), "testbed", mine, name)
            columns[name] = {r.claim: r.verdict for r in rows}
    return pd.DataFrame(columns)


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


def report_section(inputs: Inputs, specs: Sequence[Mapping]) -> list[str]:
    try:
        cells = all_cells(inputs)
        verdict = verdicts(inputs, specs)
    except MissingInput:
        return []
    seeds = ", ".join(map(str, sorted(cells["seed"].unique())))
    present = ran(cells)
    absent = [NEWCOMERS[p] + LEFT_OUT.get(p, "") for p in NEWCOMERS if p not in present]
    not_run = f" Not run here: {' and '.join(absent)}." if absent else ""
    lines = [
        "## FFT against the field's newer baselines (Sia, Pollux)",
        "",
        " and ".join(NEWCOMERS[p] for p in present)
        + " on traces 1-2 (seeds "
        + seeds
        + "), beside FFT and the paper's baselines from the testbed "
        "sweep on the same traces and seeds. *rigid*: every job a gang of its requested size, so the newcomers choose "
        "only a GPU type (Pollux, unaware of types, only a GPU count it believes interchangeable); *elastic*: the same "
        "jobs elastic, sized by the newcomers through their goodput (docs/elastic.md); the other policies run an "
        "elastic job at its requested count, which is the rigid run. The newcomers decide every 60 s, as in their "
        "authors' simulator; the others keep FFT's 5-minute rounds. Mean over traces x seeds with a 95% t-interval "
        "cut at 0; n = cells." + not_run,
        "",
        "| policy | n | " + " | ".join(label for label, _, _ in METRICS.values()) + " |",
        "|---|---|" + "---|" * len(METRICS),
        *value_rows(cells),
    ]
    if not verdict.empty:
        names = list(verdict.columns)
        lines += [
            "",
            "Every testbed headline claim with the newcomer standing in for the claim's baselines, judged as the "
            "headline table judges it (Y = yes, w = weak, N = no, - = not measured):",
            "",
            *verdict_table_lines(verdict, names),
            "",
            "Verdicts that hold (yes) against each newcomer: "
            + "; ".join(f"{n} {int((verdict[n] == 'yes').sum())} of {int(verdict[n].notna().sum())}" for n in names)
            + ".",
        ]
    lines.append("")
    return lines
