"""tau_j: when job j would finish under a max-min fair scheduler (the FFT paper's estimate).

The paper re-estimates tau_j for every active job at each arrival and completion as the
completion time with a dedicated 1/|A(t)| share of every GPU type, preemption disabled. For a
gang of d_j workers the share has to become time fractions, because a job runs on one type at a
time. Two readings (policy option ``tau_multiworker``):

- ``gpu_share`` (default): a 1/N share of type k is Y_k / N GPUs, so the gang can run on type k
  for a fraction f_k = Y_k / (N d_j) of the time. A job runs on one type at a time, so the
  fractions are capped at a total of 1, filled fastest type first. This is the same isolated
  rate the finish-time-fairness metric and Themis' ideal share use (``share_rate``), so the
  policy steers toward the quantity it is judged by.
- ``time_share``: f_k = 1 / N of each feasible type's time whatever the gang size (Gavel's equal
  share), capped the same way; wide jobs get the same promise as narrow ones.

Rate = sum_k f_k theta_k (work units per second); preemption disabled means the job runs
continuously at that rate. From when? (policy option ``tau_from``)

- ``arrival`` (default): tau_j = a_j + W_j / rate_j, the finish time had the job held its share
  since it arrived. For a fixed number of jobs the target is fixed, mu_j = (t - a_j)/(tau_j - a_j)
  grows linearly with age and rho_j of a starved job grows quadratically: bounded starvation.
- ``now``: tau_j = t + remaining_j / rate_j. The target recedes while the job waits, so
  W_j / (tau_j - a_j) shrinks like 1/age and rho_j of a starved job only grows like log(age).
"""

from __future__ import annotations

import numpy as np

TAU_MODES = ("gpu_share", "time_share")


def capped_rate(throughput: np.ndarray, fractions: np.ndarray) -> np.ndarray:
    """sum_k f_k theta_k with the f capped at a total of 1, fastest type first. [n, T] -> [n]."""
    fractions = np.where(throughput > 0, fractions, 0.0)
    order = np.argsort(-throughput, axis=1, kind="stable")
    tput = np.take_along_axis(throughput, order, axis=1)
    frac = np.take_along_axis(fractions, order, axis=1)
    before = np.cumsum(frac, axis=1) - frac
    return (np.clip(1.0 - before, 0.0, frac) * tput).sum(axis=1)


def share_rate(throughput: np.ndarray, workers: np.ndarray, capacity: np.ndarray, share_n) -> np.ndarray:
    """Work units per second of each job on a 1/N share of every type: Y_k / (N d_j) of type k's
    time, capped at a total of 1, fastest type first. ``share_n``: N, one number or one per job
    (values below 1 count as 1). The one 1/N share of FFT's tau, the rho metric and Themis."""
    n = np.maximum(np.asarray(share_n, dtype=np.float64), 1.0)[..., None]
    fractions = capacity[None, :].astype(np.float64) / (n * workers[:, None].astype(np.float64))
    return capped_rate(throughput, fractions)


def fair_rate(
    throughput: np.ndarray, workers: np.ndarray, capacity: np.ndarray, n_active: int, mode: str = "gpu_share"
) -> np.ndarray:
    """Work units per second each job gets from a dedicated 1/n_active share of every type."""
    n = max(int(n_active), 1)
    if mode == "gpu_share":
        return share_rate(throughput, workers, capacity, n)
    if mode == "time_share":
        fractions = np.full(throughput.shape, 1.0 / n)
    else:
        raise ValueError(f"tau mode {mode!r} is not one of {TAU_MODES}")
    return capped_rate(throughput, fractions)


def fair_finish(start, work: np.ndarray, rate: np.ndarray) -> np.ndarray:
    """tau: start + work / rate (inf for a job with no feasible type)."""
    return start + np.where(rate > 0, work / np.where(rate > 0, rate, 1.0), np.inf)
