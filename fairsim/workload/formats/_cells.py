"""Text cells of a job log turned into numbers and seconds, column at a time.

An empty cell is missing (NaN): each reader decides what a missing value means (a CPU task, a
job that never started). Text that is not a number, or not a time in the log's format, is
refused with an InputError naming where it is (``where(position)``) and the column. A duration
may also be written ``[D-]HH:MM:SS`` (Slurm's ``Elapsed``: ``1-02:03:04`` is a day, two hours,
three minutes and four seconds) or ``MM:SS.mmm`` (sacct's CPU times under an hour).
"""

from __future__ import annotations

import re

import numpy as np
import pandas as pd

from fairsim.errors import InputError
from fairsim.tables import shown
from fairsim.workload.formats import Where

TIME_FORMAT = "%Y-%m-%d %H:%M:%S"  # Helios and Philly write local wall-clock times this way
TIME_FORMAT_WORDS = "YYYY-MM-DD HH:MM:SS"
_EPOCH = pd.Timestamp(0).as_unit("s")  # in seconds, so that times as late as year 9999 subtract without overflow


def filled(cells: pd.Series) -> pd.Series:
    """The cells stripped, with empty ones (and None) as None."""
    text = cells.astype(object).where(cells.notna(), "").astype(str).str.strip()
    return text.where(text != "", None)


def numbers(
    cells: pd.Series,
    where: Where,
    column: str,
    *,
    lo: float | None = None,
    hi: float | None = None,
    whole: bool = False,
    empty_ok: bool = True,
    what: str = "",
    also: tuple[float, ...] = (),
    clock: bool = False,
) -> np.ndarray:
    """float64 values, in [lo, hi] and whole numbers when asked, or one of ``also`` (a value the
    caller drops, such as 0 GPUs); NaN where a cell is empty (refused unless ``empty_ok``).
    ``clock``: a cell may also be a duration ``[D-]HH:MM:SS`` (in seconds). ``what`` says the rule
    in words (default: from the bounds)."""
    bounds = ([] if lo is None else [f">= {lo:g}"]) + ([] if hi is None else [f"<= {hi:g}"])
    what = what or " ".join(["a whole number" if whole else "a number", " and ".join(bounds)]).strip()
    text = filled(cells)
    empty = text.isna().to_numpy()
    if not empty_ok and empty.any():
        raise InputError(where(int(np.flatnonzero(empty)[0])), column, f"is empty (must be {what})")
    values = pd.to_numeric(text, errors="coerce").to_numpy(np.float64, na_value=np.nan)
    if clock:
        values = np.where(np.isnan(values), clock_seconds(text), values)
    with np.errstate(invalid="ignore"):
        bad = ~np.isfinite(values)
        if lo is not None:
            bad |= values < lo
        if hi is not None:
            bad |= values > hi
        if whole:
            bad |= values != np.round(values)
        bad &= ~np.isin(values, also)
    _refuse_first(text, bad, where, column, what)
    return values


# sacct's durations: [days-]hours:minutes:seconds[.fraction] (Elapsed, Timelimit), or without the
# hours (MM:SS.mmm: its CPU times under an hour)
CLOCK = re.compile(r"^(?:(?:(\d+)-)?(\d+):)?([0-5]\d):([0-5]\d(?:\.\d*)?)$")
CLOCK_WORDS = "[D-]HH:MM:SS or MM:SS[.mmm]"


def clock_seconds(text: pd.Series) -> np.ndarray:
    """float64 seconds of the cells written ``[D-]HH:MM:SS`` or ``MM:SS[.mmm]``; NaN for any other cell."""
    parts = text.astype(object).where(text.notna(), "").astype(str).str.extract(CLOCK)
    days, hours, minutes, secs = (
        pd.to_numeric(parts[k], errors="coerce").to_numpy(np.float64, na_value=np.nan) for k in range(4)
    )
    days = np.where(np.isnan(days) & ~np.isnan(minutes), 0.0, days)
    hours = np.where(np.isnan(hours) & ~np.isnan(minutes), 0.0, hours)
    return ((days * 24 + hours) * 60 + minutes) * 60 + secs


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
        raise InputError(where(i), column, f"must be {what}, got {shown(text.iloc[i])}")
