"""Pollux's workloads and its six applications as a fairsim catalog (``catalog: pollux``).

A Pollux workload CSV (its artifact's ``simulator/workloads/workload-N.csv``; eight ship in
``fairsim/data/pollux/traces``) has one job a row:

    name,time,application,num_replicas,batch_size

Mapping: job_id = the row's position (Pollux's names end in it: ``cifar10-3``), arrival_s =
time, model = application, workers = num_replicas, work = the application's
``PolluxCatalog.target_examples`` (examples at the initial batch's efficiency: the whole
training). ``batch_size`` is not read: fairsim's jobs choose their batch (Pollux's
TunedJobs baselines give each job a tuned one). Columns may come in any order.

``pollux_catalog`` rates a rigid job of an application at n GPUs of type T4 (the only type
profiled) at its average goodput over the whole training at that allocation
(``PolluxCatalog.mean_rate``, the batch re-chosen each epoch): packed on the fewest hosts, spread
over more (Pollux's network model tells one host from several, nothing finer). Made elastic
(``workload.elastic``), the same jobs progress at ``PolluxGoodput``'s rate, epoch by epoch.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from fairsim.errors import require
from fairsim.files import note_input
from fairsim.workload.catalog import Catalog
from fairsim.workload.goodput import PROFILED_GPU, PolluxCatalog, pollux_dir
from fairsim.workload.shipped import shipped_file, shipped_names

FORMAT = "name,time,application,num_replicas,batch_size"
REQUIRED = ("time", "application", "num_replicas")
STATE_BYTES_PER_PARAM = 16  # Adam in mixed precision, as the other catalogs count a job's state


def shipped_trace(name: str) -> Path | None:
    """A workload shipped in fairsim/data/pollux/traces, by file name with or without .csv."""
    return shipped_file("pollux", name, ".csv")


def read_pollux_trace(path: str | Path, pollux: PolluxCatalog) -> pd.DataFrame:
    """The workload in fairsim's schema (unchecked values are checked by validate_trace)."""
    path = Path(path)
    require(
        path.is_file(),
        str(path),
        "path",
        f"no such file (give a Pollux workload CSV, or one of the shipped: {', '.join(shipped_names('pollux', '.csv'))})",
    )
    note_input(path)
    df = pd.read_csv(path, skipinitialspace=True)
    df.columns = [str(c).strip() for c in df.columns]
    missing = [c for c in REQUIRED if c not in df.columns]
    require(not missing, str(path), "columns", f"missing {', '.join(missing)} (Pollux's format: {FORMAT})")
    models = df["application"].astype(str).str.strip()
    for row, name in enumerate(models):
        pollux.index(name, f"{path}:{row + 2}", "application")
    target = dict(zip(pollux.models, pollux.target_examples))
    return pd.DataFrame(
        {
            "job_id": np.arange(len(df), dtype=np.int64),
            "arrival_s": df["time"],
            "model": models,
            "workers": df["num_replicas"],
            "work": models.map(target).astype(np.float64),
        }
    )


def pollux_catalog(pollux: PolluxCatalog, gpus_per_host: int, max_gpus: int, source: str = "") -> Catalog:
    """Pollux's six applications on T4 at 1..max_gpus GPUs (NaN where no batch fits: more GPUs
    than max_batch / min_local). Work unit: examples at the initial batch's efficiency."""
    counts = np.arange(1, max_gpus + 1)
    fewest = -(-counts // gpus_per_host)
    packed = np.stack([pollux.mean_rate(m, fewest, counts) for m in range(len(pollux.models))])
    spread = np.stack([pollux.mean_rate(m, np.minimum(counts, 2), counts) for m in range(len(pollux.models))])
    spread = np.where(counts > gpus_per_host, packed, spread)  # already on several hosts: the same
    packed, spread = np.where(packed > 0, packed, np.nan), np.where(packed > 0, spread, np.nan)
    meta = pd.read_csv(pollux_dir() / "models.csv").set_index("model").loc[list(pollux.models)]
    params = meta["param_count"].to_numpy(np.float64)
    return Catalog(
        name="pollux",
        work_unit="examples",
        models=pollux.models,
        gpu_types=(PROFILED_GPU,),
        worker_counts=tuple(int(c) for c in counts),
        packed=packed[:, None, :],
        spread=spread[:, None, :],
        mem_per_worker_gb=np.zeros((len(pollux.models), len(counts))),  # the per-GPU batch limits stand for memory
        state_bytes=STATE_BYTES_PER_PARAM * params,
        param_count=params,
        large=np.zeros(len(pollux.models), dtype=bool),
        source=source or str(pollux_dir()),
    )
