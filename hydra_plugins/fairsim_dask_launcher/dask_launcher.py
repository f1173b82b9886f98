"""A Hydra launcher that runs a sweep's cells on a Dask cluster through joblib's Dask backend.

Hydra's joblib launcher pins joblib to its local ``loky`` backend, so it cannot reach a Dask
cluster; this launcher reuses that plugin's per-cell entry point and only changes where the
cells run. Select it with ``hydra/launcher=dask`` and point it at a scheduler:

    DASK_SCHEDULER_ADDRESS=tcp://scheduler:8786 python run.py -m hydra/launcher=dask policy=ours,gavel

Needs the ``dask`` extra (in requirements.lock: ``make setup`` installs it). Every cell still
writes its own result files to the shared results folder, and the parent collects and logs them
as usual, so the workers must see the same filesystem (docs/beyond.md). An address that is
missing, malformed or does not answer, and a relative results folder on workers that run from
another folder, end the sweep in one line.
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from hydra.core.singleton import Singleton
from hydra.core.utils import JobReturn, setup_globals
from hydra.plugins.launcher import Launcher

log = logging.getLogger(__name__)

SOURCE = "hydra/launcher=dask"
FIELD = "hydra.launcher.scheduler_address"
HOW = "set DASK_SCHEDULER_ADDRESS=tcp://<host>:<port> or hydra.launcher.scheduler_address=tcp://<host>:<port>"


class DaskLauncher(Launcher):
    def __init__(self, scheduler_address: str | None = None, n_jobs: int = -1) -> None:
        self.scheduler_address = scheduler_address
        self.n_jobs = n_jobs
        self.config = self.task_function = self.hydra_context = None

    def setup(self, *, hydra_context, task_function, config) -> None:
        """Refuse a missing or malformed scheduler address here, before any cell runs."""
        check_address(self.scheduler_address)
        self.config, self.task_function, self.hydra_context = config, task_function, hydra_context

    def launch(self, job_overrides: Sequence[Sequence[str]], initial_job_idx: int) -> Sequence[JobReturn]:
        from hydra_plugins.hydra_joblib_launcher._core import execute_job
        from joblib import Parallel, delayed, parallel_config

        setup_globals()
        sweep_dir = str(self.config.hydra.sweep.dir)
        Path(sweep_dir).mkdir(parents=True, exist_ok=True)
        state = Singleton.get_state()
        with connected(self.scheduler_address) as client, parallel_config(backend="dask"):
            check_worker_folders(sweep_dir, os.getcwd(), set(client.run(os.getcwd).values()))
            log.info(f"Dask: {len(job_overrides)} cells on {client.scheduler.address}")
            runs = Parallel(n_jobs=self.n_jobs)(
                delayed(execute_job)(
                    initial_job_idx + i, overrides, self.hydra_context, self.config, self.task_function, state
                )
                for i, overrides in enumerate(job_overrides)
            )
        return list(runs)


def check_address(address: str | None) -> None:
    """A scheduler address Dask can parse, or one line on stderr and exit 2 (bad input)."""
    from distributed.comm import get_address_host_port

    from fairsim.errors import InputError

    try:
        if not address:
            raise InputError(SOURCE, FIELD, f"no Dask scheduler given: {HOW}")
        try:
            get_address_host_port(address)
        except ValueError as exc:
            raise InputError(SOURCE, FIELD, f"{address!r} is no scheduler address ({exc}): {HOW}") from None
    except InputError as exc:
        print(f"error: {exc}", file=sys.stderr, flush=True)
        sys.exit(2)


def check_worker_folders(sweep_dir: str, here: str, worker_folders: set[str]) -> None:
    """A relative sweep folder is relative to each worker's own working folder: refuse it (one
    line, exit 2) when a worker runs from another folder than this process, whose cells would
    then write where the sweep never looks."""
    others = sorted(worker_folders - {here})
    if Path(sweep_dir).is_absolute() or not others:
        return
    print(
        f"error: {SOURCE}: results_dir: the sweep folder {sweep_dir} is relative, and Dask workers run from "
        f"{others[0]}, not from {here}: give an absolute results_dir on the filesystem they share, "
        "or start the workers from this folder",
        file=sys.stderr,
        flush=True,
    )
    sys.exit(2)


def connected(address: str):
    """A client of the scheduler at ``address``; a scheduler that does not answer (within Dask's
    connect timeout, distributed.comm.timeouts.connect) ends the sweep in one line, exit 1."""
    from distributed import Client

    from fairsim.experiment.sweep import fail

    try:
        return Client(address)
    except OSError as exc:
        fail(f"error: {SOURCE}: no Dask scheduler answers at {address} ({exc}); start it, or {HOW}")
