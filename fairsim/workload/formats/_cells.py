"""Text cells of a job log turned into numbers and seconds, column at a time.

An empty cell is missing (NaN): each reader decides what a missing value means (a CPU task, a
job that never started). Text that is not a number, or not a time in the log's format, is
refused with an InputError naming where it is (``where(position)``) and the column.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from fairsim.errors import InputError
from fairsim.workload.formats import Where

TIME_FORMAT = "%Y-%m-%d %H:%M:%S"  # Helios and Philly write local wall-clock times this way
TIME_FORMAT_WORDS = "YYYY-MM-DD HH:MM:SS"
_EPOCH = pd.Timestamp(0).as_unit("s")  # in seconds, so that times as late as year 9999 subtract without overflow


def filled(cells: pd.Series) -> pd.Series:
    """The cells stripped, with empty ones (and None) as None."""
    text = cells.astype(object).where(cells.notna(), "").astype(str).str.strip()
    return text.where(text != "", None)


def numbers(cells: pd.Series, where: Where, column: str, *, lo: float | None = None, hi: float | None = None,
            whole: bool = False, empty_ok: bool = True, what: str = "") -> np.ndarray:
    """float64 values, in [lo, hi] and whole numbers when asked; NaN where a cell is empty
    (refused unless ``empty_ok``). ``what`` says the rule in words (default: from the bounds)."""
    bounds = ([] if lo is None else [f">= {lo:g}"]) + ([] if hi is None else [f"<= {hi:g}"])
    what = what or " ".join(["a whole number" if whole else "a number", " and ".join(bounds)]).strip()
    text = filled(cells)
    empty = text.isna().to_numpy()
    if not empty_ok and empty.any():
        raise InputError(where(int(np.flatnonzero(empty)[0])), column, f"is empty (must be {what})")
    values = pd.to_numeric(text, errors="coerce").to_numpy(np.float64, na_value=np.nan)
    with np.errstate(invalid="ignore"):
        bad = ~np.isfinite(values)
        if lo is not None:
            bad |= values < lo
        if hi is not None:
            bad |= values > hi
        if whole:
            bad |= values != np.round(values)
    _refuse_first(text, bad, where, column, what)
    return values


def seconds(cells: pd.Series, where: Where, column: str) -> np.ndarray:
    """Wall-clock times in seconds since 1970-01-01 (the times read as UTC: only differences
    matter); NaN where a cell is empty."""
    text = filled(cells)
    times = pd.to_datetime(text, format=TIME_FORMAT, errors="coerce")
    values = ((times - _EPOCH) / pd.Timedelta(seconds=1)).to_numpy(np.float64, na_value=np.nan)
    _refuse_first(text, np.isnan(values), where, column, f"a time written {TIME_FORMAT_WORDS}")
    return values


def _refuse_first(text: pd.Series, bad: np.ndarray, where: Where, column: str, what: str) -> None:
    """Refuse the first cell that has text and is ``bad``."""
    bad = bad & text.notna().to_numpy()
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise InputError(where(i), column, f"must be {what}, got {text.iloc[i]!r}")
