"""Each policy on its own clock: the testbed comparison with the baselines that decide on events
in their own systems (Tiresias in both queue readings, AlloX) run on the event clock
(``paper_own_clock`` sweep, ``sim.clock=events``), against FFT, Gavel, Gavel-MMF, Themis and PAL
on their rounds (the ``paper_testbed`` cells). docs/reproduce.md "Clocks" says why each policy
gets the clock it does and why the headline table stays on FFT's clock.

data/own_clock.csv: per event-driven policy and clock, the mean over traces 1-2 x seeds of avg
JCT (h), mean and max rho (fluid) and max starvation (h), with n; data/own_clock_values.csv and
own_clock_verdicts.csv: the section's two tables. REPORT.md: that table, then every
testbed headline claim's verdict under both readings and which verdicts the clock changes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import pandas as pd

from fairsim.figures import style
from fairsim.figures.data import Inputs, MissingInput
from fairsim.figures.stats import nonneg_ci
from fairsim.paper.readings import DEFAULT, MARK, reading_verdicts, survivors, verdict_counts, verdict_report_table
from fairsim.paper.report_table import ReportTable, interval_text

ROLE = "own_clock"
EVENT_DRIVEN = ("tiresias", "tiresias_random", "allox", "tiresias_las", "fifo", "srtf")
CLOCK_LABELS = {"rounds": "FFT's 300 s rounds", "events": "event clock"}
OWN_CLOCK = "own clock"  # the reading's column; the default column is every policy on FFT's clock
METRICS = {  # cell column: (label, scale, digits, the column in data/ with its unit)
    "avg_jct_s": ("avg JCT (h)", 1 / 3600, 2, "avg_jct_h"),
    "rho_fluid_mean": ("mean rho, fluid", 1.0, 2, "rho_fluid_mean"),
    "rho_fluid_max": ("max rho, fluid", 1.0, 1, "rho_fluid_max"),
    "starvation_max_s": ("max starvation (h)", 1 / 3600, 1, "starvation_max_h"),
}


def _rounds_cells(inputs: Inputs) -> pd.DataFrame:
    """The event-driven policies' cells on rounds, from whichever sweeps ran them."""
    roles = [r for r in ("testbed", "ablation") if r in inputs.sweeps]
    return inputs.cells(*roles) if roles else pd.DataFrame(columns=["policy"])


def clock_table(rounds: pd.DataFrame, events: pd.DataFrame) -> pd.DataFrame:
    rows = []
    for policy in EVENT_DRIVEN:
        for clock, cells in (("rounds", rounds), ("events", events)):
            part = cells[cells["policy"] == policy]
            if part.empty:
                continue
            for metric, (_, scale, _, unit_name) in METRICS.items():
                ci = nonneg_ci(part[metric].astype(float) * scale)
                rows.append(
                    {
                        "policy": policy,
                        "clock": clock,
                        "metric": unit_name,
                        "mean": ci.mean,
                        "lo": ci.lo,
                        "hi": ci.hi,
                        "n": ci.n,
                    }
                )
    return pd.DataFrame(rows, columns=["policy", "clock", "metric", "mean", "lo", "hi", "n"])


def clock_verdicts(inputs: Inputs, specs: Sequence[Mapping]) -> pd.DataFrame:
    """claim x reading: the testbed sweep as it is (``default``: FFT's clock), and with the
    event-driven baselines' cells taken from the own-clock sweep."""
    return reading_verdicts(specs, "testbed", inputs.sweep("testbed").cells, {OWN_CLOCK: inputs.sweep(ROLE).cells})


def draw(inputs: Inputs, out_dir: Path) -> list[Path]:
    table = clock_table(_rounds_cells(inputs), inputs.sweep(ROLE).cells)
    return [style.save_data(table, out_dir, "own_clock")]


def value_table(table: pd.DataFrame) -> ReportTable:
    """The per-policy, per-clock table of REPORT.md with its values (data/own_clock_values.csv)."""
    rows, values = [], []
    for policy in EVENT_DRIVEN:
        for clock in ("rounds", "events"):
            part = table[(table["policy"] == policy) & (table["clock"] == clock)].set_index("metric")
            if part.empty and clock == "events":
                continue
            shown, row = [], {"policy": policy, "clock": clock, "clock_label": CLOCK_LABELS[clock]}
            for _, _, d, unit_name in METRICS.values():
                if unit_name not in part.index:
                    shown.append("-")
                    continue
                mean, lo, hi, n = (part.at[unit_name, k] for k in ("mean", "lo", "hi", "n"))
                shown.append(interval_text(mean, lo, hi, d))
                row |= {f"{unit_name}_mean": mean, f"{unit_name}_lo": lo, f"{unit_name}_hi": hi, "n": n}
            rows.append([style.label(policy), CLOCK_LABELS[clock], *shown])
            values.append(row)
    header = ["policy", "clock", *(label for label, _, _, _ in METRICS.values())]
    return ReportTable("own_clock_values", header, rows, pd.DataFrame(values))


def report_section(inputs: Inputs, specs: Sequence[Mapping]) -> list:
    try:
        events = inputs.sweep(ROLE)
        verdict = clock_verdicts(inputs, specs)
    except MissingInput:
        return []
    table = clock_table(_rounds_cells(inputs), events.cells)
    seeds = ", ".join(map(str, sorted(events.cells["seed"].unique())))
    lines = [
        "## Each policy on its own clock",
        "",
        "The headline table runs every policy on FFT's 5-minute rounds. Tiresias, AlloX, FIFO and SRTF decide on "
        "events in their own systems (a new job or a freed GPU is used at once), so this reading runs them on the "
        "event clock (`sim.clock=events`, sweep `"
        + events.name
        + "`, seeds "
        + seeds
        + ", overheads on as everywhere) "
        'and keeps FFT, Gavel, Gavel-MMF, Themis and PAL on their rounds (docs/reproduce.md, "Clocks"). '
        "Mean over traces 1-2 x seeds with a 95% t-interval cut at 0; `-`: not run on that clock.",
        "",
        value_table(table),
    ]
    _, flips = survivors(verdict)
    lines += [
        "",
        "Every testbed headline claim under both readings, judged as the headline table judges it "
        "(Y = yes, w = weak, N = no, - = not measured):",
        "",
        verdict_report_table("own_clock_verdicts", verdict, [DEFAULT, OWN_CLOCK], ["FFT's clock", "own clock"]),
        "",
        f"Verdicts of these {len(verdict)} testbed numbers: FFT's clock {verdict_counts(verdict[DEFAULT])}; "
        f"own clock {verdict_counts(verdict[OWN_CLOCK])}. "
        + (
            f"The clock changes {len(flips)}: "
            + "; ".join(
                f"{claim} ({MARK.get(verdict.at[claim, DEFAULT], '?')} -> {MARK.get(moved[OWN_CLOCK], '?')})"
                for claim, moved in flips.items()
            )
            + "."
            if flips
            else "The clock changes none of them."
        ),
        "",
    ]
    return lines
