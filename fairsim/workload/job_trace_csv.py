"""Other simulators' job traces kept as a CSV with a header line and one job a row (Tiresias',
PAL's artifact's): read row by row, each row knowing the line it starts on, every cell checked,
into fairsim's trace schema. A format names its columns and units in a ``TraceColumns``; columns
may come in any order and extra ones are ignored. A bad row is refused naming the file, its
line and the field.
"""

from __future__ import annotations

import csv
import io
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from fairsim.errors import InputError, require
from fairsim.files import note_input
from fairsim.tables import decoded
from fairsim.workload.trace import LARGEST_INTEGER, LATEST_TIME_S, validate_trace


@dataclass(frozen=True)
class TraceColumns:
    """A format's column names, and what its errors say of them."""

    job_id: str
    workers: str  # the gang size
    submit: str  # seconds
    duration: str  # the job's work
    duration_unit: str  # what a duration counts ("seconds", "iterations"), for its error
    model: str
    model_example: str  # named in the error for an empty model cell
    model_default: str | None = None  # every job's model when the column is absent; None: required
    header_line_named: bool = True  # a header naming a column twice is refused at its line (else: the file)

    @property
    def required(self) -> tuple[str, ...]:
        always = (self.job_id, self.workers, self.submit, self.duration)
        return always if self.model_default is not None else (*always, self.model)


def read_job_csv(path: Path, columns: TraceColumns, *, what: str, header_hint: str, missing_hint: str) -> pd.DataFrame:
    """The trace of an existing file. ``what``: the file's kind, for a byte that is not UTF-8;
    ``header_hint``: the header expected, for an empty file; ``missing_hint``: follows the list of
    missing columns."""
    src = str(path)
    note_input(path)
    text = decoded(path.read_bytes(), lambda line: f"{src}:{line}", what)
    reader = csv.reader(io.StringIO(text, newline=""))
    header = next(reader, None)
    require(
        header is not None and any(h.strip() for h in header),
        src,
        "header",
        f"the file is empty (expected a header line: {header_hint})",
    )
    header = [h.strip() for h in header]
    twice = sorted({h for h in header if header.count(h) > 1})
    require(
        not twice,
        f"{src}:{reader.line_num}" if columns.header_line_named else src,
        "header",
        f"names the column(s) {', '.join(map(repr, twice))} more than once (each column once)",
    )
    missing = [c for c in columns.required if c not in header]
    require(not missing, src, "columns", f"missing {', '.join(missing)} ({missing_hint})")
    col = {name: header.index(name) for name in (*columns.required, columns.model) if name in header}
    ids, workers, arrival, work, model = [], [], [], [], []
    line_of: dict[int, int] = {}
    start = reader.line_num + 1  # the line the next row starts on (a quoted cell may span lines)
    for fields in reader:
        line, start = start, reader.line_num + 1
        where = f"{src}:{line}"
        if not any(f.strip() for f in fields):
            continue  # blank line
        require(
            len(fields) == len(header),
            where,
            "fields",
            f"has {len(fields)} comma-separated fields, the header has {len(header)}",
        )
        job_id = _integer(fields[col[columns.job_id]], where, columns.job_id, 0)
        if job_id in line_of:
            raise InputError(
                where, columns.job_id, f"{job_id} repeats the job of line {line_of[job_id]} (job ids must be unique)"
            )
        line_of[job_id] = line
        ids.append(job_id)
        workers.append(_integer(fields[col[columns.workers]], where, columns.workers, 1))
        cell = fields[col[columns.submit]]
        submit = _number(cell, where, columns.submit)
        require(
            0 <= submit <= LATEST_TIME_S,
            where,
            columns.submit,
            f"must be >= 0 and <= {LATEST_TIME_S:g} seconds, got {cell.strip()!r}",
        )
        arrival.append(submit)
        cell = fields[col[columns.duration]]
        duration = _number(cell, where, columns.duration)
        require(duration > 0, where, columns.duration, f"must be > 0 {columns.duration_unit}, got {cell.strip()!r}")
        work.append(duration)
        name = fields[col[columns.model]].strip() if columns.model in col else columns.model_default
        require(name != "", where, columns.model, f"is empty (a model name, e.g. {columns.model_example})")
        model.append(name)
    require(len(ids) > 0, src, "rows", "the trace has no jobs")
    df = pd.DataFrame(
        {
            "job_id": np.asarray(ids, dtype=np.int64),
            "arrival_s": np.asarray(arrival, dtype=np.float64),
            "model": np.asarray(model, dtype=object),
            "workers": np.asarray(workers, dtype=np.int64),
            "work": np.asarray(work, dtype=np.float64),
        }
    )
    return validate_trace(df, src)


def _number(text: str, where: str, field: str) -> float:
    try:
        x = float(text)
    except ValueError:
        raise InputError(where, field, f"must be a number, got {text.strip()!r}") from None
    if not math.isfinite(x):
        raise InputError(where, field, f"must be finite, got {text.strip()!r}")
    return x


def _integer(text: str, where: str, field: str, lo: int) -> int:
    x = _number(text, where, field)
    require(
        x == int(x) and lo <= x <= LARGEST_INTEGER,
        where,
        field,
        f"must be an integer >= {lo} and <= {LARGEST_INTEGER}, got {text.strip()!r}",
    )
    return int(x)
