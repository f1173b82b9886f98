"""Readers of cluster job logs: each turns one log format into the normalized job log below,
which ``fairsim.workload.jobs_log`` turns into a trace (model, work, allowed types, tenant).

The normalized job log, one row per job (a pandas DataFrame):

| column     | type            | meaning                                                              |
|------------|-----------------|----------------------------------------------------------------------|
| job_id     | str             | the log's own id (the row number when the log has none)              |
| submit_s   | float           | submission time in seconds (any origin; rebased to the first job)    |
| duration_s | float > 0       | run time on ``gpu_type`` with ``gpus`` GPUs                          |
| gpus       | whole >= 1      | gang size (any numeric dtype: jobs_log casts it, capped, to int64)   |
| gpu_type   | str or missing  | the GPU type the duration was measured on (a raw name; mapped later) |
| gpu_types  | str or missing  | the types the job may run on, ``|``-separated; missing = any         |
| model      | str or missing  | a catalog model                                                      |
| tenant     | str or missing  | who submitted it (user, virtual cluster, group)                      |
| status     | str or missing  | how it ended in the log (Pass, Killed, Failed, ...)                  |

Missing means NaN/None. A reader drops what the format cannot turn into a GPU job (CPU-only
pods, fractional-GPU pods, unfinished jobs, ...) and counts each reason in ``dropped``; a row
that is malformed (a non-number where a number belongs) is refused with an InputError naming the
file, the row's line (or place: "job 7") and the column. Each row keeps its place (``where``),
so a later refusal (a duration out of range, an unknown model) names it too.

A format is one module of this package, found by its name: ``format: openb`` reads with
``fairsim/workload/formats/openb.py``. A reader module has ``OPTIONS`` (its own config keys) and
``read(path, cfg, src) -> LogRead``, and may have ``KNOWN_TYPES`` (its GPU names -> datasheet
names) and ``resolve_path(cfg, src)`` (when its files are named otherwise than by ``path``); a
module with ``cluster_config(path, gpu_map, src, name=..., gpus_per_host=...)`` also builds a
cluster from the trace's node list. Being loaded by name, a format's module is in the code digest
of the runs that use it only (fairsim.experiment.provenance), so adding or editing one leaves
every other cell fresh.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable
from dataclasses import dataclass, field
from types import ModuleType

import numpy as np
import pandas as pd

from fairsim.errors import InputError

LOG_COLUMNS = ("job_id", "submit_s", "duration_s", "gpus", "gpu_type", "gpu_types", "model", "tenant", "status")
Where = Callable[[int], str]  # a row's position -> its place in errors


def placed(where: Where, rows) -> Where:
    """``where`` for a table made of ``rows`` of another, in that order (sorted, filtered)."""
    rows = np.asarray(rows, dtype=np.int64)
    return lambda i: where(int(rows[i]))


@dataclass(frozen=True, eq=False)
class LogRead:
    log: pd.DataFrame  # the normalized job log (LOG_COLUMNS; optional ones may be absent)
    source: str  # the log as a whole in errors: "<workload>: <file or folder>"
    where: Where  # row -> its place in errors: "<workload>: <file>:<line>"
    dropped: dict[str, int] = field(default_factory=dict)  # reason -> rows dropped by the reader
    meta: dict = field(
        default_factory=dict
    )  # figures worth reporting: "rows" (rows read, the run reports it), time span, ...


def module_name(name: str) -> str:
    return f"{__name__}.{name}"


def available(attribute: str) -> tuple[str, ...]:
    """The formats whose module has ``attribute`` (``read``: job logs; ``cluster_config``: node lists)."""
    return tuple(
        sorted(
            m.name
            for m in pkgutil.iter_modules(__path__)
            if not m.name.startswith("_") and hasattr(importlib.import_module(module_name(m.name)), attribute)
        )
    )


def format_module(name: object, attribute: str, src: str, field_name: str) -> ModuleType:
    """The module of format ``name``, which must have ``attribute``; one line naming the allowed
    ones otherwise (only then is every format module imported, to list them)."""
    if isinstance(name, str) and name.isidentifier() and not name.startswith("_"):
        try:
            module = importlib.import_module(module_name(name))
        except ModuleNotFoundError as exc:
            if exc.name != module_name(name):  # the reader exists but lacks a dependency: say so
                raise
        else:
            if hasattr(module, attribute):
                return module
    raise InputError(src, field_name, f"{name!r} is not one of {', '.join(available(attribute))}")
