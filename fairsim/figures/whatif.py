"""The what-if figure (python -m fairsim.whatif): per candidate cluster and policy, (a) mean JCT
against the cluster's price per hour, the JCT target dashed and the cheapest cluster meeting it
ringed, and (b) the run's energy against its cost. Each point is labelled with its cluster."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from fairsim.figures.style import (
    color,
    label,
    legend_outside,
    marker,
    new_figure,
    note,
    panel_letters,
    paper_style,
    save,
)

PANELS = (
    ("cost_per_h_usd", "avg_jct_h", "cluster price, USD per hour", "mean JCT, hours", "JCT against price"),
    ("cost_per_run_usd", "energy_kwh", "cost of the run, USD", "energy of the run, kWh", "energy against cost"),
)


def draw(table: pd.DataFrame, target_h: float, out_dir: Path, stem: str = "whatif") -> list[Path]:
    """<out_dir>/<stem>.{pdf,png}; the table's columns as fairsim.whatif.table builds them."""
    with paper_style():
        fig, axes = new_figure(len(PANELS), width=3.6, height=3.0)
        for ax, (x, y, xlabel, ylabel, title) in zip(axes[0], PANELS):
            for policy, part in table.groupby("policy", sort=False):
                ax.scatter(part[x], part[y], color=color(policy), marker=marker(policy), s=28, label=label(policy))
                for _, row in part.iterrows():
                    ax.annotate(
                        row["cluster"], (row[x], row[y]), fontsize=5.5, xytext=(3, 3), textcoords="offset points"
                    )
            best = table[table["cheapest"]]
            ax.scatter(best[x], best[y], s=150, facecolors="none", edgecolors="black", linewidths=1.0,
                       label="cheapest meeting the target")  # fmt: skip
            ax.set_xlabel(xlabel)
            ax.set_ylabel(ylabel)
            ax.set_title(title)
        axes[0][0].axhline(target_h, color="0.4", linestyle="--", linewidth=0.8, label=f"JCT target {target_h:g} h")
        panel_letters(axes[0])
        legend_outside(fig, axes[0])
        unpriced = sorted(set(table.loc[~np.isfinite(table["cost_per_h_usd"]), "cluster"]))
        note(
            fig,
            "One point per candidate cluster and policy; cost: every provisioned GPU for the run's span."
            + (f" Not drawn, a GPU type without a price: {', '.join(unpriced)}." if unpriced else ""),
        )
        return save(fig, out_dir, stem)
