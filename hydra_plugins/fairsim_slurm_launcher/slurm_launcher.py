"""A Hydra launcher that runs a sweep's cells on Slurm, ``cells_per_task`` cells to a Slurm task.

Hydra's submitit launcher (``hydra/launcher=submitit_slurm``) submits one array task per cell:
a grid of thousands of short cells becomes thousands of Slurm tasks, each paying for its
scheduling and for starting Python. This launcher is that one with two changes:

- ``cells_per_task: K`` packs K cells (in grid order) into each task of the array, which runs
  them one after another in one Python process. Each cell still goes through the sweep's own
  per-cell path (``fairsim.experiment.sweep.claim_cell``): its locks, its completeness and
  freshness check, its folder; so a packed task skips a complete cell as any worker does, and two
  sweeps of one grid still compute a cell once.
- ``wait: false`` submits the array and returns at once: the sweep ends saying how many cells it
  queued, under which Slurm job. Rerunning the same command later collects the cells that have
  finished into results.parquet and MLflow and submits only the cells that are neither complete
  nor still queued or running under an earlier submission (``<sweep>/.slurm/<job id>.json``
  records which cells each submission holds); with ``wait: true`` (the default) it then waits
  for those too.

All of Hydra's submitit Slurm options (partition, timeout_min, gres, account, setup, ...) keep
their meaning (conf/hydra/launcher/slurm.yaml); a task's time limit (``timeout_min``) covers its
K cells.
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from hydra.core.singleton import Singleton
from hydra.core.utils import JobReturn, filter_overrides
from hydra_plugins.hydra_submitit_launcher.submitit_launcher import SlurmLauncher as SubmititSlurmLauncher

from fairsim.experiment.sweep import DETACHED_ENV, QUEUED_ENV

log = logging.getLogger(__name__)

SOURCE = "hydra/launcher=slurm"
RECORDS = ".slurm"  # <sweep>/.slurm/<job id>.json: the cells each submission holds
# Slurm states of a job that may still run its cells (squeue's long names)
LIVE = {"PENDING", "RUNNING", "CONFIGURING", "COMPLETING", "REQUEUED", "RESIZING", "SUSPENDED", "REQUEUE_HOLD"}


class SlurmLauncher(SubmititSlurmLauncher):
    def __init__(self, cells_per_task: int = 1, wait: bool = True, poll_s: float = 5.0, **params: Any) -> None:
        self.cells_per_task = check_cells_per_task(cells_per_task)
        self.wait = bool(wait)
        self.poll_s = float(poll_s)
        super().__init__(**params)

    # ---- in a Slurm task ---------------------------------------------------------------------

    def __call__(self, batch: list[tuple[list[str], int]], job_dir_key: str, singleton_state: dict) -> list[JobReturn]:
        """Run the cells of one task, one after another: each exactly as Hydra's submitit launcher
        runs its one cell (its config composed, ``hydra.job.id`` the task's Slurm id)."""
        os.environ[DETACHED_ENV] = "1"
        run_one = super().__call__
        return [run_one(overrides, job_dir_key, num, f"job_id_for_{num}", singleton_state) for overrides, num in batch]

    # ---- in the sweep's process ----------------------------------------------------------------

    def launch(self, job_overrides: Sequence[Sequence[str]], initial_job_idx: int) -> Sequence[JobReturn]:
        from hydra.core.utils import setup_globals

        setup_globals()
        sweep_dir = Path(str(self.config.hydra.sweep.dir))
        sweep_dir.mkdir(parents=True, exist_ok=True)
        records = sweep_dir / RECORDS
        live = live_submissions(records)
        in_flight = {key for cells in live.values() for key in cells}
        cells = [(list(o), initial_job_idx + i) for i, o in enumerate(job_overrides)]
        queued = [(o, num) for o, num in cells if cell_key(o) not in in_flight]
        waiting = len(cells) - len(queued)
        todo = [(o, num) for o, num in queued if not self._complete(o)]
        if waiting:
            log.info(
                f"Slurm: {waiting} cells are still queued or running under earlier submissions "
                f"({', '.join(sorted(live))}); not submitted again"
            )
        runs: list[JobReturn] = []
        jobs = []
        if todo:
            executor = self._executor()
            batches = [todo[i : i + self.cells_per_task] for i in range(0, len(todo), self.cells_per_task)]
            state = Singleton.get_state()
            for overrides, num in todo:
                log.info(f"\t#{num} : {' '.join(filter_overrides(overrides))}")
            jobs = executor.map_array(self, batches, ["hydra.sweep.dir"] * len(batches), [state] * len(batches))
            job_id = jobs[0].job_id.split("_")[0]
            records.mkdir(exist_ok=True)
            record = {"job_id": job_id, "cells": [cell_key(o) for o, _ in todo], "submitted": time.time()}
            (records / f"{job_id}.json").write_text(json.dumps(record))
            log.info(
                f"Slurm: {len(todo)} cells in {len(batches)} tasks of {self.cells_per_task} "
                f"(array job {job_id}; each task's output in {sweep_dir / '.submitit'}/{job_id}_<task>/)"
            )
        if not self.wait:
            queued = len(todo) + waiting
            os.environ[QUEUED_ENV] = str(queued)
            return []
        for job in jobs:
            try:
                runs.extend(job.results()[0])
            except Exception as exc:  # the task itself ended badly (time limit, killed, node failure)
                print(
                    f"error: {SOURCE}: Slurm task {job.job_id} ended without finishing its cells ({job.state}: "
                    f"{str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__}); its complete "
                    "cells are kept: rerun the same command to run the rest",
                    file=sys.stderr,
                    flush=True,
                )
        if jobs:
            (records / f"{job_id}.json").unlink(missing_ok=True)  # all its tasks have ended
        if waiting:
            since = time.perf_counter()
            self._wait_for(records)
            for overrides, _ in cells:
                if cell_key(overrides) in in_flight:  # computed by the earlier submission: waited for
                    self._complete(overrides, waited=time.perf_counter() - since)
        return sorted(runs, key=lambda run: run.hydra_cfg.hydra.job.num)

    def _complete(self, overrides: list[str], waited: float | None = None) -> bool:
        """Whether the cell is complete and fresh in its folder now (``sweep.found_complete``):
        then it is counted as skipped (or, after ``waited`` seconds for an earlier submission,
        as waited for) and gets no Slurm task."""
        from hydra._internal.config_loader_impl import get_overrides_dirname
        from hydra.core.hydra_config import HydraConfig
        from hydra.core.override_parser.overrides_parser import OverridesParser
        from omegaconf import open_dict

        from fairsim.experiment.run_folder import cell_name
        from fairsim.experiment.signatures import kept_in
        from fairsim.experiment.sweep import found_complete, report_found

        # the cell's folder as Hydra names it (conf/hydra/fairsim.yaml), without composing its
        # config: a cell without a folder is not complete, the usual case of a new sweep
        naming = self.config.hydra.job.config.override_dirname
        dirname = get_overrides_dirname(
            OverridesParser.create().parse_overrides(overrides),
            exclude_keys=list(naming.exclude_keys),
            item_sep=naming.item_sep,
            kv_sep=naming.kv_sep,
        )
        folder = Path(str(self.config.hydra.sweep.dir)) / cell_name(dirname)
        if not folder.is_dir():
            return False
        cfg = self.hydra_context.config_loader.load_sweep_config(self.config, overrides)
        hydra = HydraConfig.instance()
        before = hydra.cfg
        hydra.set_config(cfg)  # the cell's ${hydra:...} resolve as in its own process
        try:
            task_cfg = cfg.copy()
            with open_dict(task_cfg):
                del task_cfg["hydra"]
            with kept_in(Path(str(task_cfg.results_dir))):
                done = found_complete(folder, task_cfg)
        finally:
            hydra.cfg = before
        if done:
            report_found(folder, waited)
        return done

    def _executor(self):
        """submitit's Slurm executor with this launcher's parameters, as Hydra's launcher builds it."""
        import submitit
        from hydra_plugins.hydra_submitit_launcher.config import BaseQueueConf
        from omegaconf import OmegaConf

        init = {"folder": self.params["submitit_folder"]}
        if "max_num_timeout" in self.params:
            init["slurm_max_num_timeout"] = self.params["max_num_timeout"]
        executor = submitit.AutoExecutor(cluster="slurm", **init)
        base = set(OmegaConf.structured(BaseQueueConf).keys())
        executor.update_parameters(
            **{
                k if k in base else f"slurm_{k}": v
                for k, v in self.params.items()
                if k not in {"submitit_folder", "max_num_timeout"}
            }
        )
        return executor

    def _wait_for(self, records: Path) -> None:
        """Wait until no earlier submission of this sweep has a task queued or running."""
        while live := live_submissions(records):
            log.info(f"Slurm: waiting for earlier submissions {', '.join(sorted(live))}")
            time.sleep(self.poll_s)


def cell_key(overrides: Sequence[str]) -> str:
    """A cell as submitted: its overrides, sorted (the same command line gives the same key)."""
    return " ".join(sorted(overrides))


def check_cells_per_task(value: Any) -> int:
    from fairsim.errors import InputError
    from fairsim.experiment.sweep import fail

    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        fail(f"error: {InputError(SOURCE, 'hydra.launcher.cells_per_task', f'{value!r}: a whole number >= 1')}")
    return value


def live_submissions(records: Path) -> dict[str, set[str]]:
    """Earlier submissions of this sweep with a task still queued or running: job id -> the cells
    it holds. A submission whose tasks have all ended loses its record."""
    out: dict[str, set[str]] = {}
    files = sorted(records.glob("*.json")) if records.is_dir() else []
    if not files:
        return out
    ids = [f.stem for f in files]
    states = slurm_states(ids)
    for f in files:
        if states.get(f.stem, set()) & LIVE:
            out[f.stem] = set(json.loads(f.read_text())["cells"])
        else:
            f.unlink(missing_ok=True)
    return out


def slurm_states(job_ids: Sequence[str]) -> dict[str, set[str]]:
    """The states of the tasks of each array job still in Slurm's queue (squeue -r: one line a task)."""
    from fairsim.experiment.sweep import fail

    try:
        proc = subprocess.run(
            ["squeue", "-h", "-r", "-o", "%F %T", "-j", ",".join(job_ids)],
            capture_output=True,
            text=True,
            timeout=60,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        fail(f"error: {SOURCE}: squeue did not answer ({exc}); is this a Slurm submit host?")
    out: dict[str, set[str]] = {}
    for line in proc.stdout.splitlines():
        parts = line.split()
        if len(parts) == 2:
            out.setdefault(parts[0], set()).add(parts[1])
    return out
