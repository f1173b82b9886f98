"""Per-job and per-run metrics.

Finish-time fairness (Themis, NSDI'20): rho_j = T_shared / T_id, where T_shared is the job's JCT
and T_id its ideal completion time. PAPER.md sec. 6 quotes the paper two ways: T_id is "the
completion time in an exclusive cluster where each job has access to 1/N of the available
resources", and FFT's own target is the completion time "under the max-min fair scheduler".
Three readings, each a column of the per-job table and a group of summary keys:

- ``rho``: T_id = W_j / isolated rate on a 1/N share, N = the time-average number of active
  (arrived, unfinished) jobs over the job's own life under the policy being judged (Themis's
  dynamic definition; the contention the job actually met, so N depends on the policy);
- ``rho_static``: the same 1/N share with N = the active jobs at the job's arrival, itself
  included (a snapshot, as a scheduler estimates it at submission; also policy-dependent
  through the jobs still unfinished then);
- ``rho_fluid``: T_id = the job's completion time, minus its arrival, in the fluid max-min fair
  schedule of the same trace (``fairsim.fairness.fluid``): every unfinished job holds an equal
  share of every type, capped at what its gang can use, the unused rest shared among the others,
  N(t) from that fluid schedule itself. It depends only on the trace and the cluster, so it is
  the same for every policy; it is the closest reading of "under the max-min fair scheduler",
  and of "1/N of the available resources" with N the jobs a fair scheduler would still be
  running. ``t_id_fluid_s`` holds this T_id.

The 1/N share of the first two: of each type k, Y_k / N GPUs, i.e. the gang can run on type k
for a fraction Y_k / (N d_j) of the time; since a job runs on one type at a time these fractions
are capped at a total of 1, filled fastest type first. The isolated rate is sum_k f_k * theta_k
(``fairsim.fairness.share.share_rate``) and T_id = W_j / rate. The fluid schedule uses the same share and the same capping at every
moment, with N its own active count (and the redistribution of unused shares).

rho < 1 means the job finished sooner than its fair share promised.

Tenants (the trace's ``tenant`` column: a user, a virtual cluster): ``tenant_table`` gives each
tenant's jobs, GPU-hours used and their share, average JCT, mean rho_fluid and rho, and longest
wait before a first start. The summary's fairness index across tenants is Jain's index of the
per-tenant mean rho_fluid, (sum x)^2 / (n sum x^2): rho already divides each job's JCT by what a
fair share of the cluster would have given it, so tenants treated alike have equal means whatever
their demand, and the index is 1 exactly then. GPU-hour shares are not used for the index: in a
run that finishes every job each tenant ends up using about what it asked for, so their ratio to
demand is near 1 under any policy and would hide the waiting that rho measures.

Energy and cost (``fairsim.gpu_costs``: watts and USD per GPU-hour per type, from the shipped table
or the cluster's config), computed from the tables the engine writes: a job's ``energy_kwh`` is
its GPU-seconds on each type times that type's busy watts, its ``cost_usd`` its GPU-hours on each
type times the type's price. The run's energy adds the idle GPUs: every provisioned GPU-second of
the run's span (first round's start to last round's end, as for ``gpu_utilization``) that no job
held, at the type's idle watts. The cluster's cost is every provisioned GPU for that span at its
price, whether busy or not (what renting the cluster for the run costs); goodput per dollar,
``finished_jobs_per_kusd``, is the jobs finished over the whole run per 1,000 USD of it. Per
tenant: its jobs' energy and cost, and its finished jobs per 1,000 USD of its own jobs' cost.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from fairsim.cluster import ClusterSpec
from fairsim.fairness.fluid import fluid_finish_times
from fairsim.fairness.share import share_rate
from fairsim.gpu_costs import WATT_S_PER_KWH, GpuCosts, weighted
from fairsim.workload.jobs import JobSet


def active_jobs_integral(rounds: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """Breakpoints and the running integral of the active-job count over time (piecewise constant per round)."""
    t = rounds["t_s"].to_numpy(float)
    dur = rounds["duration_s"].to_numpy(float)
    area = np.concatenate([[0.0], np.cumsum(rounds["active_jobs"].to_numpy(float) * dur)])
    return np.concatenate([t[:1], t + dur]), area


def add_job_metrics(
    table: pd.DataFrame, jobs: JobSet, cluster: ClusterSpec, rounds: pd.DataFrame, fluid_finish=fluid_finish_times
) -> pd.DataFrame:
    """Add rho (dynamic N), rho_static and the N used for each, and rho_fluid with its T_id
    (``t_id_fluid_s``), to the per-job table. ``fluid_finish``: ``fluid_finish_times`` or a
    cache of it (``fairsim.experiment.fluid_cache``)."""
    out = table.copy()
    arrival, finish = jobs.arrival, out["finish_s"].to_numpy(float)
    knots, area = active_jobs_integral(rounds)
    life = np.maximum(finish - arrival, 1e-12)
    n_dynamic = (np.interp(finish, knots, area) - np.interp(arrival, knots, area)) / life
    n_dynamic = np.maximum(n_dynamic, 1.0)
    # active at arrival: arrived no later than j and not finished before j arrived
    order = np.argsort(finish)
    finished_before = np.searchsorted(finish[order], arrival, side="left")
    arrived_by = np.searchsorted(arrival, arrival, side="right")  # arrival is sorted by the trace order
    n_static = np.maximum(arrived_by - finished_before, 1).astype(float)
    for col, n in (("rho", n_dynamic), ("rho_static", n_static)):
        t_iso = jobs.work / share_rate(jobs.tput_packed, jobs.workers, cluster.counts.astype(float), n)
        out[col] = out["jct_s"].to_numpy(float) / t_iso
        out[f"{col}_share_n"] = n
    out["tenant"] = jobs.tenant
    t_id_fluid = fluid_finish(arrival, jobs.work, jobs.workers, jobs.tput_packed, cluster.counts) - arrival
    out["t_id_fluid_s"] = t_id_fluid
    out["rho_fluid"] = out["jct_s"].to_numpy(float) / t_id_fluid
    return out


def in_window(table: pd.DataFrame, window: tuple[int, int] | None) -> pd.DataFrame:
    """The jobs whose statistics are reported: trace job ids in [lo, hi), or all."""
    return table if window is None else table[(table["job_id"] >= window[0]) & (table["job_id"] < window[1])]


def summarize(
    table: pd.DataFrame,
    rounds: pd.DataFrame,
    cluster: ClusterSpec,
    stats: dict,
    window: tuple[int, int] | None = None,
    tenants: pd.DataFrame | None = None,
) -> dict:
    """The run's summary. ``window`` restricts job statistics to trace job ids in [lo, hi) (steady state).
    ``tenants``: the window's ``tenant_table``, when the caller has it already."""
    jobs = in_window(table, window)
    done = jobs[np.isfinite(jobs["finish_s"])]
    jct = done["jct_s"].to_numpy(float)
    makespan = float(table["finish_s"].max() - table["arrival_s"].min())
    busy_gpu_s = float((rounds["busy_gpus"] * rounds["duration_s"]).sum())
    span = run_span_s(rounds)
    policy_rounds = rounds.loc[rounds["decided"], "policy_s"]  # time per decision, not per round
    switches = int(jobs["type_switches"].sum())
    summary = {
        "num_jobs": int(len(jobs)),
        "finished_jobs": int(len(done)),
        "avg_jct_s": _stat(np.mean, jct),
        "median_jct_s": _stat(np.median, jct),
        "p95_jct_s": _stat(lambda a: np.percentile(a, 95), jct),
        "p99_jct_s": _stat(lambda a: np.percentile(a, 99), jct),
        "makespan_s": makespan,
        "rho_mean": _stat(np.mean, done["rho"].to_numpy()),
        "rho_max": _stat(np.max, done["rho"].to_numpy()),
        "rho_lt1_share": _stat(lambda a: float((a < 1).mean()), done["rho"].to_numpy()),
        "rho_static_mean": _stat(np.mean, done["rho_static"].to_numpy()),
        "rho_static_max": _stat(np.max, done["rho_static"].to_numpy()),
        "rho_static_lt1_share": _stat(lambda a: float((a < 1).mean()), done["rho_static"].to_numpy()),
        "rho_fluid_mean": _stat(np.mean, done["rho_fluid"].to_numpy()),
        "rho_fluid_max": _stat(np.max, done["rho_fluid"].to_numpy()),
        "rho_fluid_lt1_share": _stat(lambda a: float((a < 1).mean()), done["rho_fluid"].to_numpy()),
        "starvation_mean_s": _stat(np.mean, jobs["starvation_s"].to_numpy(float)),
        "starvation_max_s": _stat(np.max, jobs["starvation_s"].to_numpy(float)),
        "migrations": int(jobs["migrations"].sum()),
        "type_switches": switches,
        "switches_to_faster_share": float(jobs["switches_to_faster"].sum() / switches) if switches else float("nan"),
        "overhead_s_total": float(jobs["overhead_s"].sum()),  # migration + restart + profiling
        "preemptions": int(jobs["preemptions"].sum()),
        "gpu_utilization": busy_gpu_s / (cluster.total_gpus * span) if span > 0 else float("nan"),
        "policy_s_mean": float(policy_rounds.mean()) if len(policy_rounds) else 0.0,
        "policy_s_max": float(policy_rounds.max()) if len(policy_rounds) else 0.0,
        "policy_s_total": float(rounds["policy_s"].sum()),
    }
    summary.update(tenant_summary(tenant_table(jobs) if tenants is None else tenants))
    summary.update({k: (float(v) if isinstance(v, (float, np.floating)) else v) for k, v in stats.items()})
    return summary


def run_span_s(rounds: pd.DataFrame) -> float:
    """From the first round's start to the last round's end (0 without rounds)."""
    return float(rounds["t_s"].iloc[-1] + rounds["duration_s"].iloc[-1] - rounds["t_s"].iloc[0]) if len(rounds) else 0.0


def add_energy_cost(table: pd.DataFrame, costs: GpuCosts) -> pd.DataFrame:
    """Add each job's ``energy_kwh`` (its GPU-seconds per type x that type's busy watts) and
    ``cost_usd`` (its GPU-hours per type x that type's price, ``costs.pricing``) to the per-job table."""
    gpu_s = table[[f"gpu_s_{name}" for name in costs.gpu_types]].to_numpy(float)
    out = table.copy()
    out["energy_kwh"] = weighted(gpu_s, costs.busy_w).sum(axis=1) / WATT_S_PER_KWH
    out["cost_usd"] = weighted(gpu_s, costs.usd_per_gpu_h).sum(axis=1) / 3600.0
    return out


def energy_cost_summary(
    table: pd.DataFrame,
    rounds: pd.DataFrame,
    cluster: ClusterSpec,
    costs: GpuCosts,
    window: tuple[int, int] | None,
    down_gpu_s: np.ndarray | None = None,
) -> dict:
    """The run's energy and cost. Energy and the cluster's cost cover the whole run (every job,
    every provisioned GPU from the first round's start to the last round's end; a GPU on a host
    that is down, ``down_gpu_s`` per type, draws no power then, but is still paid for);
    ``jobs_cost_usd`` covers the reported jobs (the window's)."""
    span = run_span_s(rounds)
    busy = table[[f"gpu_s_{name}" for name in costs.gpu_types]].to_numpy(float).sum(axis=0)
    down = 0.0 if down_gpu_s is None else down_gpu_s
    idle = np.maximum(cluster.counts.astype(float) * span - busy - down, 0.0)
    busy_kwh = float(weighted(busy, costs.busy_w).sum()) / WATT_S_PER_KWH
    idle_kwh = float(weighted(idle, costs.idle_w).sum()) / WATT_S_PER_KWH
    per_h = costs.per_h_usd(cluster.counts)
    cluster_usd = per_h * span / 3600.0
    finished = int(np.isfinite(table["finish_s"].to_numpy(float)).sum())
    return {
        "pricing": costs.pricing,
        "energy_busy_kwh": busy_kwh,
        "energy_idle_kwh": idle_kwh,
        "energy_kwh": busy_kwh + idle_kwh,
        "cluster_cost_per_h_usd": per_h,
        "cluster_cost_usd": cluster_usd,
        "jobs_cost_usd": float(in_window(table, window)["cost_usd"].to_numpy(float).sum()),
        "finished_jobs_per_kusd": _per_kusd(finished, cluster_usd),
    }


def capacity_summary(
    table: pd.DataFrame, rounds: pd.DataFrame, cluster: ClusterSpec, stats: dict, window: tuple[int, int] | None
) -> dict:
    """What outages cost a run with a capacity timeline (``fairsim.capacity_timeline``; the
    engine's outage counters): the jobs evicted and the work they redid, and each type's
    availability (the share of its GPU-time over the run's span its hosts were up). Empty for a
    cluster that never changes (no ``capacity_gpus`` in its rounds)."""
    if "capacity_gpus" not in rounds:
        return {}
    jobs = in_window(table, window)
    span = run_span_s(rounds)
    # from the hosts' down time over the run's span, as gpu_utilization counts the span (the
    # rounds table has no rows while an idle cluster waits for its next arrival)
    down_gpu_s = sum(stats[f"gpu_s_down_{name}"] for name in cluster.gpu_types)
    up_gpu_s = cluster.total_gpus * span - down_gpu_s
    busy_gpu_s = float((rounds["busy_gpus"] * rounds["duration_s"]).sum())
    out = {
        "evictions": int(jobs["evictions"].sum()),
        "jobs_evicted": int((jobs["evictions"] > 0).sum()),
        "work_lost_gpu_h": float(jobs["lost_gpu_s"].sum()) / 3600.0,
        "availability": up_gpu_s / (cluster.total_gpus * span) if span > 0 else float("nan"),
        "gpu_utilization_of_up": busy_gpu_s / up_gpu_s if up_gpu_s > 0 else float("nan"),
    }
    for name, count in zip(cluster.gpu_types, cluster.counts):
        whole = float(count) * span
        out[f"availability_{name}"] = 1.0 - stats[f"gpu_s_down_{name}"] / whole if whole > 0 else float("nan")
    return out


def _per_kusd(jobs: float, usd: float) -> float:
    return 1000.0 * jobs / usd if np.isfinite(usd) and usd > 0 else float("nan")


def jain_index(values: np.ndarray) -> float:
    """Jain's fairness index of non-negative values: 1 when all equal, 1/n when one holds everything."""
    values = np.asarray(values, dtype=float)
    values = values[np.isfinite(values)]
    square_sum = float((values**2).sum())
    return float(values.sum() ** 2 / (len(values) * square_sum)) if len(values) and square_sum > 0 else float("nan")


TENANT_COLUMNS = (
    "tenant",
    "jobs",
    "finished_jobs",
    "gpu_hours",
    "gpu_share",
    "avg_jct_s",
    "rho_fluid_mean",
    "rho_mean",
    "starvation_max_s",
    "energy_kwh",
    "cost_usd",
    "finished_jobs_per_kusd",
)


def tenant_table(table: pd.DataFrame) -> pd.DataFrame:
    """One row per named tenant of a per-job table (with ``tenant`` and the metrics columns), sorted
    by tenant; empty when no job names one."""
    named = table[table["tenant"].astype(str) != ""] if "tenant" in table else table.iloc[:0]
    if named.empty:
        return pd.DataFrame({c: pd.Series(dtype=object if c == "tenant" else float) for c in TENANT_COLUMNS})
    done = np.isfinite(named["finish_s"].to_numpy(float))
    rows = []
    total_gpu_s = float(named["attained_gpu_s"].sum())
    for tenant, part in named.groupby("tenant", sort=True):
        finished = part[done[named.index.get_indexer(part.index)]]
        gpu_s = float(part["attained_gpu_s"].sum())
        rows.append(
            {
                "tenant": str(tenant),
                "jobs": int(len(part)),
                "finished_jobs": int(len(finished)),
                "gpu_hours": gpu_s / 3600.0,
                "gpu_share": gpu_s / total_gpu_s if total_gpu_s > 0 else float("nan"),
                "avg_jct_s": _stat(np.mean, finished["jct_s"].to_numpy(float)),
                "rho_fluid_mean": _stat(np.mean, finished["rho_fluid"].to_numpy(float)),
                "rho_mean": _stat(np.mean, finished["rho"].to_numpy(float)),
                "starvation_max_s": _stat(np.max, part["starvation_s"].to_numpy(float)),
                **_tenant_energy_cost(part, len(finished)),
            }
        )
    return pd.DataFrame(rows, columns=list(TENANT_COLUMNS))


def _tenant_energy_cost(part: pd.DataFrame, finished: int) -> dict:
    """A tenant's energy and cost: its jobs' sums, and its finished jobs per 1,000 USD of them."""
    if "cost_usd" not in part:
        return {"energy_kwh": float("nan"), "cost_usd": float("nan"), "finished_jobs_per_kusd": float("nan")}
    usd = float(part["cost_usd"].to_numpy(float).sum())
    return {
        "energy_kwh": float(part["energy_kwh"].to_numpy(float).sum()),
        "cost_usd": usd,
        "finished_jobs_per_kusd": _per_kusd(finished, usd),
    }


def tenant_summary(tenants: pd.DataFrame) -> dict:
    return {
        "tenant_count": int(len(tenants)),
        "tenant_jain_rho_fluid": jain_index(tenants["rho_fluid_mean"].to_numpy(float))
        if len(tenants) >= 2
        else float("nan"),
    }


def _stat(fn, values: np.ndarray) -> float:
    values = values[np.isfinite(values)]
    return float(fn(values)) if len(values) else float("nan")
