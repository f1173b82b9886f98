"""paper_figs/REPORT.md: the headline numbers of PAPER.md sec. 4 beside ours, what ran, and what
could not be reproduced. Deterministic text (no dates, no timings) so a rerun changes nothing."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import pandas as pd

from fairsim.figures import style
from fairsim.figures.data import Inputs
from fairsim.figures.stats import METHOD_NOTE
from fairsim.paper.headlines import Row, headline_frame
from fairsim.paper.report_table import ReportTable, expand


def sweeps_table(inputs: Inputs) -> ReportTable:
    header = ["role", "sweep", "cells", "policies", "traces", "cluster", "seeds", "jobs per run"]
    rows, values = [], []
    for role, sweep in inputs.sweeps.items():
        c = sweep.cells
        jobs = c["finished_jobs"] if "finished_jobs" in c else c["num_jobs"]
        lo, hi = int(jobs.min()), int(jobs.max())
        policies = ", ".join(style.label(p) for p in style.policy_order(c["policy"]))
        traces = ", ".join(style.workload_order(c["workload"]))
        clusters = ", ".join(sorted(map(str, c["cluster"].unique())))
        seeds = ", ".join(map(str, sorted(c["seed"].unique())))
        rows.append(
            [role, sweep.name, str(len(c)), policies, traces, clusters, seeds, f"{lo}" if lo == hi else f"{lo}-{hi}"]
        )
        values.append(
            {
                "role": role,
                "sweep": sweep.name,
                "cells": len(c),
                "policies": policies,
                "traces": traces,
                "clusters": clusters,
                "seeds": seeds,
                "jobs_per_run_min": lo,
                "jobs_per_run_max": hi,
            }
        )
    return ReportTable("sweeps", header, rows, pd.DataFrame(values))


def headline_table(rows: Sequence[Row]) -> ReportTable:
    return ReportTable(
        "headlines",
        ["claim (PAPER.md sec. 4)", "paper", "ours", "direction"],
        [[r.claim, r.paper, r.ours, r.verdict] for r in rows],
        headline_frame(list(rows)),
    )


def stale_lines(inputs: Inputs) -> list[str]:
    """Every cell the report was drawn from that other simulating code or inputs made (by its
    provenance.json against this tree), grouped by sweep and reason; one line when there is none."""
    groups: dict[tuple[str, str], list[str]] = {}
    sizes = {}
    for sweep in inputs.sweeps.values():
        cells = sweep.cells
        sizes[sweep.name] = len(cells)
        if "stale" not in cells:
            cells = cells.assign(stale=True, stale_why="its results.parquet predates provenance")
        for row in cells[cells["stale"]].itertuples():
            groups.setdefault((sweep.name, str(row.stale_why)), []).append(str(row.cell))
    if not groups:
        return [
            "Every cell above is fresh: its provenance.json names the simulating code and input files of this tree."
        ]
    total = sum(map(len, groups.values()))
    lines = [
        f"**{total} stale cells** (made by other simulating code or inputs than this tree's; drawn with",
        "`--reuse-stale`, or before a rerun): rerun without it to recompute them.",
        "",
    ]
    for (name, why), cells in sorted(groups.items()):
        if len(cells) == sizes[name]:
            lines.append(f"- {name}: every one of its {len(cells)} cells: {why}")
        else:
            lines.append(
                f"- {name}, {len(cells)} of {sizes[name]} cells: {why}: {', '.join(f'`{c}`' for c in sorted(cells))}"
            )
    return lines


def example_lines(examples: Sequence) -> list:
    """The worked examples and catalog figures/tables (``fairsim.figures.tables.Check`` rows)."""
    if not examples:
        return []
    frame = pd.DataFrame([{"item": c.item, "quantity": c.quantity, "paper": c.paper, **c.values} for c in examples])
    return [
        "## Worked examples and catalog (Figs. 1-3, 5, 6; Tables 1, 2)",
        "",
        "Small deterministic instances (experiments/paper_examples.yaml) and the paper catalog; no seeds, no",
        "intervals. Where the paper gives no number, its qualitative claim is quoted.",
        "",
        ReportTable(
            "examples",
            ["item", "quantity", "paper", "ours"],
            [[c.item, c.quantity, c.paper, c.ours] for c in examples],
            frame,
        ),
        "",
    ]


def output_files(name: str, what: str) -> list[str]:
    """The files a plan entry writes into the output folder: a paper table (``table<N>``) as
    Markdown, a report-section table (its ``what`` starts with "table:") as data/<name>.csv,
    any other entry a figure as PDF and PNG."""
    if name.startswith("table"):
        return [f"{name}.md"]
    if what.startswith("table:"):
        return [f"data/{name}.csv"]
    return [f"{name}.pdf", f"{name}.png"]


def write_report(
    path: Path,
    scale: str,
    rows: Sequence[Row],
    inputs: Inputs,
    figures: Mapping[str, str],
    gaps: Mapping[str, str],
    command: str,
    notes: Sequence[str] = (),
    examples: Sequence = (),
    sections: Sequence[str] = (),
) -> Path:
    counts = {v: sum(r.verdict == v for r in rows) for v in ("yes", "weak", "no")}
    lines = [
        "# Reproducing FFT (ICS'25): headline numbers",
        "",
        f"Scale **{scale}**, made by `{command}`. Every value of ours comes from the sweeps below,",
        "with its 95% interval over seeds in brackets and n (seeds, or trace x seed pairs where traces",
        "are pooled). Ratios (baseline / FFT of the same trace and seed; > 1: FFT is better) are",
        "geometric means with a t-interval of the log ratios, so they never go below 0; non-negative",
        "values (shares, hours) are means with a t-interval cut at 0; differences (FFT - baseline) use",
        f'the plain t-interval. The figures use the same intervals; their footnote reads: "{METHOD_NOTE}"',
        "Verdict on the direction of the paper's claim:",
        "**yes** = the whole interval is on the paper's side, **weak** = the mean is but the interval",
        'reaches across, **no** = the mean is on the other side. "up to" claims take the trace with',
        "the largest mean ratio (selected after the fact, so its interval is optimistic).",
        "",
        f"Direction reproduced: {counts['yes']} yes, {counts['weak']} weak, {counts['no']} no, of {len(rows)} numbers.",
        "",
        headline_table(rows),
        "",
        *example_lines(examples),
        *sections,
        "## Sweeps that could not run",
        "",
        *([f"- {role}: not reproduced: {why}" for role, why in gaps.items()] or ["- none"]),
        "",
        "## Caveats",
        "",
        "- Traces 1-2 are 800 consecutive real Philly submissions (their own gaps, durations and GPU counts),",
        "  arrivals stretched over 48 h, durations scaled by one factor to the default load 1.0. That load was",
        "  chosen on one anchor only, FFT's longest wait of about 25 h on the paper's testbed (docs/workload.md,",
        '  "Testbed traces: how the defaults were chosen"); FFT\'s max starvation here is therefore not a test',
        "  of the paper, every other number is. Traces 3-9 reuse that load, arrival model and jobs per GPU-hour.",
        '- rho rows use the fluid reading of T_id (the section "three readings" says why and shows the others).',
        "- The paper's testbed numbers come from real GPUs; ours come from the simulator on the same",
        "  cluster shape (the paper reports its simulator within 4.9% of its testbed).",
        "- Fig. 13a (time of one FFT decision) is wall-clock time of the machine that ran it, so it is",
        "  drawn to `machine/fig13a_timing.{pdf,png}` beside this report and kept out of git.",
        *[f"- {n}" for n in notes],
        "",
        "## Sweeps",
        "",
        sweeps_table(inputs),
        "",
        *stale_lines(inputs),
        "",
        "## Figures",
        "",
        *[f"- {' / '.join(f'`{f}`' for f in output_files(name, what))}: {what}" for name, what in figures.items()],
        "",
    ]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(expand(lines, path.parent)))
    return path
