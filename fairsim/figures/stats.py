"""Means with 95% confidence intervals over seeds, and per-seed ratios of a baseline to FFT.

Every number the figures and REPORT.md compare is a mean over seeds with a Student-t interval:
mean +- t_{0.975, n-1} * s / sqrt(n). With one seed the interval is undefined (NaN), never a
fake zero-width interval.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable

import numpy as np
import pandas as pd
from scipy import stats

REFERENCE = "ours"  # ratios are "baseline / FFT", as in the paper


@dataclass(frozen=True)
class Interval:
    mean: float
    lo: float
    hi: float
    n: int

    def excludes(self, value: float) -> bool:
        return bool(np.isfinite(self.lo) and (self.lo > value or self.hi < value))


def mean_ci(values: Iterable[float], level: float = 0.95) -> Interval:
    """Mean and t-interval of the finite values (NaN entries are dropped)."""
    a = np.asarray(list(values), dtype=float)
    a = a[np.isfinite(a)]
    n = len(a)
    if n == 0:
        return Interval(float("nan"), float("nan"), float("nan"), 0)
    mean = float(a.mean())
    if n == 1:
        return Interval(mean, float("nan"), float("nan"), 1)
    half = float(stats.t.ppf(0.5 + level / 2, n - 1) * a.std(ddof=1) / np.sqrt(n))
    return Interval(mean, mean - half, mean + half, n)


def _paired(cells: pd.DataFrame, metric: str, first: str, second: str,
            by: tuple[str, ...]) -> tuple[pd.Series, pd.Series]:
    """metric of two policies on the (workload, seed) pairs both ran, aligned and sorted."""
    table = cells.set_index(["policy", *by])[metric].astype(float)
    policies = set(table.index.get_level_values(0))
    if first not in policies or second not in policies:
        empty = pd.Series(dtype=float)
        return empty, empty
    a, b = table.xs(first, level=0), table.xs(second, level=0)
    common = a.index.intersection(b.index).sort_values()
    return a.loc[common], b.loc[common]


def paired_ratios(cells: pd.DataFrame, metric: str, baseline: str, reference: str = REFERENCE,
                  by: tuple[str, ...] = ("workload", "seed")) -> pd.Series:
    """metric(baseline) / metric(reference) for every (workload, seed) both policies ran, indexed
    by ``by``. Pairing by seed compares the two policies on the very same trace."""
    base, ref = _paired(cells, metric, baseline, reference, by)
    return base / ref


def paired_differences(cells: pd.DataFrame, metric: str, other: str, reference: str = REFERENCE,
                       by: tuple[str, ...] = ("workload", "seed")) -> pd.Series:
    """metric(reference) - metric(other) for every (workload, seed) both policies ran."""
    other_s, ref = _paired(cells, metric, other, reference, by)
    return ref - other_s


def summarize_groups(cells: pd.DataFrame, value: str, keys: list[str]) -> pd.DataFrame:
    """One row per group of ``keys``: mean, lo, hi, n of ``value`` over the group's rows."""
    rows = []
    for key, group in cells.groupby(keys, sort=False):
        ci = mean_ci(group[value])
        rows.append({**dict(zip(keys, key if isinstance(key, tuple) else (key,))),
                     "mean": ci.mean, "lo": ci.lo, "hi": ci.hi, "n": ci.n})
    return pd.DataFrame(rows, columns=[*keys, "mean", "lo", "hi", "n"])
