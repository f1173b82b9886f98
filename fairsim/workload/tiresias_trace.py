"""Read the trace CSV of Tiresias' simulator (SymbioticLab/Tiresias, ``simulator/``) into
fairsim's trace schema, and the catalog that replays it.

The file has a header line and one job a row:

    job_id,num_gpu,submit_time,iterations,model_name,duration,interval

Mapping: job_id = job_id, workers = num_gpu, arrival_s = submit_time, work = duration (seconds
the job runs with its ``num_gpu`` GPUs), model = model_name (``job`` when the column is
absent). ``iterations`` and ``interval`` are not read: Tiresias' schedulers do not use them
either, and ``interval`` restates the submit gaps. Columns may come in any order; extra
columns are ignored.

``duration_catalog`` gives every model a throughput of one work unit (second) per second on
every GPU type of the cluster and at every gang size of the trace, so a job's run time is its
``duration`` exactly, whatever type and width it runs at. The trace says nothing of model sizes
or memory: the catalog charges no transfer (a switch costs the fixed restart only, when
overheads are on) and every worker fits every GPU.
"""

from __future__ import annotations

import csv
import io
import math
from pathlib import Path

import numpy as np
import pandas as pd

from fairsim.cluster import ClusterSpec
from fairsim.errors import InputError, require
from fairsim.files import note_input
from fairsim.workload.catalog import Catalog
from fairsim.workload.shipped import shipped_file, shipped_names
from fairsim.workload.text import decoded
from fairsim.workload.trace import LARGEST_INTEGER, LATEST_TIME_S, validate_trace

REQUIRED = ("job_id", "num_gpu", "submit_time", "duration")
DEFAULT_MODEL = "job"


def shipped_trace(name: str) -> Path | None:
    """A trace shipped in fairsim/data/tiresias/traces, by file name with or without .csv."""
    return shipped_file("tiresias", name, ".csv")


def shipped_trace_names() -> list[str]:
    return shipped_names("tiresias", ".csv")


def read_tiresias_trace(path: str | Path) -> pd.DataFrame:
    """The trace in fairsim's schema; a bad row is refused naming the file, its line and the field."""
    path = Path(path)
    src = str(path)
    require(
        path.is_file(),
        src,
        "path",
        f"no such file (give a Tiresias trace CSV, or one of the shipped traces: {', '.join(shipped_trace_names())})",
    )
    note_input(path)
    text = decoded(path.read_bytes(), lambda line: f"{src}:{line}", "a CSV with a header line, as Tiresias' traces")
    reader = csv.reader(io.StringIO(text, newline=""))
    header = next(reader, None)
    require(
        header is not None and any(h.strip() for h in header),
        src,
        "header",
        "the file is empty (expected a header line: "
        "job_id,num_gpu,submit_time,iterations,model_name,duration,interval)",
    )
    header = [h.strip() for h in header]
    twice = sorted({h for h in header if header.count(h) > 1})
    require(
        not twice,
        f"{src}:{reader.line_num}",
        "header",
        f"names the column(s) {', '.join(map(repr, twice))} more than once (each column once)",
    )
    missing = [c for c in REQUIRED if c not in header]
    require(
        not missing,
        src,
        "columns",
        f"missing {', '.join(missing)} (required: {', '.join(REQUIRED)}; "
        "Tiresias' format: job_id,num_gpu,submit_time,iterations,model_name,duration,interval)",
    )
    col = {name: header.index(name) for name in (*REQUIRED, "model_name") if name in header}
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
        job_id = _integer(fields[col["job_id"]], where, "job_id", 0)
        if job_id in line_of:
            raise InputError(
                where, "job_id", f"{job_id} repeats the job of line {line_of[job_id]} (job ids must be unique)"
            )
        line_of[job_id] = line
        ids.append(job_id)
        workers.append(_integer(fields[col["num_gpu"]], where, "num_gpu", 1))
        submit = _number(fields[col["submit_time"]], where, "submit_time")
        require(
            0 <= submit <= LATEST_TIME_S,
            where,
            "submit_time",
            f"must be >= 0 and <= {LATEST_TIME_S:g} seconds, got {fields[col['submit_time']].strip()!r}",
        )
        arrival.append(submit)
        duration = _number(fields[col["duration"]], where, "duration")
        require(duration > 0, where, "duration", f"must be > 0 seconds, got {fields[col['duration']].strip()!r}")
        work.append(duration)
        name = fields[col["model_name"]].strip() if "model_name" in col else DEFAULT_MODEL
        require(name != "", where, "model_name", "is empty (a model name, e.g. resnet50)")
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


def duration_catalog(trace: pd.DataFrame, cluster: ClusterSpec, source: str = "trace") -> Catalog:
    """One second of work per second for the trace's models and gang sizes on every cluster type."""
    models = tuple(sorted(set(trace["model"])))
    counts = tuple(int(w) for w in np.unique(trace["workers"]))
    shape = (len(models), len(cluster.gpu_types), len(counts))
    ones = np.ones(shape)
    return Catalog(
        name="durations",
        work_unit="seconds",
        models=models,
        gpu_types=tuple(cluster.gpu_types),
        worker_counts=counts,
        packed=ones,
        spread=ones.copy(),
        mem_per_worker_gb=np.zeros((len(models), len(counts))),
        state_bytes=np.zeros(len(models)),
        param_count=np.zeros(len(models)),
        large=np.zeros(len(models), dtype=bool),
        source=source,
    )


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
