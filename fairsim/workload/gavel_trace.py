"""Read Gavel's ``.trace`` files into fairsim's trace schema.

A Gavel trace has one job a line with 10 tab-separated fields:

    job_type  command  working_directory  num_steps_arg  needs_data_dir  total_steps
    scale_factor  priority_weight  SLO  arrival_time

Mapping: model = job_type, work = total_steps (steps), workers = scale_factor,
weight = priority_weight, arrival_s = arrival_time, job_id = the job's line index (0-based,
blank lines skipped). The command, directory, data-dir flag and SLO are checked for shape and
dropped (fairsim does not model SLOs).

Gavel's per-virtual-cluster Philly traces (``scheduler/traces/msr``, fairsim/workload/gavel_vc.py)
have Gavel's shorter layout, 7 fields with no working directory, priority weight or SLO:

    job_type  command  num_steps_arg  needs_data_dir  total_steps  arrival_time  scale_factor

read with the same mapping and weight 1. A file is one layout or the other, judged by its first
job line.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from fairsim.errors import InputError, require
from fairsim.files import note_input
from fairsim.tables import decoded
from fairsim.workload.shipped import shipped_file, shipped_names
from fairsim.workload.trace import LARGEST_INTEGER, LATEST_TIME_S, validate_trace

FIELDS = (
    "job_type",
    "command",
    "working_directory",
    "num_steps_arg",
    "needs_data_dir",
    "total_steps",
    "scale_factor",
    "priority_weight",
    "SLO",
    "arrival_time",
)
MSR_FIELDS = ("job_type", "command", "num_steps_arg", "needs_data_dir", "total_steps", "arrival_time", "scale_factor")
LAYOUTS = {len(FIELDS): FIELDS, len(MSR_FIELDS): MSR_FIELDS}


def shipped_trace(name: str) -> Path | None:
    """A trace shipped in fairsim/data/gavel/traces, by file name with or without .trace; the
    per-VC Philly traces by their path in that folder (``msr/seed=0/ed69ec``)."""
    return shipped_file("gavel", name, ".trace")


def shipped_trace_names() -> list[str]:
    return shipped_names("gavel", ".trace")


def read_gavel_trace(path: str | Path) -> pd.DataFrame:
    path = Path(path)
    src = str(path)
    require(
        path.is_file(),
        src,
        "path",
        f"no such file (give a Gavel .trace file, one of the shipped traces: {', '.join(shipped_trace_names())}, "
        "or a shipped per-VC Philly trace msr/seed=0/<vc>, fairsim/workload/gavel_vc.py)",
    )
    note_input(path)
    text = decoded(
        path.read_bytes(), lambda line: f"{src}:{line}", "one tab-separated job per line, as Gavel's .trace files"
    )
    rows = []
    layout = None
    for lineno, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        fields = _split(line, f"{src}:{lineno}", layout)
        layout = layout or LAYOUTS[len(fields)]
        rows.append(_parse_fields(fields, f"{src}:{lineno}"))
    require(len(rows) > 0, src, "rows", "the trace has no jobs")
    model, steps, workers, weight, arrival = zip(*rows)
    df = pd.DataFrame(
        {
            "job_id": np.arange(len(rows), dtype=np.int64),
            "arrival_s": np.asarray(arrival, dtype=np.float64),
            "model": np.asarray(model, dtype=object),
            "workers": np.asarray(workers, dtype=np.int64),
            "work": np.asarray(steps, dtype=np.float64),
            "weight": np.asarray(weight, dtype=np.float64),
        }
    )
    return validate_trace(df, src)


def _split(line: str, where: str, layout: tuple[str, ...] | None) -> dict[str, str]:
    """The line's fields by name; ``layout`` is the file's (from its first line), None before it."""
    parts = line.rstrip("\r\n").split("\t")
    if layout is None:
        require(
            len(parts) in LAYOUTS,
            where,
            "fields",
            f"has {len(parts)} tab-separated fields, expected {len(FIELDS)} ({', '.join(FIELDS)}) "
            f"or Gavel's older {len(MSR_FIELDS)} ({', '.join(MSR_FIELDS)})",
        )
        layout = LAYOUTS[len(parts)]
    require(
        len(parts) == len(layout),
        where,
        "fields",
        f"has {len(parts)} tab-separated fields, expected {len(layout)} like the file's first line ({', '.join(layout)})",
    )
    return dict(zip(layout, parts))


def _parse_fields(values: dict[str, str], where: str) -> tuple[str, float, int, float, float]:
    require(values["job_type"].strip() != "", where, "job_type", "is empty")
    require(
        values["needs_data_dir"].strip() in ("0", "1"),
        where,
        "needs_data_dir",
        f"must be 0 or 1, got {values['needs_data_dir']!r}",
    )
    steps = _number(values, "total_steps", where)
    require(
        steps > 0 and steps == int(steps),
        where,
        "total_steps",
        f"must be an integer > 0, got {values['total_steps']!r}",
    )
    scale = _number(values, "scale_factor", where)
    require(
        1 <= scale <= LARGEST_INTEGER and scale == int(scale),
        where,
        "scale_factor",
        f"must be an integer >= 1 and <= {LARGEST_INTEGER}, got {values['scale_factor']!r}",
    )
    weight = 1.0
    if "priority_weight" in values:
        weight = _number(values, "priority_weight", where)
        require(weight > 0, where, "priority_weight", f"must be > 0, got {values['priority_weight']!r}")
        _number(values, "SLO", where)
    arrival = _number(values, "arrival_time", where)
    require(
        0 <= arrival <= LATEST_TIME_S,
        where,
        "arrival_time",
        f"must be >= 0 and <= {LATEST_TIME_S:g} seconds, got {values['arrival_time']!r}",
    )
    return values["job_type"], steps, int(scale), weight, arrival


def _number(values: dict, field: str, where: str) -> float:
    try:
        x = float(values[field])
    except ValueError:
        raise InputError(where, field, f"must be a number, got {values[field]!r}") from None
    if not np.isfinite(x):
        raise InputError(where, field, f"must be finite, got {values[field]!r}")
    return x
