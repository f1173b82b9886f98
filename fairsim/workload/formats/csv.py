"""An operator's own job log: a CSV or parquet file with one row per job.

Columns (names can be mapped from the file's own with ``columns: {submit_s: SubmitTime, ...}``):
    submit_s     submission time in seconds (any origin), or instead
    submit_time  a timestamp, parsed with ``timestamp_format`` (strftime codes; null = ISO 8601)
    duration_s   run time in seconds on gpu_type (or the reference type) with its gang
    gpus         gang size
    optional: job_id, gpu_type, gpu_types ("|"-separated), model, tenant, status
Extra columns are ignored. A CSV may quote its cells (fairsim.workload.formats._csv_table), and
its errors name the line a row starts on; a parquet file's name the row.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping

import numpy as np
import pandas as pd

from fairsim.errors import InputError, require
from fairsim.files import note_input
from fairsim.workload.formats import LOG_COLUMNS, LogRead, Where
from fairsim.workload.formats._csv_table import read_csv_table

OPTIONS = ("columns", "timestamp_format")
READABLE = ("job_id", "submit_s", "submit_time", "duration_s", "gpus", "gpu_type", "gpu_types", "model", "tenant", "status")
SUFFIXES = (".csv", ".parquet")


def read(path: Path, cfg: Mapping[str, Any], src: str) -> LogRead:
    require(path.suffix in SUFFIXES, src, "path", f"a job log must be .csv or .parquet, got {path.name!r}")
    raw, where = _read_file(path, src)
    names = _column_names(cfg.get("columns") or {}, raw.columns, src, f"{src}: {path}")
    log = pd.DataFrame(index=range(len(raw)))
    if "submit_s" in names:
        log["submit_s"] = raw[names["submit_s"]].to_numpy()
    else:
        log["submit_s"] = _seconds(raw[names["submit_time"]], cfg.get("timestamp_format"), names["submit_time"], where, src)
    for col in LOG_COLUMNS:
        if col != "submit_s" and col in names:
            log[col] = raw[names[col]].to_numpy()
    return LogRead(log=log, source=f"{src}: {path}", where=where, meta={"rows": int(len(raw))})


def _read_file(path: Path, src: str) -> tuple[pd.DataFrame, Where]:
    """The table and each row's place: its line in a CSV (fairsim.workload.formats._csv_table:
    quoted cells, blank lines, ragged rows), its row in a parquet file."""
    if path.suffix == ".csv":
        table = read_csv_table(path, src, quoted=True)
        return table.cells, table.where
    note_input(path)
    try:
        raw = pd.read_parquet(path)
    except Exception as exc:  # pyarrow raises many types for unreadable files
        raise InputError(f"{src}: {path}", "file", f"cannot be read as parquet ({type(exc).__name__})") from exc
    return raw, lambda row: f"{src}: {path}: row {row}"


def _column_names(mapping: Mapping[str, Any], present, src: str, file: str) -> dict[str, str]:
    """Our column name -> the file's, for the columns the file has; ``file`` names the file
    (with ``src``) in errors about what it has."""
    mapping = {ours: theirs for ours, theirs in mapping.items() if theirs is not None}  # null: not mapped
    for ours, theirs in mapping.items():
        require(ours in READABLE, src, f"columns.{ours}", f"is not a job log column (allowed: {', '.join(READABLE)})")
        require(isinstance(theirs, str) and theirs in present, file, f"columns.{ours}",
                f"the file has no column {theirs!r} (it has: {', '.join(map(str, present))})")
    names = {c: c for c in READABLE if c in present}
    names.update({ours: str(theirs) for ours, theirs in mapping.items()})
    if "submit_s" in names and "submit_time" in names and "submit_s" not in mapping and "submit_time" in mapping:
        del names["submit_s"]  # a mapped timestamp wins over an unmapped submit_s column
    require("submit_s" in names or "submit_time" in names, file, "columns",
            f"the log needs submit_s (seconds) or submit_time (a timestamp); map one of the file's columns "
            f"({', '.join(map(str, present))}), e.g. workload.columns.submit_s=SubmitTime")
    for needed in ("duration_s", "gpus"):
        require(needed in names, file, "columns", f"the log needs {needed}; map one of the file's columns "
                f"({', '.join(map(str, present))}), e.g. workload.columns.{needed}=...")
    return names


def _seconds(values: pd.Series, fmt: Any, column: str, where: Where, src: str) -> np.ndarray:
    require(fmt is None or isinstance(fmt, str), src, "timestamp_format", f"must be strftime codes such as '%Y-%m-%d %H:%M:%S', got {fmt!r}")
    text = values.astype(str).str.strip()
    stamps = pd.to_datetime(text, format=fmt if fmt else "ISO8601", errors="coerce", utc=True)
    bad = stamps.isna().to_numpy()
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        want = f"format {fmt!r}" if fmt else "ISO 8601 (or set workload.timestamp_format)"
        raise InputError(where(i), column, f"{text.iloc[i]!r} is not a timestamp in {want}")
    return (stamps - stamps.min()).dt.total_seconds().to_numpy(np.float64)
