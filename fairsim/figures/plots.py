"""Drawing blocks shared by the figures: grouped bars and points with intervals, the paper's
values beside ours, ECDFs, and the tables behind them (ratios to FFT, per-policy values)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace

import numpy as np
import pandas as pd
import seaborn as sns
from matplotlib.ticker import FuncFormatter, LogLocator, MaxNLocator, NullFormatter

from fairsim.errors import require
from fairsim.experiment.collect import distinct_settings
from fairsim.figures import portable, style
from fairsim.figures.reference import PaperValue, matching
from fairsim.figures.stats import (
    METHOD_NOTE,
    REFERENCE,
    hours_name,
    nonneg_ci,
    paired_ratios,
    positive_ci,
    ratio_ci,
    ratio_name,
    with_ratio_names,
)

HOUR = 1 / 3600
TABLE_COLUMNS = ["metric", "policy", "workload", "mean", "lo", "hi", "n"]


def ratio_table(
    cells: pd.DataFrame, metrics: Sequence[str], baselines: Sequence[str], group: str | None = "workload"
) -> pd.DataFrame:
    """baseline / FFT per seed, summarized per (metric, baseline, group value) as a geometric
    mean with its interval; ``group=None`` pools every trace (workload column "all")."""
    rows = []
    for metric in metrics:
        for baseline in baselines:
            ratios = paired_ratios(cells, metric, baseline)
            if ratios.empty:
                continue
            parts = ratios.groupby(level=group, sort=False) if group else [("all", ratios)]
            for value, part in parts:
                ci = ratio_ci(part)
                rows.append(
                    {
                        "metric": metric,
                        "policy": baseline,
                        group or "workload": value,
                        "mean": ci.mean,
                        "lo": ci.lo,
                        "hi": ci.hi,
                        "n": ci.n,
                    }
                )
    return pd.DataFrame(rows, columns=["metric", "policy", group or "workload", "mean", "lo", "hi", "n"])


def shown_name(metric: str, scale: float) -> str:
    """The metric's name in the unit it is drawn in (seconds shown in hours end in _h)."""
    return hours_name(metric) if scale == HOUR else metric


def value_table(cells: pd.DataFrame, metrics: Sequence[str], scale: float = 1.0, log: bool = False) -> pd.DataFrame:
    """Per (metric, policy, workload): mean and interval over seeds of metric * scale, a
    non-negative quantity (shares also capped at 1); ``log``: geometric mean and interval for a
    log axis. ``metric`` names the unit drawn."""
    rows = []
    for metric in metrics:
        upper = 1.0 if metric.endswith("_share") else None
        for (policy, workload), group in cells.groupby(["policy", "workload"], sort=False):
            values = group[metric].astype(float) * scale
            ci = positive_ci(values) if log else nonneg_ci(values, upper)
            rows.append(
                {
                    "metric": shown_name(metric, scale),
                    "policy": policy,
                    "workload": workload,
                    "mean": ci.mean,
                    "lo": ci.lo,
                    "hi": ci.hi,
                    "n": ci.n,
                }
            )
    return pd.DataFrame(rows, columns=TABLE_COLUMNS)


def _groups(table: pd.DataFrame, x: str, hue: str, x_order: Sequence[str], hue_order: Sequence[str]):
    """(hue value, x offsets, mean, lo, hi, width) per hue, in x order."""
    width = 0.8 / max(len(hue_order), 1)
    positions = np.arange(len(x_order))
    for j, h in enumerate(hue_order):
        part = table[table[hue] == h].set_index(x).reindex(list(x_order))
        yield (
            h,
            positions - 0.4 + width * (j + 0.5),
            part["mean"].to_numpy(float),
            part["lo"].to_numpy(float),
            part["hi"].to_numpy(float),
            width,
        )


def _whiskers(ax, offset, mean, lo, hi, color, fmt="none", **kw) -> None:
    """Error bars only where the interval is defined (n >= 2): no zero-width caps for one seed."""
    ok = np.isfinite(mean) & np.isfinite(lo) & np.isfinite(hi)
    if ok.any():
        ax.errorbar(
            offset[ok],
            mean[ok],
            yerr=np.vstack([mean[ok] - lo[ok], hi[ok] - mean[ok]]),
            fmt=fmt,
            ecolor=color,
            capsize=2,
            elinewidth=0.8,
            **kw,
        )


def ci_bars(
    ax,
    table: pd.DataFrame,
    x: str,
    hue: str,
    x_order: Sequence[str],
    hue_order: Sequence[str],
    colors: Callable[[str], object],
    x_label: Callable[[str], str],
    hue_label: Callable[[str], str],
    reference: float | None = None,
) -> dict:
    """Grouped bars of ``mean`` with asymmetric ``lo``/``hi`` error bars (none where undefined).
    Returns the x position of every (x value, hue value) for the paper's markers."""
    positions = {}
    for h, offset, mean, lo, hi, width in _groups(table, x, hue, x_order, hue_order):
        ax.bar(offset, np.nan_to_num(mean), width, color=colors(h), label=hue_label(h))
        _whiskers(ax, offset, mean, lo, hi, "black")
        positions.update({(v, h): o for v, o in zip(x_order, offset)})
    if reference is not None:
        ax.axhline(reference, color="black", linewidth=0.8, linestyle="--")
    ax.set_xticks(np.arange(len(x_order)), [x_label(v) for v in x_order], rotation=30, ha="right")
    ax.set_ylim(bottom=0)
    return positions


def ci_points(
    ax,
    table: pd.DataFrame,
    x: str,
    hue: str,
    x_order: Sequence[str],
    hue_order: Sequence[str],
    colors: Callable[[str], object],
    x_label: Callable[[str], str],
    hue_label: Callable[[str], str],
    reference: float | None = 1.0,
    markers: Callable[[str], str] | None = None,
) -> tuple[dict, list]:
    """Grouped points with interval whiskers on a log axis (2x and 1/2 equally far from 1), the
    axis spanning every whisker. For ratios and for positive values with outliers (rho). Returns
    the x position of every (x value, hue value) and the values the axis must span (for
    ``log_axis``, after the paper's values are added)."""
    positions, extent = {}, []
    for h, offset, mean, lo, hi, _ in _groups(table, x, hue, x_order, hue_order):
        ok = np.isfinite(mean) & (mean > 0)
        ax.plot(
            offset[ok],
            mean[ok],
            linestyle="none",
            marker=markers(h) if markers else "o",
            markersize=4,
            color=colors(h),
            label=hue_label(h),
        )
        _whiskers(ax, offset, mean, lo, hi, colors(h))
        positions.update({(v, h): o for v, o in zip(x_order, offset)})
        extent.extend(np.concatenate([mean[ok], lo[ok], hi[ok]]))
    if reference is not None:
        ax.axhline(reference, color="black", linewidth=0.8, linestyle="--")
        extent.append(reference)
    ax.set_xticks(np.arange(len(x_order)), [x_label(v) for v in x_order], rotation=30, ha="right")
    ax.set_xlim(-0.5, len(x_order) - 0.5)
    return positions, extent


def log_axis(ax, values: Sequence[float]) -> None:
    """Log y axis spanning every finite positive value (with a margin), plain-number ticks:
    1-2-5 per decade over wide ranges, 1-1.5-2-3-5-7 over a decade or so, about six evenly spaced
    ticks over narrow ones."""
    v = np.asarray([x for x in values if np.isfinite(x) and x > 0], dtype=float)
    bottom, top = (v.min() / 1.25, v.max() * 1.25) if len(v) else (0.5, 2.0)
    top = max(top, bottom * 2)
    ax.set_yscale(portable.LogScale())
    ax.set_ylim(bottom, top)
    span = top / bottom
    if span > 300:
        ax.yaxis.set_major_locator(LogLocator(base=10, subs=(1.0,)))
    elif span > 20:
        ax.yaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
    elif span > 2.5:
        ax.yaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 1.5, 2.0, 3.0, 5.0, 7.0)))
    else:
        ax.yaxis.set_major_locator(MaxNLocator(nbins=6))
    ax.yaxis.set_major_formatter(FuncFormatter(lambda y, _: f"{y:g}"))
    ax.yaxis.set_minor_formatter(NullFormatter())


def paper_marks(
    ax, values: Sequence[PaperValue], positions: dict, x_is: str, hue_is: str, x_order: Sequence[str]
) -> list[dict]:
    """Draw the paper's numbers beside ours, labelled "paper": a black x at the bar or point it
    matches; a black dash across the whole group when the paper gives one number for the group;
    a dotted line in the policy's colour across the panel when it matches no single group (e.g.
    "up to" over traces, where the x axis is the trace). Returns the rows drawn (for the CSV)."""
    rows = []
    for pv in values:
        keys = {"policy": pv.policy, "workload": pv.workload}
        x_val, hue_val = keys[x_is], keys[hue_is]
        if x_val is not None and hue_val is not None and (x_val, hue_val) in positions:
            ax.plot(
                [positions[(x_val, hue_val)]],
                [pv.value],
                linestyle="none",
                marker=style.PAPER_MARKER,
                color=style.PAPER_COLOR,
                markersize=6,
                markeredgewidth=1.4,
                label=style.PAPER_LABEL,
                zorder=5,
            )
        elif x_val is not None and x_val in x_order:
            centre = list(x_order).index(x_val)
            ax.hlines(
                pv.value,
                centre - 0.42,
                centre + 0.42,
                colors=style.PAPER_COLOR,
                linewidth=1.6,
                label=f"{style.PAPER_LABEL}, one value for the group",
                zorder=5,
            )
        elif x_val is None:
            color = style.color(pv.policy) if pv.policy else style.PAPER_COLOR
            ax.axhline(pv.value, color=color, linestyle=":", linewidth=1.2, zorder=1)
            ax.plot(
                [],
                [],
                color=style.PAPER_COLOR,
                linestyle=":",
                linewidth=1.2,  # legend entry only, in black
                label=f"{style.PAPER_LABEL}: {pv.qualifier or 'value'} (dotted, baseline's colour)",
            )
        else:
            continue
        if ax.get_yscale() == "linear":  # keep the paper's value inside a linear axis (log axes: log_axis)
            bottom, top = ax.get_ylim()
            ax.set_ylim(bottom, max(top, pv.value * 1.08))
        rows.append(
            {
                "panel_metric": pv.metric,
                "policy": pv.policy or "any",
                "workload": pv.workload or "any",
                "paper": pv.value,
                "qualifier": pv.qualifier,
            }
        )
    return rows


def workload_colors(workloads: Sequence[str]) -> Callable[[str], object]:
    palette = dict(zip(workloads, sns.color_palette("Set2", len(workloads))))
    return lambda w: palette[w]


def n_text(*tables: pd.DataFrame) -> str:
    """ "n = 3 seeds" (or "n = 2-3 seeds") over the rows of the tables that have an n column."""
    ns = [int(n) for t in tables if len(t) and "n" in t for n in t["n"].dropna() if n > 0]
    if not ns:
        return "n = 0"
    lo, hi = min(ns), max(ns)
    if hi == 1:
        return "n = 1 seed per point (no interval)"
    return f"n = {lo} seeds per point" if lo == hi else f"n = {lo}-{hi} seeds per point"


def footnote(fig, *tables: pd.DataFrame, extra: str = "") -> None:
    style.note(fig, " ".join(filter(None, [METHOD_NOTE, n_text(*tables) + ".", extra])))


def ecdf(ax, jobs: pd.DataFrame, value: str, policies: Sequence[str], scale: float = 1.0) -> pd.DataFrame:
    """One ECDF line per policy (all jobs of all seeds pooled); returns the quantiles drawn."""
    rows = []
    for policy in policies:
        values = np.sort(jobs.loc[jobs["policy"] == policy, value].to_numpy(float) * scale)
        values = values[np.isfinite(values)]
        if not len(values):
            continue
        frac = np.arange(1, len(values) + 1) / len(values)
        ax.step(values, frac, where="post", color=style.color(policy), label=style.label(policy), linewidth=1.1)
        for q in (0.1, 0.25, 0.5, 0.75, 0.9, 0.99, 1.0):
            rows.append(
                {
                    "policy": policy,
                    "quantile": q,
                    shown_name(value, scale): float(np.quantile(values, q)),
                    "jobs": len(values),
                }
            )
    ax.set_ylabel("fraction of jobs")
    ax.set_ylim(0, 1.01)
    return pd.DataFrame(rows)


def ratio_panel(
    ax,
    table: pd.DataFrame,
    baselines: Sequence[str],
    workloads: Sequence[str],
    by_trace: bool,
    paper: Sequence[PaperValue],
) -> list[dict]:
    """Baseline / FFT points on a log axis with the paper's values; grouped by baseline with one
    point per trace, or (``by_trace``) by trace with one point per baseline."""
    if by_trace:
        positions, extent = ci_points(
            ax,
            table,
            "workload",
            "policy",
            workloads,
            baselines,
            style.color,
            style.workload_label,
            style.label,
            markers=style.marker,
        )
        drawn = paper_marks(ax, paper, positions, "workload", "policy", workloads)
    else:
        positions, extent = ci_points(
            ax,
            table,
            "policy",
            "workload",
            baselines,
            workloads,
            workload_colors(workloads),
            style.label,
            style.workload_label,
        )
        drawn = paper_marks(ax, paper, positions, "policy", "workload", baselines)
    log_axis(ax, extent + [r["paper"] for r in drawn])
    return drawn


POOLED_SHADES = ("0.15", "0.55", "0.75")  # metric hues of a pooled ratio panel (policy colours are taken)
POOLED_MARKERS = ("o", "s", "D")


def pooled_ratio_panel(
    ax, cells: pd.DataFrame, metrics: dict[str, str], baselines: Sequence[str], paper: Sequence[PaperValue]
) -> tuple[pd.DataFrame, list[dict]]:
    """Baseline / FFT with every trace pooled, one point per (baseline, metric), on a log axis,
    with the paper's trace-independent ratios beside the matching point. For claims the paper
    makes for a whole setting ("mean rho reduction vs Gavel on the testbed: 1.64x")."""
    table = ratio_table(cells, list(metrics), baselines, group=None)
    present = [b for b in baselines if b in set(table["policy"])]
    shade = dict(zip(metrics, POOLED_SHADES))
    mark = dict(zip(metrics, POOLED_MARKERS))
    positions, extent = ci_points(
        ax,
        table,
        "policy",
        "metric",
        present,
        list(metrics),
        shade.get,
        style.label,
        lambda m: f"{metrics[m]}, baseline / FFT",
        markers=mark.get,
    )
    drawn = []
    for metric in metrics:  # ratio_table's "workload" column holds the metric here
        marks = [replace(v, workload=metric) for v in matching(paper, "ratio", metric) if v.workload is None]
        drawn += paper_marks(ax, marks, positions, "policy", "workload", present)
    log_axis(ax, extent + [r["paper"] for r in drawn])
    ax.set_ylabel("baseline / FFT")
    # the data name each metric as the ratio it is (the paper's marks carry the metric in both columns)
    drawn = [{**r, **{k: ratio_name(r[k]) for k in ("metric", "workload") if r.get(k) in metrics}} for r in drawn]
    return with_ratio_names(table.assign(workload="all")), drawn


def ratio_figure(
    cells: pd.DataFrame,
    metrics: dict[str, str],
    out_dir,
    stem: str,
    title: str,
    paper: Sequence[PaperValue],
    by_trace: bool = False,
    baselines: Sequence[str] | None = None,
) -> list:
    """One panel per metric of baseline / FFT ratios (log axis), the paper's values beside them.
    Figs. 7, 11, 12."""
    if baselines is None:
        baselines = [p for p in style.policy_order(cells["policy"]) if p != REFERENCE]
    table = ratio_table(cells, list(metrics), baselines)
    workloads = style.workload_order(table["workload"]) if len(table) else []
    paper_rows = []
    with style.paper_style():
        fig, axes = style.new_figure(len(metrics), width=4.2 if by_trace else 3.4)
        for ax, (metric, ylabel) in zip(axes[0], metrics.items()):
            part = table[table["metric"] == metric]
            present = [b for b in baselines if b in set(part["policy"])]
            paper_rows += ratio_panel(ax, part, present, workloads, by_trace, matching(paper, "ratio", metric))
            ax.set_ylabel(ylabel)
            ax.set_title(ylabel.replace(" / FFT", ""))
        style.panel_letters(axes[0])
        style.legend_outside(fig, axes[0])
        footnote(fig, table, extra="Dashed line: 1 (parity).")
        fig.suptitle(title, fontsize=9)
        return style.save(fig, out_dir, stem, with_ratio_names(with_paper(table, paper_rows)))


def with_paper(table: pd.DataFrame, paper_rows: list[dict]) -> pd.DataFrame:
    """The plotted table plus one row per paper value drawn (column ``paper``)."""
    if not paper_rows:
        return table
    paper = pd.DataFrame(paper_rows).rename(columns={"panel_metric": "metric"}).drop_duplicates()
    return pd.concat([table.assign(source="ours"), paper.assign(source="paper")], ignore_index=True)


def refuse_settings(cells: pd.DataFrame, axes: Sequence[str], folder) -> None:
    """One-line refusal of a sweep whose cells vary beyond what the figure draws (``axes``; the
    seeds pooled): it would pool distinct settings as seeds."""
    settings = distinct_settings(cells, axes)
    require(
        not settings,
        str(folder),
        "settings",
        f"{', '.join(settings)} vary beyond {', '.join(axes)}: this figure "
        "would pool them as seeds; draw a sweep that varies only those",
    )


def distribution_figure(
    sweep,
    job_value: str,
    xlabel: str,
    panels: dict[str, tuple[str, str]],
    out_dir,
    stem: str,
    title: str,
    scale: float = 1.0,
    xscale: str = "linear",
    cdf_reference: float | None = None,
    extra_panel: Callable | None = None,
    paper: Sequence[PaperValue] = (),
) -> list:
    """Per-job ECDF of ``job_value`` for each trace (policies as lines; ``extra_panel(ax)`` may
    fill the rest of the top row), then one panel per run-level metric, each (ylabel, "bars" for
    linear bars from 0, or "log" for points on a log axis), with the paper's values. ``xscale``
    of the CDFs: linear, log or symlog. Figs. 8, 9."""
    if xscale not in ("linear", "log", "symlog"):
        raise ValueError(f"xscale must be linear, log or symlog, got {xscale!r}")
    cells = sweep.cells
    refuse_settings(cells, ("policy", "workload", "seed"), sweep.folder)
    jobs = sweep.jobs()
    policies = style.policy_order(cells["policy"])
    workloads = style.workload_order(cells["workload"])
    colors = workload_colors(workloads)
    tables, paper_rows = [], []
    ncols = max(len(workloads) + (extra_panel is not None), len(panels))
    with style.paper_style():
        fig, axes = style.new_figure(ncols, nrows=2)
        for ax, workload in zip(axes[0], workloads):
            quantiles = ecdf(ax, jobs[jobs["workload"] == workload], job_value, policies, scale)
            tables.append(quantiles.assign(panel="cdf", workload=workload))
            ax.set_xlabel(xlabel)
            ax.set_title(f"CDF, {style.workload_label(workload)}")
            if xscale == "symlog":  # most jobs wait 0 h: linear near zero, logarithmic in the tail
                ax.set_xscale(portable.SymmetricalLogScale(linthresh=0.1))
                ax.set_xlim(left=0)
            elif xscale == "log":
                ax.set_xscale(portable.LogScale())
                lo, hi = ax.dataLim.intervalx
                decades = float(portable.log10(hi / lo)) if lo > 0 and hi > lo else 0.0
                # 1-2-5 ticks over a few decades; over many, LogLocator drops sub-decade ticks
                # altogether (no labels at all), so label the decades only
                ax.xaxis.set_major_locator(
                    LogLocator(base=10, subs=(1.0, 2.0, 5.0) if decades <= 3 else (1.0,), numticks=12)
                )
                ax.xaxis.set_major_formatter(FuncFormatter(lambda x, _: f"{x:g}"))
            ax.xaxis.set_minor_formatter(NullFormatter())
            if cdf_reference is not None:
                ax.axvline(cdf_reference, color="black", linewidth=0.8, linestyle="--")
        if extra_panel is not None:
            extra_table, extra_paper = extra_panel(axes[0][len(workloads)])
            tables.append(extra_table.assign(panel="ratios"))
            paper_rows += extra_paper
        values = pd.concat(
            [value_table(cells, [m], scale, log=kind == "log") for m, (_, kind) in panels.items()], ignore_index=True
        )
        for ax, (metric, (ylabel, kind)) in zip(axes[1], panels.items()):
            part = values[values["metric"] == shown_name(metric, scale)]
            marks = matching(paper, "value", metric)
            if kind == "log":
                positions, extent = ci_points(
                    ax,
                    part,
                    "policy",
                    "workload",
                    policies,
                    workloads,
                    colors,
                    style.label,
                    style.workload_label,
                    reference=1.0 if metric.startswith("rho") else None,
                )
                drawn = paper_marks(ax, marks, positions, "policy", "workload", policies)
                log_axis(ax, extent + [r["paper"] for r in drawn])
                paper_rows += drawn
            else:
                positions = ci_bars(
                    ax, part, "policy", "workload", policies, workloads, colors, style.label, style.workload_label
                )
                paper_rows += paper_marks(ax, marks, positions, "policy", "workload", policies)
            ax.set_ylabel(ylabel)
            ax.set_title(ylabel)
        used = [*axes[0][: len(workloads) + (extra_panel is not None)], *axes[1][: len(panels)]]
        for ax in axes.ravel():
            ax.set_visible(ax in used)
        style.panel_letters(used)
        style.legend_outside(fig, used)
        pooled = ""
        if extra_panel is not None and len(extra_table):
            pairs = sorted({int(n) for n in extra_table["n"].dropna()})
            pooled = (
                f"Panel ({'abcdefgh'[len(workloads)]}) pools the traces: n = "
                f"{'-'.join(map(str, (pairs[0], pairs[-1]) if len(pairs) > 1 else pairs))} trace-seed pairs per point."
            )
        footnote(fig, values, extra=" ".join(filter(None, [pooled, "CDFs pool every job of every seed."])))
        fig.suptitle(title, fontsize=9)
        data = pd.concat([*tables, values.assign(panel="bars")], ignore_index=True)
        return style.save(fig, out_dir, stem, with_paper(data, paper_rows))
