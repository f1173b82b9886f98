"""Drawing blocks shared by the figures: grouped bars with confidence intervals, ECDFs, and the
tables behind them (ratios to FFT per group, per-policy means)."""

from __future__ import annotations

from typing import Callable, Sequence

import numpy as np
import pandas as pd
import seaborn as sns
from matplotlib.ticker import FuncFormatter, LogLocator, MaxNLocator, NullFormatter

from fairsim.figures import style
from fairsim.figures.stats import mean_ci, paired_ratios, summarize_groups


def ratio_table(cells: pd.DataFrame, metrics: Sequence[str], baselines: Sequence[str],
                group: str = "workload") -> pd.DataFrame:
    """baseline / FFT per seed, summarized per (metric, baseline, group value): mean, lo, hi, n."""
    rows = []
    for metric in metrics:
        for baseline in baselines:
            ratios = paired_ratios(cells, metric, baseline)
            if ratios.empty:
                continue
            for value, part in ratios.groupby(level=group, sort=False):
                ci = mean_ci(part)
                rows.append({"metric": metric, "policy": baseline, group: value,
                             "mean": ci.mean, "lo": ci.lo, "hi": ci.hi, "n": ci.n})
    return pd.DataFrame(rows, columns=["metric", "policy", group, "mean", "lo", "hi", "n"])


def value_table(cells: pd.DataFrame, metrics: Sequence[str], scale: float = 1.0) -> pd.DataFrame:
    """Per (metric, policy, workload): mean and CI over seeds of metric * scale."""
    parts = []
    for metric in metrics:
        scaled = cells.assign(value=cells[metric].astype(float) * scale)
        parts.append(summarize_groups(scaled, "value", ["policy", "workload"]).assign(metric=metric))
    cols = ["metric", "policy", "workload", "mean", "lo", "hi", "n"]
    return pd.concat(parts, ignore_index=True)[cols] if parts else pd.DataFrame(columns=cols)


def _groups(table: pd.DataFrame, x: str, hue: str, x_order: Sequence[str], hue_order: Sequence[str]):
    """(hue value, x offsets, mean, [lower, upper] error lengths) per hue, NaN errors as 0."""
    width = 0.8 / max(len(hue_order), 1)
    positions = np.arange(len(x_order))
    for j, h in enumerate(hue_order):
        part = table[table[hue] == h].set_index(x).reindex(list(x_order))
        mean = part["mean"].to_numpy(float)
        err = np.vstack([mean - part["lo"].to_numpy(float), part["hi"].to_numpy(float) - mean])
        yield h, positions - 0.4 + width * (j + 0.5), mean, np.where(np.isfinite(err), err, 0.0), width


def ci_bars(ax, table: pd.DataFrame, x: str, hue: str, x_order: Sequence[str], hue_order: Sequence[str],
            colors: Callable[[str], object], x_label: Callable[[str], str], hue_label: Callable[[str], str],
            reference: float | None = None) -> None:
    """Grouped bars of ``mean`` with asymmetric ``lo``/``hi`` error bars (none where undefined)."""
    for h, offset, mean, err, width in _groups(table, x, hue, x_order, hue_order):
        ax.bar(offset, np.nan_to_num(mean), width, color=colors(h), label=hue_label(h),
               yerr=err, capsize=2, error_kw={"elinewidth": 0.8})
    if reference is not None:
        ax.axhline(reference, color="black", linewidth=0.8, linestyle="--")
    ax.set_xticks(np.arange(len(x_order)), [x_label(v) for v in x_order], rotation=30, ha="right")


def ci_points(ax, table: pd.DataFrame, x: str, hue: str, x_order: Sequence[str], hue_order: Sequence[str],
              colors: Callable[[str], object], x_label: Callable[[str], str], hue_label: Callable[[str], str]) -> None:
    """Ratios as grouped points with CI whiskers on a log axis (2x and 1/2 equally far from 1).
    A lower bound <= 0 (wide t-interval) is drawn down to the axis edge; the CSV keeps its value."""
    means = []
    for h, offset, mean, err, _ in _groups(table, x, hue, x_order, hue_order):
        ok = np.isfinite(mean) & (mean > 0)
        low = np.minimum(err[0], mean * (1 - 1e-3))  # keep the whisker's end positive for the log axis
        ax.errorbar(offset[ok], mean[ok], yerr=np.vstack([low, err[1]])[:, ok], fmt="o", markersize=4, capsize=2,
                    elinewidth=0.8, color=colors(h), label=hue_label(h))
        means.extend(mean[ok])
    ax.axhline(1.0, color="black", linewidth=0.8, linestyle="--")
    log_ratio_axis(ax, means)
    ax.set_xticks(np.arange(len(x_order)), [x_label(v) for v in x_order], rotation=30, ha="right")


def log_ratio_axis(ax, means: Sequence[float]) -> None:
    """Log y axis from a quarter of the smallest mean (whiskers reaching lower are cut at the
    edge) to the data's top, with plain-number ticks: 1-2-5 per decade over wide ranges,
    about five evenly spaced ticks over narrow ones."""
    ax.set_yscale("log")
    top = ax.get_ylim()[1]
    bottom = min([*means, 1.0]) / 4 if len(means) else 0.25
    ax.set_ylim(bottom, max(top, 1.5))
    wide = ax.get_ylim()[1] / bottom > 20
    ax.yaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)) if wide else MaxNLocator(nbins=6))
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    ax.yaxis.set_minor_formatter(NullFormatter())


def workload_colors(workloads: Sequence[str]) -> Callable[[str], object]:
    palette = dict(zip(workloads, sns.color_palette("Set2", len(workloads))))
    return lambda w: palette[w]


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
            rows.append({"policy": policy, "quantile": q, value: float(np.quantile(values, q)), "jobs": len(values)})
    ax.set_ylabel("fraction of jobs")
    ax.set_ylim(0, 1.01)
    return pd.DataFrame(rows)


def ratio_figure(cells: pd.DataFrame, metrics: dict[str, str], out_dir, stem: str, title: str,
                 by_trace: bool = False, baselines: Sequence[str] | None = None) -> list:
    """One panel per metric of baseline / FFT ratios with CIs (log axis). Grouped by baseline with
    one point per trace, or (``by_trace``) grouped by trace with one point per baseline."""
    from fairsim.figures.stats import REFERENCE

    if baselines is None:
        baselines = [p for p in style.policy_order(cells["policy"]) if p != REFERENCE]
    table = ratio_table(cells, list(metrics), baselines)
    workloads = style.workload_order(table["workload"]) if len(table) else []
    trace_label = lambda w: style.WORKLOAD_LABELS.get(w, w)  # noqa: E731
    with style.paper_style():
        fig, axes = style.new_figure(len(metrics), width=4.2 if by_trace else 3.2)
        for ax, (metric, ylabel) in zip(axes[0], metrics.items()):
            part = table[table["metric"] == metric]
            present = [b for b in baselines if b in set(part["policy"])]
            if by_trace:
                ci_points(ax, part, "workload", "policy", workloads, present, style.color, trace_label, style.label)
            else:
                ci_points(ax, part, "policy", "workload", present, workloads, workload_colors(workloads),
                          style.label, trace_label)
            ax.set_ylabel(ylabel)
        axes[0][0].legend(loc="upper left", ncols=2 if by_trace else 1)
        fig.suptitle(title, fontsize=9)
        return style.save(fig, out_dir, stem, table)


def distribution_figure(sweep, job_value: str, xlabel: str, bar_metrics: dict[str, str], out_dir, stem: str,
                        title: str, scale: float = 1.0, xscale: str = "linear") -> list:
    """Per-job ECDF of ``job_value`` for each trace (policies as lines), then one panel per
    run-level metric: mean over seeds with 95% CI, one bar per trace. Figs. 8 and 9."""
    cells = sweep.cells
    jobs = sweep.jobs()
    policies = style.policy_order(cells["policy"])
    workloads = style.workload_order(cells["workload"])
    trace_label = lambda w: style.WORKLOAD_LABELS.get(w, w)  # noqa: E731
    tables = []
    with style.paper_style():
        fig, axes = style.new_figure(max(len(workloads), len(bar_metrics)), nrows=2)
        for ax, workload in zip(axes[0], workloads):
            quantiles = ecdf(ax, jobs[jobs["workload"] == workload], job_value, policies, scale)
            tables.append(quantiles.assign(panel="cdf", workload=workload))
            ax.set_xlabel(xlabel)
            ax.set_title(f"CDF, {trace_label(workload)}")
            if xscale == "symlog":  # most jobs wait 0 h: linear near zero, logarithmic in the tail
                ax.set_xscale("symlog", linthresh=0.1)
                ax.set_xlim(left=0)
            elif xscale != "linear":
                ax.set_xscale(xscale)
            ax.xaxis.set_minor_formatter(NullFormatter())
        axes[0][0].legend(loc="lower right")
        values = value_table(cells, list(bar_metrics), scale)
        for ax, (metric, ylabel) in zip(axes[1], bar_metrics.items()):
            part = values[values["metric"] == metric]
            ci_bars(ax, part, "policy", "workload", policies, workloads, workload_colors(workloads),
                    style.label, trace_label)
            ax.set_ylabel(ylabel)
        axes[1][0].legend(loc="upper left")
        for ax in [*axes[0][len(workloads):], *axes[1][len(bar_metrics):]]:
            ax.set_visible(False)
        fig.suptitle(title, fontsize=9)
        data = pd.concat([*tables, values.assign(panel="bars")], ignore_index=True)
        return style.save(fig, out_dir, stem, data)
