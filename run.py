"""Run one simulation, or a sweep of them with -m. See README.md.

    python run.py                                        # defaults: conf/config.yaml
    python run.py policy=fifo cluster=scale8 load=0.5
    python run.py -m policy=ours,themis,gavel load=0.5,0.8 sweep_name=mine
"""

from __future__ import annotations

import os
import sys
import time
import traceback
from contextlib import contextmanager
from pathlib import Path

import hydra
from hydra.core.hydra_config import HydraConfig
from hydra.types import RunMode
from omegaconf import DictConfig

from fairsim.errors import InputError


RERUN = "rerun the same command"  # what a single run's resource error line ends with


@contextmanager
def resource_errors_in_one_line():
    """A full, read-only or unwritable disk met by Hydra itself (creating the run folder, writing
    its .hydra/): one line naming the folder and what to do, exit 1."""
    try:
        yield
    except OSError as exc:
        from fairsim.experiment.sweep import resource_error_line

        line = None if os.environ.get("FAIRSIM_DEBUG") else resource_error_line(exc, then=RERUN)
        if line is None:
            raise
        print(line, file=sys.stderr, flush=True)
        sys.exit(1)


@hydra.main(version_base="1.3", config_path="conf", config_name="config")
def main(cfg: DictConfig) -> None:
    from fairsim.experiment.cli import hydra_reports_errors

    hydra_reports_errors()  # the config composed: an error from here on is the run's, reported by Hydra as usual
    hydra_cfg = HydraConfig.get()
    folder = Path(hydra_cfg.runtime.output_dir)
    if hydra_cfg.mode != RunMode.MULTIRUN:
        return run(cfg, folder, "", in_sweep=False)
    from fairsim.experiment.sweep import claim_cell

    with claim_cell(folder, cfg) as home:  # the cell's locks: one sweep runs it, others wait; None: complete
        if home is not None:  # the folder holding this config (another spelling's), else this spelling's own
            run(cfg, home, folder.name, in_sweep=True)  # progress is counted per spelling, as the grid counts cells


def run(cfg: DictConfig, folder: Path, cell: str, in_sweep: bool) -> None:
    from fairsim.experiment.interrupt import raise_if_interrupted
    from fairsim.experiment.output import emit
    from fairsim.experiment.run_folder import set_aside
    from fairsim.experiment.single import format_summary, run_config, write_results
    from fairsim.experiment.sweep import record_done, record_failure, resource_errno, resource_error_line, with_path
    from fairsim.sim.engine import PolicyContractError

    tick = time.perf_counter()
    try:
        out = run_config(cfg, progress=False if in_sweep else None,  # a bar on a terminal, single runs only
                         fluid_cache=Path(cfg.results_dir) / "cache" / "fluid")
        raise_if_interrupted()
        write_results(out, folder, cfg)
    except InputError as exc:
        if os.environ.get("FAIRSIM_DEBUG"):
            raise
        if in_sweep:  # one bad cell must not take the finished ones down with it
            record_failure(folder, cell, f"error: {exc}")
            return
        emit(f"error: {exc}", folder, sys.stderr)
        set_aside(folder, Path(cfg.results_dir))  # runs/ keeps only runs: the refused one's log goes to failed/
        sys.exit(2)
    except PolicyContractError as exc:  # a policy's bug (or options that stall it): one line; FAIRSIM_DEBUG=1 for its author
        if os.environ.get("FAIRSIM_DEBUG"):
            raise
        line = f"error: {exc} (the policy broke the engine's contract; FAIRSIM_DEBUG=1 shows where)"
        if in_sweep:
            record_failure(folder, cell, line)
            return
        emit(line, folder, sys.stderr)
        sys.exit(1)
    except OSError as exc:
        if resource_errno(exc) is not None and not os.environ.get("FAIRSIM_DEBUG"):
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
        emit(format_summary(out.summary), folder)
        emit(f"  results         {folder}", folder)
        if cfg.get("track", True):
            from fairsim.experiment.tracking import (RUNS_EXPERIMENT, experiment_url, log_single_run, store_error_line,
                                                     tracking_uri, ui_command)

            try:
                log_single_run(Path(cfg.results_dir), folder)
            except Exception as exc:  # a full disk, a damaged store: MLflow's own words, in one line
                if os.environ.get("FAIRSIM_DEBUG"):
                    raise
                print(store_error_line(Path(cfg.results_dir), exc, logged=f"the run is complete in {folder}", then=RERUN),
                      file=sys.stderr, flush=True)
                sys.exit(1)
            emit(f"  MLflow          experiment \"runs\" in {tracking_uri(Path(cfg.results_dir))}; track=false skips it", folder)
            emit(f"  runs table      {experiment_url(Path(cfg.results_dir), RUNS_EXPERIMENT)} ({ui_command(Path(cfg.results_dir))})",
                 folder)


if __name__ == "__main__":
    from fairsim.experiment.cli import check_group_choices, config_errors_in_one_line, version_line

    if "--version" in sys.argv[1:]:  # fairsim's, not Hydra's (--help: conf/hydra/fairsim.yaml's help)
        print(version_line())
        sys.exit(0)
    CONF = Path(__file__).resolve().parent / "conf"
    try:  # presets looked up where Hydra looks: conf/, --config-dir, hydra.searchpath (fairsim/experiment/cli.py)
        sys.argv[1:] = check_group_choices(sys.argv[1:], CONF)  # policy=FFT is policy=ours
    except InputError as exc:
        if os.environ.get("FAIRSIM_DEBUG"):
            raise
        print(f"error: {exc}", file=sys.stderr)
        sys.exit(2)
    from fairsim.experiment.interrupt import ends_in_one_line

    # Ctrl-C: one line saying what was kept, exit 130 (fairsim/experiment/interrupt.py); Hydra's
    # config errors (a mistyped key): one line naming the closest valid keys, exit 2; a folder
    # Hydra cannot create or write (a read-only or full results_dir): one line, exit 1
    with ends_in_one_line(), config_errors_in_one_line(sys.argv[1:], CONF), resource_errors_in_one_line():
        main()
