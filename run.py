"""Run one simulation, or a sweep with -m. See README.md.

    python run.py                                   # defaults: conf/config.yaml
    python run.py policy=fifo cluster=scale8 load=0.5
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import hydra
from hydra.core.hydra_config import HydraConfig
from omegaconf import DictConfig

from fairsim.errors import InputError


@hydra.main(version_base="1.3", config_path="conf", config_name="config")
def main(cfg: DictConfig) -> None:
    from fairsim.experiment.single import format_summary, run_config, write_results

    try:
        out = run_config(cfg)
    except InputError as exc:
        if os.environ.get("FAIRSIM_DEBUG"):
            raise
        print(f"error: {exc}", file=sys.stderr)
        sys.exit(2)
    folder = write_results(out, Path(HydraConfig.get().runtime.output_dir), cfg)
    print(format_summary(out.summary))
    print(f"  results         {folder}")


if __name__ == "__main__":
    main()
