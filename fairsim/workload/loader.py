"""One entry point from a workload config (``conf/workload/*.yaml``) to a trace and its catalog.

    workload = load_workload(cfg, cluster, seed)
    jobs = bind_jobs(workload, cluster)   # JobSet.build, Catalog.bind_jobs, then the elastic attributes if asked for

``cfg["kind"]`` picks how the trace is made (KINDS), ``cfg["catalog"]`` which catalog gives
the throughputs (CATALOGS; default per kind). Adding a kind or a catalog = one function and
one entry in the dict below. ``cfg["elastic"]`` (any kind, default off) makes jobs elastic
(fairsim/workload/elastic_catalog.py).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from fairsim.cluster import ClusterSpec
from fairsim.errors import OneOf, require
from fairsim.files import input_path
from fairsim.workload import options as opt
from fairsim.workload.catalog import Catalog, with_own_types
from fairsim.workload.elastic_catalog import ElasticOptions, elastic_jobs
from fairsim.workload.gavel_gen import OPTIONS as GAVEL_GEN_OPTIONS
from fairsim.workload.gavel_gen import GavelGenOptions, generate_gavel
from fairsim.workload.gavel_trace import read_gavel_trace
from fairsim.workload.gavel_trace import shipped_trace as gavel_shipped
from fairsim.workload.goodput import PolluxCatalog
from fairsim.workload.jobs import JobSet
from fairsim.workload.jobs_log import format_options, log_to_trace, read_log
from fairsim.workload.pal_trace import ARTIFACT_LOCALITY_PENALTY, iteration_catalog, iteration_seconds, read_pal_trace
from fairsim.workload.perf_model import paper_catalog
from fairsim.workload.philly import OPTIONS as PHILLY_OPTIONS
from fairsim.workload.philly import PhillyOptions, generate_philly
from fairsim.workload.pollux_trace import pollux_catalog, read_pollux_trace
from fairsim.workload.pollux_trace import shipped_trace as pollux_shipped
from fairsim.workload.sia_trace import load_sia, read_sia_trace
from fairsim.workload.table_catalog import gavel_catalog, table_catalog
from fairsim.workload.tiresias_trace import duration_catalog, read_tiresias_trace
from fairsim.workload.tiresias_trace import shipped_trace as tiresias_shipped
from fairsim.workload.trace import read_trace, validate_trace


@dataclass(frozen=True, eq=False)
class Workload:
    trace: pd.DataFrame  # validated, fairsim's schema, sorted by (arrival_s, job_id)
    catalog: Catalog
    source: str  # names the workload in error messages
    window: tuple[int, int] | None = None  # job ids [lo, hi) whose statistics are reported (steady state)
    meta: dict = field(default_factory=dict)  # generator figures: rate, offered load, durations
    report: dict = field(default_factory=dict)  # figures the run's summary carries (a job log's rows read and dropped)
    elastic: ElasticOptions | None = None  # workload.elastic; None: every job a rigid gang
    elastic_chosen: np.ndarray | None = None  # bool [J], trace order: the jobs made elastic


# --- catalogs: cfg -> Catalog -------------------------------------------------------------


def _paper(cfg: Mapping[str, Any], cluster: ClusterSpec, src: str) -> Catalog:
    if cfg.get("kind") != "jobs_log":
        return paper_catalog(cluster, path=cfg.get("catalog_path"))
    # a job log's durations may have been measured on any datasheet type, in the cluster or not:
    # the performance model gives each of them (the cluster's types come first, as always)
    every = tuple(dict.fromkeys([*cluster.gpu_types, *(s.name for s in cluster.known_types().values())]))
    return paper_catalog(cluster, path=cfg.get("catalog_path"), gpu_types=every)


def _gavel(cfg: Mapping[str, Any], cluster: ClusterSpec, src: str) -> Catalog:
    return gavel_catalog()


def _table(cfg: Mapping[str, Any], cluster: ClusterSpec, src: str) -> Catalog:
    for key in ("throughputs_path", "models_path"):
        require(isinstance(cfg.get(key), str) and cfg.get(key), src, key, "is required for catalog=table (a CSV path)")
    return table_catalog(
        cfg["throughputs_path"],
        cfg["models_path"],
        name=str(cfg.get("catalog_name", "table")),
        work_unit=str(cfg.get("work_unit", "units")),
        known=cluster.known_types(),
    )


def _made_from(cfg: Mapping[str, Any], src: str, catalog: str, kind: str) -> None:
    """A catalog made from one kind of trace's own rows refuses any other kind."""
    require(
        cfg.get("kind") == kind,
        src,
        "catalog",
        f"{catalog} needs workload.kind={kind} (it is made from that trace)",
    )


def _durations(cfg: Mapping[str, Any], cluster: ClusterSpec, src: str) -> Catalog:
    # a run time per job, not a model table: the catalog is made from the trace's own rows
    _made_from(cfg, src, "durations", "tiresias_trace")
    return duration_catalog(read_tiresias_trace(_path(cfg, src, tiresias_shipped)), cluster, src)


def _pal_iterations(cfg: Mapping[str, Any], cluster: ClusterSpec, src: str) -> Catalog:
    # iterations per second per model, made from the trace's own models and gang sizes
    _made_from(cfg, src, "pal_iterations", "pal_trace")
    return iteration_catalog(
        read_pal_trace(_path(cfg, src, _no_shipped)),
        cluster,
        iteration_seconds(cfg.get("iteration_s"), src),
        opt.number(cfg, "locality_penalty", src, ARTIFACT_LOCALITY_PENALTY, lo=1.0),
        src,
    )


def _pollux(cfg: Mapping[str, Any], cluster: ClusterSpec, src: str) -> Catalog:
    # Pollux's six applications on T4, at every count up to the cluster's largest type
    return pollux_catalog(PolluxCatalog.load(), cluster.gpus_per_host, int(cluster.counts.max()))


def _sia(cfg: Mapping[str, Any], cluster: ClusterSpec, src: str) -> Catalog:
    # Sia's applications from its artifact's profiles (workload.dir), on the cluster's types
    _made_from(cfg, src, "sia", "sia_trace")
    return load_sia(cfg, cluster, src)


CATALOGS: dict[str, Callable[[Mapping[str, Any], ClusterSpec, str], Catalog]] = {
    "paper": _paper,
    "gavel": _gavel,
    "table": _table,
    "durations": _durations,
    "pal_iterations": _pal_iterations,
    "pollux": _pollux,
    "sia": _sia,
}
CATALOG_OPTIONS = {
    "paper": ("catalog_path",),
    "gavel": (),
    "table": ("throughputs_path", "models_path", "work_unit", "catalog_name"),
    "durations": (),
    "pal_iterations": ("iteration_s", "locality_penalty"),
    "pollux": (),
    "sia": ("dir", "profiles", "host_gpus", "epochs", "slowdown", "restart_s", "max_local", "batch", "scheduler_batch"),
}


# --- kinds: (cfg, catalog, cluster, seed) -> (trace, window, meta) ------------------------


def _philly(cfg, catalog, cluster, seed, src):
    trace, stats = generate_philly(catalog, cluster, seed, PhillyOptions.from_config(cfg, src), src)
    return trace, None, stats


def _gavel_generated(cfg, catalog, cluster, seed, src):
    o = GavelGenOptions.from_config(cfg, src)
    trace, stats = generate_gavel(catalog, cluster, seed, o, src)
    return trace, o.window, stats


def _file(cfg, catalog, cluster, seed, src):
    return read_trace(_path(cfg, src)), opt.window(cfg.get("window"), src), {}


def _gavel_trace(cfg, catalog, cluster, seed, src):
    return read_gavel_trace(_path(cfg, src)), opt.window(cfg.get("window"), src), {}


def _tiresias_trace(cfg, catalog, cluster, seed, src):
    return read_tiresias_trace(_path(cfg, src, tiresias_shipped)), opt.window(cfg.get("window"), src), {}


def _pal_trace(cfg, catalog, cluster, seed, src):
    return read_pal_trace(_path(cfg, src, _no_shipped)), opt.window(cfg.get("window"), src), {}


def _pollux_trace(cfg, catalog, cluster, seed, src):
    require(catalog.name == "pollux", src, "catalog", "pollux_trace needs catalog=pollux (its jobs are Pollux's)")
    trace = read_pollux_trace(_path(cfg, src, pollux_shipped), PolluxCatalog.load())
    return trace, opt.window(cfg.get("window"), src), {}


def _sia_trace(cfg, catalog, cluster, seed, src):
    require(catalog.name == "sia", src, "catalog", "sia_trace needs catalog=sia (its jobs are Sia's)")
    return read_sia_trace(catalog.path, catalog.apps), opt.window(cfg.get("window"), src), {}


def _no_shipped(name: str) -> Path | None:
    return None  # PAL's traces come from Sia's artifact, which has no licence: none is shipped


def _jobs_log(cfg, catalog, cluster, seed, src):
    trace, report = log_to_trace(read_log(cfg, src), catalog, cluster, seed, cfg, src)
    return trace, opt.window(cfg.get("window"), src), {"report": report}


def _path(cfg: Mapping[str, Any], src: str, shipped: Callable[[str], Path | None] = gavel_shipped) -> Path:
    raw = cfg.get("path")
    require(isinstance(raw, str) and raw.strip() != "", src, "path", "is required: set workload.path=/path/to/trace")
    path = input_path(raw)
    if not path.is_file():  # a bare name of a trace shipped with fairsim
        path = shipped(raw) or path
    return path


KINDS = {
    "philly": _philly,
    "gavel_generated": _gavel_generated,
    "file": _file,
    "gavel_trace": _gavel_trace,
    "tiresias_trace": _tiresias_trace,
    "pal_trace": _pal_trace,
    "pollux_trace": _pollux_trace,
    "sia_trace": _sia_trace,
    "jobs_log": _jobs_log,
}
# a kind's keys: a tuple, or a function of the config (a job log's keys depend on its format)
KIND_OPTIONS = {
    "philly": PHILLY_OPTIONS,
    "gavel_generated": GAVEL_GEN_OPTIONS,
    "file": ("path", "window"),
    "gavel_trace": ("path", "window"),
    "tiresias_trace": ("path", "window"),
    "pal_trace": ("path", "window"),
    "pollux_trace": ("path", "window"),
    "sia_trace": ("path", "window"),
    "jobs_log": lambda cfg, src: format_options(cfg, src) + ("window",),
}
DEFAULT_CATALOG = {
    "philly": "paper",
    "gavel_generated": "gavel",
    "file": "paper",
    "gavel_trace": "gavel",
    "tiresias_trace": "durations",
    "pal_trace": "pal_iterations",
    "pollux_trace": "pollux",
    "sia_trace": "sia",
    "jobs_log": "paper",
}
COMMON = ("name", "kind", "catalog", "elastic")
GPU_TYPES_WARNING = "warning_gpu_types"  # a run summary's key: the rule each of the cluster's own types fell back to


def load_workload(cfg: Mapping[str, Any], cluster: ClusterSpec, seed: int) -> Workload:
    name = str(cfg.get("name", "")).strip()
    src = f"workload {name}".strip()
    kind = OneOf(tuple(KINDS), wording="is_not").check(cfg.get("kind"), src, "kind")
    cat_name = OneOf(tuple(CATALOGS), wording="is_not").check(cfg.get("catalog", DEFAULT_CATALOG[kind]), src, "catalog")
    kind_options = KIND_OPTIONS[kind]
    kind_options = kind_options(cfg, src) if callable(kind_options) else kind_options
    opt.check_keys(cfg, COMMON + tuple(kind_options) + CATALOG_OPTIONS[cat_name], src)
    catalog = with_own_types(CATALOGS[cat_name](cfg, cluster, src), cluster)
    trace, window, meta = KINDS[kind](cfg, catalog, cluster, seed, src)
    report = meta.pop("report", {})
    if catalog.notes:  # a GPU type of the cluster's own that fell back to a rule: said, never silent
        report[GPU_TYPES_WARNING] = "; ".join(catalog.notes)
    if cfg.get("path"):
        src = f"{src} ({cfg['path']})"  # name the file in errors about its rows
    trace = validate_trace(trace, src)
    elastic = ElasticOptions.from_config(cfg.get("elastic"), src)
    chosen = None if elastic is None else elastic.chosen(len(trace), seed)
    if chosen is not None:
        report["elastic_jobs"] = int(chosen.sum())
    return Workload(
        trace=trace,
        catalog=catalog,
        source=src,
        window=window,
        report=report,
        meta={"kind": kind, "catalog": catalog.name, "work_unit": catalog.work_unit, **meta},
        elastic=elastic,
        elastic_chosen=chosen,
    )


def bind_jobs(workload: Workload, cluster: ClusterSpec) -> JobSet:
    """The workload's jobs bound to the cluster (JobSet.build, then ``Catalog.bind_jobs``: a
    catalog that rates each job itself); with ``workload.elastic`` set, the chosen jobs elastic
    (JobSet.elastic)."""
    jobs = JobSet.build(workload.trace, workload.catalog, cluster, source=workload.source)
    jobs = workload.catalog.bind_jobs(jobs, cluster)
    if workload.elastic is None:
        return jobs
    return dataclasses.replace(
        jobs,
        elastic=elastic_jobs(
            jobs, workload.trace, workload.catalog, cluster, workload.elastic, workload.elastic_chosen, workload.source
        ),
    )
