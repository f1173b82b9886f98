"""What ``python run.py`` and ``fairsim.run`` do with a composed config: Hydra's task function.

A single run computes, writes its folder (fairsim/experiment/single.py), prints its summary into
its ``run.log`` and logs to MLflow unless ``track=false``; a sweep's cell is claimed (one per
composed config, fairsim/experiment/sweep.py) and computed unless complete and fresh. Bad input
ends a single run of the command line with one line and exit status 2; ``raise_errors`` (the
Python API) raises it instead. A sweep's failing cell is recorded beside it either way.
"""

from __future__ import annotations

import os
import sys
import time
import traceback
from pathlib import Path

from omegaconf import DictConfig

from fairsim.errors import InputError

RERUN = "rerun the same command"  # what a single run's resource error line ends with


def task(cfg: DictConfig, raise_errors: bool = False) -> Path | None:
    """Run the config Hydra composed, in the folder Hydra made for it; return that folder for a
    single run (None for a sweep's cell)."""
    from hydra.core.hydra_config import HydraConfig
    from hydra.types import RunMode

    from fairsim.experiment.cli import hydra_reports_errors
    from fairsim.experiment.signatures import kept_in

    hydra_reports_errors()  # the config composed: an error from here on is the run's, reported by Hydra as usual
    hydra_cfg = HydraConfig.get()
    folder = Path(hydra_cfg.runtime.output_dir)
    # the provenance's file digests and import statements, kept by file signature across runs
    with kept_in(Path(cfg.results_dir)):
        if hydra_cfg.mode != RunMode.MULTIRUN:
            run(cfg, folder, "", in_sweep=False, raise_errors=raise_errors)
            return folder
        from fairsim.experiment.sweep import claim_cell

        with claim_cell(folder, cfg) as home:  # the cell's locks: one sweep runs it, others wait; None: complete
            if home is not None:  # the folder holding this config (another spelling's), else this spelling's own
                run(cfg, home, folder.name, in_sweep=True)  # progress is counted per spelling, as the grid counts cells
    return None


def run(cfg: DictConfig, folder: Path, cell: str, in_sweep: bool, raise_errors: bool = False) -> None:
    from fairsim.experiment.interrupt import raise_if_interrupted
    from fairsim.experiment.output import emit
    from fairsim.experiment.run_folder import set_aside
    from fairsim.experiment.single import format_summary, run_config, write_results
    from fairsim.experiment.sweep import record_done, record_failure, resource_errno, resource_error_line, with_path
    from fairsim.sim.engine import PolicyContractError

    tick = time.perf_counter()
    try:
        out = run_config(
            cfg,
            progress=False if in_sweep else None,  # a bar on a terminal, single runs only
            fluid_cache=Path(cfg.results_dir) / "cache" / "fluid",
        )
        raise_if_interrupted()
        write_results(out, folder, cfg)
    except InputError as exc:
        # in a sweep, one bad cell must not take the finished ones down with it
        if in_sweep and not os.environ.get("FAIRSIM_DEBUG"):
            record_failure(folder, cell, f"error: {exc}")
            return
        if not in_sweep:
            if not raise_errors:
                emit(f"error: {exc}", folder, sys.stderr)
            set_aside(folder, Path(cfg.results_dir))  # runs/ keeps only runs: the refused one's log goes to failed/
        if os.environ.get("FAIRSIM_DEBUG") or raise_errors:
            raise
        sys.exit(2)
    except (
        PolicyContractError
    ) as exc:  # a policy's bug (or options that stall it): one line; FAIRSIM_DEBUG=1 for its author
        if os.environ.get("FAIRSIM_DEBUG") or (raise_errors and not in_sweep):
            raise
        line = f"error: {exc} (the policy broke the engine's contract; FAIRSIM_DEBUG=1 shows where)"
        if in_sweep:
            record_failure(folder, cell, line)
            return
        emit(line, folder, sys.stderr)
        sys.exit(1)
    except OSError as exc:
        if resource_errno(exc) is not None and not os.environ.get("FAIRSIM_DEBUG") and not raise_errors:
            if in_sweep:  # a full or read-only disk fails every cell: the launcher ends the sweep in one line
                raise with_path(exc, folder) from exc
            # stderr only: run.log may be what cannot be written
            print(resource_error_line(exc, folder, then=RERUN), file=sys.stderr, flush=True)
            sys.exit(1)
        if not in_sweep or os.environ.get("FAIRSIM_DEBUG"):
            raise
        record_failure(folder, cell, traceback.format_exc())
        return
    except Exception:
        if not in_sweep or os.environ.get("FAIRSIM_DEBUG"):
            raise
        record_failure(folder, cell, traceback.format_exc())
        return
    if in_sweep:
        record_done(folder, cell, time.perf_counter() - tick)
    else:
        emit(format_summary(out.summary, out.missing_costs), folder)
        emit(f"  results         {folder}", folder)
        if cfg.get("track", True):
            from fairsim.experiment.tracking import (
                RUNS_EXPERIMENT,
                experiment_url,
                log_single_run,
                store_error_line,
                tracking_uri,
                ui_command,
            )

            try:
                log_single_run(Path(cfg.results_dir), folder)
            except Exception as exc:  # a full disk, a damaged store: MLflow's own words, in one line
                if os.environ.get("FAIRSIM_DEBUG") or raise_errors:
                    raise
                print(
                    store_error_line(Path(cfg.results_dir), exc, logged=f"the run is complete in {folder}", then=RERUN),
                    file=sys.stderr,
                    flush=True,
                )
                sys.exit(1)
            emit(
                f'  MLflow          experiment "runs" in {tracking_uri(Path(cfg.results_dir))}; track=false skips it',
                folder,
            )
            emit(
                f"  runs table      {experiment_url(Path(cfg.results_dir), RUNS_EXPERIMENT)} ({ui_command(Path(cfg.results_dir))})",
                folder,
            )
