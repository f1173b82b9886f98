"""MLflow logging of a sweep, done by one process after the cells ran.

Store: ``sqlite:///<results>/mlflow.db`` (never the file store). One MLflow experiment per sweep,
one run per cell (single runs: the experiment "runs", one run per run folder), named by the cell folder and tagged ``fairsim.cell``; params are the cell's
resolved config (flattened), metrics its numeric summary. Logging is idempotent: a cell that
already has a FINISHED run is skipped; a run left unfinished by a crash is deleted and the cell
logged again, so every cell appears exactly once however often the sweep is resumed. Creating
the store and logging a sweep hold ``<results>/mlflow.db.lock``, so two sweeps ending together
see each other's runs (check, then log, under the lock) and never log a cell twice.
"""

from __future__ import annotations

import json
import logging
import math
import os
from pathlib import Path

import yaml

from fairsim.experiment.run_folder import CONFIG, SUMMARY

CELL_TAG = "fairsim.cell"
RUNS_EXPERIMENT = "runs"  # single runs (python run.py without -m), one MLflow run per run folder
STORE_LOCK_WAIT_S = 600  # a sweep's logging takes seconds; past this the other holder is presumed stuck


def tracking_uri(results_dir: Path) -> str:
    return f"sqlite:///{Path(results_dir).resolve() / 'mlflow.db'}"


def _client(results_dir: Path):
    os.environ.setdefault("MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR", "false")
    from mlflow.tracking import MlflowClient

    for name in ("mlflow", "alembic"):  # their INFO lines about creating tables are noise here
        logging.getLogger(name).setLevel(logging.WARNING)

    Path(results_dir).mkdir(parents=True, exist_ok=True)
    return MlflowClient(tracking_uri=tracking_uri(results_dir))


def store_lock(results_dir: Path):
    from filelock import FileLock

    Path(results_dir).mkdir(parents=True, exist_ok=True)
    return FileLock(Path(results_dir) / "mlflow.db.lock", timeout=STORE_LOCK_WAIT_S)


def store_error_line(results_dir: Path, exc: BaseException) -> str:
    """One line naming the store, the cause, and what to do (the results files are unaffected)."""
    cause = getattr(exc, "orig", None) or exc  # SQLAlchemy keeps the driver's own message here
    text = str(cause).split("[SQL:")[0]
    text = " ".join(text.split()) or type(exc).__name__
    return (f"error: MLflow store {tracking_uri(results_dir)} cannot be opened or written ({text[:200]}); the results "
            "files are complete; repair or move the store away and rerun the same command to log what was missed")


def ensure_store(results_dir: Path) -> None:
    """Create the database (and its tables) up front, from the parent, before any worker starts."""
    with store_lock(results_dir):
        client = _client(results_dir)
        client.search_experiments(max_results=1)


def _experiment_id(client, name: str, results_dir: Path) -> str:
    exp = client.get_experiment_by_name(name)
    if exp is None:  # artifacts (none logged today) stay beside the database, not in the cwd
        return client.create_experiment(name, artifact_location=(Path(results_dir).resolve() / "mlartifacts" / name).as_uri())
    if exp.lifecycle_stage == "deleted":
        client.restore_experiment(exp.experiment_id)
    return exp.experiment_id


def _flatten(d, prefix: str = "") -> dict[str, str]:
    out = {}
    for k, v in (d or {}).items():
        key = f"{prefix}{k}"
        if isinstance(v, dict):
            out.update(_flatten(v, key + "."))
        else:
            out[key] = str(v)[:500]
    return out


def log_sweep(results_dir: Path, sweep_name: str, cells: list[Path]) -> int:
    """Log every complete cell that is not yet in MLflow. Returns the number of runs logged."""
    with store_lock(results_dir):
        return _log_sweep(results_dir, sweep_name, cells)


def _log_sweep(results_dir: Path, sweep_name: str, cells: list[Path]) -> int:
    from mlflow.entities import Metric, Param, RunStatus, RunTag

    client = _client(results_dir)
    exp_id = _experiment_id(client, sweep_name, results_dir)
    logged: dict[str, str] = {}
    for run in client.search_runs([exp_id], max_results=50_000):
        cell = run.data.tags.get(CELL_TAG)
        if cell is None:
            continue
        if run.info.status == RunStatus.to_string(RunStatus.FINISHED) and cell not in logged:
            logged[cell] = run.info.run_id
        else:
            client.delete_run(run.info.run_id)  # torn or duplicate: the cell is logged afresh below
    count = 0
    for cell in cells:
        if cell.name in logged:
            continue
        summary = json.loads((cell / SUMMARY).read_text())
        cfg = yaml.safe_load((cell / CONFIG).read_text()) if (cell / CONFIG).exists() else {}
        run = client.create_run(exp_id, run_name=cell.name, tags={CELL_TAG: cell.name, "fairsim.sweep": sweep_name})
        metrics = [Metric(k, float(v), 0, 0) for k, v in sorted(summary.items())
                   if isinstance(v, (int, float)) and not isinstance(v, bool) and v is not None and math.isfinite(float(v))]
        params = [Param(k, v) for k, v in sorted(_flatten(cfg).items())]
        tags = [RunTag("fairsim.result_dir", str(cell.resolve()))]
        for i in range(0, max(len(params), len(metrics)), 100):  # MLflow caps a batch at 100 params
            client.log_batch(run.info.run_id, metrics=metrics[i:i + 100], params=params[i:i + 100], tags=tags if i == 0 else [])
        client.set_terminated(run.info.run_id, "FINISHED")
        count += 1
    return count


def log_single_run(results_dir: Path, folder: Path) -> int:
    """Log one complete single run (its folder) to the "runs" experiment; 0 if already logged."""
    return log_sweep(results_dir, RUNS_EXPERIMENT, [Path(folder)])


def logged_cells(results_dir: Path, sweep_name: str) -> list[str]:
    """Cell names with a FINISHED run in the sweep's experiment (for tests and checks)."""
    client = _client(results_dir)
    exp = client.get_experiment_by_name(sweep_name)
    if exp is None:
        return []
    runs = client.search_runs([exp.experiment_id], filter_string="attributes.status = 'FINISHED'", max_results=50_000)
    return sorted(r.data.tags.get(CELL_TAG) for r in runs)
