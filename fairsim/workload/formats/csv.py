"""An operator's own job log: a text table (comma- or ``|``-separated) or a parquet file with one
row per job.

Columns (names can be mapped from the file's own with ``columns: {submit_s: SubmitTime, ...}``):
    submit_s     submission time in seconds (any origin), or instead
    submit_time  a timestamp, parsed with ``timestamp_format`` (strftime codes; null = ISO 8601),
                 or epoch seconds (a column of numbers, when ``timestamp_format`` is null)
    duration_s   run time on gpu_type (or the reference type) with its gang: seconds, or
                 ``[D-]HH:MM:SS`` (Slurm's Elapsed); or instead
    start_time, end_time   when the job started and ended (timestamps or epoch seconds, as
                 submit_time): the duration is their difference
    gpus         gang size
    optional: job_id, gpu_type, gpu_types ("|"-separated), model, tenant, status
Extra columns are ignored. An empty time, or Slurm's ``Unknown`` / ``None`` (a job that never
started or ended), is missing: jobs_log drops the row and counts it. A timestamp must lie in the
years FIRST_YEAR..LAST_YEAR and epoch seconds within LATEST_TIME_S of 1970 (a far-off time is a
broken cell, refused naming its line). A file whose name ends in ``.parquet`` is read as
parquet, any other as text: ``|``-separated when its header line holds a ``|`` and no comma
(``sacct --parsable2``; cells never quoted), else a CSV, whose cells may be quoted
(fairsim.tables). A text table's errors name the line a row starts on; a parquet file's name the
row.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from fairsim.errors import InputError, require
from fairsim.files import note_input
from fairsim.tables import read_csv_table, shown
from fairsim.workload.formats import LOG_COLUMNS, LogRead, Where
from fairsim.workload.formats._cells import CLOCK_WORDS, filled
from fairsim.workload.trace import LATEST_TIME_S

OPTIONS = ("columns", "timestamp_format")
READABLE = (
    "job_id",
    "submit_s",
    "submit_time",
    "duration_s",
    "start_time",
    "end_time",
    "gpus",
    "gpu_type",
    "gpu_types",
    "model",
    "tenant",
    "status",
)
FIRST_YEAR, LAST_YEAR = 1900, 2199  # the years a log's timestamp may name
NOT_HAPPENED = ("unknown", "none")  # Slurm's words for a start or end that has not happened
_EPOCH = pd.Timestamp(0, tz="UTC")

# what a log needs: (one way to give it, another way, in words, parts of the names a file's column
# of it often has, the likeliest first)
NEEDED = (
    (
        ("submit_s",),
        ("submit_time",),
        "submit_s (seconds) or submit_time (a timestamp or epoch seconds)",
        ("submit", "queue", "creat"),
    ),
    (
        ("duration_s",),
        ("start_time", "end_time"),
        f"duration_s (seconds or {CLOCK_WORDS}) or start_time and end_time",
        ("elapsed", "duration", "runtime", "run_time", "wall"),
    ),
    (("gpus",), (), "gpus", ("ngpu", "num_gpu", "gpu_num", "gpus", "gpu_count", "gpu")),
)


def read(path: Path, cfg: Mapping[str, Any], src: str) -> LogRead:
    require(path.is_file(), src, "path", f"a job log must be a file (a text table or .parquet), got {str(path)!r}")
    raw, where = _read_file(path, src)
    names = _column_names(cfg.get("columns") or {}, raw.columns, src, f"{src}: {path}")
    fmt = cfg.get("timestamp_format")
    require(
        fmt is None or isinstance(fmt, str),
        src,
        "timestamp_format",
        f"must be strftime codes such as '%Y-%m-%d %H:%M:%S', got {fmt!r}",
    )
    log = pd.DataFrame(index=range(len(raw)))
    if "submit_s" in names:
        log["submit_s"] = raw[names["submit_s"]].to_numpy()
    else:
        log["submit_s"] = _submissions(raw[names["submit_time"]], fmt, names["submit_time"], where)
    if "duration_s" in names:
        log["duration_s"] = raw[names["duration_s"]].to_numpy()
    else:
        log["duration_s"] = _between(raw, names["start_time"], names["end_time"], fmt, where)
    for col in LOG_COLUMNS:
        if col not in ("submit_s", "duration_s") and col in names:
            log[col] = raw[names[col]].to_numpy()
    return LogRead(log=log, source=f"{src}: {path}", where=where, meta={"rows": int(len(raw))})


def _read_file(path: Path, src: str) -> tuple[pd.DataFrame, Where]:
    """The table and each row's place: its line in a CSV (fairsim.tables:
    quoted cells, blank lines, ragged rows), its row in a parquet file."""
    if path.suffix != ".parquet":
        sep = separator(path)
        table = read_csv_table(path, src, quoted=sep == ",", sep=sep)
        return table.cells, table.where
    note_input(path)
    try:
        raw = pd.read_parquet(path)
    except Exception as exc:  # pyarrow raises many types for unreadable files
        raise InputError(f"{src}: {path}", "file", f"cannot be read as parquet ({type(exc).__name__})") from exc
    return raw, lambda row: f"{src}: {path}: row {row}"


def separator(path: Path) -> str:
    """``|`` when the file's first non-blank line holds a ``|`` and no comma, else a comma."""
    with path.open("rb") as f:
        for line in f:
            if line.strip():
                return "|" if b"|" in line and b"," not in line else ","
    return ","


def _column_names(mapping: Mapping[str, Any], present, src: str, file: str) -> dict[str, str]:
    """Our column name -> the file's, for the columns the file has; ``file`` names the file
    (with ``src``) in errors about what it has."""
    mapping = {ours: theirs for ours, theirs in mapping.items() if theirs is not None}  # null: not mapped
    for ours, theirs in mapping.items():
        require(ours in READABLE, src, f"columns.{ours}", f"is not a job log column (allowed: {', '.join(READABLE)})")
        require(
            isinstance(theirs, str) and theirs in present,
            file,
            f"columns.{ours}",
            f"the file has no column {theirs!r} (it has: {', '.join(map(str, present))})",
        )
    names = {c: c for c in READABLE if c in present}
    names.update({ours: str(theirs) for ours, theirs in mapping.items()})
    for first, second, _, _ in NEEDED[:2]:  # a mapped way wins over a column that merely has our name
        if (
            any(c in names for c in first)
            and all(c in names for c in second)
            and all(c in mapping for c in second)
            and not any(c in mapping for c in first)
        ):
            for c in first:
                del names[c]
    lacking = [need for need in NEEDED if not any(all(c in names for c in way) for way in need[:2] if way)]
    if lacking:
        raise InputError(
            file,
            "columns",
            f"the log needs {'; '.join(n[2] for n in lacking)}: map the file's columns "
            f"({', '.join(map(str, present))}), e.g. {' '.join(_example(n, present) for n in lacking)}",
        )
    return names


def _example(need: tuple, present) -> str:
    """A mapping of a lacking column to the file's column most likely to hold it (or a placeholder)."""
    ours = (
        need[1][0] if need[1] and need[0] == ("submit_s",) else need[0][0]
    )  # a file's submit column is most often a timestamp
    guess = next((str(c) for w in need[3] for c in present if w in str(c).lower()), "<column>")
    return f"workload.columns.{ours}={guess}"


def _missing(text: pd.Series) -> np.ndarray:
    """bool: cells without a time: empty, or a time that has not happened."""
    return (text.isna() | text.fillna("").str.lower().isin(NOT_HAPPENED)).to_numpy()


def _epoch_numbers(text: pd.Series, missing: np.ndarray, fmt: Any) -> np.ndarray | None:
    """float64 seconds when every cell with a time is a number (and no format says timestamps), else None."""
    if fmt:
        return None
    values = pd.to_numeric(text.where(~missing, None), errors="coerce").to_numpy(np.float64, na_value=np.nan)
    return values if np.isfinite(values[~missing]).all() else None


def _refuse_far(values: np.ndarray, text: pd.Series, column: str, where: Where) -> None:
    """Epoch seconds beyond LATEST_TIME_S of 1970 are no time of a log."""
    with np.errstate(invalid="ignore"):
        far = np.abs(values) > LATEST_TIME_S
    if far.any():
        i = int(np.flatnonzero(far)[0])
        raise InputError(
            where(i),
            column,
            f"{shown(text.iloc[i])} is no time: epoch seconds must lie within {LATEST_TIME_S:g} of 1970",
        )


def _stamps(
    text: pd.Series,
    missing: np.ndarray,
    fmt: Any,
    column: str,
    where: Where,
    fmt_key: str = "workload.timestamp_format",
) -> pd.Series:
    """UTC timestamps of the cells (NaT where missing); a cell that is no timestamp is refused."""
    stamps = pd.to_datetime(text.where(~missing, None), format=fmt if fmt else "ISO8601", errors="coerce", utc=True)
    bad = stamps.isna().to_numpy() & ~missing
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        want = f"format {fmt!r}" if fmt else f"ISO 8601 (or set {fmt_key}), or epoch seconds"
        raise InputError(where(i), column, f"{shown(text.iloc[i])} is not a timestamp in {want}")
    years = stamps.dt.year.to_numpy(np.float64, na_value=np.nan)
    with np.errstate(invalid="ignore"):
        far = (years < FIRST_YEAR) | (years > LAST_YEAR)
    if far.any():
        i = int(np.flatnonzero(far)[0])
        raise InputError(
            where(i),
            column,
            f"{shown(text.iloc[i])} is out of range: a timestamp must lie in the years {FIRST_YEAR} to {LAST_YEAR}",
        )
    return stamps


def _submissions(values: pd.Series, fmt: Any, column: str, where: Where) -> np.ndarray:
    """Submission times: epoch seconds as written (jobs_log checks them), or timestamps as seconds
    after the log's first one; NaN where missing."""
    text = filled(values)
    missing = _missing(text)
    numbers = _epoch_numbers(text, missing, fmt)
    if numbers is not None:
        _refuse_far(numbers, text, column, where)
        return text.where(~missing, None).to_numpy(object)
    stamps = _stamps(text, missing, fmt, column, where)
    return (stamps - stamps.min()).dt.total_seconds().to_numpy(np.float64, na_value=np.nan)


def seconds_since_epoch(
    values: pd.Series, fmt: Any, column: str, where: Where, fmt_key: str = "workload.timestamp_format"
) -> np.ndarray:
    """float64 seconds since 1970 of a start or end column (epoch seconds or timestamps); NaN where
    missing. ``fmt_key``: the setting a timestamp error suggests."""
    text = filled(values)
    missing = _missing(text)
    numbers = _epoch_numbers(text, missing, fmt)
    if numbers is not None:
        _refuse_far(numbers, text, column, where)
        return numbers
    return ((_stamps(text, missing, fmt, column, where, fmt_key) - _EPOCH).dt.total_seconds()).to_numpy(
        np.float64, na_value=np.nan
    )


def _between(raw: pd.DataFrame, start: str, end: str, fmt: Any, where: Where) -> np.ndarray:
    """Durations from start and end columns; NaN where either is missing; an end before its start refused."""
    began, ended = seconds_since_epoch(raw[start], fmt, start, where), seconds_since_epoch(raw[end], fmt, end, where)
    with np.errstate(invalid="ignore"):
        backwards = ended < began
    if backwards.any():
        i = int(np.flatnonzero(backwards)[0])
        raise InputError(
            where(i), end, f"{shown(raw[end].iloc[i])} is before the job's start {shown(raw[start].iloc[i])} ({start})"
        )
    return ended - began
