"""Read the job traces of PAL's artifact (hal-uw/blox-pal, branch ``artifact``: the Sia-Philly
traces in ``workload-traces/philly/workload-<n>.csv``) into fairsim's trace schema, and the
catalog that replays them as the artifact's simulator does.

The file has a header line and one job a row:

    job_id,num_gpus,submit_time,duration,model

Mapping: job_id = job_id, workers = num_gpus, arrival_s = submit_time, model = model and
work = duration. Columns may come in any order; extra columns are ignored.

How the artifact's simulator reads these columns (facts from its code, docs/baselines.md "PAL"):
``duration`` is taken as the job's number of *iterations*, and each iteration lasts the model's
iteration time (a table of six models in its workload reader), so a job runs ``duration x
iteration_s[model]`` seconds at nominal speed, not ``duration`` seconds. A gang whose GPUs span
more than one node runs ``locality_penalty`` times slower (1.7 by default, the same constant its
PAL placement ranks options with). It also slows a job to its slowest GPU's measured variability
profile; fairsim's GPUs of one type are identical, so that part has no counterpart here (the
bench, ``python -m fairsim.bench pal``, measures what it is worth).

``iteration_catalog`` gives each model of the trace, on every GPU type of the cluster, a
throughput of ``1 / iteration_s[model]`` iterations per second when the gang sits on one host,
and ``1 / (iteration_s[model] x locality_penalty)`` when it spans hosts (always, for a gang wider
than a host). No memory or transfer figures: every worker fits every GPU and a switch costs the
fixed restart only.
"""

from __future__ import annotations

import csv
import io
import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from fairsim.cluster import ClusterSpec
from fairsim.errors import InputError, Number, require
from fairsim.files import note_input
from fairsim.workload.catalog import Catalog
from fairsim.workload.text import decoded
from fairsim.workload.trace import LARGEST_INTEGER, LATEST_TIME_S, validate_trace

REQUIRED = ("job_id", "num_gpus", "submit_time", "duration", "model")
FORMAT = "job_id,num_gpus,submit_time,duration,model"
# seconds per iteration of each model of the Sia-Philly traces, as blox-pal's workload reader sets
# them (workload/workload.py, get_per_iter_time; the commented-out "median iter times from cluster
# run" beside them are not the ones it uses)
ARTIFACT_ITERATION_S = {
    "BERT": 0.179,
    "DCGAN": 0.0469266931,
    "GPT2": 3.5714,
    "PointNet": 0.28125,
    "resnet50": 0.17540429367763434,
    "vgg19": 0.300610341,
}
ARTIFACT_LOCALITY_PENALTY = 1.7


def read_pal_trace(path: str | Path) -> pd.DataFrame:
    """The trace in fairsim's schema; a bad row is refused naming the file, its line and the field."""
    path = Path(path)
    src = str(path)
    require(path.is_file(), src, "path", f"no such file (give a PAL artifact trace CSV: {FORMAT})")
    note_input(path)
    text = decoded(path.read_bytes(), lambda line: f"{src}:{line}", f"a CSV with a header line ({FORMAT})")
    reader = csv.reader(io.StringIO(text, newline=""))
    header = next(reader, None)
    require(
        header is not None and any(h.strip() for h in header),
        src,
        "header",
        f"the file is empty (expected a header line: {FORMAT})",
    )
    header = [h.strip() for h in header]
    twice = sorted({h for h in header if header.count(h) > 1})
    require(not twice, src, "header", f"names the column(s) {', '.join(map(repr, twice))} more than once")
    missing = [c for c in REQUIRED if c not in header]
    require(not missing, src, "columns", f"missing {', '.join(missing)} (PAL's format: {FORMAT})")
    col = {name: header.index(name) for name in REQUIRED}
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
        workers.append(_integer(fields[col["num_gpus"]], where, "num_gpus", 1))
        submit = _number(fields[col["submit_time"]], where, "submit_time")
        require(
            0 <= submit <= LATEST_TIME_S,
            where,
            "submit_time",
            f"must be >= 0 and <= {LATEST_TIME_S:g} seconds, got {fields[col['submit_time']].strip()!r}",
        )
        arrival.append(submit)
        duration = _number(fields[col["duration"]], where, "duration")
        require(duration > 0, where, "duration", f"must be > 0 iterations, got {fields[col['duration']].strip()!r}")
        work.append(duration)
        name = fields[col["model"]].strip()
        require(name != "", where, "model", "is empty (a model name, e.g. vgg19)")
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


def iteration_seconds(value: Any, src: str, key: str = "iteration_s") -> dict[str, float]:
    """The per-model iteration times of a config: None = the artifact's table, else a mapping
    {model: seconds > 0}."""
    if value is None:
        return dict(ARTIFACT_ITERATION_S)
    require(isinstance(value, Mapping) and len(value) > 0, src, key, "must map model names to seconds per iteration")
    return {str(m): Number(lo=0.0, lo_open=True).check(s, src, f"{key}.{m}") for m, s in value.items()}


def iteration_catalog(
    trace: pd.DataFrame,
    cluster: ClusterSpec,
    iteration_s: Mapping[str, float] | None = None,
    locality_penalty: float = ARTIFACT_LOCALITY_PENALTY,
    source: str = "trace",
) -> Catalog:
    """Iterations per second for the trace's models and gang sizes on every cluster type: one
    host at full speed, more hosts ``locality_penalty`` times slower."""
    table = dict(ARTIFACT_ITERATION_S if iteration_s is None else iteration_s)
    models = tuple(sorted(set(trace["model"])))
    unknown = [m for m in models if m not in table]
    require(
        not unknown,
        source,
        "model",
        f"no iteration time for {', '.join(map(repr, unknown))} "
        f"(known: {', '.join(sorted(table))}; add them under workload.iteration_s)",
    )
    require(
        math.isfinite(locality_penalty) and locality_penalty >= 1,
        source,
        "locality_penalty",
        f"must be >= 1, got {locality_penalty!r}",
    )
    counts = np.unique(trace["workers"]).astype(np.int64)
    per_s = 1.0 / np.asarray([table[m] for m in models], dtype=np.float64)  # [M]
    one_host = counts <= cluster.gpus_per_host  # [W]
    packed_w = np.where(one_host, 1.0, 1.0 / locality_penalty)
    shape = (len(models), len(cluster.gpu_types), len(counts))
    packed = np.broadcast_to(per_s[:, None, None] * packed_w[None, None, :], shape).copy()
    spread = np.broadcast_to(per_s[:, None, None] / locality_penalty, shape).copy()
    return Catalog(
        name="pal_iterations",
        work_unit="iterations",
        models=models,
        gpu_types=tuple(cluster.gpu_types),
        worker_counts=tuple(int(c) for c in counts),
        packed=packed,
        spread=spread,
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
