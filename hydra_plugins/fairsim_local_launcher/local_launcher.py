"""The default launcher: Hydra's joblib launcher (same options, loky processes on this machine),
changed only where a sweep ends badly or leaves processes behind:

- a cell that fails with a resource error (no space, quota, permission, read-only folder) ends
  the sweep at once with one line naming the path and what to do, instead of every other cell
  computing its way to the same error;
- a worker process that dies (killed, out of memory) ends the sweep with one line instead of
  joblib's traceback;
- a worker exits as soon as the sweep's parent is gone (``SweepCallback.on_job_start`` starts
  the watch), instead of idling until loky's idle timeout (300 s). A shorter idle timeout is not
  used: loky then stops idle workers while cells wait on a lock, which broke concurrent sweeps.

Complete cells are kept in every case, and a rerun of the same command runs only the rest.
"""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Sequence

from hydra.core.singleton import Singleton
from hydra.core.utils import JobReturn, JobStatus, setup_globals
from hydra_plugins.hydra_joblib_launcher.joblib_launcher import JoblibLauncher


class LocalLauncher(JoblibLauncher):
    def launch(self, job_overrides: Sequence[Sequence[str]], initial_job_idx: int) -> Sequence[JobReturn]:
        from hydra_plugins.hydra_joblib_launcher._core import execute_job, process_joblib_cfg
        from joblib import Parallel, delayed

        from fairsim.experiment.sweep import fail, sweep_abort_line

        setup_globals()
        sweep_dir = Path(str(self.config.hydra.sweep.dir))
        options = dict(self.joblib, backend="loky")  # Hydra's joblib launcher pins loky too
        process_joblib_cfg(options)
        options["return_as"] = "generator_unordered"
        state = Singleton.get_state()
        jobs = (delayed(execute_job)(initial_job_idx + i, overrides, self.hydra_context, self.config, self.task_function, state)
                for i, overrides in enumerate(job_overrides))
        runs: list[JobReturn] = []
        outputs = Parallel(**options)(jobs)
        try:
            for run in outputs:  # in completion order, so the first resource error stops the sweep
                line = sweep_abort_line(run._return_value, sweep_dir) if run.status == JobStatus.FAILED else None
                if line:
                    with warnings.catch_warnings():  # joblib's note on the cells it cancels is not news here
                        warnings.simplefilter("ignore")
                        outputs.close()  # joblib cancels the queued cells and stops the running ones
                    fail(line)
                runs.append(run)
        except Exception as exc:
            line = sweep_abort_line(exc, sweep_dir)
            if line is None:
                raise
            fail(line)
        return sorted(runs, key=lambda run: run.hydra_cfg.hydra.job.num)
