"""Reader of the Helios traces (SenseTime, Hu et al., SC'21; S-Lab-System-Group/HeliosData):
one ``cluster_log.csv`` per cluster (Venus, Earth, Saturn, Uranus), a Slurm job log with a
header line:

    job_id,user,vc,gpu_num,cpu_num,node_num,state,submit_time,start_time,end_time,duration,queue

Times are wall-clock ``YYYY-MM-DD HH:MM:SS``. Mapping: job_id = job_id; submit_s =
submit_time; duration_s = end_time - start_time (the definition of the log's own ``duration``
column, which is not read: the timestamps are needed anyway to tell a job that never started or
never ended); gpus = gpu_num; tenant = vc, or user with ``tenant: user``; status = state
(COMPLETED, CANCELLED, FAILED, TIMEOUT, NODE_FAIL). The log does not record GPU types: every
job gets ``gpu_type`` (the cluster's one type, a raw name such as V100) or none.

Dropped, each job under the first reason that applies: ``cpu_only`` (gpu_num 0),
``no_submit_time``, ``no_start_or_end`` (start_time or end_time empty), ``non_positive_duration``
(end_time <= start_time). An empty or non-whole gpu_num, or an unreadable time, is refused naming
its line.
Columns may come in any order; extra columns are ignored.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from fairsim.tables import read_csv_table
from fairsim.workload import options as opt
from fairsim.workload.formats import LogRead
from fairsim.workload.formats._cells import numbers, seconds
from fairsim.workload.formats._log_build import (
    file_in,
    finished_log,
    keep_after_drops,
    optional_name,
    text_or_none,
)

OPTIONS = ("tenant", "gpu_type")
TENANTS = ("vc", "user")
FILE_NAME = "cluster_log.csv"


def read(path: Path, cfg: Mapping[str, Any], src: str) -> LogRead:
    tenant_column = opt.choice(cfg, "tenant", src, "vc", TENANTS)
    gpu_type = optional_name(cfg, "gpu_type", src, "V100")
    required = ("job_id", tenant_column, "gpu_num", "state", "submit_time", "start_time", "end_time")
    table = read_csv_table(file_in(path, FILE_NAME, src), src, required=required)
    cells = table.cells
    gpus = numbers(cells["gpu_num"], table.where, "gpu_num", lo=0, whole=True, empty_ok=False)
    submit = seconds(cells["submit_time"], table.where, "submit_time")
    start = seconds(cells["start_time"], table.where, "start_time")
    end = seconds(cells["end_time"], table.where, "end_time")
    keep, dropped = keep_after_drops(
        np.ones(len(cells), dtype=bool),
        [
            ("cpu_only", ~(gpus > 0)),
            ("no_submit_time", np.isnan(submit)),
            ("no_start_or_end", np.isnan(start) | np.isnan(end)),
            ("non_positive_duration", ~(end > start)),
        ],
    )
    columns = {
        "job_id": text_or_none(cells["job_id"])[keep],
        "submit_s": submit[keep],
        "duration_s": (end - start)[keep],
        "gpus": gpus[keep],
        "gpu_type": np.full(int(keep.sum()), gpu_type, dtype=object),
        "tenant": text_or_none(cells[tenant_column])[keep],
        "status": text_or_none(cells["state"])[keep],
    }
    return finished_log(columns, np.flatnonzero(keep), table.where, dropped, len(cells), f"{src}: {table.path}")
