"""An operator's own job log: a CSV or parquet file with one row per job.

Columns (names can be mapped from the file's own with ``columns: {submit_s: SubmitTime, ...}``):
    submit_s     submission time in seconds (any origin), or instead
    submit_time  a timestamp, parsed with ``timestamp_format`` (strftime codes; null = ISO 8601)
    duration_s   run time in seconds on gpu_type (or the reference type) with its gang
    gpus         gang size
    optional: job_id, gpu_type, gpu_types ("|"-separated), model, tenant, status
Extra columns are ignored.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping

import numpy as np
import pandas as pd

from fairsim.errors import InputError, require
from fairsim.files import note_input
from fairsim.workload.formats import LOG_COLUMNS, LogRead

OPTIONS = ("columns", "timestamp_format")
READABLE = ("job_id", "submit_s", "submit_time", "duration_s", "gpus", "gpu_type", "gpu_types", "model", "tenant", "status")
SUFFIXES = (".csv", ".parquet")


def read(path: Path, cfg: Mapping[str, Any], src: str) -> LogRead:
    require(path.suffix in SUFFIXES, src, "path", f"a job log must be .csv or .parquet, got {path.name!r}")
    note_input(path)
    raw = _read_file(path, src)
    names = _column_names(cfg.get("columns") or {}, raw.columns, src)
    line = (lambda i: f"line {i + 2}") if path.suffix == ".csv" else (lambda i: f"row {i}")  # header = line 1
    log = pd.DataFrame(index=range(len(raw)))
    if "submit_s" in names:
        log["submit_s"] = raw[names["submit_s"]].to_numpy()
    else:
        log["submit_s"] = _seconds(raw[names["submit_time"]], cfg.get("timestamp_format"), names["submit_time"], line, src)
    for col in LOG_COLUMNS:
        if col != "submit_s" and col in names:
            log[col] = raw[names[col]].to_numpy()
    return LogRead(log=log, meta={"rows": int(len(raw))}, where=[line(i) for i in range(len(raw))])


def _read_file(path: Path, src: str) -> pd.DataFrame:
    try:
        return pd.read_parquet(path) if path.suffix == ".parquet" else pd.read_csv(path, dtype=str, keep_default_na=False)
    except Exception as exc:  # pandas/pyarrow raise many types for unreadable files
        raise InputError(src, "path", f"{path.name} cannot be read as {path.suffix[1:]} ({type(exc).__name__})") from exc


def _column_names(mapping: Mapping[str, Any], present, src: str) -> dict[str, str]:
    """Our column name -> the file's, for the columns the file has."""
    mapping = {ours: theirs for ours, theirs in mapping.items() if theirs is not None}  # null: not mapped
    for ours, theirs in mapping.items():
        require(ours in READABLE, src, f"columns.{ours}", f"is not a job log column (allowed: {', '.join(READABLE)})")
        require(isinstance(theirs, str) and theirs in present, src, f"columns.{ours}",
                f"the file has no column {theirs!r} (it has: {', '.join(map(str, present))})")
    names = {c: c for c in READABLE if c in present}
    names.update({ours: str(theirs) for ours, theirs in mapping.items()})
    if "submit_s" in names and "submit_time" in names and "submit_s" not in mapping and "submit_time" in mapping:
        del names["submit_s"]  # a mapped timestamp wins over an unmapped submit_s column
    require("submit_s" in names or "submit_time" in names, src, "columns",
            f"the log needs submit_s (seconds) or submit_time (a timestamp); map one of the file's columns "
            f"({', '.join(map(str, present))}), e.g. workload.columns.submit_s=SubmitTime")
    for needed in ("duration_s", "gpus"):
        require(needed in names, src, "columns", f"the log needs {needed}; map one of the file's columns "
                f"({', '.join(map(str, present))}), e.g. workload.columns.{needed}=...")
    return names


def _seconds(values: pd.Series, fmt: Any, column: str, line, src: str) -> np.ndarray:
    require(fmt is None or isinstance(fmt, str), src, "timestamp_format", f"must be strftime codes such as '%Y-%m-%d %H:%M:%S', got {fmt!r}")
    text = values.astype(str).str.strip()
    stamps = pd.to_datetime(text, format=fmt if fmt else "ISO8601", errors="coerce", utc=True)
    bad = stamps.isna().to_numpy()
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        want = f"format {fmt!r}" if fmt else "ISO 8601 (or set workload.timestamp_format)"
        raise InputError(src, column, f"{line(i)}: {text.iloc[i]!r} is not a timestamp in {want}")
    return (stamps - stamps.min()).dt.total_seconds().to_numpy(np.float64)
