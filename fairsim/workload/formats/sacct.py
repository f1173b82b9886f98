"""Reader of Slurm's accounting export, as ``sacct`` writes it: ``workload=sacct`` reads

    sacct --allusers --parsable2 --starttime ... --endtime ... \\
        --format=JobID,Account,User,Submit,Start,End,Elapsed,State,NNodes,AllocTRES,ReqTRES > jobs.txt

with sacct's own column names, no mapping. ``--parsable2`` (``-P``) separates cells with ``|``
and quotes none; ``--parsable`` (``-p``) ends every line with one more ``|``, which is read too.
A comma-separated file (a spreadsheet's export of the same columns, cells quoted where they hold
commas, as ``AllocTRES`` does) is read as CSV: a file is ``|``-separated when its header line
holds a ``|`` and no comma. Columns may come in any order; extra ones are ignored.

Columns (sacct's names, as it writes them in the header):
    JobID       needed. ``123``, an array task ``123_4``, a heterogeneous component ``123+0``: a
                job. ``123.batch``, ``123.extern``, ``123.0`` (anything after a dot): a step of
                job 123, dropped and counted (``job_step``); the job's own row is the job.
    State       needed. The first word (``CANCELLED by 1234`` is CANCELLED); see below.
    Submit      needed: ISO 8601 (sacct's default; ``timestamp_format`` for a site's
                SLURM_TIME_FORMAT), or ``Unknown`` / ``None`` (missing).
    Elapsed     the run time, ``[D-]HH:MM:SS`` (or ``MM:SS.mmm``); without it, ``End - Start``.
    Start, End  timestamps as Submit; a ``Start`` of ``Unknown`` / ``None`` is a job that never
                started (dropped: ``never_started``).
    AllocTRES   the allocation, ``billing=8,cpu=8,gres/gpu=1,mem=32G,node=1``: the GPU count is
                ``gres/gpu=N`` (the total over all nodes), or the sum of the typed counts
                ``gres/gpu:<type>=N`` when the untyped one is absent; the GPU type is the typed
                entry's ``<type>`` (a raw name, matched to the datasheet by jobs_log; several
                types: the job may use any of them). No ``gres/gpu`` entry: 0 GPUs (a CPU job,
                dropped by jobs_log as ``zero_gpus``).
    ReqTRES     the request, read the same way where AllocTRES is absent or empty. One of the two
                is needed.
    NNodes      optional: a whole number >= 0 (checked; the run reports ``multi_node_jobs``).
    Account, User   the tenant (``tenant: account``, the default, or ``user``; null: none).

States (Slurm's job state codes), each row under its state's treatment:
    COMPLETED, FAILED, CANCELLED, TIMEOUT, OUT_OF_MEMORY, NODE_FAIL, PREEMPTED, BOOT_FAIL,
    DEADLINE: the job ran and held its GPUs for ``Elapsed``: it is a job of that length, whatever
    ended it (a cancelled or failed job's GPU time was spent all the same). One that never
    started (Start ``Unknown`` / ``None``, e.g. cancelled while pending) is dropped as
    ``never_started``; one of 0 s is dropped by jobs_log (``zero_duration``). The state is the
    job's ``status`` (``statuses: [COMPLETED, TIMEOUT]`` keeps only those).
    RUNNING, SUSPENDED, COMPLETING, CONFIGURING, RESIZING, SIGNALING, STAGE_OUT, STOPPED: the job
    had not ended when the log was written, so its length is unknown: dropped as
    ``still_running``.
    PENDING, REQUEUE_HOLD, REQUEUE_FED, RESV_DEL_HOLD, SPECIAL_EXIT: never ran (or waits to run
    again): dropped as ``never_started``.
    REQUEUED: an attempt that was put back in the queue (``sacct --duplicates`` lists each
    attempt; the job's last row is its final attempt): dropped as ``requeued``.
    REVOKED: a federated job's sibling that ran elsewhere: dropped as ``revoked``.
Any other state is refused naming the row and the states above. A job id listed twice among the
kept rows (``--duplicates`` without a REQUEUED attempt) keeps its last row; the earlier ones are
dropped as ``earlier_attempt``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from fairsim.errors import InputError, require
from fairsim.tables import read_csv_table, shown
from fairsim.workload import options as opt
from fairsim.workload.formats import LogRead, placed
from fairsim.workload.formats._cells import CLOCK_WORDS, clock_seconds, filled
from fairsim.workload.formats._log_build import finished_log, keep_after_drops
from fairsim.workload.formats.csv import NOT_HAPPENED, seconds_since_epoch, separator

OPTIONS = ("tenant", "timestamp_format")
TENANTS = ("account", "user")
TENANT_COLUMNS = {"account": "Account", "user": "User"}

RAN = (
    "COMPLETED",
    "FAILED",
    "CANCELLED",
    "TIMEOUT",
    "OUT_OF_MEMORY",
    "NODE_FAIL",
    "PREEMPTED",
    "BOOT_FAIL",
    "DEADLINE",
)
NOT_ENDED = ("RUNNING", "SUSPENDED", "COMPLETING", "CONFIGURING", "RESIZING", "SIGNALING", "STAGE_OUT", "STOPPED")
NOT_STARTED = ("PENDING", "REQUEUE_HOLD", "REQUEUE_FED", "RESV_DEL_HOLD", "SPECIAL_EXIT")
OTHER = {"REQUEUED": "requeued", "REVOKED": "revoked"}
STATES = RAN + NOT_ENDED + NOT_STARTED + tuple(OTHER)

_GPU = re.compile(r"^gres/gpu(?::([^=]+))?$")


def read(path: Path, cfg: Mapping[str, Any], src: str) -> LogRead:
    tenant = cfg.get("tenant", "account")
    if tenant is not None:
        tenant = opt.choice(cfg, "tenant", src, "account", TENANTS)
    fmt = cfg.get("timestamp_format")
    require(
        fmt is None or isinstance(fmt, str),
        src,
        "timestamp_format",
        f"must be strftime codes such as '%Y-%m-%dT%H:%M:%S', got {fmt!r}",
    )
    require(path.is_file(), src, "path", f"must be a file: a sacct export, got {str(path)!r}")
    sep = separator(path)
    table = read_csv_table(
        path,
        src,
        required=("JobID", "State", "Submit"),
        quoted=sep == ",",
        sep=sep,
        hint="export with sacct's header line (no --noheader) and --format=JobID,State,Submit,Elapsed,AllocTRES,...",
    )
    cells, where = table.cells, table.where
    present = set(cells.columns)
    tres = [c for c in ("AllocTRES", "ReqTRES") if c in present]
    file = f"{src}: {path}"
    require(
        bool(tres),
        file,
        "columns",
        f"the export needs AllocTRES or ReqTRES (the GPUs a job held): add them to sacct --format "
        f"(it has: {', '.join(map(str, cells.columns))})",
    )
    require(
        "Elapsed" in present or {"Start", "End"} <= present,
        file,
        "columns",
        f"the export needs Elapsed, or Start and End (how long a job ran) (it has: {', '.join(map(str, cells.columns))})",
    )
    if tenant is not None:
        require(
            TENANT_COLUMNS[tenant] in present,
            file,
            "columns",
            f"tenant: {tenant} reads the column {TENANT_COLUMNS[tenant]}, which the export lacks "
            "(set workload.tenant=null for none)",
        )

    job_id = filled(cells["JobID"])
    step = job_id.fillna("").str.contains(".", regex=False).to_numpy()
    state = _states(cells["State"], where, step)
    started = np.ones(len(cells), dtype=bool)
    if "Start" in present:
        start_text = filled(cells["Start"])
        started = ~(start_text.isna() | start_text.fillna("").str.lower().isin(NOT_HAPPENED)).to_numpy()
    submit = _times(cells, "Submit", fmt, where, step)
    duration = _durations(cells, present, fmt, where, step)
    gpus, types = _gpus(cells, tres, where, step)
    nodes = _nodes(cells, where, step) if "NNodes" in present else np.full(len(cells), np.nan)

    earlier = np.zeros(len(cells), dtype=bool)
    keep, dropped = keep_after_drops(
        np.ones(len(cells), dtype=bool),
        [
            ("job_step", step),
            ("still_running", np.isin(state, NOT_ENDED)),
            ("never_started", np.isin(state, NOT_STARTED) | (np.isin(state, RAN) & ~started)),
            *((reason, state == name) for name, reason in OTHER.items()),
        ],
    )
    ids = job_id.where(keep, None)
    repeated = (ids.notna() & ids.duplicated(keep="last")).to_numpy()
    earlier[repeated] = True
    if earlier.any():
        dropped["earlier_attempt"] = int(earlier.sum())
        keep &= ~earlier
    rows = np.flatnonzero(keep)
    columns = {
        "job_id": job_id.to_numpy(object)[rows],
        "submit_s": submit[rows],
        "duration_s": duration[rows],
        "gpus": gpus[rows],
        "gpu_type": np.asarray([t[0] if len(t) == 1 else None for t in types], dtype=object)[rows],
        "gpu_types": np.asarray(["|".join(t) if len(t) > 1 else None for t in types], dtype=object)[rows],
        "tenant": (
            filled(cells[TENANT_COLUMNS[tenant]]).to_numpy(object)[rows]
            if tenant is not None
            else np.full(len(rows), None, dtype=object)
        ),
        "status": state[rows],
    }
    meta = {"multi_node_jobs": int((nodes[rows] > 1).sum())}
    return finished_log(columns, rows, where, dropped, len(cells), file, meta)


def _states(cells: pd.Series, where, step: np.ndarray) -> np.ndarray:
    """Each row's state word (``CANCELLED by 1234`` -> CANCELLED); a job's unknown state refused."""
    text = filled(cells)
    words = text.fillna("").str.split(n=1).str[0].fillna("").str.upper().to_numpy(object)
    bad = ~np.isin(words, STATES) & ~step
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise InputError(
            where(i), "State", f"{shown(text.iloc[i])} is not a Slurm job state (one of {', '.join(STATES)})"
        )
    return words


def _times(cells: pd.DataFrame, column: str, fmt: Any, where, step: np.ndarray) -> np.ndarray:
    """Epoch seconds of a job's time column (steps are not read); NaN where missing."""
    out = np.full(len(cells), np.nan)
    jobs = np.flatnonzero(~step)
    if len(jobs):
        out[jobs] = seconds_since_epoch(cells[column].iloc[jobs], fmt, column, placed(where, jobs))
    return out


def _durations(cells: pd.DataFrame, present: set, fmt: Any, where, step: np.ndarray) -> np.ndarray:
    """Seconds each job ran: Elapsed, else End - Start; NaN where unknown."""
    if "Elapsed" not in present:
        start, end = _times(cells, "Start", fmt, where, step), _times(cells, "End", fmt, where, step)
        with np.errstate(invalid="ignore"):
            backwards = end < start
        if backwards.any():
            i = int(np.flatnonzero(backwards)[0])
            raise InputError(where(i), "End", f"{shown(cells['End'].iloc[i])} is before the job's Start")
        return end - start
    text = filled(cells["Elapsed"])
    missing = (text.isna() | text.fillna("").str.lower().isin(NOT_HAPPENED)).to_numpy()
    values = clock_seconds(text)
    bad = np.isnan(values) & ~missing & ~step
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise InputError(where(i), "Elapsed", f"must be {CLOCK_WORDS} (or Unknown), got {shown(text.iloc[i])}")
    return values


def _gpus(cells: pd.DataFrame, tres: list[str], where, step: np.ndarray) -> tuple[np.ndarray, list[tuple[str, ...]]]:
    """Each row's GPU count and GPU types (raw names) from AllocTRES, else ReqTRES."""
    text = filled(cells[tres[0]])
    source = np.full(len(cells), tres[0], dtype=object)
    if len(tres) > 1:
        other = filled(cells[tres[1]])
        source = np.where(text.isna().to_numpy(), tres[1], source)
        text = text.where(text.notna(), other)
    counts = np.zeros(len(cells))
    types: list[tuple[str, ...]] = [()] * len(cells)
    parsed: dict[str, tuple[float, tuple[str, ...]] | str] = {}
    for i, cell in enumerate(text.to_numpy(object)):
        if cell is None or step[i]:
            continue
        got = parsed.get(cell)
        if got is None:
            got = parsed[cell] = _tres_gpus(cell)
        if isinstance(got, str):
            raise InputError(where(i), str(source[i]), f"{got}, got {shown(cell)}")
        counts[i], types[i] = got
    return counts, types


def _tres_gpus(cell: str) -> tuple[float, tuple[str, ...]] | str:
    """(GPU count, GPU type names) of a TRES list, or the reason it cannot be read."""
    total, typed = None, {}
    for entry in cell.split(","):
        name, eq, value = entry.strip().partition("=")
        match = _GPU.match(name.strip())
        if not match:
            continue
        if not eq or not value.strip().isdigit():
            return "a gres/gpu entry must be gres/gpu=N or gres/gpu:<type>=N with N a whole number"
        if match.group(1) is None:
            total = float(value)
        else:
            typed[match.group(1).strip()] = typed.get(match.group(1).strip(), 0.0) + float(value)
    kinds = tuple(t for t, n in typed.items() if n > 0)
    return (total if total is not None else float(sum(typed.values()))), kinds


def _nodes(cells: pd.DataFrame, where, step: np.ndarray) -> np.ndarray:
    text = filled(cells["NNodes"])
    values = pd.to_numeric(text, errors="coerce").to_numpy(np.float64, na_value=np.nan)
    with np.errstate(invalid="ignore"):
        bad = text.notna().to_numpy() & ~step & ~((values >= 0) & (values == np.round(values)))
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise InputError(where(i), "NNodes", f"must be a whole number of nodes >= 0, got {shown(text.iloc[i])}")
    return values
