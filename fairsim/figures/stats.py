"""Summaries over seeds that respect the quantity, and per-seed ratios of a baseline to FFT.

Three kinds of number, three intervals (all 95%, all deterministic: no resampling):
- ratios (baseline / FFT, always > 0): ``ratio_interval``, the geometric mean with a Student-t
  interval of the log ratios, exp(mean(log r) +- t * s_log / sqrt(n)). Always positive, and 2x
  and 1/2 are equally far from 1, as on the figures' log axes.
- positive quantities drawn on a log axis (rho, max starvation): ``positive_ci``, the same
  geometric mean and interval as for ratios.
- other non-negative quantities (hours, counts, shares): ``nonneg_interval``, the arithmetic mean
  with its t-interval cut to the quantity's range ([0, inf), or [0, 1] for shares). The true mean
  lies in that range, so cutting the interval there keeps its coverage.
- signed quantities (paired differences): ``mean_ci``, the plain t-interval.
With one value the interval is undefined (NaN), never a fake zero-width interval.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import stats

from fairsim.figures.portable import exp, log

REFERENCE = "ours"  # ratios are "baseline / FFT", as in the paper
LEVEL = 0.95

# One sentence for captions, figure notes and REPORT.md.
METHOD_NOTE = (
    "Error bars: 95% intervals over seeds; ratios and values on log axes: geometric mean with a "
    "t-interval of the logs; other non-negative values: mean with a t-interval cut at 0."
)


@dataclass(frozen=True)
class Interval:
    mean: float
    lo: float
    hi: float
    n: int

    def excludes(self, value: float) -> bool:
        return bool(np.isfinite(self.lo) and (self.lo > value or self.hi < value))


def _finite(values: Iterable[float]) -> np.ndarray:
    a = np.asarray(list(values), dtype=float)
    return a[np.isfinite(a)]


def _half_width(a: np.ndarray, level: float) -> float:
    return float(stats.t.ppf(0.5 + level / 2, len(a) - 1) * a.std(ddof=1) / np.sqrt(len(a)))


def mean_ci(values: Iterable[float], level: float = LEVEL) -> Interval:
    """Mean and t-interval of the finite values (NaN entries are dropped). For signed quantities."""
    a = _finite(values)
    n = len(a)
    if n == 0:
        return Interval(float("nan"), float("nan"), float("nan"), 0)
    mean = float(a.mean())
    if n == 1:
        return Interval(mean, float("nan"), float("nan"), 1)
    half = _half_width(a, level)
    return Interval(mean, mean - half, mean + half, n)


def nonneg_ci(values: Iterable[float], upper: float | None = None, level: float = LEVEL) -> Interval:
    """Mean and t-interval of a quantity that cannot be negative (or exceed ``upper``), the
    interval cut to [0, upper]."""
    ci = mean_ci(values, level)
    if not np.isfinite(ci.lo):
        return ci
    hi = ci.hi if upper is None else min(ci.hi, upper)
    return Interval(ci.mean, max(ci.lo, 0.0), hi, ci.n)


def positive_ci(values: Iterable[float], level: float = LEVEL) -> Interval:
    """Geometric mean of positive values with the exp of the t-interval of their logs: for ratios
    and for positive quantities drawn on a log axis. Entries <= 0 have no logarithm and are
    dropped like NaN (n counts only the values used)."""
    a = _finite(values)
    a = a[a > 0]
    if len(a) == 0:
        return Interval(float("nan"), float("nan"), float("nan"), 0)
    logs = log(a)  # log and exp with the same bits on every CPU (fairsim.figures.portable)
    centre = float(logs.mean())
    if len(a) == 1:
        return Interval(float(exp(centre)), float("nan"), float("nan"), 1)
    half = _half_width(logs, level)
    return Interval(float(exp(centre)), float(exp(centre - half)), float(exp(centre + half)), len(a))


def ratio_ci(ratios: Iterable[float], level: float = LEVEL) -> Interval:
    """Geometric mean of ratios (baseline / FFT) with the exp of the t-interval of their logs."""
    return positive_ci(ratios, level)


def ratio_interval(ratios: Iterable[float], level: float = LEVEL) -> tuple[float, float, float]:
    """(geometric mean, lo, hi) of ratios; lo > 0 always (NaN bounds with fewer than 2 ratios)."""
    ci = ratio_ci(ratios, level)
    return ci.mean, ci.lo, ci.hi


def nonneg_interval(
    values: Iterable[float], upper: float | None = None, level: float = LEVEL
) -> tuple[float, float, float]:
    """(mean, lo, hi) of a non-negative quantity; lo >= 0 always (NaN bounds with fewer than 2 values)."""
    ci = nonneg_ci(values, upper, level)
    return ci.mean, ci.lo, ci.hi


def _paired(
    cells: pd.DataFrame, metric: str, first: str, second: str, by: tuple[str, ...]
) -> tuple[pd.Series, pd.Series]:
    """metric of two policies on the (workload, seed) pairs both ran, aligned and sorted."""
    table = cells.set_index(["policy", *by])[metric].astype(float)
    policies = set(table.index.get_level_values(0))
    if first not in policies or second not in policies:
        empty = pd.Series(dtype=float)
        return empty, empty
    a, b = table.xs(first, level=0), table.xs(second, level=0)
    common = a.index.intersection(b.index).sort_values()
    return a.loc[common], b.loc[common]


def paired_ratios(
    cells: pd.DataFrame,
    metric: str,
    baseline: str,
    reference: str = REFERENCE,
    by: tuple[str, ...] = ("workload", "seed"),
) -> pd.Series:
    """metric(baseline) / metric(reference) for every (workload, seed) both policies ran, indexed
    by ``by``. Pairing by seed compares the two policies on the very same trace."""
    base, ref = _paired(cells, metric, baseline, reference, by)
    return base / ref


def paired_differences(
    cells: pd.DataFrame, metric: str, other: str, reference: str = REFERENCE, by: tuple[str, ...] = ("workload", "seed")
) -> pd.Series:
    """metric(reference) - metric(other) for every (workload, seed) both policies ran."""
    other_s, ref = _paired(cells, metric, other, reference, by)
    return ref - other_s


def summarize_groups(
    cells: pd.DataFrame, value: str, keys: list[str], upper: float | None = None, log: bool = False
) -> pd.DataFrame:
    """One row per group of ``keys``: mean, lo, hi, n of the non-negative ``value`` (interval cut
    to [0, upper]; ``log``: geometric mean and interval, for a log axis)."""
    rows = []
    for key, group in cells.groupby(keys, sort=False):
        ci = positive_ci(group[value]) if log else nonneg_ci(group[value], upper)
        rows.append(
            {
                **dict(zip(keys, key if isinstance(key, tuple) else (key,))),
                "mean": ci.mean,
                "lo": ci.lo,
                "hi": ci.hi,
                "n": ci.n,
            }
        )
    return pd.DataFrame(rows, columns=[*keys, "mean", "lo", "hi", "n"])


def ratio_name(metric: str) -> str:
    """The column name of a metric shown as a ratio of two policies: avg_jct_s -> avg_jct_ratio,
    rho_fluid_mean -> rho_fluid_mean_ratio."""
    base = metric[: -len("_s")] if metric.endswith("_s") else metric
    return base if base.endswith("_ratio") else base + "_ratio"


def with_ratio_names(table: pd.DataFrame) -> pd.DataFrame:
    """A long table of ratios (column ``metric``) with each metric named as a ratio."""
    return table.assign(metric=table["metric"].map(ratio_name)) if "metric" in table else table


def hours_name(metric: str) -> str:
    """The column name of a seconds metric shown in hours: avg_jct_s -> avg_jct_h."""
    for tail in ("_s_total", "_s"):
        if metric.endswith(tail):
            return metric[: -len(tail)] + tail.replace("_s", "_h", 1)
    return metric + "_h"
