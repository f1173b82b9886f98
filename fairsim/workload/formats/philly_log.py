"""Reader of Microsoft's Philly trace as published (Jeon et al., ATC'19; msr-fiddle/philly-traces):
``cluster_job_log``, a JSON list of jobs::

    {"jobid": "application_..", "user": "..", "vc": "..", "status": "Pass" | "Killed" | "Failed",
     "submitted_time": "2017-10-07 01:11:39",
     "attempts": [{"start_time": "..", "end_time": "..", "detail": [{"ip": "m47", "gpus": ["gpu0", ..]}]}, ..]}

Times are wall-clock ``YYYY-MM-DD HH:MM:SS``; a missing time is null, "" or "None". A job is
retried after a failure, each try an attempt on its own machines.

Mapping: job_id = jobid (its position in the list when absent); submit_s = submitted_time;
gpus = the GPU ids listed across the first attempt's ``detail`` (the gang the job asked for;
later attempts normally get the same size, and meta counts the kept jobs where they do not);
tenant = vc, or user with ``tenant: user``; status = status. duration_s, ``duration: span`` (the
default) = last attempt's end - first attempt's start: the job's time in service, retries and
the waits between them included, the run time the trace's authors report; ``duration:
attempts`` = the sum of end - start over the attempts that record both: the time it held GPUs.
The log names machines, not GPU types: every job gets ``gpu_type`` (a raw name) or none.

Dropped, each job under the first reason that applies: ``no_attempts``, ``no_gpus`` (the first
attempt lists no GPU), ``no_start_or_end`` (the first attempt has no start or the last no end:
never ran, or still running when the log was taken), ``no_submit_time``,
``non_positive_duration``. A job that is not an object, a field of the wrong kind, or a time
that is not in the format above is refused naming the job's position and id.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from fairsim.errors import InputError, require
from fairsim.files import note_input
from fairsim.tables import decoded
from fairsim.workload import options as opt
from fairsim.workload.formats import LogRead
from fairsim.workload.formats._cells import seconds
from fairsim.workload.formats._log_build import (
    file_in,
    finished_log,
    keep_after_drops,
    optional_name,
)

OPTIONS = ("tenant", "duration", "gpu_type")
TENANTS = ("vc", "user")
DURATIONS = ("span", "attempts")
FILE_NAME = "cluster_job_log"
_MISSING_TIMES = (None, "", "None")


@dataclass
class _Flat:
    """The jobs' fields, one entry a job; the attempts' times, one entry an attempt."""

    job_id: list = field(default_factory=list)
    user: list = field(default_factory=list)
    vc: list = field(default_factory=list)
    status: list = field(default_factory=list)
    submitted: list = field(default_factory=list)
    attempts: list = field(default_factory=list)  # attempt count per job
    gpus: list = field(default_factory=list)  # GPU count of each job's first attempt (0 without attempts)
    sizes_differ: list = field(default_factory=list)  # attempts that list GPUs list different counts
    attempt_job: list = field(default_factory=list)  # job position of each attempt
    attempt_index: list = field(default_factory=list)
    attempt_start: list = field(default_factory=list)
    attempt_end: list = field(default_factory=list)


def read(path: Path, cfg: Mapping[str, Any], src: str) -> LogRead:
    tenant = opt.choice(cfg, "tenant", src, "vc", TENANTS)
    mode = opt.choice(cfg, "duration", src, "span", DURATIONS)
    gpu_type = optional_name(cfg, "gpu_type", src, "P100")
    file = file_in(path, FILE_NAME, src)
    flat = _flatten(_load(file, src), f"{src}: {file}")

    def where_job(i: int) -> str:
        return f"{src}: {file}: job {i} ({flat.job_id[i]})"

    def where_attempt(i: int) -> str:
        return f"{where_job(flat.attempt_job[i])} attempt {flat.attempt_index[i]}"

    submit = seconds(_times(flat.submitted), where_job, "submitted_time")
    start = seconds(_times(flat.attempt_start), where_attempt, "start_time")
    end = seconds(_times(flat.attempt_end), where_attempt, "end_time")
    first_start, last_end, held = _per_job(flat, start, end)
    duration = last_end - first_start if mode == "span" else held
    attempts = np.asarray(flat.attempts, dtype=np.int64)
    gpus = np.asarray(flat.gpus, dtype=np.int64)
    keep, dropped = keep_after_drops(
        np.ones(len(attempts), dtype=bool),
        [
            ("no_attempts", attempts == 0),
            ("no_gpus", gpus == 0),
            ("no_start_or_end", np.isnan(first_start) | np.isnan(last_end)),
            ("no_submit_time", np.isnan(submit)),
            ("non_positive_duration", ~(duration > 0)),
        ],
    )
    columns = {
        "job_id": np.asarray(flat.job_id, dtype=object)[keep],
        "submit_s": submit[keep],
        "duration_s": duration[keep],
        "gpus": gpus[keep],
        "gpu_type": np.full(int(keep.sum()), gpu_type, dtype=object),
        "tenant": np.asarray(flat.vc if tenant == "vc" else flat.user, dtype=object)[keep],
        "status": np.asarray(flat.status, dtype=object)[keep],
    }
    meta = {
        "retried_jobs": int((keep & (attempts > 1)).sum()),
        "gpus_differ_across_attempts": int((keep & np.asarray(flat.sizes_differ, dtype=bool)).sum()),
    }
    return finished_log(columns, np.flatnonzero(keep), where_job, dropped, len(attempts), f"{src}: {file}", meta)


def _load(file: Path, src: str) -> list:
    require(file.is_file(), src, "path", f"no such file: {file}")
    note_input(file)
    text = decoded(file.read_bytes(), lambda line: f"{src}: {file}:{line}", "Philly's cluster_job_log, a JSON list")
    try:
        jobs = json.loads(text, object_pairs_hook=_object)
    except json.JSONDecodeError as e:
        raise InputError(
            f"{src}: {file}:{e.lineno}", "json", f"is not valid JSON ({e.msg}, column {e.colno})"
        ) from None
    except _RepeatedKey as e:
        raise InputError(
            f"{src}: {file}",
            "json",
            f"an object names the key {e.key!r} twice (each key once: which one was meant cannot be told)",
        ) from None
    require(isinstance(jobs, list), f"{src}: {file}", "json", f"must be a list of jobs, got a {type(jobs).__name__}")
    return jobs


class _RepeatedKey(Exception):
    def __init__(self, key: str):
        super().__init__(key)
        self.key = key


def _object(pairs: list[tuple[str, Any]]) -> dict:
    """A JSON object, refused when it repeats a key (json would keep the last silently)."""
    out = dict(pairs)
    if len(out) < len(pairs):
        keys = [key for key, _ in pairs]
        raise _RepeatedKey(next(key for key in keys if keys.count(key) > 1))
    return out


def _flatten(jobs: list, where: str) -> _Flat:
    flat = _Flat()
    for i, job in enumerate(jobs):
        require(
            isinstance(job, dict),
            f"{where}: job {i}",
            "job",
            f"must be an object with jobid, attempts, ..., got {_shown(job)}",
        )
        job_id = job.get("jobid")
        flat.job_id.append(str(i) if job_id in (None, "") else str(job_id))
        here = f"{where}: job {i} ({flat.job_id[-1]})"
        for key, column in (("user", flat.user), ("vc", flat.vc), ("status", flat.status)):
            value = job.get(key)
            require(value is None or isinstance(value, str), here, key, f"must be a string, got {_shown(value)}")
            column.append(value if value else None)
        flat.submitted.append(job.get("submitted_time"))
        attempts = job.get("attempts") or []
        require(isinstance(attempts, list), here, "attempts", f"must be a list of attempts, got {_shown(attempts)}")
        sizes = [_attempt_gpus(a, f"{here} attempt {k}") for k, a in enumerate(attempts)]
        for k, attempt in enumerate(attempts):
            flat.attempt_job.append(i)
            flat.attempt_index.append(k)
            flat.attempt_start.append(attempt.get("start_time"))
            flat.attempt_end.append(attempt.get("end_time"))
        flat.attempts.append(len(attempts))
        flat.gpus.append(sizes[0] if sizes else 0)
        flat.sizes_differ.append(len({s for s in sizes if s > 0}) > 1)
    return flat


def _attempt_gpus(attempt: Any, here: str) -> int:
    require(
        isinstance(attempt, dict),
        here,
        "attempt",
        f"must be an object with start_time, end_time, detail, got {_shown(attempt)}",
    )
    detail = attempt.get("detail") or []
    require(isinstance(detail, list), here, "detail", f"must be a list of {{ip, gpus}}, got {_shown(detail)}")
    count = 0
    for server in detail:
        require(
            isinstance(server, dict), here, "detail", f"must be a list of {{ip, gpus}}, got an entry {_shown(server)}"
        )
        ids = server.get("gpus") or []
        require(isinstance(ids, list), here, "detail.gpus", f"must be a list of GPU ids, got {_shown(ids)}")
        count += len(ids)
    return count


def _times(values: list) -> pd.Series:
    """The times as text, the log's spellings of a missing time as None; other kinds kept, so
    that the parser refuses them."""
    return pd.Series(
        [None if v is None or (isinstance(v, str) and v.strip() in _MISSING_TIMES) else str(v) for v in values],
        dtype=object,
    )


def _per_job(flat: _Flat, start: np.ndarray, end: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """First attempt's start, last attempt's end, and the summed run time of the attempts with
    both times (NaN, NaN, 0 for a job without attempts)."""
    n = len(flat.attempts)
    job = np.asarray(flat.attempt_job, dtype=np.int64)
    index = np.asarray(flat.attempt_index, dtype=np.int64)
    counts = np.asarray(flat.attempts, dtype=np.int64)
    first_start = np.full(n, np.nan)
    last_end = np.full(n, np.nan)
    first = index == 0
    first_start[job[first]] = start[first]
    last = index == counts[job] - 1
    last_end[job[last]] = end[last]
    run = np.where(np.isnan(start) | np.isnan(end), 0.0, np.maximum(end - start, 0.0))
    held = np.bincount(job, weights=run, minlength=n) if len(job) else np.zeros(n)
    return first_start, last_end, held


def _shown(value: Any) -> str:
    text = json.dumps(value) if not isinstance(value, str) else repr(value)
    return text if len(text) <= 60 else text[:57] + "..."
