"""A quick look at any sweep: mean JCT and mean rho per policy against load (95% intervals over
seeds), drawn from the sweep's results.parquet into <sweep>/figures/summary.{pdf,png}.

    python -m fairsim.figures.sweep_summary results/sweeps/smoke

Seeds are the only thing pooled: a sweep that varies anything else (a preset beside the policy,
a variant, any config key among cells of one policy, ``fairsim.experiment.collect.distinct_settings``)
gets one series per policy and setting, or, past ``MAX_SERIES`` series, a one-line refusal
naming the settings (exit 2). The footnote states n per point and the settings drawn.

The CI smoke sweep ends with it, so CI exercises the whole path from Hydra to a figure.
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

import pandas as pd
import seaborn as sns

from fairsim.errors import InputError, require
from fairsim.experiment.collect import distinct_settings
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
PANELS = {
    "avg_jct_s": ("mean JCT, lower is better", "hours", HOUR, "bars"),
    "rho_fluid_mean": ("mean rho (fluid T_id), lower is fairer", "rho (log scale)", 1.0, "log"),
}
AXES = ("policy", "load", "seed")  # series, x axis, pooled: anything else that varies is a setting
MAX_SERIES = 12  # series a panel shows legibly (bars per load group, legend entries)


def shown(value) -> str:
    """A setting's value in a label: as written, ``none`` for a cell without that key."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "none"
    return str(value)


def with_series(cells: pd.DataFrame, settings: list[str]) -> tuple[pd.DataFrame, list[str], dict[str, str]]:
    """``cells`` with a ``series`` column (the policy, then each setting's value), the series in
    drawing order (policies in display order, settings sorted), and each series' legend label."""
    shown_settings = cells[settings].map(shown) if settings else pd.DataFrame(index=cells.index)
    keys = [
        " | ".join([p, *(f"{k}={v}" for k, v in zip(settings, row))])
        for p, row in zip(cells["policy"], shown_settings.itertuples(index=False))
    ]
    cells = cells.assign(series=keys, **{k: shown_settings[k] for k in settings})
    order = [s for p in policy_order(cells["policy"]) for s in sorted(set(cells.loc[cells["policy"] == p, "series"]))]
    labels = {s: ", ".join([label(s.split(" | ")[0]), *s.split(" | ")[1:]]) for s in order}
    return cells, order, labels


def draw(sweep_dir: Path) -> list[Path]:
    """<sweep>/figures/summary.{pdf,png} and figures/data/summary.csv; the csv's ``metric`` names
    the unit drawn (avg_jct_h is hours), one column per setting when there are any."""
    sweep_dir = Path(sweep_dir)
    cells = pd.read_parquet(sweep_dir / RESULTS)
    settings = distinct_settings(cells, AXES)
    loads = [str(v) for v in sorted(cells["load"].unique())]
    cells, series, labels = with_series(cells.assign(load=cells["load"].astype(str)), settings)
    require(
        len(series) <= MAX_SERIES,
        str(sweep_dir / RESULTS),
        "settings",
        f"{', '.join(settings)} vary beyond policy, load and seed: {len(series)} series of policy x setting, more "
        f"than one figure shows ({MAX_SERIES}); draw a sweep that varies fewer",
    )
    if settings:  # one colour per series: the policies' own colours cannot tell a policy's settings apart
        palette = dict(zip(series, sns.color_palette("tab10" if len(series) <= 10 else "tab20", len(series))))
        colors, markers = palette.get, lambda s: marker(s.split(" | ")[0])
    else:
        colors, markers = color, marker
    tables = []
    with paper_style():
        fig, axes = new_figure(len(PANELS))
        for ax, (metric, (title, ylabel, scale, kind)) in zip(axes[0], PANELS.items()):
            table = summarize_groups(
                cells.assign(value=cells[metric].astype(float) * scale),
                "value",
                ["series", "policy", *settings, "load"],
                log=kind == "log",
            )
            if kind == "log":
                _, extent = ci_points(
                    ax,
                    table,
                    "load",
                    "series",
                    loads,
                    series,
                    colors,
                    lambda v: f"load {v}",
                    labels.get,
                    markers=markers,
                )
                log_axis(ax, extent)
            else:
                ci_bars(ax, table, "load", "series", loads, series, colors, lambda v: f"load {v}", labels.get)
            ax.set_ylabel(ylabel)
            ax.set_title(title)
            tables.append(table.drop(columns="series").assign(metric=shown_name(metric, scale)))
        panel_letters(axes[0])
        legend_outside(fig, axes[0])
        footnote(fig, *tables, extra=f"Series: policy x {', '.join(settings)}." if settings else "")
        fig.suptitle(f"sweep {sweep_dir.name}", fontsize=9)
        return save(fig, sweep_dir / "figures", "summary", pd.concat(tables, ignore_index=True))


def main(argv: list[str]) -> int:
    if len(argv) != 1 or not (Path(argv[0]) / RESULTS).is_file():
        print("usage: python -m fairsim.figures.sweep_summary <sweep folder with results.parquet>", file=sys.stderr)
        return 2
    try:
        paths = draw(Path(argv[0]))
    except InputError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    for path in paths:
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
