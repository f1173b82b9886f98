"""Gavel's per-VC Philly traces (``msr/seed=<k>/<vc>.trace``) as a job log: each job's Philly
submit time, duration (recovered from Gavel's step count) and gang size, Gavel's job type as its
model, V100 as the type the duration is for, and the VC as its tenant (fairsim.workload.gavel_vc;
docs/workload.md, "Gavel's per-VC Philly traces").

Options: ``vc`` (one VC, a list of them, or ``all``) and ``trace_seed`` pick files of
``msr_root`` (default: the shipped seed 0), or ``path`` names a file directly. Several VCs make
one log of their jobs together, each job keeping its VC as tenant: Philly's VCs sharing one cluster.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from fairsim.errors import require
from fairsim.files import input_path
from fairsim.workload.formats import LogRead
from fairsim.workload.gavel_vc import msr_trace, msr_vcs, read_msr_log

OPTIONS = ("vc", "trace_seed", "msr_root")


def resolve_path(cfg: Mapping[str, Any], src: str) -> list[Path]:
    """The traces a config names: ``path``, or those of ``vc`` (and ``trace_seed``, ``msr_root``)."""
    given, vc = cfg.get("path"), cfg.get("vc")
    require(not (given and vc), src, "vc", "names the trace like path: give one of them, not both")
    if given:
        path = input_path(str(given))
        require(path.is_file(), src, "path", f"no such file: {given}")
        return [path]
    seed, root = cfg.get("trace_seed", 0), cfg.get("msr_root")
    if vc == "all":
        msr_trace("", seed, root) if not msr_vcs(
            seed, root
        ) else None  # the resolver's own error for a bad seed or root
        vc = msr_vcs(seed, root)
    names = [vc] if isinstance(vc, str) else list(vc) if isinstance(vc, (list, tuple)) else None
    require(
        bool(names) and all(isinstance(v, str) and v for v in names),
        src,
        "vc",
        "is required: a virtual cluster, a list of them, or all (e.g. workload.vc=ed69ec)",
    )
    return [msr_trace(v, seed, root) for v in names]


def read(paths: list[Path], cfg: Mapping[str, Any], src: str) -> LogRead:
    reads = [read_msr_log(p, src) for p in paths]
    if len(reads) == 1:
        return reads[0]
    log = pd.concat(
        [r.log.assign(job_id=[f"{r.meta['vc']}/{j}" for j in r.log["job_id"]]) for r in reads], ignore_index=True
    )
    starts = np.cumsum([0] + [len(r.log) for r in reads])

    def where(row: int) -> str:  # the place of the row in its own VC's file
        k = int(np.searchsorted(starts, row, side="right")) - 1
        return reads[k].where(row - int(starts[k]))

    return LogRead(
        log=log,
        source=f"{src}: {paths[0].parent}",
        where=where,
        meta={"rows": int(len(log)), "vcs": [r.meta["vc"] for r in reads]},
    )
