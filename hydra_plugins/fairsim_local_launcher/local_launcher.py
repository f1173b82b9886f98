"""The default launcher: Hydra's joblib launcher (same options, loky processes on this machine),
changed only where a sweep ends badly or leaves processes behind:

- a cell that fails with a resource error (no space, quota, permission, read-only folder) ends
  the sweep at once with one line naming the path and what to do, instead of every other cell
  computing its way to the same error;
- a worker process that dies (killed, out of memory) ends the sweep with one line instead of
  joblib's traceback;
- Ctrl-C (SIGINT, to the parent alone or to the whole process group, as a terminal sends it)
  is the parent's alone: the workers ignore it, the parent stops them at once, cutting off the
  cells they run (no summary), then collects and logs the complete cells and ends with one line
  (``SweepCallback.interrupted``);
- a worker exits as soon as the sweep's parent is gone (``SweepCallback.on_job_start`` starts
  the watch), instead of idling until loky's idle timeout (300 s). A shorter idle timeout is not
  used: loky then stops idle workers while cells wait on a lock, which broke concurrent sweeps.

Complete cells are kept in every case, and a rerun of the same command runs only the rest.
"""

from __future__ import annotations

import signal
import warnings
from collections.abc import Sequence
from multiprocessing import resource_tracker
from pathlib import Path

from hydra.core.singleton import Singleton
from hydra.core.utils import JobReturn, JobStatus, setup_globals
from hydra_plugins.hydra_joblib_launcher.joblib_launcher import JoblibLauncher


class LocalLauncher(JoblibLauncher):
    def launch(self, job_overrides: Sequence[Sequence[str]], initial_job_idx: int) -> Sequence[JobReturn]:
        from hydra_plugins.hydra_joblib_launcher._core import execute_job, process_joblib_cfg
        from joblib import Parallel, delayed

        from fairsim.experiment.interrupt import release_ctrl_c
        from fairsim.experiment.sweep import fail, sweep_abort_line

        setup_globals()
        sweep_dir = Path(str(self.config.hydra.sweep.dir))
        options = dict(self.joblib, backend="loky")  # Hydra's joblib launcher pins loky too
        process_joblib_cfg(options)
        options["return_as"] = "generator_unordered"
        options["initializer"] = ignore_ctrl_c  # the parent alone handles Ctrl-C: it stops the workers
        state = Singleton.get_state()
        jobs = (
            delayed(execute_job)(
                initial_job_idx + i, overrides, self.hydra_context, self.config, self.task_function, state
            )
            for i, overrides in enumerate(job_overrides)
        )
        runs: list[JobReturn] = []
        outputs = None
        try:
            release_ctrl_c()  # held while Hydra composed each cell's config (SweepCallback)
            # the workers (and loky's thread that replaces them) are born with SIGINT blocked: a
            # process inherits its signal mask, so a Ctrl-C while they import waits, unseen, until
            # ignore_ctrl_c drops it. This process still gets it (through another of its threads,
            # or as the mask is restored).
            resource_tracker.ensure_running()  # its first start unblocks SIGINT here: start it before
            mask = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
            try:
                outputs = Parallel(**options)(jobs)
            finally:
                signal.pthread_sigmask(signal.SIG_SETMASK, mask)
            for run in outputs:  # in completion order, so the first resource error stops the sweep
                line = sweep_abort_line(run._return_value, sweep_dir) if run.status == JobStatus.FAILED else None
                if line:
                    stop(outputs)
                    fail(line)
                runs.append(run)
        except (
            KeyboardInterrupt
        ):  # Ctrl-C: stop the workers (joblib has, if it came in its loop); the sweep's ending collects
            stop(outputs)
            raise
        except Exception as exc:
            line = sweep_abort_line(exc, sweep_dir)
            if line is None:
                raise
            fail(line)
        return sorted(runs, key=lambda run: run.hydra_cfg.hydra.job.num)


def stop(outputs) -> None:
    """Cancel the queued cells and kill the workers (and with them the cells they run)."""
    if outputs is None:
        return  # interrupted before the pool started
    with warnings.catch_warnings():  # joblib's note on the cells it cancels is not news here
        warnings.simplefilter("ignore")
        outputs.close()


def ignore_ctrl_c() -> None:
    """Run first in each worker: SIGINT does nothing there (a terminal sends it to the whole
    process group), so a worker never prints its own traceback and every Ctrl-C ends the same
    way, whether it reached the workers or the parent alone. A Ctrl-C held back since the worker
    started (``launch`` blocks SIGINT for it) is dropped here too."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
