"""Which of the paper's testbed claims hold where: every headline ratio against the offered load,
under real Philly arrivals and under Poisson arrivals (the ``paper_load`` sweep, traces 1-2).

Figure ``fig_load``: one panel per claim family, the value pooled over traces 1-2 and seeds
(ratios: geometric mean; shares and hours: mean) against load, one colour per baseline, solid
for Philly arrivals and dashed for Poisson, and the paper's value as a dotted line in the same
colour. ``report_section`` gives REPORT.md's table of each claim's direction per (arrival
model, load), judged exactly as the headline table judges the testbed (paper/headlines.py).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib.ticker import NullFormatter

from fairsim.figures import portable, style
from fairsim.figures.data import Inputs, SweepData
from fairsim.figures.plots import log_axis
from fairsim.figures.stats import nonneg_ci, paired_ratios, ratio_ci
from fairsim.paper.readings import MARK, judge
from fairsim.paper.report_table import ReportTable
from fairsim.paper.values import paper_values

ROLE = "load"
ARRIVAL_STYLE = {"philly": "-", "poisson": "--"}


@dataclass(frozen=True)
class Panel:
    title: str
    metric: str
    kind: str  # "ratio" (baseline / FFT, pooled geometric mean) or "value" (per policy, mean)
    policies: tuple[str, ...]
    scale: float = 1.0
    log: bool = True

    def paper(self) -> dict[str, float]:
        """The paper's testbed value per policy (paper/values.py); per-trace values are averaged,
        as the panel pools traces 1-2. Shares are drawn in %, hours as hours."""
        found: dict[str, list[float]] = {}
        for v in paper_values("testbed", self.kind, self.metric):
            if v.policy is not None:
                found.setdefault(v.policy, []).append(v.value * (100.0 if self.metric.endswith("lt1_share") else 1.0))
        return {p: float(np.mean(vals)) for p, vals in found.items()}


BASELINES = ("gavel", "tiresias", "pal", "allox", "themis", "gavel_mmf")
PANELS = (
    Panel("(a) avg JCT / FFT", "avg_jct_s", "ratio", BASELINES),
    Panel("(b) makespan / FFT", "makespan_s", "ratio", BASELINES),
    Panel("(c) mean rho (fluid T_id) / FFT", "rho_fluid_mean", "ratio", ("gavel", "tiresias", "themis", "gavel_mmf")),
    Panel("(d) max rho (fluid T_id) / FFT", "rho_fluid_max", "ratio", ("gavel", "tiresias", "themis", "gavel_mmf")),
    Panel(
        "(e) share of jobs with rho < 1 (%, fluid)",
        "rho_fluid_lt1_share",
        "value",
        ("ours", "gavel", "tiresias"),
        scale=100.0,
        log=False,
    ),
    Panel(
        "(f) max starvation (h)", "starvation_max_s", "value", ("ours", "gavel", "tiresias"), scale=1 / 3600, log=False
    ),
)


def _slices(cells: pd.DataFrame):
    for (arrivals, load), part in cells.groupby(["arrivals", "load"], sort=True):
        yield str(arrivals), float(load), part


def load_table(cells: pd.DataFrame) -> pd.DataFrame:
    """One row per (panel, policy, arrivals, load): the pooled value and its n."""
    rows = []
    for panel in PANELS:
        for arrivals, load, part in _slices(cells):
            for policy in panel.policies:
                if panel.kind == "ratio":  # geometric mean, as the headline ratios
                    ci = ratio_ci(paired_ratios(part, panel.metric, policy))
                else:
                    ci = nonneg_ci(part.loc[part["policy"] == policy, panel.metric].astype(float) * panel.scale)
                if ci.n:
                    rows.append(
                        {
                            "panel": panel.title,
                            "metric": panel.metric,
                            "policy": policy,
                            "arrivals": arrivals,
                            "load": load,
                            "value": ci.mean,
                            "n": ci.n,
                            "paper": panel.paper().get(policy, np.nan),
                        }
                    )
    return pd.DataFrame(rows, columns=["panel", "metric", "policy", "arrivals", "load", "value", "n", "paper"])


def draw(inputs: Inputs, out_dir: Path) -> list[Path]:
    cells = inputs.sweep(ROLE).cells
    table = load_table(cells)
    seeds = cells.groupby(["arrivals", "load", "workload", "policy"]).size()
    lo, hi = (int(seeds.min()), int(seeds.max())) if len(seeds) else (0, 0)
    n_text = f"n = {lo if lo == hi else f'{lo}-{hi}'} seeds per trace and load"
    with style.paper_style():
        fig, axes = style.new_figure(3, nrows=2, width=3.4, height=2.7)
        for ax, panel in zip(axes.flat, PANELS):
            part = table[table["panel"] == panel.title]
            for policy in (p for p in panel.policies if p in set(part["policy"])):
                mine = part[part["policy"] == policy]
                for arrivals, dash in ARRIVAL_STYLE.items():
                    line = mine[mine["arrivals"] == arrivals].sort_values("load")
                    if len(line):
                        ax.plot(
                            line["load"],
                            line["value"],
                            dash,
                            marker="o",
                            markersize=3,
                            linewidth=1.1,
                            color=style.color(policy),
                        )
                if policy in panel.paper():
                    ax.axhline(panel.paper()[policy], color=style.color(policy), linestyle=":", linewidth=1.0)
            if panel.kind == "ratio":
                ax.axhline(1.0, color="black", linewidth=0.8)
            if panel.log:  # the figures' shared log axis: limits from the values drawn, plain-number ticks
                log_axis(ax, [*part["value"], *panel.paper().values(), 1.0])
            else:
                ax.set_ylim(bottom=0)
            ax.set_xscale(portable.LogScale())
            ax.set_xticks(
                sorted(set(cells["load"].astype(float))), [f"{v:g}" for v in sorted(set(cells["load"].astype(float)))]
            )
            ax.xaxis.set_minor_formatter(NullFormatter())
            ax.set_xlabel("offered load")
            ax.set_title(panel.title)
        handles = _legend_handles(table)
        fig.legend(handles=handles, loc="outside right center", fontsize=7)
        fig.suptitle(
            f"Headline claims vs load, traces 1-2 pooled ({n_text}); ratios > 1: FFT better; dotted: the paper's value",
            fontsize=9,
        )
        return style.save(fig, out_dir, "fig_load", table)


def _legend_handles(table: pd.DataFrame) -> list:
    from matplotlib.lines import Line2D

    policies = style.policy_order(table["policy"]) if len(table) else []
    handles = [Line2D([], [], color=style.color(p), marker="o", markersize=3, label=style.label(p)) for p in policies]
    handles += [
        Line2D([], [], color="black", linestyle=dash, label=f"{a} arrivals") for a, dash in ARRIVAL_STYLE.items()
    ]
    handles.append(Line2D([], [], color="grey", linestyle=":", label="paper"))
    return handles


# ---- REPORT.md: direction of each testbed claim per (arrivals, load) ----------------------------------


def claim_verdicts(sweep: SweepData, specs: Sequence[Mapping]) -> pd.DataFrame:
    """claim x (arrivals, load) -> verdict, each slice judged as the testbed sweep is."""
    return pd.DataFrame(
        {
            (arrivals, load): {r.claim: r.verdict for r in judge(specs, "testbed", part)}
            for arrivals, load, part in _slices(sweep.cells)
        }
    )


def _ranges(loads: Sequence[float]) -> str:
    return ", ".join(f"{v:g}" for v in loads) if loads else "none"


def report_section(inputs: Inputs, specs: Sequence[Mapping]) -> list:
    """Markdown lines: per claim, the loads at which its direction holds under each arrival model."""
    sweep = inputs.sweep(ROLE)
    verdicts = claim_verdicts(sweep, specs)
    if verdicts.empty:
        return []
    arrivals = sorted({a for a, _ in verdicts.columns})
    loads = sorted({v for _, v in verdicts.columns})
    seeds = sorted(sweep.cells["seed"].unique())
    lines = [
        "## Which claims hold where (load x arrival model)",
        "",
        f"Sweep `{sweep.name}`: the testbed policies on traces 1-2 (800 jobs, 48 h of arrivals) at loads "
        f"{', '.join(f'{v:g}' for v in loads)}, arrivals {' and '.join(arrivals)}, seeds {', '.join(map(str, seeds))}. "
        "Each slice is judged as the headline table judges the testbed: Y = yes, w = weak, N = no, - = not measured. "
        "Figure: `fig_load.pdf`.",
        "",
    ]
    skipped, rows, frame = [], [], []
    for claim, row in verdicts.iterrows():
        marks = [MARK.get(row.get((a, v), "not measured"), "?") for a in arrivals for v in loads]
        if all(m == "-" for m in marks):  # a policy this sweep does not run
            skipped.append(str(claim))
            continue
        held = {a: [v for v in loads if row.get((a, v)) == "yes"] for a in arrivals}
        holds = "; ".join(f"{a}: {_ranges(held[a])}" for a in arrivals)
        rows.append([str(claim), *marks, holds])
        frame.append(
            {
                "claim": str(claim),
                **{f"{a}_load_{v:g}": row.get((a, v), "not measured") for a in arrivals for v in loads},
                **{f"{a}_holds_at_loads": ", ".join(f"{v:g}" for v in held[a]) for a in arrivals},
            }
        )
    header = ["claim", *(f"{a} {v:g}" for a in arrivals for v in loads), "holds (Y) at loads"]
    lines += [ReportTable("fig_load_verdicts", header, rows, pd.DataFrame(frame)), ""]
    if skipped:
        lines += [f"Not in this sweep (its policies did not run): {'; '.join(skipped)}.", ""]
    return lines
