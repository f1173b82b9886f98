"""Digests of a per-job table that do not depend on how it is stored: each job as one line of
its values (floats by ``repr``, which round-trips exactly), in the table's row order. A file's
bytes would not do: parquet embeds its writer's version."""

from __future__ import annotations

import hashlib
import math

import pandas as pd


def _value(v) -> str:
    if isinstance(v, float):
        return "nan" if math.isnan(v) else repr(v)
    return repr(v.item() if hasattr(v, "item") else v)


def job_lines(jobs: pd.DataFrame) -> list[str]:
    """One line per row: ``column=value`` pairs in column order."""
    cols = list(jobs.columns)
    return [",".join(f"{c}={_value(v)}" for c, v in zip(cols, row)) for row in jobs.itertuples(index=False, name=None)]


def table_digest(jobs: pd.DataFrame) -> str:
    """SHA-256 over the column names and every job's line."""
    digest = hashlib.sha256(("\t".join(map(str, jobs.columns)) + "\n").encode())
    for line in job_lines(jobs):
        digest.update(line.encode() + b"\n")
    return digest.hexdigest()


def job_digests(jobs: pd.DataFrame, width: int = 8) -> list[str]:
    """A short SHA-256 prefix per job, in row order: enough to name the first job that differs."""
    return [hashlib.sha256(line.encode()).hexdigest()[:width] for line in job_lines(jobs)]
