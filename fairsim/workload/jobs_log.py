"""A cluster's job log as a workload: ``workload=jobs_log workload.path=...``.

A reader (``fairsim.workload.formats``, picked by ``format``) turns the file into the normalized
job log: submit time, duration, gang size, and optionally the GPU type the duration was measured
on, the types the job may use, its model, tenant and status. This module turns that log into a
trace, in this order:

1. rows are checked (a bad number is refused with one line naming the file, the row's line and
   the column; durations run a millisecond to about 31.7 years, submissions lie within 1e12 s of
   their origin, a job id appears once); a row for a job that never ran or that the log does not
   describe whole (0 GPUs, 0 s, a missing submission, duration or GPU count) is dropped and
   counted (refused under ``unrunnable: refuse``); rows are kept by ``statuses`` and the time
   window [``start_s``, ``start_s + span_s``) after the first submission, sorted by submission,
   and cut to the first ``max_jobs``;
2. GPU names (``gpu_type``, ``gpu_types``) go through ``gpu_map`` (the log's name -> a datasheet
   name), then the datasheet's own names (any case), then the prefix rule: a name that is the start
   of exactly one type's name up to a ``-``, ``_`` or space, among the cluster's types first, else
   among the known types, is that type (``h100`` -> H100-SXM); a job's reference type is its ``gpu_type``, else
   ``reference_type``; its allowed types are its ``gpu_types``, or with ``pin_to_type: true`` its
   ``gpu_type`` alone, else every type of the cluster;
3. the gang is the logged GPU count; ``gang: exact`` needs that count in the catalog, ``nearest``
   takes the catalog's nearest count (log2 scale, as the Philly generator does);
4. the model is the logged one, else drawn uniformly (seeded by the run's seed) among the
   catalog's models that run with that gang on an allowed type and have a throughput on the
   reference type;
5. work = duration * the job's throughput on its reference type with its gang packed on the
   fewest hosts, so the job runs exactly ``duration_s`` there; without a reference type, at the
   capacity-weighted mean throughput over the allowed types it can run on (the Philly
   generator's rule). Overheads the simulator charges (restart, migration, profiling) come on
   top;
6. arrival = submission - the first kept submission; job ids number the jobs in that order.

A job that cannot run anywhere (an unknown GPU name, wider than every allowed type, a gang the
catalog lacks, no model fits) is dropped and counted (``unrunnable: drop``, the default) or
refused with one line (``unrunnable: refuse``). The run's summary reports ``log_rows``,
``log_jobs`` and ``log_dropped_<reason>`` for every reason, the reader's own included, and
``log_unknown_gpu_types``: each GPU name no type matched, its rows, the closest known names and
the ``gpu_map`` that would map them.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from types import ModuleType
from typing import Any

import numpy as np
import pandas as pd

from fairsim.cluster import ClusterSpec, closest_names
from fairsim.errors import Bool, InputError, require
from fairsim.files import input_path
from fairsim.workload import options as opt
from fairsim.workload.catalog import Catalog
from fairsim.workload.formats import LogRead, Where, format_module, module_name, placed
from fairsim.workload.formats._cells import CLOCK_WORDS, filled, numbers
from fairsim.workload.formats._log_build import keep_after_drops
from fairsim.workload.sampling import nearest_slot, pick_uniform, runnable
from fairsim.workload.trace import (
    LARGEST_INTEGER,
    LATEST_TIME_S,
    LONGEST_JOB_S,
    SHORTEST_JOB_S,
    TYPE_SEPARATOR,
    allowed_types,
    is_missing,
)

DEFAULT_FORMAT = "csv"
OPTIONS = (
    "path",
    "format",
    "reference_type",
    "pin_to_type",
    "gpu_map",
    "gang",
    "unrunnable",
    "statuses",
    "start_s",
    "span_s",
    "max_jobs",
)
GANGS = ("exact", "nearest")
UNRUNNABLE = ("drop", "refuse")
DROPPED_KEY = "log_dropped_"  # a run summary's key per drop reason: log_dropped_<reason>
UNKNOWN_KEY = "log_unknown_gpu_types"  # a run summary's key: the GPU names no type matched, with a gpu_map for them


def format_options(cfg: Mapping[str, Any], src: str) -> tuple[str, ...]:
    """The config keys a jobs_log workload accepts: ours and its format reader's."""
    return OPTIONS + tuple(_reader(cfg, src).OPTIONS)


def _reader(cfg: Mapping[str, Any], src: str) -> ModuleType:
    """The reader of the config's ``format`` (a module of fairsim.workload.formats, by name)."""
    return format_module(cfg.get("format", DEFAULT_FORMAT), "read", src, "format")


def reader_module(cfg: Mapping[str, Any]) -> str | None:
    """The module name of a job-log workload's reader (loaded by name, so not an import of this
    module: provenance adds it to the run's code digest); None for other workloads."""
    return module_name(str(cfg.get("format", DEFAULT_FORMAT))) if cfg.get("kind") == "jobs_log" else None


def read_log(cfg: Mapping[str, Any], src: str) -> LogRead:
    reader = _reader(cfg, src)
    if hasattr(reader, "resolve_path"):
        return reader.read(reader.resolve_path(cfg, src), cfg, src)
    raw = cfg.get("path")
    require(isinstance(raw, str) and raw.strip() != "", src, "path", "is required: set workload.path=/path/to/job_log")
    path = input_path(raw)
    require(path.exists(), src, "path", f"no such file or folder: {raw}")
    return reader.read(path, cfg, src)


def log_to_trace(
    read: LogRead, catalog: Catalog, cluster: ClusterSpec, seed: int, cfg: Mapping[str, Any], src: str
) -> tuple[pd.DataFrame, dict]:
    """(trace in fairsim's schema, report: rows read, jobs kept, dropped by reason)."""
    unrunnable = opt.choice(cfg, "unrunnable", src, "drop", UNRUNNABLE)  # checked even when every job can run
    dropped = dict(read.dropped)
    log, where = _checked(read, unrunnable, dropped)
    log, where = _kept(log, where, cfg, src, dropped)
    require(len(log) > 0, read.source, "rows", f"no job of the log is left to run (dropped: {dropped_words(dropped)})")
    rng = np.random.Generator(np.random.PCG64(seed))
    u_model = rng.random(len(log))

    gpu_map = _gpu_map(cfg.get("gpu_map"), src, getattr(_reader(cfg, src), "KNOWN_TYPES", {}), cluster)
    gpu_map = _with_prefixes(gpu_map, log, cluster)
    ref_default = cfg.get("reference_type")
    if ref_default is not None:
        ref_default = _canonical(str(ref_default), gpu_map)
        require(
            ref_default is not None,
            src,
            "reference_type",
            f"{cfg['reference_type']!r} is not a GPU type (allowed: {_known(cluster)})",
        )
    pin = Bool().check(cfg.get("pin_to_type", False), src, "pin_to_type")
    reason = np.full(len(log), "", dtype=object)

    ref = _reference_types(log, gpu_map, ref_default, reason)
    allowed, allowed_names = _allowed(log, ref, pin, gpu_map, cluster, reason)
    slot = _gang_slots(
        log["gpus"].to_numpy(np.int64), allowed, catalog, cluster, opt.choice(cfg, "gang", src, "exact", GANGS), reason
    )
    model = _models(log, ref, allowed, slot, catalog, cluster, u_model, reason, where)
    tput = _reference_throughput(model, ref, allowed, slot, catalog, cluster, reason)

    bad = reason != ""
    unknown = _unknown_names(log, gpu_map, cluster, cfg.get("gpu_map") or {})
    if bad.any() and unrunnable == "refuse":
        i = int(np.flatnonzero(bad)[0])
        why = reason[i].replace("_", " ") + (f" ({unknown})" if reason[i] == "unknown_gpu_type" else "")
        _refuse(where(i), log["job_id"].iloc[i], why)
    for r in reason[bad]:
        dropped[r] = dropped.get(r, 0) + 1
    keep = ~bad
    require(
        keep.any(),
        read.source,
        "rows",
        f"no job of the log can run on cluster {cluster.name} (dropped: {dropped_words(dropped)})",
    )
    submit = log["submit_s"].to_numpy(np.float64)[keep]
    trace = pd.DataFrame(
        {
            "job_id": np.arange(int(keep.sum()), dtype=np.int64),
            "arrival_s": submit - submit.min(),
            "model": np.asarray(catalog.models, dtype=object)[model[keep]],
            "workers": np.asarray(catalog.worker_counts, dtype=np.int64)[slot[keep]],
            "work": log["duration_s"].to_numpy(np.float64)[keep] * tput[keep],
            "tenant": log["tenant"].to_numpy(object)[keep],
            "gpu_types": np.asarray(allowed_names, dtype=object)[keep],
        }
    )
    report = {
        "log_rows": int(read.meta.get("rows", len(read.log))),
        "log_jobs": int(keep.sum()),
        **{f"{DROPPED_KEY}{r}": int(n) for r, n in sorted(dropped.items())},
    }
    if unknown:
        report[UNKNOWN_KEY] = unknown
    return trace, report


def _refuse(place: str, job_id: Any, why: str) -> None:
    raise InputError(
        place, "unrunnable", f"job {job_id} cannot run: {why} (set workload.unrunnable=drop to drop such jobs)"
    )


# ---- 1. rows -----------------------------------------------------------------------------------

# A job log's numbers: times anywhere within LATEST_TIME_S of their origin, runs of a real job's
# length (fairsim.workload.trace), whole GPU counts.
SUBMIT_WORDS = f"a number of seconds within {LATEST_TIME_S:g} of the log's origin"
DURATION_WORDS = (
    f"a number of seconds in [{SHORTEST_JOB_S:g}, {LONGEST_JOB_S:g}] (a millisecond to about 31.7 years) "
    f"or {CLOCK_WORDS}"
)


def _checked(read: LogRead, unrunnable: str, dropped: dict) -> tuple[pd.DataFrame, Where]:
    """The log's rows with their numbers checked, and where each one is; the rows of jobs that
    never ran or that the log does not describe whole dropped and counted in ``dropped``."""
    raw, where = read.log, read.where
    for col in ("submit_s", "duration_s", "gpus"):
        require(col in raw, read.source, "columns", f"the job log has no {col} column")
    log = pd.DataFrame(index=range(len(raw)))
    ids = filled(raw["job_id"]) if "job_id" in raw else pd.Series([None] * len(raw), dtype=object)
    _refuse_repeated(ids, where)
    log["job_id"] = ids.where(ids.notna(), pd.Series([str(i) for i in range(len(raw))], dtype=object)).to_numpy(object)
    log["submit_s"] = numbers(
        raw["submit_s"], where, "submit_s", lo=-LATEST_TIME_S, hi=LATEST_TIME_S, what=SUBMIT_WORDS
    )
    log["duration_s"] = numbers(
        raw["duration_s"],
        where,
        "duration_s",
        lo=SHORTEST_JOB_S,
        hi=LONGEST_JOB_S,
        also=(0.0,),
        clock=True,
        what=DURATION_WORDS,
    )
    gpus = numbers(raw["gpus"], where, "gpus", lo=1, whole=True, also=(0.0,), what="a whole GPU count >= 1")
    for col in ("gpu_type", "gpu_types", "model", "tenant", "status"):
        log[col] = [("" if is_missing(v) else str(v).strip()) for v in raw[col].to_numpy()] if col in raw else ""
    keep, not_run = keep_after_drops(
        np.ones(len(log), dtype=bool),
        [
            ("missing_submit", np.isnan(log["submit_s"].to_numpy())),
            ("missing_duration", np.isnan(log["duration_s"].to_numpy())),
            ("missing_gpus", np.isnan(gpus)),
            ("zero_gpus", gpus == 0),
            ("zero_duration", log["duration_s"].to_numpy() == 0),
        ],
    )
    if not_run and unrunnable == "refuse":
        i = int(np.flatnonzero(~keep)[0])
        _refuse(where(i), log["job_id"].iloc[i], _not_run_words(log.iloc[i], gpus[i]))
    for r, n in not_run.items():
        dropped[r] = dropped.get(r, 0) + n
    rows = np.flatnonzero(keep)
    log = log.iloc[rows].reset_index(drop=True)
    log["gpus"] = np.minimum(gpus[rows], LARGEST_INTEGER).astype(
        np.int64
    )  # capped before the cast: still wider than every type
    return log, placed(where, rows)


def _not_run_words(row: pd.Series, gpus: float) -> str:
    """Why a row describes no job that ran, in words (the first reason, as it is counted)."""
    missing = [
        c
        for c, v in (("submission", row["submit_s"]), ("duration", row["duration_s"]), ("GPU count", gpus))
        if np.isnan(v)
    ]
    if missing:
        return f"no {missing[0]} in the log"
    return "0 GPUs" if gpus == 0 else "0 s"


def _refuse_repeated(ids: pd.Series, where: Where) -> None:
    """Each job id once: a log that repeats one lists a job twice or joins two logs, and which of
    the two rows is meant no reader can tell (missing ids are not compared)."""
    again = (ids.notna() & ids.duplicated()).to_numpy()
    if again.any():
        i = int(np.flatnonzero(again)[0])
        first = int(np.flatnonzero((ids == ids.iloc[i]).to_numpy())[0])
        raise InputError(
            where(i),
            "job_id",
            f"{ids.iloc[i]!r} repeats the id of an earlier job ({where(first)}); job ids must be unique",
        )


def _kept(
    log: pd.DataFrame, where: Where, cfg: Mapping[str, Any], src: str, dropped: dict
) -> tuple[pd.DataFrame, Where]:
    keep = np.ones(len(log), dtype=bool)
    statuses = cfg.get("statuses")
    if statuses is not None:
        require(
            isinstance(statuses, (list, tuple)) and all(isinstance(s, str) for s in statuses) and statuses,
            src,
            "statuses",
            f"must be a list of the log's status names, e.g. [Pass, Killed], got {statuses!r}",
        )
        wanted = {s.lower() for s in statuses}
        ok = log["status"].str.lower().isin(wanted).to_numpy()
        _drop(dropped, "status_not_kept", ok)
        keep &= ok
    start = opt.number(cfg, "start_s", src, 0.0, lo=0)
    span = opt.number(cfg, "span_s", src, None, lo=0, lo_open=True, optional=True)
    submit = log["submit_s"].to_numpy(np.float64)
    t = submit - submit.min() if len(submit) else submit
    inside = (t >= start) & (t < start + span if span is not None else True)
    _drop(dropped, "outside_time_window", inside | ~keep)
    keep &= inside
    order = np.flatnonzero(keep)[np.argsort(submit[keep], kind="stable")]
    max_jobs = opt.number(cfg, "max_jobs", src, None, lo=1, integer=True, optional=True)
    if max_jobs is not None and len(order) > max_jobs:
        dropped["beyond_max_jobs"] = dropped.get("beyond_max_jobs", 0) + len(order) - max_jobs
        order = order[:max_jobs]
    return log.iloc[order].reset_index(drop=True), placed(where, order)


def _drop(dropped: dict, reason: str, kept: np.ndarray) -> None:
    n = int((~kept).sum())
    if n:
        dropped[reason] = dropped.get(reason, 0) + n


# ---- 2. GPU types --------------------------------------------------------------------------------


def _gpu_map(raw: Any, src: str, known: Mapping[str, str], cluster: ClusterSpec) -> dict[str, str | None]:
    """Every GPU name a log may use (lower case) -> a datasheet name: the datasheet's own names,
    the format's (``known``), then the user's ``gpu_map`` over them; None marks a name not yet mapped."""
    datasheet = {key: spec.name for key, spec in cluster.known_types().items()}
    out: dict[str, str | None] = {**datasheet, **{name.lower(): target for name, target in known.items()}}
    if raw is None:
        return out
    require(
        isinstance(raw, Mapping),
        src,
        "gpu_map",
        f"must map the log's GPU names to datasheet types, e.g. {{G1: A100-80GB}}, got {raw!r}",
    )
    for name, target in raw.items():
        if target is None:
            out[str(name).lower()] = None
            continue
        require(
            str(target).lower() in datasheet,
            src,
            f"gpu_map.{name}",
            f"{target!r} is not a datasheet GPU type or one of the cluster's own (allowed: {_known(cluster)})",
        )
        out[str(name).lower()] = datasheet[str(target).lower()]
    return out


def _with_prefixes(gpu_map: dict[str, str | None], log: pd.DataFrame, cluster: ClusterSpec) -> dict[str, str | None]:
    """``gpu_map`` and each other GPU name of the log that is the start of exactly one type's name
    up to a ``-``, ``_`` or space (any case): among the cluster's types first, else among every known
    type (``h100`` -> H100-SXM; ``a100`` matches A100-40GB and A100-80GB: the one the cluster has,
    else no type, and the run's unknown-GPU report lists both)."""
    names = {w.strip().lower() for w in log["gpu_type"].to_numpy(str) if w.strip()}
    names |= {w.lower() for ws in allowed_types(log["gpu_types"].unique()) for w in ws}
    out = dict(gpu_map)
    for low in sorted(names - set(gpu_map)):
        for pool in (cluster.gpu_types, [s.name for s in cluster.known_types().values()]):
            hits = [t for t in pool if t.lower().startswith(low) and t[len(low) : len(low) + 1] in ("-", "_", " ")]
            if len(hits) == 1:
                out[low] = hits[0]
                break
    return out


def _canonical(name: str, gpu_map: Mapping[str, str | None]) -> str | None:
    return gpu_map.get(name.strip().lower())


def _unknown_names(log: pd.DataFrame, gpu_map: Mapping[str, str | None], cluster: ClusterSpec, given: Mapping) -> str:
    """The log's GPU names no type matched, each with its rows and the closest known names, and
    the ``gpu_map`` that would map each to its closest besides the ``given`` one ("" when every
    name is known)."""
    rows: Counter[str] = Counter()  # a name in lower case (names match in any case) -> rows naming it
    spelled: dict[str, str] = {}  # -> as first written
    pairs = log.groupby(["gpu_type", "gpu_types"], sort=False).size()
    for (one, many), n in pairs.items():
        names = {w.lower(): w for w in (one, *allowed_types([many])[0]) if w}
        for low, written in names.items():
            if _canonical(low, gpu_map) is None:
                rows[low] += n
                spelled.setdefault(low, written)
    if not rows:
        return ""
    rows = Counter({spelled[low]: n for low, n in rows.items()})
    known = [s.name for s in cluster.known_types().values()]
    closest = {name: closest_names(name, known) for name in rows}
    each = "; ".join(
        f"{name}: {n} row{'s' if n > 1 else ''}" + (f", closest {', '.join(closest[name])}" if closest[name] else "")
        for name, n in sorted(rows.items())
    )
    entries = ", ".join(
        [
            *(f"{k}: {v}" for k, v in given.items() if v is not None),
            *(f"{name}: {(closest[name] or ['<type>'])[0]}" for name in sorted(rows)),
        ]
    )
    return f"{each}; to run them: workload.gpu_map='{{{entries}}}'"


def _known(cluster: ClusterSpec) -> str:
    return ", ".join(s.name for s in cluster.known_types().values())


def _reference_types(log: pd.DataFrame, gpu_map, default: str | None, reason: np.ndarray) -> np.ndarray:
    """object [J]: each job's reference type (a datasheet name), None = the capacity-weighted mean rule."""
    ref = np.full(len(log), default, dtype=object)
    names, row_of = np.unique(log["gpu_type"].to_numpy(str), return_inverse=True)
    for u, raw in enumerate(names):
        if raw:
            rows = np.flatnonzero(row_of == u)
            ref[rows] = _canonical(raw, gpu_map)
            if ref[rows[0]] is None:
                reason[rows[reason[rows] == ""]] = "unknown_gpu_type"
    return ref


def _allowed(
    log: pd.DataFrame, ref: np.ndarray, pin: bool, gpu_map, cluster: ClusterSpec, reason: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """(bool [J, T] the cluster types each job may use, each job's allowed list as trace text)."""
    wanted = log["gpu_types"].to_numpy(str)
    if pin:
        pinned = log["gpu_type"].to_numpy(str)
        wanted = np.where(pinned != "", pinned, wanted)
    lists, row_of = np.unique(wanted, return_inverse=True)
    masks = np.ones((len(lists), cluster.num_types), dtype=bool)
    texts = np.full(len(lists), "", dtype=object)
    why = np.full(len(lists), "", dtype=object)
    for u, names in enumerate(allowed_types(lists)):
        if not names:
            continue
        canon = [_canonical(w, gpu_map) for w in names]
        if any(c is None for c in canon):
            why[u] = "unknown_gpu_type"
            canon = [c for c in canon if c is not None]
        masks[u] = [t in canon for t in cluster.gpu_types]
        texts[u] = TYPE_SEPARATOR.join(dict.fromkeys(canon))
        if not masks[u].any():
            why[u] = why[u] or "no_allowed_type_in_cluster"
    row_of = row_of.reshape(-1)
    job_why = why[row_of]
    take = (reason == "") & (job_why != "")
    reason[take] = job_why[take]
    return masks[row_of], texts[row_of]


# ---- 3-5. gang, model, work ------------------------------------------------------------------------


def _gang_slots(
    gpus: np.ndarray, allowed: np.ndarray, catalog: Catalog, cluster: ClusterSpec, gang: str, reason: np.ndarray
) -> np.ndarray:
    widest = np.where(allowed, cluster.counts[None, :], 0).max(axis=1)
    too_wide = gpus > widest
    reason[too_wide & (reason == "")] = "wider_than_any_allowed_type"
    counts = np.asarray(catalog.worker_counts)
    if gang == "nearest":
        return nearest_slot(gpus, catalog.worker_counts, catalog.allowed_workers.any(axis=0))
    slot = np.minimum(np.searchsorted(counts, gpus), len(counts) - 1)
    missing = counts[slot] != gpus
    reason[missing & (reason == "")] = "gang_size_not_in_catalog"
    return slot


def _models(
    log, ref, allowed, slot, catalog: Catalog, cluster: ClusterSpec, u: np.ndarray, reason, where: Where
) -> np.ndarray:
    runs = runnable(catalog, cluster)[:, :, slot]  # [M, T, J]
    can = (runs & allowed.T[None, :, :]).any(axis=1).T  # [J, M]
    has_ref = np.ones_like(can)
    for r in {r for r in ref if r is not None}:
        rows = np.flatnonzero(ref == r)
        if r in catalog.gpu_types:
            has_ref[rows] = np.isfinite(catalog.packed[:, catalog.gpu_types.index(r), slot[rows]]).T
        else:
            has_ref[rows] = False
            reason[rows[reason[rows] == ""]] = "reference_type_not_in_catalog"
    candidates = can & has_ref
    model = np.zeros(len(log), dtype=np.int64)
    names = log["model"].to_numpy()
    named = names != ""
    unknown = np.flatnonzero(named & ~np.isin(names, catalog.models))
    if len(unknown):
        catalog.model_indices(names[unknown[:1]], where(int(unknown[0])))  # refuses it, naming the row
    if named.any():
        model[named] = catalog.model_indices(names[named])
        fits = candidates[np.flatnonzero(named), model[named]]
        idx = np.flatnonzero(named)[~fits]
        reason[idx[reason[idx] == ""]] = "model_cannot_run_with_its_gang"
    free = ~named & candidates.any(axis=1)
    model[free] = pick_uniform(u[free], candidates[free])
    none = ~named & ~candidates.any(axis=1)
    reason[none & (reason == "")] = "no_catalog_model_fits"
    return model


def _reference_throughput(model, ref, allowed, slot, catalog: Catalog, cluster: ClusterSpec, reason) -> np.ndarray:
    """float [J]: the units/s at which the job's logged duration was run."""
    runs = runnable(catalog, cluster)[model, :, slot] & allowed  # [J, T] (advanced indices first: [J, T])
    cols = catalog.type_columns(cluster)
    cluster_tput = np.where(runs, catalog.packed[model[:, None], cols[None, :], slot[:, None]], 0.0)
    weight = np.where(runs, cluster.counts[None, :].astype(np.float64), 0.0)
    with np.errstate(invalid="ignore", divide="ignore"):
        tput = (weight * cluster_tput).sum(axis=1) / weight.sum(axis=1)
    for r in {r for r in ref if r is not None and r in catalog.gpu_types}:
        rows = np.flatnonzero(ref == r)
        tput[rows] = catalog.packed[model[rows], catalog.gpu_types.index(r), slot[rows]]
    reason[~np.isfinite(tput) & (reason == "")] = "no_catalog_model_fits"
    return np.where(np.isfinite(tput), tput, 1.0)


def dropped_words(dropped: Mapping[str, int]) -> str:
    """Rows dropped by reason, in words ("1 unknown gpu type, 2 cpu only"), or "none"."""
    return ", ".join(f"{n} {r.replace('_', ' ')}" for r, n in sorted(dropped.items()) if n) or "none"


def dropped_in(summary: Mapping[str, Any]) -> dict[str, int]:
    """The {reason: rows} of a run summary's ``log_dropped_<reason>`` keys."""
    return {k[len(DROPPED_KEY) :]: v for k, v in summary.items() if k.startswith(DROPPED_KEY)}
