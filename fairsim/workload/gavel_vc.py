"""Gavel's Philly traces per virtual cluster: ``msr/seed=<k>/<vc>.trace`` files, one per Philly
virtual cluster (VC) and job-type draw (seed); docs/workload.md, "Gavel's per-VC Philly traces", describes them.

Seed 0 ships in fairsim/data/gavel/traces/msr; the other seeds of a Gavel checkout
(``scheduler/traces/msr``) are read from a ``root`` folder of the same shape. The lines carry no
VC: a job's VC is its file's name (``vc_of``), the natural tenant.

Two readings of a file:

- ``read_gavel_trace`` (the ``gavel_trace`` workload): the file's step counts as they are, to run
  on the gavel catalog. A count is the job's Philly duration times one V100's steps/s in Gavel's
  older throughput table, whatever the gang size; those figures are 0.01x (Recommendation) to
  2.4x (ResNet-18) the catalog's, and the catalog's are for whole gangs, so on the catalog a job does not run for its
  Philly duration. About one job in ten has a gang size the catalog has no throughput for
  (7 or 12-64 GPUs, or 2-8 for a single-GPU job type) and is refused when the jobs are built.
- ``read_msr_log``: the normalized job log (fairsim.workload.formats) with each job's Philly
  duration recovered from its step count (steps / the V100 throughput Gavel made the count
  with, fairsim/data/gavel/msr_v100_throughputs.csv), its gang size from Philly and tenant = VC.
"""

from __future__ import annotations

import re
from importlib import resources
from pathlib import Path

import numpy as np
import pandas as pd

from fairsim.errors import InputError, require
from fairsim.files import note_input
from fairsim.workload.formats import LogRead
from fairsim.workload.gavel_trace import read_gavel_trace

SEED_DIR = re.compile(r"seed=(\d+)")
REFERENCE_GPU = "V100"  # Gavel's step counts are Philly durations times this GPU's steps/s


def shipped_msr_root() -> Path:
    return Path(str(resources.files("fairsim.data").joinpath("gavel", "traces", "msr")))


def _folder(root: str | Path | None) -> Path:
    return Path(root).expanduser() if root is not None else shipped_msr_root()


def msr_seeds(root: str | Path | None = None) -> list[int]:
    """The seeds of ``root`` (default: the shipped folder): its ``seed=<k>`` subfolders."""
    base = _folder(root)
    if not base.is_dir():
        return []
    return sorted(int(m.group(1)) for p in base.iterdir() if p.is_dir() and (m := SEED_DIR.fullmatch(p.name)))


def msr_vcs(seed: int = 0, root: str | Path | None = None) -> list[str]:
    """The VCs of one seed: the ``.trace`` files of ``root/seed=<seed>``."""
    base = _folder(root)
    return sorted(p.stem for p in (base / f"seed={seed}").glob("*.trace"))


def msr_trace(vc: str, seed: int = 0, root: str | Path | None = None) -> Path:
    """The trace of virtual cluster ``vc`` and job-type draw ``seed``; ``root`` is a folder of
    ``seed=<k>/<vc>.trace`` files (a Gavel checkout's scheduler/traces/msr), default the shipped one."""
    base = _folder(root)
    src = f"gavel msr traces ({base})"
    seeds = msr_seeds(base)
    require(len(seeds) > 0, src, "root", "has no seed=<k> folders (give Gavel's scheduler/traces/msr folder)")
    require(
        isinstance(seed, int) and not isinstance(seed, bool) and seed in seeds,
        src,
        "trace_seed",
        f"{seed!r} is not one of {', '.join(map(str, seeds))}"
        + ("" if root is not None else " (the other seeds of Gavel's scheduler/traces/msr: give its folder as root)"),
    )
    vcs = msr_vcs(seed, base)
    require(isinstance(vc, str) and vc in vcs, src, "vc", f"{vc!r} is not one of {', '.join(vcs)} (seed {seed})")
    return base / f"seed={seed}" / f"{vc}.trace"


def vc_of(path: str | Path) -> str:
    """A trace's VC: its file name without ``.trace`` (the lines do not name it)."""
    return Path(path).name.removesuffix(".trace")


def reference_throughputs() -> pd.Series:
    """steps/s on one V100 by job type, the figures Gavel turned Philly durations into steps with."""
    path = Path(str(resources.files("fairsim.data").joinpath("gavel", "msr_v100_throughputs.csv")))
    note_input(path)
    table = pd.read_csv(path)
    return pd.Series(table["v100_steps_per_s"].to_numpy(dtype=np.float64), index=table["model"].astype(str))


def read_msr_log(path: str | Path, src: str | None = None) -> LogRead:
    """One msr trace as the normalized job log: duration_s = the job's Philly duration (its step
    count over Gavel's V100 steps/s for its type; counts are whole steps, so short jobs of slow
    types read up to 0.3 % off), gpus = its Philly gang size, tenant = the VC. Errors name
    ``src: <file>: job <k>``, k being Gavel's job id (the job's line, counting jobs from 0)."""
    path = Path(path)
    source = f"{src}: {path}" if src else str(path)
    trace = read_gavel_trace(path)
    tput = reference_throughputs()
    unknown = sorted(set(trace["model"]) - set(tput.index))
    if unknown:
        raise InputError(
            str(path),
            "job_type",
            f"{unknown[0]!r} has no Gavel V100 throughput to recover its duration with (known: {', '.join(tput.index)})",
        )
    duration = trace["work"].to_numpy() / tput.reindex(trace["model"]).to_numpy()
    log = pd.DataFrame(
        {
            "job_id": trace["job_id"].astype(str).to_numpy(dtype=object),
            "submit_s": trace["arrival_s"].to_numpy(),
            "duration_s": duration,
            "gpus": trace["workers"].to_numpy(),
            "gpu_type": REFERENCE_GPU,
            "model": trace["model"].to_numpy(dtype=object),
            "tenant": vc_of(path),
        }
    )
    span = float(log["submit_s"].max() - log["submit_s"].min())
    ids = log["job_id"].to_numpy()
    return LogRead(
        log=log,
        source=source,
        where=lambda i: f"{source}: job {ids[i]}",
        meta={"rows": len(log), "vc": vc_of(path), "span_s": span},
    )
