"""One run timed for a benchmark: a composed config through ``run_config`` (the path ``run.py``
takes), with a fluid-reference cache so the metrics' one-off schedule is not timed in every repeat."""

from __future__ import annotations

import time
from pathlib import Path

from fairsim.experiment.compose import compose_config


def timed_run(overrides: list[str], cache: Path) -> tuple[dict, float]:
    """The run's summary and its whole wall time in seconds."""
    from fairsim.experiment.single import run_config

    cfg = compose_config(overrides)
    tick = time.perf_counter()
    out = run_config(cfg, fluid_cache=cache)
    return out.summary, time.perf_counter() - tick
