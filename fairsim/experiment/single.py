"""One simulation from a composed config: build the parts, run, write the result files.

Result files in the run's folder (written atomically; ``summary.json`` last, so its presence
means the run is complete):
    jobs.parquet     one row per job (JCT, rho, starvation, migrations, GPU-seconds per type)
    rounds.parquet   one row per round (active/running jobs, busy GPUs, policy time)
    tenants.parquet  when the jobs name tenants: one row per tenant (jobs, GPU-hours, JCT, rho;
                     fairsim.metrics.tenant_table), over the reported window
    schedule.parquet with sim.record_schedule=true only: one row per (round, active job), the
                     type and hosts it ran on, its overhead seconds (schema: fairsim/sim/schedule.py)
    config.yaml      the resolved config the run used
    provenance.json  the code, input files and environment that made it (fairsim/experiment/provenance.py)
    summary.json     the run's metrics
"""

from __future__ import annotations

import inspect
import json
import math
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from omegaconf import DictConfig, OmegaConf

from fairsim.capacity_timeline import CapacityConfig
from fairsim.cluster import ClusterSpec
from fairsim.errors import InputError, require
from fairsim.experiment.run_folder import CONFIG, JOBS, PROVENANCE, ROUNDS, SCHEDULE, SUMMARY, TENANTS
from fairsim.fairness.fluid import fluid_finish_times
from fairsim.files import atomic_write, recording_inputs
from fairsim.gpu_costs import GpuCosts
from fairsim.metrics import (
    add_energy_cost,
    add_job_metrics,
    capacity_summary,
    energy_cost_summary,
    in_window,
    summarize,
    tenant_table,
)
from fairsim.policies.base import Policy
from fairsim.sim.config import SimConfig
from fairsim.sim.engine import simulate
from fairsim.workload.formats.clusters import cluster_mapping
from fairsim.workload.jobs import JobSet
from fairsim.workload.jobs_log import UNKNOWN_KEY, dropped_in, dropped_words
from fairsim.workload.loader import GPU_TYPES_WARNING, Workload, bind_jobs, load_workload


@dataclass
class RunOutput:
    jobs: pd.DataFrame
    rounds: pd.DataFrame
    summary: dict
    schedule: pd.DataFrame | None = None
    provenance: dict | None = None
    tenants: pd.DataFrame | None = None  # per-tenant metrics; None when no job names a tenant
    missing_costs: tuple[str, ...] = ()  # the power and price figures the cluster lacks (GpuCosts.missing)


def build_policy(cfg: Mapping[str, Any]) -> Policy:
    """Instantiate a policy from its config group entry (``_target_`` + kwargs; ``name`` is a label).
    Keyword arguments are checked against the class's signature and simple annotations."""
    from hydra.utils import get_class

    cfg = OmegaConf.to_container(cfg, resolve=True) if isinstance(cfg, DictConfig) else dict(cfg)
    name = cfg.pop("name", "?")
    source = f"policy {name}"
    target = cfg.pop("_target_", None)
    require(
        target is not None, source, "_target_", "missing (the policy's class, e.g. fairsim.policies.fifo.FifoPolicy)"
    )
    try:
        cls = get_class(target)
    except Exception as exc:  # Hydra raises ImportError or its own wrapper
        raise InputError(source, "_target_", f"cannot import {target} ({type(exc).__name__})") from exc
    require(
        isinstance(cls, type) and issubclass(cls, Policy), source, "_target_", f"{target} is not a fairsim Policy class"
    )
    params = inspect.signature(cls.__init__).parameters
    allowed = [p for p in params if p != "self"]
    for key, value in cfg.items():
        require(key in params, source, key, f"unknown option (allowed: {', '.join(allowed) or 'none'})")
        _check_type(value, params[key].annotation, source, key)
    try:
        return cls(**cfg)
    except InputError as exc:
        if exc.source != "policy":
            raise
        raise InputError(source, exc.field, exc.problem) from None  # name the preset, as for the checks above


_SIMPLE = {"bool": (bool,), "int": (int,), "float": (int, float), "str": (str,)}


def _check_type(value: Any, annotation: Any, source: str, key: str) -> None:
    """Check options annotated as a plain bool/int/float/str (optionally '| None')."""
    text = annotation if isinstance(annotation, str) else getattr(annotation, "__name__", "")
    parts = [p.strip() for p in str(text).split("|")]
    if value is None and "None" in parts:
        return
    kinds = [_SIMPLE[p] for p in parts if p in _SIMPLE]
    if not kinds or len(kinds) != len([p for p in parts if p != "None"]):
        return  # richer annotations are the class's own business
    ok = any(isinstance(value, k) and not (isinstance(value, bool) and bool not in k) for k in kinds)
    require(ok, source, key, f"must be {' or '.join(p for p in parts)}, got {value!r}")


def validate_top(cfg: DictConfig) -> None:
    seed = cfg.get("seed")
    require(
        isinstance(seed, int) and not isinstance(seed, bool) and seed >= 0,
        "config",
        "seed",
        f"must be an integer >= 0, got {seed!r}",
    )
    for key in ("track", "reuse_stale"):
        value = cfg.get(key, False)
        require(isinstance(value, bool), "config", key, f"must be true or false, got {value!r}")
    load = cfg.get("load")
    if load is not None:
        require(
            isinstance(load, (int, float)) and not isinstance(load, bool) and math.isfinite(load) and 0 < load <= 10,
            "config",
            "load",
            f"must be a number in (0, 10], got {load!r}",
        )


def check_integer_steps(jobs: JobSet, cluster: ClusterSpec, sim_cfg: SimConfig) -> None:
    """With whole steps per round, a job slower than one work unit per round on a type would
    never progress there (the run would spin until max_rounds): refuse such a setup up front."""
    if not sim_cfg.integer_steps:
        return
    per_round = np.minimum(jobs.tput_packed, jobs.tput_spread) * sim_cfg.round_len_s
    slow = jobs.feasible & (per_round < 1)
    if slow.any():
        j, k = (int(a[0]) for a in np.nonzero(slow))
        raise InputError(
            "sim",
            "integer_steps",
            f"job {int(jobs.job_id[j])} makes {per_round[j, k]:.3g} whole {jobs.work_unit} per "
            f"{sim_cfg.round_len_s:g} s round on {cluster.gpu_types[k]}; integer steps need >= 1 per round "
            "(use a catalog counted in steps, e.g. gavel, longer rounds, or sim.integer_steps=false)",
        )


def build_cluster(cfg: DictConfig) -> ClusterSpec:
    src = f"cluster {cfg.cluster.get('name', '')}".strip()
    return ClusterSpec.from_config(cluster_mapping(OmegaConf.to_container(cfg.cluster, resolve=True), src), source=src)


def build_costs(cfg: DictConfig, cluster: ClusterSpec) -> GpuCosts:
    """Power and prices for the cluster's types: the shipped table under cluster.power, cluster.price
    and cluster.pricing (fairsim/gpu_costs.py)."""
    src = f"cluster {cfg.cluster.get('name', '')}".strip()
    return GpuCosts.for_cluster(cluster, OmegaConf.to_container(cfg.cluster, resolve=True), source=src)


def build_capacity(cfg: DictConfig, cluster: ClusterSpec) -> CapacityConfig | None:
    """The run's capacity timeline (the ``capacity`` group, fairsim/capacity_timeline.py); None: none."""
    raw = cfg.get("capacity")
    if raw is None:
        return None
    src = f"capacity {raw.get('name', '')}".strip()
    return CapacityConfig.from_config(OmegaConf.to_container(raw, resolve=True), cluster, source=src)


def build_jobs(cfg: DictConfig, cluster: ClusterSpec) -> tuple[Workload, JobSet]:
    """The configured workload and its jobs bound to the cluster."""
    workload = load_workload(OmegaConf.to_container(cfg.workload, resolve=True), cluster, int(cfg.seed))
    return workload, bind_jobs(workload, cluster)


def run_config(cfg: DictConfig, progress: bool | None = False, fluid_cache: Path | None = None) -> RunOutput:
    """Build and run one simulation. ``progress``: a bar of finished jobs on stderr (None: only
    when stderr is a terminal; the default False keeps sweeps and tests silent). ``fluid_cache``:
    a folder that keeps the fluid fair-share reference per trace and cluster (None: compute it)."""
    from fairsim.experiment import provenance

    started_at = provenance.now()
    with recording_inputs() as inputs:
        out = _run_config(cfg, progress, fluid_cache)
    out.provenance = provenance.record(provenance.sections(cfg), inputs, started_at, provenance.now())
    out.provenance["deterministic"] = out.summary["deterministic"]  # false: a wall-clock limit could cut decisions
    return out


def _run_config(cfg: DictConfig, progress: bool | None, fluid_cache: Path | None) -> RunOutput:
    from fairsim.experiment.fluid_cache import FluidCache
    from fairsim.experiment.output import progress_bar

    validate_top(cfg)
    cluster = build_cluster(cfg)
    costs = build_costs(cfg, cluster)
    sim_cfg = SimConfig.from_config(OmegaConf.to_container(cfg.sim, resolve=True))
    capacity = build_capacity(cfg, cluster)
    workload, jobs = build_jobs(cfg, cluster)
    if capacity is not None:
        capacity.check_models(workload.catalog.models, f"capacity {cfg.capacity.get('name', '')}".strip())
    check_integer_steps(jobs, cluster, sim_cfg)
    sim_cfg.check_horizon(jobs, workload.source)
    policy = build_policy(cfg.policy)
    tick = time.perf_counter()
    window = workload.window if sim_cfg.until == "window" else None
    awaited = None if window is None else np.flatnonzero((jobs.job_id >= window[0]) & (jobs.job_id < window[1]))
    total = len(jobs) if awaited is None else len(awaited)
    with progress_bar(
        total, f"{cfg.policy.get('name', 'run')} on {cfg.workload.get('name', '')}", enabled=progress
    ) as advance:
        result = simulate(
            jobs, cluster, policy, sim_cfg, seed=int(cfg.seed), until=awaited, progress=advance, capacity=capacity
        )
    fluid = fluid_finish_times if fluid_cache is None else FluidCache(fluid_cache)
    table = add_energy_cost(add_job_metrics(result.jobs, jobs, cluster, result.rounds, fluid_finish=fluid), costs)
    stats = {**result.stats, "wall_s": time.perf_counter() - tick}
    tenants = tenant_table(in_window(table, workload.window))
    summary = summarize(table, result.rounds, cluster, stats, window=workload.window, tenants=tenants)
    down = (
        np.array([stats[f"gpu_s_down_{name}"] for name in cluster.gpu_types])
        if "capacity_gpus" in result.rounds
        else None
    )
    summary.update(energy_cost_summary(table, result.rounds, cluster, costs, workload.window, down))
    summary.update(capacity_summary(table, result.rounds, cluster, stats, workload.window))
    summary = {
        "policy": str(cfg.policy.get("name", "")),
        "cluster": cluster.name,
        "workload": str(cfg.workload.get("name", "")),
        "seed": int(cfg.seed),
        "work_unit": jobs.work_unit,
        "deterministic": bool(policy.deterministic),
        **summary,
        **workload.report,
    }
    if window is not None and result.stats["unarrived_jobs_at_end"] == 0:
        # Gavel keeps generating jobs until the window's jobs finish: a trace that ran out first
        # left the end of the window under a lighter load than Gavel's
        summary["warning"] = (
            f"every job of the workload arrived before the window's jobs finished: the tail ran "
            f"under a lighter load than a steady state; raise workload.num_jobs (now {len(jobs)})"
        )
    return RunOutput(
        table,
        result.rounds,
        summary,
        result.schedule,
        tenants=tenants if len(tenants) else None,
        missing_costs=costs.missing(cluster.counts),
    )


def write_results(out: RunOutput, folder: Path, cfg: DictConfig | None = None) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for name in (SUMMARY, PROVENANCE):  # a rerun is incomplete until its summary lands, and has no one else's record
        (folder / name).unlink(missing_ok=True)
    atomic_write(folder / JOBS, lambda p: out.jobs.to_parquet(p, index=False))
    atomic_write(folder / ROUNDS, lambda p: out.rounds.to_parquet(p, index=False))
    if out.schedule is not None:
        atomic_write(folder / SCHEDULE, lambda p: out.schedule.to_parquet(p, index=False))
    else:
        (folder / SCHEDULE).unlink(missing_ok=True)  # a rerun without the record leaves no stale one
    if out.tenants is not None:
        atomic_write(folder / TENANTS, lambda p: out.tenants.to_parquet(p, index=False))
    else:
        (folder / TENANTS).unlink(missing_ok=True)
    if cfg is not None:
        atomic_write(folder / CONFIG, lambda p: p.write_text(OmegaConf.to_yaml(cfg, resolve=True)))
    if out.provenance is not None:
        atomic_write(
            folder / PROVENANCE, lambda p: p.write_text(json.dumps(out.provenance, indent=2, sort_keys=True) + "\n")
        )
    atomic_write(
        folder / SUMMARY, lambda p: p.write_text(json.dumps(_jsonable(out.summary), indent=2, sort_keys=True) + "\n")
    )
    return folder


def format_summary(summary: dict, missing_costs: tuple[str, ...] = ()) -> str:
    """The summary a run prints; ``missing_costs`` (RunOutput's) names the figures behind an n/a
    energy or cost."""

    def h(key: str) -> str:
        v = summary.get(key, float("nan"))
        return f"{v / 3600:.2f} h" if isinstance(v, float) and math.isfinite(v) else "n/a"

    def f(key: str, fmt: str = ".3f") -> str:
        v = summary.get(key, float("nan"))
        return format(v, fmt) if isinstance(v, (int, float)) and math.isfinite(v) else "n/a"

    return "\n".join(
        [
            f"policy={summary['policy']} cluster={summary['cluster']} workload={summary['workload']} seed={summary['seed']}",
            f"  jobs finished   {summary['finished_jobs']}/{summary['num_jobs']}",
            f"  avg JCT         {h('avg_jct_s')}  (median {h('median_jct_s')}, p95 {h('p95_jct_s')}, p99 {h('p99_jct_s')}; lower is better)",
            f"  makespan        {h('makespan_s')}  (lower is better)",
            f"  rho (FTF)       mean {f('rho_fluid_mean')}  max {f('rho_fluid_max')}  (T_id: fluid max-min fair schedule; "
            "lower is fairer; < 1 = better than fair share)",
            f"  rho < 1         {f('rho_fluid_lt1_share', '.1%')} of jobs  (higher is fairer; 1/N-share readings: "
            f"{f('rho_lt1_share', '.1%')} dynamic N, {f('rho_static_lt1_share', '.1%')} static N)",
            f"  starvation      mean {h('starvation_mean_s')}  max {h('starvation_max_s')}  (lower is better)",
            f"  migrations      {summary['migrations']} ({f('switches_to_faster_share', '.0%')} of type switches to a faster type), "
            f"{h('overhead_s_total')} of job time lost to overheads  (fewer and less are better)",
            f"  GPU utilization {f('gpu_utilization', '.1%')}  (higher is better)",
            f"  energy, cost    {f('energy_kwh', '.1f')} kWh ({f('energy_idle_kwh', '.1f')} idle), "
            f"{f('cluster_cost_usd', ',.2f')} USD at {f('cluster_cost_per_h_usd', ',.2f')} USD/h {summary.get('pricing', '')}; "
            f"{f('finished_jobs_per_kusd', '.1f')} jobs per 1,000 USD  (lower, lower, higher are better)",
        ]
        + (
            [
                f"  n/a because     no {', '.join('cluster.' + k for k in missing_costs)} "
                "(set it: docs/clusters.md, Energy and cost)"
            ]
            if missing_costs
            and not all(math.isfinite(summary.get(k, float("nan"))) for k in ("energy_kwh", "cluster_cost_usd"))
            else []
        )
        + [
            f"  policy time     {f('policy_s_mean', '.4f')} s/decision, {summary['policy_calls']} decisions, {summary['rounds']} rounds, {f('wall_s', '.2f')} s wall",
        ]
        + (
            [
                f"  job log         {summary['log_jobs']} jobs of {summary['log_rows']} rows run; dropped: "
                f"{dropped_words(dropped_in(summary))}"
            ]
            if "log_rows" in summary
            else []
        )
        + (
            [
                f"  outages         {summary['outages_failure']} failures, {summary['outages_maintenance']} maintenance, "
                f"{summary['outages_reclaim']} reclaims; availability {f('availability', '.1%')}; "
                f"{summary['evictions']} evictions of {summary['jobs_evicted']} jobs, "
                f"{f('work_lost_gpu_h', '.1f')} GPU-h of work redone  (capacity=..., docs/capacity.md)"
            ]
            if "availability" in summary
            else []
        )
        + ([f"  unknown GPUs    {summary[UNKNOWN_KEY]}"] if summary.get(UNKNOWN_KEY) else [])
        + (
            [
                f"  tenants         {summary['tenant_count']}, Jain's index of their mean rho {f('tenant_jain_rho_fluid')}  "
                "(1 = treated alike; per tenant: tenants.parquet)"
            ]
            if summary.get("tenant_count")
            else []
        )
        + ([f"  WARNING         {summary['warning']}"] if summary.get("warning") else [])
        + ([f"  WARNING         GPU types: {summary[GPU_TYPES_WARNING]}"] if summary.get(GPU_TYPES_WARNING) else [])
    )


def _jsonable(d: dict) -> dict:
    out = {}
    for k, v in d.items():
        if hasattr(v, "item"):
            v = v.item()
        if isinstance(v, float) and not math.isfinite(v):
            v = None  # JSON has no NaN; null means "not defined for this run"
        out[k] = v
    return out
