"""How much of a workload a cluster can sustain under the best possible allocation.

    python -m fairsim.experiment.capacity workload=gavel_generated cluster=gavel workload.multi_gpu=true

Jobs are grouped into classes (the same throughput row and gang size). A class needs work at
the rate its jobs bring it (total work / the span of arrivals). If n[c, k] jobs of class c run
on type k on average, the classes get sum_k n[c, k] * tput[c, k] units/s using
sum_c n[c, k] * workers_c GPUs of type k. The LP

    maximize s  s.t.  sum_k n[c, k] tput[c, k] >= s * demand_c,   sum_c workers_c n[c, k] <= count_k

gives the largest factor s by which the demand could grow and still be served. s < 1 means no
policy at all keeps up: queues grow for as long as jobs arrive, and a measurement window's
jobs finish only once arrivals stop. This is a fluid bound: rounds, gangs and placement only
lower what a real schedule achieves.
"""

from __future__ import annotations

import sys

import numpy as np
from scipy.optimize import linprog

from fairsim.cluster import ClusterSpec
from fairsim.workload.jobs import JobSet


def sustainable_scale(jobs: JobSet, cluster: ClusterSpec) -> float:
    """The factor s above (> 1: headroom; < 1: overloaded under any allocation)."""
    span = float(jobs.arrival.max() - jobs.arrival.min())
    if span <= 0:
        raise ValueError("the workload's jobs all arrive at once: it brings work at no steady rate")
    rows = np.column_stack([jobs.tput_packed, jobs.workers])
    classes, inverse = np.unique(rows, axis=0, return_inverse=True)
    demand = np.bincount(inverse.ravel(), weights=jobs.work) / span
    tput, gang = classes[:, :-1], classes[:, -1]
    c, t = tput.shape
    # variables: n[c, k] row-major, then s
    throughput_rows = np.zeros((c, c * t + 1))
    throughput_rows[np.repeat(np.arange(c), t), np.arange(c * t)] = -tput.ravel()
    throughput_rows[:, -1] = demand
    capacity_rows = np.zeros((t, c * t + 1))
    capacity_rows[np.tile(np.arange(t), c), np.arange(c * t)] = np.repeat(gang, t)
    upper = np.r_[np.where(tput.ravel() > 0, np.inf, 0.0), np.inf]
    res = linprog(
        np.r_[np.zeros(c * t), -1.0],
        A_ub=np.vstack([throughput_rows, capacity_rows]),
        b_ub=np.r_[np.zeros(c), cluster.counts.astype(float)],
        bounds=np.column_stack([np.zeros(c * t + 1), upper]),
        method="highs",
    )
    if res.status != 0:
        raise RuntimeError(f"capacity LP failed: {res.message}")
    return float(-res.fun)


def main(argv: list[str]) -> int:
    from fairsim.experiment.compose import compose_config
    from fairsim.experiment.single import build_cluster, build_jobs

    cfg = compose_config(argv)
    cluster = build_cluster(cfg)
    _, jobs = build_jobs(cfg, cluster)
    s = sustainable_scale(jobs, cluster)
    verdict = "headroom" if s >= 1 else "overloaded under any allocation"
    print(f"workload={cfg.workload.name} cluster={cluster.name} seed={cfg.seed}: sustainable scale {s:.3f} ({verdict})")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
