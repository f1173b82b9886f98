"""The what-if table: one row per (candidate cluster, policy), read from the sweep's results.

Columns (units in the names): the cluster's GPUs, jobs finished, mean and 99th-percentile JCT in
hours, mean rho (``rho_fluid_mean``: the headline fairness, lower is fairer), GPU utilisation,
energy in kWh (busy and idle GPUs, the whole run), the cluster's price per hour and for the run
(every provisioned GPU for the run's span), and two marks:

- ``meets_target``: every job finished and the mean JCT is at most the target;
- ``cheapest``: per policy, of the rows that meet the target, the lowest price per hour (what
  renting or running the cluster costs while it serves this workload), the cost of the run
  breaking ties. No row meets the target: no mark.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from fairsim.whatif.candidates import Candidate

HOUR = 3600.0
COLUMNS = (
    "cluster",
    "gpus",
    "policy",
    "finished_jobs",
    "num_jobs",
    "avg_jct_h",
    "p99_jct_h",
    "rho_fluid_mean",
    "gpu_utilization",
    "energy_kwh",
    "cost_per_h_usd",
    "cost_per_run_usd",
    "meets_target",
    "cheapest",
)


def _number(value) -> float:
    """A summary's number, NaN where it is null (energy or cost of a type with no power or price)."""
    return float("nan") if value is None or pd.isna(value) else float(value)


def build(results: pd.DataFrame, candidates: list[Candidate], policies: list[str], target_h: float) -> pd.DataFrame:
    """The table from a sweep's results.parquet rows, in the order of ``candidates`` and ``policies``."""
    by_cell = {(r["cluster"], r["policy"]): r for _, r in results.iterrows()}
    rows = []
    for cand in candidates:
        for policy in policies:
            cell = by_cell.get((cand.name, policy))
            if cell is None:
                continue  # a cell that did not complete: the sweep said so
            rows.append(
                {
                    "cluster": cand.name,
                    "gpus": cand.mix,
                    "policy": policy,
                    "finished_jobs": int(cell["finished_jobs"]),
                    "num_jobs": int(cell["num_jobs"]),
                    "avg_jct_h": _number(cell["avg_jct_s"]) / HOUR,
                    "p99_jct_h": _number(cell["p99_jct_s"]) / HOUR,
                    "rho_fluid_mean": _number(cell["rho_fluid_mean"]),
                    "gpu_utilization": _number(cell["gpu_utilization"]),
                    "energy_kwh": _number(cell["energy_kwh"]),
                    "cost_per_h_usd": _number(cell["cluster_cost_per_h_usd"]),
                    "cost_per_run_usd": _number(cell["cluster_cost_usd"]),
                }
            )
    table = pd.DataFrame(rows, columns=list(COLUMNS[:-2]))
    table["meets_target"] = (table["finished_jobs"] == table["num_jobs"]) & (table["avg_jct_h"] <= target_h)
    table["cheapest"] = False
    for _, part in table[table["meets_target"]].groupby("policy", sort=False):
        ranked = part.sort_values(["cost_per_h_usd", "cost_per_run_usd"], na_position="last")
        if np.isfinite(ranked["cost_per_h_usd"].iloc[0]):
            table.loc[ranked.index[0], "cheapest"] = True
    return table


def text(table: pd.DataFrame, target_h: float, skipped: list[tuple[Candidate, str]]) -> str:
    """The table as the command prints it, then the cheapest cluster per policy."""

    def num(v: float, fmt: str) -> str:
        return format(v, fmt) if isinstance(v, (int, float)) and math.isfinite(v) else "n/a"

    head = (
        f"{'cluster':<24} {'policy':<10} {'done':>7} {'avg JCT h':>9} {'p99 JCT h':>9} {'rho':>6} {'util':>6} "
        f"{'energy kWh':>10} {'USD/h':>9} {'USD/run':>10}  mark"
    )
    lines = [head, "-" * len(head)]
    for _, r in table.iterrows():
        mark = "CHEAPEST meeting target" if r["cheapest"] else ("meets target" if r["meets_target"] else "")
        lines.append(
            f"{r['cluster']:<24} {r['policy']:<10} {r['finished_jobs']:>3}/{r['num_jobs']:<3} "
            f"{num(r['avg_jct_h'], '.2f'):>9} {num(r['p99_jct_h'], '.2f'):>9} {num(r['rho_fluid_mean'], '.2f'):>6} "
            f"{num(r['gpu_utilization'], '.1%'):>6} {num(r['energy_kwh'], ',.1f'):>10} "
            f"{num(r['cost_per_h_usd'], ',.2f'):>9} {num(r['cost_per_run_usd'], ',.2f'):>10}  {mark}"
        )
    lines.append("")
    for policy in dict.fromkeys(table["policy"]):
        best = table[(table["policy"] == policy) & table["cheapest"]]
        lines.append(
            f"{policy}: cheapest cluster with every job done and mean JCT <= {target_h:g} h: "
            + (
                f"{best['cluster'].iloc[0]} ({best['gpus'].iloc[0]}), {best['cost_per_h_usd'].iloc[0]:,.2f} USD/h"
                if len(best)
                else "none of the candidates"
            )
        )
    for cand, why in skipped:
        lines.append(f"not run: {cand.name} ({cand.mix}): {why}")
    return "\n".join(lines)
