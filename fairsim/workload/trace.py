"""The trace schema: one row per job, stored as CSV or parquet.

| column    | type  | meaning                                                       |
|-----------|-------|---------------------------------------------------------------|
| job_id    | int   | unique, >= 0                                                  |
| arrival_s | float | submission time in seconds, >= 0                              |
| model     | str   | a model of the catalog the trace is run with                  |
| workers   | int   | gang size (GPUs, all of one type at a time), >= 1             |
| work      | float | total work in the catalog's unit (epochs or steps), > 0       |
| weight    | float | optional priority weight, > 0 (default 1)                     |
| tenant    | str   | optional: who submitted it (user, virtual cluster); default "" |
| gpu_types | str   | optional: the GPU types it may run on, "|"-separated datasheet |
|           |       | names; "" (the default) = any type of the cluster              |

Rows are kept sorted by (arrival_s, job_id); a job's index in the sorted table is its index in
every engine array.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from fairsim.errors import InputError, require
from fairsim.files import atomic_write, note_input
from fairsim.tables import read_csv_table

COLUMNS = {"job_id": "int64", "arrival_s": "float64", "model": "object", "workers": "int64", "work": "float64"}
OPTIONAL = {"weight": ("float64", 1.0), "tenant": ("object", ""), "gpu_types": ("object", "")}
TYPE_SEPARATOR = "|"

# What a workload's numbers may be. A job runs a millisecond to about 31.7 years (its logged
# duration; a trace job's work at its fastest type), and a time (a submission, an arrival) lies
# within about 31,700 years of its origin: anything else is a corrupt cell or a unit mix-up
# (milliseconds read as seconds), and these bounds keep the engine's float seconds exact to well
# under a millisecond. Integers (ids, GPU counts) are those float64 holds exactly.
SHORTEST_JOB_S = 1e-3
LONGEST_JOB_S = 1e9
LATEST_TIME_S = 1e12
LARGEST_INTEGER = 2**53
MAX_GENERATED_JOBS = 10_000_000  # a generator's num_jobs: 500x the paper's largest trace; more only exhausts memory


def validate_trace(df: pd.DataFrame, source: str = "trace", where=None) -> pd.DataFrame:
    """Check columns, types and values; return a clean copy sorted by (arrival_s, job_id).
    ``where(row)`` names a row in errors ("line 7"; default "row <i>", counting from 0)."""
    where = where or (lambda row: f"row {row}")
    missing = [c for c in COLUMNS if c not in df.columns]
    require(not missing, source, "columns", f"missing {', '.join(missing)} (required: {', '.join(COLUMNS)})")
    require(len(df) > 0, source, "rows", "the trace has no jobs")
    out = pd.DataFrame(index=range(len(df)))
    for col, dtype in {**COLUMNS, **{k: v[0] for k, v in OPTIONAL.items()}}.items():
        if col not in df.columns:
            out[col] = OPTIONAL[col][1]
            continue
        values = df[col].to_numpy()
        if dtype == "object" and col in OPTIONAL:  # a label: missing cells are the default
            out[col] = [OPTIONAL[col][1] if is_missing(v) else str(v).strip() for v in values]
            continue
        if dtype == "object":
            require(
                all(isinstance(v, str) and v for v in values), source, col, "must be a non-empty string in every row"
            )
            out[col] = values.astype(object)
            continue
        numeric = pd.to_numeric(pd.Series(values), errors="coerce").to_numpy(dtype=np.float64)
        bad = ~np.isfinite(numeric)
        if bad.any():
            row = int(np.flatnonzero(bad)[0])
            raise InputError(source, col, f"must be a finite number ({where(row)} has {shown(values[row])!r})")
        if dtype == "int64":
            frac = (numeric != np.round(numeric)) | (np.abs(numeric) > LARGEST_INTEGER)
            if frac.any():
                row = int(np.flatnonzero(frac)[0])
                raise InputError(
                    source,
                    col,
                    f"must be an integer of at most {LARGEST_INTEGER} in size "
                    f"({where(row)} has {shown(values[row])!r})",
                )
            out[col] = numeric.astype(np.int64)
        else:
            out[col] = numeric
    _check_range(out, "job_id", out["job_id"] >= 0, ">= 0", source, where)
    _check_range(
        out,
        "arrival_s",
        (out["arrival_s"] >= 0) & (out["arrival_s"] <= LATEST_TIME_S),
        f">= 0 and <= {LATEST_TIME_S:g} seconds",
        source,
        where,
    )
    _check_range(out, "workers", out["workers"] >= 1, ">= 1", source, where)
    _check_range(out, "work", out["work"] > 0, "> 0", source, where)
    _check_range(out, "weight", out["weight"] > 0, "> 0", source, where)
    dup = out["job_id"].duplicated()
    if dup.any():
        row = int(np.flatnonzero(dup.to_numpy())[0])
        raise InputError(source, "job_id", f"must be unique (job_id {out['job_id'].iloc[row]} repeats at {where(row)})")
    return out.sort_values(["arrival_s", "job_id"], kind="stable").reset_index(drop=True)


def _check_range(df: pd.DataFrame, col: str, ok: pd.Series, rule: str, source: str, where) -> None:
    if not ok.all():
        row = int(np.flatnonzero(~ok.to_numpy())[0])
        raise InputError(source, col, f"must be {rule} ({where(row)} has {shown(df[col].iloc[row])!r})")


def is_missing(value) -> bool:
    """An empty cell: None, NaN or blank text."""
    return (
        value is None
        or (isinstance(value, float) and not np.isfinite(value))
        or (isinstance(value, str) and not value.strip())
    )


def allowed_types(values) -> list[tuple[str, ...]]:
    """Each row's ``gpu_types`` as a tuple of names; () = any type."""
    return [tuple(t.strip() for t in str(v).split(TYPE_SEPARATOR) if t.strip()) for v in values]


def shown(value):
    """A cell value as the user wrote it: 3.0, not np.float64(3.0), in error messages."""
    return value.item() if isinstance(value, np.generic) else value


def read_trace(path: str | Path) -> pd.DataFrame:
    """Read a trace in our schema from .csv or .parquet and validate it; a CSV's errors name lines."""
    path = Path(path)
    source = str(path)
    require(
        path.is_file(),
        source,
        "path",
        "no such file (give a .csv or .parquet trace in fairsim's schema, or a Gavel .trace)",
    )
    require(
        path.suffix in (".csv", ".parquet"),
        source,
        "path",
        f"unknown trace format {path.suffix!r} (allowed: .csv, .parquet, .trace)",
    )
    if path.suffix == ".csv":
        table = read_csv_table(path, None, quoted=True)
        return validate_trace(table.cells, source, where=lambda row: f"line {int(table.lines[row])}")
    note_input(path)
    try:
        df = pd.read_parquet(path)
    except Exception as exc:  # pyarrow raises many types for unreadable files
        raise InputError(
            source,
            "file",
            f"cannot be read as parquet ({type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''})",
        ) from exc
    return validate_trace(df, source)


def write_trace(df: pd.DataFrame, path: str | Path) -> Path:
    """Validate and write a trace; the format follows the suffix (.csv or .parquet)."""
    path = Path(path)
    clean = validate_trace(df, str(path))
    path.parent.mkdir(parents=True, exist_ok=True)
    writers = {
        ".parquet": lambda tmp: clean.to_parquet(tmp, index=False),
        ".csv": lambda tmp: clean.to_csv(tmp, index=False, float_format="%.17g"),
    }
    require(
        path.suffix in writers, str(path), "path", f"unknown trace format {path.suffix!r} (allowed: .csv, .parquet)"
    )
    atomic_write(path, writers[path.suffix])
    return path
