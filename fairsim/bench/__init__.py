"""Benchmarks: ``python -m fairsim.bench <name>`` runs ``fairsim.bench.<name>.main(argv)``."""

import csv
import os
from collections.abc import Iterable, Sequence

import numpy as np


def load_average() -> str:
    """The machine's 1, 5 and 15 minute load averages, which every timing printed beside it needs."""
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def jct_agreement(theirs: np.ndarray, ours: np.ndarray) -> tuple[float, float, float, float]:
    """Another simulator's per-job JCTs beside ours, the same jobs in the same order: their and our
    average, our deviation from theirs in %, and the per-job Pearson correlation (nan when either
    side is constant)."""
    a, b = np.asarray(theirs, dtype=np.float64), np.asarray(ours, dtype=np.float64)
    corr = float(np.corrcoef(a, b)[0, 1]) if a.std() > 0 and b.std() > 0 else float("nan")
    return float(a.mean()), float(b.mean()), 100.0 * (b.mean() - a.mean()) / a.mean(), corr


def write_their_jobs(path: str, header: Sequence[str], rows: Iterable[Sequence], simulator: str) -> None:
    """The other simulator's per-job results as one CSV (``--their-jobs``), and a line saying so."""
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(header)
        w.writerows(rows)
    print(f"wrote {simulator} per-job JCTs to {path}")
