"""Read Gavel's ``.trace`` files into fairsim's trace schema.

A Gavel trace has one job a line with 10 tab-separated fields:

    job_type  command  working_directory  num_steps_arg  needs_data_dir  total_steps
    scale_factor  priority_weight  SLO  arrival_time

Mapping: model = job_type, work = total_steps (steps), workers = scale_factor,
weight = priority_weight, arrival_s = arrival_time, job_id = the job's line index (0-based,
blank lines skipped). The command, directory, data-dir flag and SLO are checked for shape and
dropped (fairsim does not model SLOs).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from fairsim.errors import InputError, require
from fairsim.files import note_input
from fairsim.workload.shipped import shipped_file, shipped_names
from fairsim.workload.trace import validate_trace

FIELDS = ("job_type", "command", "working_directory", "num_steps_arg", "needs_data_dir",
          "total_steps", "scale_factor", "priority_weight", "SLO", "arrival_time")


def shipped_trace(name: str) -> Path | None:
    """A trace shipped in fairsim/data/gavel/traces, by file name with or without .trace."""
    return shipped_file("gavel", name, ".trace")


def shipped_trace_names() -> list[str]:
    return shipped_names("gavel", ".trace")


def read_gavel_trace(path: str | Path) -> pd.DataFrame:
    path = Path(path)
    src = str(path)
    require(path.is_file(), src, "path", f"no such file (give a Gavel .trace file, or one of the shipped traces: {', '.join(shipped_trace_names())})")
    note_input(path)
    try:
        text = path.read_text()
    except UnicodeDecodeError:
        raise InputError(src, "file", "is not a text file (a Gavel .trace has one tab-separated job per line)") from None
    rows = []
    for lineno, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        rows.append(_parse_line(line, f"{src}:{lineno}"))
    require(len(rows) > 0, src, "rows", "the trace has no jobs")
    model, steps, workers, weight, arrival = zip(*rows)
    df = pd.DataFrame({
        "job_id": np.arange(len(rows), dtype=np.int64),
        "arrival_s": np.asarray(arrival, dtype=np.float64),
        "model": np.asarray(model, dtype=object),
        "workers": np.asarray(workers, dtype=np.int64),
        "work": np.asarray(steps, dtype=np.float64),
        "weight": np.asarray(weight, dtype=np.float64),
    })
    return validate_trace(df, src)


def _parse_line(line: str, where: str) -> tuple[str, float, int, float, float]:
    parts = line.rstrip("\r\n").split("\t")
    require(len(parts) == len(FIELDS), where, "fields",
            f"has {len(parts)} tab-separated fields, expected {len(FIELDS)} ({', '.join(FIELDS)})")
    values = dict(zip(FIELDS, parts))
    require(values["job_type"].strip() != "", where, "job_type", "is empty")
    require(values["needs_data_dir"].strip() in ("0", "1"), where, "needs_data_dir", f"must be 0 or 1, got {values['needs_data_dir']!r}")
    steps = _number(values, "total_steps", where)
    require(steps > 0 and steps == int(steps), where, "total_steps", f"must be an integer > 0, got {values['total_steps']!r}")
    scale = _number(values, "scale_factor", where)
    require(scale >= 1 and scale == int(scale), where, "scale_factor", f"must be an integer >= 1, got {values['scale_factor']!r}")
    weight = _number(values, "priority_weight", where)
    require(weight > 0, where, "priority_weight", f"must be > 0, got {values['priority_weight']!r}")
    _number(values, "SLO", where)
    arrival = _number(values, "arrival_time", where)
    require(arrival >= 0, where, "arrival_time", f"must be >= 0 seconds, got {values['arrival_time']!r}")
    return values["job_type"], steps, int(scale), weight, arrival


def _number(values: dict, field: str, where: str) -> float:
    try:
        x = float(values[field])
    except ValueError:
        raise InputError(where, field, f"must be a number, got {values[field]!r}") from None
    if not np.isfinite(x):
        raise InputError(where, field, f"must be finite, got {values[field]!r}")
    return x
