"""Compose the project's Hydra config outside ``run.py`` (benchmarks, tests, notebooks)."""

from __future__ import annotations

from pathlib import Path

from omegaconf import DictConfig

CONF_DIR = Path(__file__).resolve().parents[2] / "conf"


def compose_config(overrides: list[str] | None = None, config_name: str = "config") -> DictConfig:
    from hydra import compose, initialize_config_dir

    with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
        return compose(config_name=config_name, overrides=list(overrides or []))
