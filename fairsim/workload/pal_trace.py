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

import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from fairsim.cluster import ClusterSpec
from fairsim.errors import Number, require
from fairsim.workload.catalog import Catalog
from fairsim.workload.job_trace_csv import TraceColumns, read_job_csv

FORMAT = "job_id,num_gpus,submit_time,duration,model"
COLUMNS = TraceColumns(
    job_id="job_id",
    workers="num_gpus",
    submit="submit_time",
    duration="duration",
    duration_unit="iterations",
    model="model",
    model_example="vgg19",
    header_line_named=False,
)
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
    require(path.is_file(), str(path), "path", f"no such file (give a PAL artifact trace CSV: {FORMAT})")
    return read_job_csv(
        path,
        COLUMNS,
        what=f"a CSV with a header line ({FORMAT})",
        header_hint=FORMAT,
        missing_hint=f"PAL's format: {FORMAT}",
    )


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
