"""Compose the project's Hydra config outside ``run.py`` (benchmarks, tests, notebooks)."""

from __future__ import annotations

import copy
import functools
from pathlib import Path

from omegaconf import DictConfig, OmegaConf

CONF_DIR = Path(__file__).resolve().parents[2] / "conf"


def compose_config(
    overrides: list[str] | None = None, config_name: str = "config", return_hydra_config: bool = False
) -> DictConfig:
    """conf/config.yaml with ``overrides``, as ``python run.py`` composes it (with its ``hydra``
    node if ``return_hydra_config``). Presets in a folder of the user's own come with the override
    ``hydra.searchpath=[file:///path/to/myconf]`` (Hydra's errors are raised as they are: no
    one-line check here)."""
    from hydra import compose, initialize_config_dir

    with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
        return compose(
            config_name=config_name, overrides=list(overrides or []), return_hydra_config=return_hydra_config
        )


@functools.cache
def _preset(group: str, name: str) -> dict:
    return OmegaConf.to_container(compose_config([f"{group}={name}"])[group], resolve=False)


def preset(group: str, name: str) -> dict:
    """One preset of a config group as a run sees it, unresolved: ``conf/<group>/<name>.yaml``
    with its defaults list applied (conf/policy/gavel.yaml brings conf/policy/mechanism/gavel.yaml,
    conf/workload/trace4.yaml brings trace3), which a plain YAML load of the file would not do.
    A fresh copy each call (Hydra composes each preset once per process)."""
    return copy.deepcopy(_preset(group, name))
