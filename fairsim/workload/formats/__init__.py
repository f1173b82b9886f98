"""Readers of cluster job logs: each turns one log format into the normalized job log below,
which ``fairsim.workload.jobs_log`` turns into a trace (model, work, allowed types, tenant).

The normalized job log, one row per job (a pandas DataFrame):

| column     | type            | meaning                                                              |
|------------|-----------------|----------------------------------------------------------------------|
| job_id     | str             | the log's own id (the row number when the log has none)              |
| submit_s   | float           | submission time in seconds (any origin; rebased to the first job)    |
| duration_s | float > 0       | run time on ``gpu_type`` with ``gpus`` GPUs                          |
| gpus       | int >= 1        | gang size                                                            |
| gpu_type   | str or missing  | the GPU type the duration was measured on (a raw name; mapped later) |
| gpu_types  | str or missing  | the types the job may run on, ``|``-separated; missing = any         |
| model      | str or missing  | a catalog model                                                      |
| tenant     | str or missing  | who submitted it (user, virtual cluster, group)                      |
| status     | str or missing  | how it ended in the log (Pass, Killed, Failed, ...)                  |

Missing means NaN/None. A reader drops what the format cannot turn into a GPU job (CPU-only
pods, fractional-GPU pods, unfinished jobs, ...) and counts each reason in ``dropped``; a row
that is malformed (a non-number where a number belongs) is refused with an InputError naming the
row and the column.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pandas as pd

LOG_COLUMNS = ("job_id", "submit_s", "duration_s", "gpus", "gpu_type", "gpu_types", "model", "tenant", "status")


@dataclass(frozen=True, eq=False)
class LogRead:
    log: pd.DataFrame  # the normalized job log (LOG_COLUMNS; optional ones may be absent)
    dropped: dict[str, int] = field(default_factory=dict)  # reason -> rows dropped by the reader
    meta: dict = field(default_factory=dict)  # figures worth reporting: "rows" (rows read, the run reports it), time span, ...
    where: list[str] | None = None  # each row's place in the file for error messages ("line 7"); None: "row i"
