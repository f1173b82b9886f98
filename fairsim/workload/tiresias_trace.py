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

from pathlib import Path

import numpy as np
import pandas as pd

from fairsim.cluster import ClusterSpec
from fairsim.errors import require
from fairsim.workload.catalog import Catalog
from fairsim.workload.job_trace_csv import TraceColumns, read_job_csv
from fairsim.workload.shipped import shipped_file, shipped_names

FORMAT = "job_id,num_gpu,submit_time,iterations,model_name,duration,interval"
COLUMNS = TraceColumns(
    job_id="job_id",
    workers="num_gpu",
    submit="submit_time",
    duration="duration",
    duration_unit="seconds",
    model="model_name",
    model_example="resnet50",
    model_default="job",
)


def shipped_trace(name: str) -> Path | None:
    """A trace shipped in fairsim/data/tiresias/traces, by file name with or without .csv."""
    return shipped_file("tiresias", name, ".csv")


def shipped_trace_names() -> list[str]:
    return shipped_names("tiresias", ".csv")


def read_tiresias_trace(path: str | Path) -> pd.DataFrame:
    """The trace in fairsim's schema; a bad row is refused naming the file, its line and the field."""
    path = Path(path)
    require(
        path.is_file(),
        str(path),
        "path",
        f"no such file (give a Tiresias trace CSV, or one of the shipped traces: {', '.join(shipped_trace_names())})",
    )
    return read_job_csv(
        path,
        COLUMNS,
        what="a CSV with a header line, as Tiresias' traces",
        header_hint=FORMAT,
        missing_hint=f"required: {', '.join(COLUMNS.required)}; Tiresias' format: {FORMAT}",
    )


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
