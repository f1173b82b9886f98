"""A quick look at any sweep: mean JCT and mean rho per policy against load (95% intervals over
seeds), drawn from the sweep's results.parquet into <sweep>/figures/summary.{pdf,png}.

    python -m fairsim.figures.sweep_summary results/sweeps/smoke

The CI smoke sweep ends with it, so CI exercises the whole path from Hydra to a figure.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pandas as pd

from fairsim.experiment.run_folder import RESULTS
from fairsim.figures.plots import (
    HOUR,
    ci_bars,
    ci_points,
    footnote,
    log_axis,
    shown_name,
)
from fairsim.figures.stats import summarize_groups
from fairsim.figures.style import (
    color,
    label,
    legend_outside,
    marker,
    new_figure,
    panel_letters,
    paper_style,
    policy_order,
    save,
)

# metric -> (axis label, scale, drawing): bars from 0, or points on a log axis (rho has outliers)
PANELS = {"avg_jct_s": ("mean JCT, lower is better", "hours", HOUR, "bars"),
          "rho_fluid_mean": ("mean rho (fluid T_id), lower is fairer", "rho (log scale)", 1.0, "log")}


def draw(sweep_dir: Path) -> list[Path]:
    """<sweep>/figures/summary.{pdf,png} and figures/data/summary.csv; the csv's ``metric`` names
    the unit drawn (avg_jct_h is hours)."""
    sweep_dir = Path(sweep_dir)
    cells = pd.read_parquet(sweep_dir / RESULTS)
    loads = [str(v) for v in sorted(cells["load"].unique())]
    policies = policy_order(cells["policy"])
    cells = cells.assign(load=cells["load"].astype(str))
    tables = []
    with paper_style():
        fig, axes = new_figure(len(PANELS))
        for ax, (metric, (title, ylabel, scale, kind)) in zip(axes[0], PANELS.items()):
            table = summarize_groups(cells.assign(value=cells[metric].astype(float) * scale), "value", ["policy", "load"],
                                     log=kind == "log")
            if kind == "log":
                _, extent = ci_points(ax, table, "load", "policy", loads, policies, color, lambda v: f"load {v}", label,
                                      markers=marker)
                log_axis(ax, extent)
            else:
                ci_bars(ax, table, "load", "policy", loads, policies, color, lambda v: f"load {v}", label)
            ax.set_ylabel(ylabel)
            ax.set_title(title)
            tables.append(table.assign(metric=shown_name(metric, scale)))
        panel_letters(axes[0])
        legend_outside(fig, axes[0])
        footnote(fig, *tables)
        fig.suptitle(f"sweep {sweep_dir.name}", fontsize=9)
        return save(fig, sweep_dir / "figures", "summary", pd.concat(tables, ignore_index=True))


def main(argv: list[str]) -> int:
    if len(argv) != 1 or not (Path(argv[0]) / RESULTS).is_file():
        print("usage: python -m fairsim.figures.sweep_summary <sweep folder with results.parquet>", file=sys.stderr)
        return 2
    for path in draw(Path(argv[0])):
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
