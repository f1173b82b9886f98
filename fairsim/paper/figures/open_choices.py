"""Which verdicts depend on FFT's open choices: every headline claim judged with FFT's cells
replaced by those of one variant at a time (``paper_open_choices``: one open choice of
docs/ours.md changed, conf/fft_variant/), and with every policy's cells replaced by the same
policies on a workload whose shortest job is one round (``paper_shortest_job``,
conf/workload_variant/). The cells carry their variant in results.parquet's ``variant`` column.

Claims of a sweep role (testbed, simulated) are judged where the variants ran on that role's
traces and cluster: at the small scale traces 1-2 against the testbed sweep, at the full scale
traces 3, 6 and 7 on ``scale8`` against the full simulated sweep (when its results are on disk).
data/open_choices.csv: one row per (role, claim, reading) with the verdict;
data/open_choices_metrics.csv: FFT's averages under each reading with the baselines' ratios.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from fairsim.figures import style
from fairsim.figures.data import Inputs
from fairsim.figures.stats import REFERENCE, hours_name, nonneg_ci, paired_ratios, ratio_ci, ratio_name
from fairsim.paper.readings import (
    DEFAULT,
    MARK,
    on_settings,
    reading_verdicts,
    settings,
    stand_in,
    survivors,
    verdict_report_table,
)
from fairsim.paper.report_table import ReportTable
from fairsim.paper.values import HEADLINES

VARIANT_ROLES = ("open_choices", "shortest_job")  # sweeps whose cells carry a ``variant``
JUDGED_ROLES = ("testbed", "simulated")  # the headline claims' own sweeps
METRICS = {  # column: (label, scale, digits)
    "avg_jct_s": ("avg JCT (h)", 1 / 3600, 2),
    "rho_fluid_mean": ("mean rho", 1.0, 2),
    "rho_fluid_max": ("max rho", 1.0, 2),
    "starvation_max_s": ("max starvation (h)", 1 / 3600, 1),
}
RATIO_BASELINES = ("tiresias", "gavel")  # the metrics table's baseline / FFT ratios


def variants(inputs: Inputs) -> dict[str, pd.DataFrame]:
    """Every variant's cells by its label, in the order the sweeps list them (FFT's options first)."""
    found: dict[str, pd.DataFrame] = {}
    for role in VARIANT_ROLES:
        if role in inputs.sweeps and "variant" in inputs.sweeps[role].cells:
            cells = inputs.sweeps[role].cells
            for label in dict.fromkeys(cells["variant"].dropna()):
                found[str(label)] = cells[cells["variant"] == label]
    return found


def _matching(base: pd.DataFrame, readings: Mapping[str, pd.DataFrame]) -> dict[str, pd.DataFrame]:
    """The readings that ran on the base sweep's traces and cluster, cut to the settings the base has."""
    keys = settings(base)
    out = {}
    for name, cells in readings.items():
        mine = on_settings(cells, keys)
        if len(mine):
            out[name] = mine
    return out


def judged(inputs: Inputs) -> dict[str, tuple[pd.DataFrame, dict[str, pd.DataFrame]]]:
    """Per judged role present: its base cells and the variants that ran on its settings."""
    found = variants(inputs)
    out = {}
    for role in JUDGED_ROLES:
        if role in inputs.sweeps:
            base = inputs.sweeps[role].cells
            readings = _matching(base, found)
            if readings:
                out[role] = (base, readings)
    return out


def verdict_table(inputs: Inputs, specs: Sequence[Mapping]) -> pd.DataFrame:
    rows = []
    for role, (base, readings) in judged(inputs).items():
        verdicts = reading_verdicts(specs, role, base, readings)
        for claim, row in verdicts.iterrows():
            rows += [{"role": role, "claim": claim, "reading": name, "verdict": row[name]} for name in verdicts.columns]
    return pd.DataFrame(rows, columns=["role", "claim", "reading", "verdict"])


def metrics_table(base: pd.DataFrame, readings: Mapping[str, pd.DataFrame]) -> pd.DataFrame:
    """Per reading and metric: FFT's mean over traces x seeds and each baseline / FFT (geometric
    mean of the paired ratios), on the cells the reading is judged on."""
    tables = {DEFAULT: on_settings(base, settings(pd.concat(list(readings.values()), ignore_index=True)))}
    tables.update({name: stand_in(base, cells) for name, cells in readings.items()})
    rows = []
    for name, cells in tables.items():
        for metric, (_, scale, _) in METRICS.items():
            ours = nonneg_ci(cells.loc[cells["policy"] == REFERENCE, metric].astype(float) * scale)
            row = {"reading": name, "metric": metric, "ours": ours.mean, "n": ours.n}
            for b in RATIO_BASELINES:
                row[f"{b}_over_ours"] = ratio_ci(paired_ratios(cells, metric, b)).mean
            rows.append(row)
    return pd.DataFrame(rows)


def draw(inputs: Inputs, out_dir: Path, specs: Sequence[Mapping] | None = None) -> list[Path]:
    specs = HEADLINES if specs is None else specs
    paths = [style.save_data(verdict_table(inputs, specs), out_dir, "open_choices")]
    parts = [metrics_table(base, readings).assign(role=role) for role, (base, readings) in judged(inputs).items()]
    if parts:
        metrics = pd.concat(parts, ignore_index=True)
        metrics = metrics.assign(metric=metrics["metric"].map(unit_name))
        paths.append(style.save_data(metrics, out_dir, "open_choices_metrics"))
    return paths


def _seeds(cells: pd.DataFrame) -> str:
    return ", ".join(map(str, sorted(cells["seed"].unique())))


def unit_name(metric: str) -> str:
    """The metric's name in the unit the section shows it in (seconds as hours end in _h)."""
    return hours_name(metric) if METRICS[metric][1] != 1.0 else metric


def metric_report_table(name: str, table: pd.DataFrame) -> ReportTable:
    """Per reading, FFT's value of each metric and each baseline / FFT, as REPORT.md shows them
    (data/<name>.csv)."""
    head = ["reading"] + [
        f"{METRICS[m][0]}: FFT, {' / '.join(f'{style.label(b)}/FFT' for b in RATIO_BASELINES)}" for m in METRICS
    ]
    rows, frame = [], []
    for reading, part in table.groupby("reading", sort=False):
        part = part.set_index("metric")
        cells, values = [], {"reading": reading}
        for m, (_, _, digits) in METRICS.items():
            r = part.loc[m]
            ratios = " / ".join(
                f"{r[f'{b}_over_ours']:.2f}" if np.isfinite(r[f"{b}_over_ours"]) else "-" for b in RATIO_BASELINES
            )
            cells.append(f"{r['ours']:.{digits}f}, {ratios}")
            values |= {f"fft_{unit_name(m)}": r["ours"], "n": r["n"]}
            values |= {f"{b}_over_fft_{ratio_name(m)}": r[f"{b}_over_ours"] for b in RATIO_BASELINES}
        rows.append([reading, *cells])
        frame.append(values)
    return ReportTable(name, head, rows, pd.DataFrame(frame))


def report_section(inputs: Inputs, specs: Sequence[Mapping]) -> list:
    found = judged(inputs)
    if not found:
        return []
    lines = [
        "## Which verdicts depend on FFT's open choices",
        "",
        "FFT with one open choice of docs/ours.md changed at a time (sweep `paper_open_choices`, presets "
        "conf/fft_variant/), and every policy on a workload whose shortest job is one round (sweep "
        "`paper_shortest_job`, conf/workload_variant/). Each claim is judged as the headline table judges its "
        "sweep, with the variant's cells standing in for the same policies' cells (FFT's, or every policy's "
        "for the workload variant) and every other policy's cells unchanged: Y = yes, w = weak, N = no, "
        "- = not measured. `default` is the headline table's own verdict on the same traces and seeds.",
        "",
    ]
    for role, (base, readings) in found.items():
        verdicts = reading_verdicts(specs, role, base, readings)
        names = list(verdicts.columns)
        cells = pd.concat(list(readings.values()), ignore_index=True)
        lines += [
            f"### {role} claims: {', '.join(style.workload_order(cells['workload']))}, seeds {_seeds(cells)}, "
            f"cluster {', '.join(sorted(map(str, cells['cluster'].unique())))}",
            "",
            verdict_report_table(
                f"open_choices_{role}_verdicts", verdicts, names, [f"`{n}`" if n != DEFAULT else n for n in names]
            ),
        ]
        same, flips = survivors(verdicts)
        held = [c for c in same if verdicts.loc[c, DEFAULT] == "yes"]
        lines += [
            "",
            f"Same verdict under every variant ({len(same)} of {len(verdicts)}): "
            + ("; ".join(f"{c} ({MARK.get(verdicts.loc[c, DEFAULT], '?')})" for c in same) or "none")
            + ".",
            "",
            f"Of these, reproduced (Y) under every variant: {'; '.join(held) or 'none'}.",
            "",
        ]
        if flips:
            lines.append("Verdicts that move (default -> variant):")
            lines.append("")
            for claim, moved in flips.items():
                where = "; ".join(f"{MARK.get(v, '?')} under `{n}`" for n, v in moved.items())
                lines.append(f"- {claim}: {MARK.get(verdicts.loc[claim, DEFAULT], '?')} by default; {where}.")
            lines.append("")
        lines += [
            "FFT's averages over traces x seeds under each reading, with each baseline's value over FFT's "
            "(geometric mean of the paired ratios; > 1: FFT better), rho in the fluid reading:",
            "",
            metric_report_table(f"open_choices_{role}_metrics", metrics_table(base, readings)),
            "",
        ]
    return lines
