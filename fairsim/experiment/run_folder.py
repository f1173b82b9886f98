"""A run's folder: the names of its files, and what makes a sweep cell complete -- the one definition the runner (skip or recompute) and the
collector (row in results.parquet or not) share, so they never disagree about a cell.

A cell folder is complete when
- ``summary.json`` parses as a JSON object,
- ``config.yaml`` parses and names the same policy, cluster, workload and seed as the summary
  (and, for the runner, has the identity of the config the cell would run with now),
- ``jobs.parquet`` is readable whole and holds at least the jobs the summary counts.
Anything else is incomplete, with a one-line reason; the runner recomputes such a cell. A
complete cell may still be stale (made by other code or inputs: fairsim/experiment/provenance.py).

A cell's identity is the part of its config that decides its numbers or labels its row in
results.parquet: ``IDENTITY_KEYS``. Bookkeeping keys (results_dir, sweep_name, track,
reuse_stale, and any key added later) are not part of it, so adding one leaves complete cells complete.
"""

from __future__ import annotations

import json
from pathlib import Path

import yaml

SUMMARY = "summary.json"  # written last: its presence marks a complete run
CONFIG = "config.yaml"  # the resolved config the run used
JOBS = "jobs.parquet"  # one row per job (a sweep's folder: every cell's jobs, with the cell's name)
ROUNDS = "rounds.parquet"  # one row per round
TENANTS = "tenants.parquet"  # one row per tenant, when the jobs name tenants
SCHEDULE = "schedule.parquet"  # one row per (round, active job), with sim.record_schedule=true only
PROVENANCE = "provenance.json"  # the code, inputs and environment that made it (written before the summary)
RUN_LOG = "run.log"  # what the run printed
RESULTS = "results.parquet"  # a sweep's folder: one row per complete cell
# summary key -> (config group, key) it must agree with, and the label the run gives a nameless entry
SUMMARY_LABELS = {"policy": ("policy", ""), "cluster": ("cluster", "custom"), "workload": ("workload", "")}
# what the run simulates (the config groups it builds, its seed) and the labels its results row reads
IDENTITY_KEYS = ("policy", "cluster", "workload", "sim", "seed", "load", "variant")


def identity(config: dict) -> dict:
    """The identity part of a resolved config (as loaded from its YAML)."""
    return {key: config.get(key) for key in IDENTITY_KEYS}


def identity_of_text(config_yaml: str) -> dict:
    """The identity of a config given as the YAML a run saves (the same round trip as the saved one's)."""
    return identity(yaml.safe_load(config_yaml) or {})


def why_incomplete(folder: Path, expected_identity: dict | None = None) -> str | None:
    """None if the cell in ``folder`` is complete, else why not (one line). ``expected_identity``
    (``identity`` of the config the cell would run with now) is compared with the saved one's when given."""
    folder = Path(folder)
    summary_file, config_file = folder / SUMMARY, folder / CONFIG
    if not summary_file.is_file():
        return f"no {SUMMARY} (never finished)"
    try:
        summary = json.loads(summary_file.read_text())
    except (OSError, ValueError) as exc:
        return f"{SUMMARY} is damaged ({_short(exc)})"
    if not isinstance(summary, dict):
        return f"{SUMMARY} is damaged (not a JSON object)"
    try:
        saved = yaml.safe_load(config_file.read_text())
    except FileNotFoundError:
        return f"no {CONFIG}"
    except (OSError, ValueError, yaml.YAMLError) as exc:
        return f"{CONFIG} is damaged ({_short(exc)})"
    if not isinstance(saved, dict):
        return f"{CONFIG} is damaged (not a mapping)"
    if expected_identity is not None and identity(saved) != expected_identity:
        changed = [k for k in IDENTITY_KEYS if saved.get(k) != expected_identity.get(k)]
        return f"the config changed since it ran ({', '.join(changed)} in {CONFIG} differ)"
    for key, (group, unnamed) in SUMMARY_LABELS.items():
        configured = str((saved.get(group) or {}).get("name", unnamed))
        if str(summary.get(key)) != configured:
            return f"{SUMMARY} says {key}={summary.get(key)!r} but {CONFIG} says {configured!r}"
    if summary.get("seed") != saved.get("seed"):
        return f"{SUMMARY} says seed={summary.get('seed')!r} but {CONFIG} says {saved.get('seed')!r}"
    return _jobs_problem(folder / JOBS, summary.get("num_jobs"))


def _jobs_problem(path: Path, num_jobs) -> str | None:
    import pyarrow.parquet as pq

    if not path.is_file():
        return f"no {JOBS}"
    try:
        rows = pq.read_table(path).num_rows  # whole: a damaged page fails here, not only a torn footer
    except Exception as exc:  # pyarrow raises its own ArrowInvalid / OSError subclasses
        return f"{JOBS} is unreadable ({_short(exc)})"
    if not isinstance(num_jobs, int) or rows < num_jobs:
        return f"{JOBS} has {rows} rows but {SUMMARY} counts {num_jobs!r} jobs"
    return None


def cell_folders(sweep_dir: Path) -> list[Path]:
    """Every cell folder of a sweep (a visible sub-folder), sorted by name."""
    return sorted(p for p in Path(sweep_dir).iterdir() if p.is_dir() and not p.name.startswith("."))


def _short(exc: BaseException) -> str:
    text = " ".join(str(exc).split()) or type(exc).__name__
    return text if len(text) <= 120 else text[:117] + "..."
