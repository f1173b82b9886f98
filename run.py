"""Run one simulation, or a sweep of them with -m. See README.md.

python run.py                                        # defaults: conf/config.yaml
python run.py policy=fifo cluster=scale8 load=0.5
python run.py -m policy=ours,themis,gavel load=0.5,0.8 sweep_name=mine
"""

from __future__ import annotations

import os
import sys
from contextlib import contextmanager
from pathlib import Path

import hydra
from omegaconf import DictConfig

from fairsim.errors import InputError


@contextmanager
def resource_errors_in_one_line():
    """A full, read-only or unwritable disk met by Hydra itself (creating the run folder, writing
    its .hydra/): one line naming the folder and what to do, exit 1."""
    try:
        yield
    except OSError as exc:
        from fairsim.experiment.sweep import resource_error_line
        from fairsim.experiment.task import RERUN

        line = None if os.environ.get("FAIRSIM_DEBUG") else resource_error_line(exc, then=RERUN)
        if line is None:
            raise
        print(line, file=sys.stderr, flush=True)
        sys.exit(1)


@hydra.main(version_base="1.3", config_path="conf", config_name="config")
def main(cfg: DictConfig) -> None:
    from fairsim.experiment.task import task

    task(cfg)  # the same path as fairsim.run (fairsim/api.py)


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
