"""Real Philly jobs in submit order: windows of consecutive submissions (arrivals and the
jobs' own durations and GPU counts), and the duration factor that makes a trace offer a given
load over a given span. Used by the Philly generator's ``arrivals: philly`` and ``span_h``
options (docs/workload.md)."""

from __future__ import annotations

from functools import lru_cache
from importlib import resources
from pathlib import Path

import numpy as np
import pandas as pd

from fairsim.errors import InputError
from fairsim.files import note_input


def philly_jobs() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(submit_s, duration_s, num_gpus) of the 82,247 shipped Philly jobs, sorted by submit
    time (ties in file order), submit times in seconds from the first submission; read-only."""
    path = Path(str(resources.files("fairsim.data").joinpath("philly", "philly_jobs.csv")))
    note_input(path)
    return _philly_jobs(path)


@lru_cache(maxsize=1)
def _philly_jobs(path: Path) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    df = pd.read_csv(path, usecols=["timestamp", "duration", "num_gpus"])
    stamp = pd.to_datetime(df["timestamp"], format="%Y-%m-%d %H:%M:%S").to_numpy("datetime64[s]").astype(np.int64)
    order = np.argsort(stamp, kind="stable")
    submit = (stamp[order] - stamp[order[0]]).astype(np.float64)
    dur = df["duration"].to_numpy(np.float64)[order]
    gpus = df["num_gpus"].to_numpy(np.int64)[order]
    for a in (submit, dur, gpus):
        a.setflags(write=False)
    return submit, dur, gpus


def philly_vcs() -> np.ndarray:
    """The virtual cluster (15 ids) of each shipped Philly job, in philly_jobs()' order; read-only."""
    path = Path(str(resources.files("fairsim.data").joinpath("philly", "philly_jobs.csv")))
    note_input(path)
    return _philly_vcs(path)


@lru_cache(maxsize=1)
def _philly_vcs(path: Path) -> np.ndarray:
    df = pd.read_csv(path, usecols=["timestamp", "cluster"], dtype={"cluster": str})
    stamp = pd.to_datetime(df["timestamp"], format="%Y-%m-%d %H:%M:%S").to_numpy("datetime64[s]").astype(np.int64)
    vcs = df["cluster"].to_numpy(object)[np.argsort(stamp, kind="stable")]
    vcs.setflags(write=False)
    return vcs


def window_start(u: float, n: int, src: str) -> int:
    """First index of the n-job window that the uniform draw ``u`` picks (every start equally likely)."""
    total = len(philly_jobs()[0])
    if n > total:
        raise InputError(src, "num_jobs", f"arrivals: philly holds at most {total} jobs, got {n}")
    return min(int(u * (total - n + 1)), total - n)


def window(start: int, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Arrival offsets (s, first = 0), durations (s) and GPU counts of jobs start..start+n-1."""
    submit, dur, gpus = philly_jobs()
    sl = slice(start, start + n)
    return submit[sl] - submit[start], dur[sl].copy(), gpus[sl].copy()


def window_tenants(start: int, n: int) -> np.ndarray:
    """The virtual clusters of jobs start..start+n-1: Philly's tenants."""
    return philly_vcs()[start : start + n].copy()


def stretch_to(offsets: np.ndarray, last_s: float) -> np.ndarray:
    """Arrival offsets rescaled so the last job arrives at ``last_s`` (shape of the gaps kept)."""
    if len(offsets) < 2:
        return np.zeros_like(offsets)
    return offsets * (last_s / offsets[-1]) if offsets[-1] > 0 else np.linspace(0.0, last_s, len(offsets))


def duration_factor(
    base: np.ndarray, workers: np.ndarray, target_gpu_s: float, lo: float, hi: float | None, src: str
) -> float:
    """The m > 0 with sum(clip(base * m, lo, hi) * workers) == target_gpu_s (bisection on a
    monotone function; deterministic). Refused when the clip bounds make the target unreachable."""
    top = np.inf if hi is None else hi

    def offered(m: float) -> float:
        return float((np.clip(base * m, lo, top) * workers).sum())

    if offered(0.0) > target_gpu_s or (hi is not None and float((hi * workers).sum()) < target_gpu_s):
        raise InputError(
            src,
            "load",
            f"cannot be reached over span_h with durations clipped to "
            f"[{lo:g}, {top:g}] s (offered GPU-hours would be {offered(0.0) / 3600:.4g}.."
            f"{float((top * workers).sum()) / 3600:.4g}, asked {target_gpu_s / 3600:.4g}); "
            "change load, span_h or the duration clip",
        )
    a, b = 0.0, 1.0
    while offered(b) < target_gpu_s:
        b *= 2.0
    for _ in range(200):
        mid = 0.5 * (a + b)
        if mid in (a, b):
            break
        a, b = (mid, b) if offered(mid) < target_gpu_s else (a, mid)
    return b
