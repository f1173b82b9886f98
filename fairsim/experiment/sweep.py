"""Sweep support: resumable cells, progress lines, and the Hydra callback that collects and logs.

Layout: ``<results_dir>/sweeps/<sweep_name>/<cell>/`` where ``<cell>`` is the cell's overrides
(``load=0.5,policy=ours``). A cell whose ``summary.json`` exists and whose saved
``config.yaml`` equals the config it would run with now is complete and is skipped on a rerun;
anything else runs again from scratch.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

from hydra.experimental.callback import Callback
from omegaconf import DictConfig, OmegaConf

from fairsim.experiment.single import SUMMARY

PROGRESS = ".progress"
TOTAL = ".progress_total"
FAILED = "error.txt"


def config_text(cfg: DictConfig) -> str:
    return OmegaConf.to_yaml(cfg, resolve=True)


def cell_is_complete(folder: Path, cfg: DictConfig) -> bool:
    saved = folder / "config.yaml"
    return (folder / SUMMARY).is_file() and saved.is_file() and saved.read_text() == config_text(cfg)


def report_progress(sweep_dir: Path, cell: str, seconds: float, skipped: bool) -> str:
    """Append this cell to the sweep's progress file (O_APPEND: safe across worker processes)
    and return a one-line status."""
    line = f"{cell}\t{seconds:.3f}\t{int(skipped)}\n"
    fd = os.open(sweep_dir / PROGRESS, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    try:
        os.write(fd, line.encode())
    finally:
        os.close(fd)
    rows = [r.split("\t") for r in (sweep_dir / PROGRESS).read_text().splitlines() if r]
    done = len({r[0] for r in rows})
    ran = [float(r[1]) for r in rows if r[2] == "0"]
    total_file = sweep_dir / TOTAL
    total = int(total_file.read_text()) if total_file.exists() else 0
    left = max(total - done, 0)
    mean = sum(ran) / len(ran) if ran else 0.0
    status = "skipped (complete)" if skipped else f"{seconds:.1f} s"
    return (f"[sweep {sweep_dir.name}] {cell}: {status} | {done}/{total or '?'} cells done, {left} left, "
            f"{mean:.1f} s/cell" + (f", ~{left * mean / max(os.cpu_count() or 1, 1):.0f} s to go" if left and ran else ""))


def record_failure(folder: Path, cell: str, text: str) -> None:
    """Keep a failed cell's error beside it (it has no summary, so it is not complete) and say so."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / FAILED).write_text(text if text.endswith("\n") else text + "\n")
    last = text.strip().splitlines()[-1] if text.strip() else "failed"
    print(f"[sweep {folder.parent.name}] {cell}: FAILED: {last} (details: {folder / FAILED})", file=sys.stderr)


def failed_cells(sweep_dir: Path) -> list[str]:
    return sorted(p.parent.name for p in Path(sweep_dir).glob(f"*/{FAILED}") if not (p.parent / SUMMARY).exists())


def count_cells(config: DictConfig) -> int:
    """Cells in this multirun: the product of the sweep overrides' lengths (command line and
    ``hydra.sweeper.params``)."""
    from hydra.core.override_parser.overrides_parser import OverridesParser

    overrides = list(config.hydra.overrides.task)
    params = config.hydra.sweeper.get("params") or {}
    cli_keys = {o.split("=", 1)[0].lstrip("+~") for o in overrides}
    overrides += [f"{k}={v}" for k, v in params.items() if k not in cli_keys]
    total = 1
    for o in OverridesParser.create().parse_overrides(overrides):
        if o.is_sweep_override():
            total *= len(list(o.sweep_string_iterator()))
    return total


class SweepCallback(Callback):
    """Runs in the parent process of a multirun: creates the MLflow store before the workers
    start, and after the last cell collects results.parquet and logs every cell to MLflow."""

    def __init__(self, results_dir: str = "results") -> None:
        self.results_dir = Path(results_dir)
        self.started = 0.0

    def on_multirun_start(self, config: DictConfig, **kwargs) -> None:
        from fairsim.experiment.tracking import ensure_store

        self.started = time.perf_counter()
        sweep_dir = Path(config.hydra.sweep.dir)
        sweep_dir.mkdir(parents=True, exist_ok=True)
        (sweep_dir / PROGRESS).unlink(missing_ok=True)
        for stale in sweep_dir.glob(f"*/{FAILED}"):
            stale.unlink()  # this run retries those cells
        (sweep_dir / TOTAL).write_text(str(count_cells(config)))
        ensure_store(self.results_dir)

    def on_multirun_end(self, config: DictConfig, **kwargs) -> None:
        from fairsim.experiment.collect import collect
        from fairsim.experiment.tracking import log_sweep, tracking_uri

        sweep_dir = Path(config.hydra.sweep.dir)
        table, cells = collect(sweep_dir)
        logged = log_sweep(self.results_dir, sweep_dir.name, cells)
        expected = int((sweep_dir / TOTAL).read_text()) if (sweep_dir / TOTAL).exists() else len(cells)
        elapsed = time.perf_counter() - self.started
        print(f"[sweep {sweep_dir.name}] {len(cells)} complete cells in {sweep_dir} ({expected} in this run's grid), "
              f"{logged} newly logged to MLflow ({tracking_uri(self.results_dir)}), {elapsed:.1f} s")
        if len(table):
            print(f"[sweep {sweep_dir.name}] results: {sweep_dir / 'results.parquet'}")
        progress = sweep_dir / PROGRESS
        finished = len({r.split("\t")[0] for r in progress.read_text().splitlines() if r}) if progress.exists() else 0
        failed = failed_cells(sweep_dir)
        if failed:
            print(f"[sweep {sweep_dir.name}] {len(failed)} cells FAILED: {', '.join(failed)}; the others are kept. "
                  "Fix the cause and rerun the same command to run only the missing cells.", file=sys.stderr)
            sys.exit(1)
        if finished < expected:
            print(f"[sweep {sweep_dir.name}] warning: {expected - finished} of {expected} cells did not finish; "
                  "rerun the same command to run only those")
