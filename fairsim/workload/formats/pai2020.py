"""Reader of the Alibaba PAI GPU trace of 2020 (Weng et al., NSDI'22; alibaba/clusterdata,
``cluster-trace-gpu-v2020``): headerless CSV tables, the column order given by the trace's
``.header`` files:

    pai_job_table.csv   job_name,inst_id,user,status,start_time,end_time
    pai_task_table.csv  job_name,task_name,inst_num,status,start_time,end_time,plan_cpu,plan_mem,plan_gpu,gpu_type
    pai_machine_spec.csv  machine,gpu_type,cap_cpu,cap_mem,cap_gpu

Times are seconds from an undisclosed origin. A job's ``start_time`` is its submission; a
task's is its launch (0 or empty: never launched). ``plan_gpu`` is a percentage of one GPU
per instance (50 = half a GPU, 200 = two), empty or 0 for CPU tasks (parameter servers ...).

One job a ``job_name``: job_id = job_name, submit_s = the job's start_time, tenant = user,
status = the job's status (Terminated, Failed, Running, Waiting). Of its GPU tasks (plan_gpu >
0): gpus = sum of inst_num * plan_gpu / 100; duration_s = last end - first launch; gpu_type =
their gpu_type (MISC, T4, P100, V100, V100M32: raw names), none when empty. An instance asking
for part of a GPU shares the GPU with others, which fairsim's whole-GPU gangs cannot express:
such jobs are dropped (``fractional_gpus: drop``, the default), or each instance rounds up to
whole GPUs (``fractional_gpus: round_up``: 2 instances of 50% = 2 GPUs).

Dropped, each job under the first reason that applies: ``repeated_job_name`` (every row of a
job_name listed twice in the job table), ``no_tasks``, ``cpu_only``, ``fractional_gpu``,
``no_instance_count`` (a GPU task without inst_num), ``mixed_gpu_types`` (GPU tasks on
different types), ``no_submit_time``, ``no_start_or_end`` (a GPU task never launched or not
ended: the job was waiting or running when the trace ended), ``non_positive_duration``. Task
rows of a job_name missing from the job table are counted in ``meta`` (not jobs, not dropped).

``path`` is the folder holding the tables; ``job_table`` / ``task_table`` name other files (a
path relative to that folder, or absolute). A first line that starts with ``job_name`` is
taken as a header line (for tables joined with their ``.header`` file).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from fairsim.cluster import MAX_GPUS, gpu_specs
from fairsim.errors import InputError, require
from fairsim.tables import CsvTable, read_csv_table
from fairsim.workload import options as opt
from fairsim.workload.formats import LogRead
from fairsim.workload.formats._cells import numbers
from fairsim.workload.formats._gpu_names import datasheet_types, name_table
from fairsim.workload.formats._log_build import (
    finished_log,
    keep_after_drops,
    text_or_none,
)
from fairsim.workload.formats.clusters import host_size

OPTIONS = ("fractional_gpus", "job_table", "task_table")
FRACTIONAL = ("drop", "round_up")
JOB_COLUMNS = ("job_name", "inst_id", "user", "status", "start_time", "end_time")
TASK_COLUMNS = (
    "job_name",
    "task_name",
    "inst_num",
    "status",
    "start_time",
    "end_time",
    "plan_cpu",
    "plan_mem",
    "plan_gpu",
    "gpu_type",
)
SPEC_COLUMNS = ("machine", "gpu_type", "cap_cpu", "cap_mem", "cap_gpu")
JOB_FILE, TASK_FILE, SPEC_FILE = "pai_job_table.csv", "pai_task_table.csv", "pai_machine_spec.csv"


def read(path: Path, cfg: Mapping[str, Any], src: str) -> LogRead:
    fractional = opt.choice(cfg, "fractional_gpus", src, "drop", FRACTIONAL)
    jobs = read_csv_table(
        _table_path(path, cfg, "job_table", JOB_FILE, src),
        src,
        columns=JOB_COLUMNS,
        header_first="job_name",
        usecols=("job_name", "user", "status", "start_time"),
    )
    tasks = read_csv_table(
        _table_path(path, cfg, "task_table", TASK_FILE, src),
        src,
        columns=TASK_COLUMNS,
        header_first="job_name",
        usecols=("job_name", "inst_num", "start_time", "end_time", "plan_gpu", "gpu_type"),
    )
    per_job, orphan_rows = _gpu_tasks_per_job(tasks, jobs.cells["job_name"], round_up=fractional == "round_up")
    names = jobs.cells["job_name"].str.strip()
    submit = numbers(jobs.cells["start_time"], jobs.where, "start_time")
    t = per_job.reindex(names.to_numpy())  # one row a job-table row; NaN for a job without tasks
    keep, dropped = keep_after_drops(
        np.ones(len(names), dtype=bool),
        [
            ("repeated_job_name", names.duplicated(keep=False).to_numpy()),
            ("no_tasks", t["tasks"].isna().to_numpy()),
            ("cpu_only", ~(t["gpu_tasks"] > 0).to_numpy()),
            ("fractional_gpu", t["fractional"].eq(True).to_numpy()),
            ("no_instance_count", t["no_inst_num"].eq(True).to_numpy()),
            ("mixed_gpu_types", (t["types"] > 1).to_numpy()),
            ("no_submit_time", np.isnan(submit)),
            ("no_start_or_end", t["unfinished"].eq(True).to_numpy()),
            ("non_positive_duration", ~(t["end"] > t["start"]).to_numpy()),
        ],
    )
    columns = {
        "job_id": names.to_numpy(dtype=object)[keep],
        "submit_s": submit[keep],
        "duration_s": (t["end"] - t["start"]).to_numpy(np.float64)[keep],
        "gpus": np.rint(t["gpus"].to_numpy(np.float64)[keep]),
        "gpu_type": t["gpu_type"].to_numpy(dtype=object)[keep],
        "tenant": text_or_none(jobs.cells["user"])[keep],
        "status": text_or_none(jobs.cells["status"])[keep],
    }
    meta = {"task_rows_read": len(tasks.cells), "task_rows_without_job": orphan_rows}
    return finished_log(columns, np.flatnonzero(keep), jobs.where, dropped, len(names), f"{src}: {jobs.path}", meta)


def _table_path(folder: Any, cfg: Mapping[str, Any], key: str, default: str, src: str) -> Path:
    require(
        isinstance(folder, (str, Path)) and str(folder) != "",
        src,
        "path",
        f"must be the folder holding {JOB_FILE} and {TASK_FILE}, got {folder!r}",
    )
    name = cfg.get(key) or default
    require(isinstance(name, (str, Path)), src, key, f"must be a file name or path, got {name!r}")
    return Path(folder).expanduser() / Path(name).expanduser()  # an absolute name replaces the folder


def _gpu_tasks_per_job(tasks: CsvTable, job_names: pd.Series, *, round_up: bool) -> tuple[pd.DataFrame, int]:
    """Per job_name: tasks, gpu_tasks, gpus, fractional, no_inst_num, types, gpu_type, unfinished,
    start, end (over its GPU tasks); and the number of task rows whose job is not in the job table."""
    c = tasks.cells
    names = c["job_name"].str.strip()
    inst = numbers(c["inst_num"], tasks.where, "inst_num", lo=1, whole=True)
    plan = numbers(c["plan_gpu"], tasks.where, "plan_gpu", lo=0)
    start = numbers(c["start_time"], tasks.where, "start_time")
    end = numbers(c["end_time"], tasks.where, "end_time")
    gpu_task = plan > 0
    per_instance = plan / 100.0
    whole = per_instance == np.round(per_instance)
    frame = pd.DataFrame(
        {
            "job_name": names,
            "tasks": 1,
            "gpu_tasks": gpu_task.astype(np.int64),
            "gpus": np.where(gpu_task, inst * (np.ceil(per_instance) if round_up else per_instance), 0.0),
            "fractional": gpu_task & ~whole & (not round_up),
            "no_inst_num": gpu_task & np.isnan(inst),
            "unfinished": gpu_task & (~(start > 0) | ~(end > 0)),
            "start": np.where(gpu_task & (start > 0), start, np.nan),
            "end": np.where(gpu_task & (end > 0), end, np.nan),
            "gpu_type": pd.Series(text_or_none(c["gpu_type"])).where(gpu_task, None),
        }
    )
    grouped = frame.groupby("job_name", sort=False)
    per_job = grouped.agg(
        tasks=("tasks", "sum"),
        gpu_tasks=("gpu_tasks", "sum"),
        gpus=("gpus", "sum"),
        fractional=("fractional", "any"),
        no_inst_num=("no_inst_num", "any"),
        unfinished=("unfinished", "any"),
        start=("start", "min"),
        end=("end", "max"),
        types=("gpu_type", "nunique"),
        gpu_type=("gpu_type", "first"),
    )
    known = pd.Index(job_names.str.strip().unique()).get_indexer(per_job.index) >= 0
    return per_job, int(per_job["tasks"].to_numpy()[~known].sum())


KNOWN_TYPES = {"V100M32": "V100-32GB"}  # the trace's names that are datasheet types under another name
UNDISCLOSED = ("MISC",)  # the trace's name for its other, unnamed GPU models


def shipped_node_list() -> Path:
    """pai_machine_spec.csv as shipped (CC BY 4.0; fairsim/data/pai2020/README.md)."""
    return Path(str(resources.files("fairsim.data").joinpath("pai2020", SPEC_FILE)))


def cluster_config(
    path: Path, gpu_map: Mapping[str, Any] | None, src: str, *, name: str = "pai2020", gpus_per_host: int | None = None
) -> dict:
    """The PAI cluster from pai_machine_spec.csv (``path``: the file or its folder), as a mapping
    ``ClusterSpec.from_config`` accepts: {name, counts {datasheet type: GPUs}, gpus_per_host}.

    Machines without GPUs are left out. A raw type maps by KNOWN_TYPES, the datasheet's own names
    (T4, P100, V100), and the user's ``gpu_map`` over them (raw name -> datasheet name); MISC, and
    any name still unmapped (null), is refused in one line naming it. Two raw types mapped to one
    name add up. The counts are listed in the datasheet's order; gpus_per_host is given, or the
    machine size holding the most GPUs (fairsim.workload.formats.clusters.host_size)."""
    table_map = name_table(KNOWN_TYPES, UNDISCLOSED, gpu_map, src, "{MISC: K80}")
    file = Path(path).expanduser()
    table = read_csv_table(
        file / SPEC_FILE if file.is_dir() else file,
        src,
        columns=SPEC_COLUMNS,
        header_first="machine",
        usecols=("gpu_type", "cap_gpu"),
    )
    gpus = numbers(table.cells["cap_gpu"], table.where, "cap_gpu", lo=0, hi=MAX_GPUS, whole=True, empty_ok=False)
    raw_types = text_or_none(table.cells["gpu_type"])
    with_gpus = np.flatnonzero(gpus > 0)
    blank = [int(row) for row in with_gpus if raw_types[row] is None]
    if blank:
        raise InputError(table.where(blank[0]), "gpu_type", "is empty on a machine with GPUs")
    types = datasheet_types(
        (raw_types[row] for row in with_gpus),
        table_map,
        f"{src}: {table.path}",
        "PAI 2020",
        "MISC stands for its other, unnamed models",
    )
    counts: Counter[str] = Counter()
    for row in with_gpus:
        counts[types[raw_types[row]]] += int(gpus[row])
    sizes = [int(g) for g in gpus[with_gpus]]
    order = [spec.name for spec in gpu_specs().values()]
    return {
        "name": name,
        "counts": {t: counts[t] for t in order if t in counts},
        "gpus_per_host": gpus_per_host if gpus_per_host is not None else host_size(sizes),
    }
