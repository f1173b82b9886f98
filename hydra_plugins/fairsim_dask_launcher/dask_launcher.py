"""A Hydra launcher that runs a sweep's cells on a Dask cluster through joblib's Dask backend.

Hydra's joblib launcher pins joblib to its local ``loky`` backend, so it cannot reach a Dask
cluster; this launcher reuses that plugin's per-cell entry point and only changes where the
cells run. Select it with ``hydra/launcher=dask`` and point it at a scheduler:

    DASK_SCHEDULER_ADDRESS=tcp://scheduler:8786 python run.py -m hydra/launcher=dask policy=ours,gavel

Needs the optional extra ``pip install -e '.[dask]'``. Every cell still writes its own result
files to the shared ``results/`` folder, and the parent collects and logs them as usual, so the
workers must see the same filesystem.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path

from hydra.core.singleton import Singleton
from hydra.core.utils import JobReturn, setup_globals
from hydra.plugins.launcher import Launcher

log = logging.getLogger(__name__)


class DaskLauncher(Launcher):
    def __init__(self, scheduler_address: str | None = None, n_jobs: int = -1) -> None:
        self.scheduler_address = scheduler_address
        self.n_jobs = n_jobs
        self.config = self.task_function = self.hydra_context = None

    def setup(self, *, hydra_context, task_function, config) -> None:
        self.config, self.task_function, self.hydra_context = config, task_function, hydra_context

    def launch(self, job_overrides: Sequence[Sequence[str]], initial_job_idx: int) -> Sequence[JobReturn]:
        from distributed import Client
        from hydra_plugins.hydra_joblib_launcher._core import execute_job
        from joblib import Parallel, delayed, parallel_config

        setup_globals()
        Path(str(self.config.hydra.sweep.dir)).mkdir(parents=True, exist_ok=True)
        if not self.scheduler_address:
            raise ValueError(
                "hydra.launcher.scheduler_address: no Dask scheduler given (set DASK_SCHEDULER_ADDRESS or hydra.launcher.scheduler_address=tcp://host:8786)"
            )
        state = Singleton.get_state()
        with Client(self.scheduler_address) as client, parallel_config(backend="dask"):
            log.info(f"Dask: {len(job_overrides)} cells on {client.scheduler.address}")
            runs = Parallel(n_jobs=self.n_jobs)(
                delayed(execute_job)(
                    initial_job_idx + i, overrides, self.hydra_context, self.config, self.task_function, state
                )
                for i, overrides in enumerate(job_overrides)
            )
        return list(runs)
