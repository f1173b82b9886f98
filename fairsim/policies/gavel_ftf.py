"""``gavel_ftf``: Gavel's heterogeneity-aware finish-time fairness (``finish_time_fairness_perf``,
its Themis variant; Narayanan et al., OSDI'20, sec. 4.2; ``policies/finish_time_fairness.py``),
through Gavel's round mechanism.

    minimize  max_j rho_j,   rho_j = (age_j + remaining_j / throughput_j(X))
                                     / (isolated_time_j + remaining_j / isolated_tput_j)

under Gavel's base constraints, with ``throughput_j(X) = sum_k tput[j, k] X[j, k]``. The
isolated allocation gives job j a share ``count_k / (n * scale_j)`` of each type, scaled down so
its shares sum to at most 1; ``isolated_tput_j`` is its throughput there. ``isolated_time_j``
accumulates across solves: the work a job did since the previous solve, divided by the isolated
throughput it had then (Gavel keeps the same running sum). Priority weights are ignored, as in
Gavel.

rho_j <= rho is linear in X for a fixed rho (throughput_j(X) >= remaining_j / (rho * D_j - age_j)),
so the smallest feasible rho is found by a bracketing search, each step one max-min LP (feasible when every
job reaches its required throughput, one warm-started HiGHS model per solve); the rho each LP's
X actually achieves caps the upper end, and the LP's max-min value z caps the lower end (some job
needs a ratio of at least z to meet a smaller rho), which together cut the number of LPs
several-fold. The returned X is the best one found.
"""

from __future__ import annotations

import numpy as np

from fairsim.cluster import ClusterSpec
from fairsim.policies.base import PolicyView
from fairsim.policies.mechanism import FractionPolicy, as_mechanism
from fairsim.solve.budget import DEFAULT_LIMITS, LP_ITERATIONS, Budget
from fairsim.solve.maxmin import RequirementMaxMin

BISECTIONS = "bisections"  # LPs of one solve's search for the smallest rho (``max_bisections``)


class GavelFinishTimeFairness(FractionPolicy):
    limit_kinds = (LP_ITERATIONS, BISECTIONS)

    def __init__(
        self,
        mechanism=None,
        rel_tol: float = 1e-4,
        max_bisections: int = 40,
        lp_iterations: int | None = DEFAULT_LIMITS.lp_iterations,
    ):
        super().__init__(as_mechanism(mechanism), lp_iterations)
        self.rel_tol = float(rel_tol)
        self.max_bisections = int(max_bisections)

    def reset(self, cluster: ClusterSpec, num_jobs: int, seed: int) -> None:
        super().reset(cluster, num_jobs, seed)
        self.isolated_time = np.zeros(num_jobs)
        self.prev_remaining = np.full(num_jobs, np.nan)  # NaN: not in the previous solve
        self.prev_isolated_tput = np.zeros(num_jobs)
        self.last_rho = np.nan

    def fractions(self, view: PolicyView) -> np.ndarray:
        ids = view.job_id
        tput = np.where(view.feasible, view.throughput, 0.0)
        remaining = view.remaining
        iso = isolated_throughput(tput, view.workers, view.capacity)
        seen = ~np.isnan(self.prev_remaining[ids])
        self.isolated_time[ids[seen]] += (self.prev_remaining[ids[seen]] - remaining[seen]) / self.prev_isolated_tput[
            ids[seen]
        ]
        self.prev_remaining[:] = np.nan
        self.prev_remaining[ids] = remaining
        self.prev_isolated_tput[ids] = iso
        age = view.now - view.arrival
        denom = self.isolated_time[ids] + remaining / np.maximum(iso, 1e-300)
        x, self.last_rho = min_max_rho_fractions(
            tput, remaining, age, denom, view.workers, view.capacity, self.rel_tol, self.max_bisections, self.budget
        )
        return x


def isolated_throughput(tput: np.ndarray, workers: np.ndarray, capacity: np.ndarray) -> np.ndarray:
    n = len(workers)
    share = capacity[None, :] / (max(n, 1) * workers[:, None].astype(np.float64))
    share = share / np.maximum(share.sum(axis=1, keepdims=True), 1.0)
    return (tput * share).sum(axis=1)


# where in [lo, hi] each LP probes: the lower bound from the LP's max-min value is usually close
# to the optimum, so probing near it settles in fewer LPs than halving (a 1,500-job paper point,
# 867 recomputes: 3.4 LPs each vs 6.7 at the midpoint; 0.05 took fewer LPs but more time)
_PROBE = 0.15


def min_max_rho_fractions(
    tput, remaining, age, denom, workers, capacity, rel_tol=1e-4, max_bisections=40, budget: Budget | None = None
):
    """(X, rho*) minimizing max_j (age_j + remaining_j / tput_j.X_j) / denom_j, within ``rel_tol``
    unless ``max_bisections`` LPs run out first (a hit the budget counts; X is then the best found)."""
    budget = budget or Budget()
    n, t = tput.shape
    x = np.zeros((n, t))
    rows = np.flatnonzero((tput > 0).any(axis=1) & (denom > 0))
    if not len(rows):
        return x, np.nan
    tp, rem, ag, d = tput[rows], remaining[rows], age[rows], denom[rows]
    g = workers[rows].astype(np.float64)
    cap = capacity.astype(np.float64)
    iso = isolated_throughput(tp, workers[rows], capacity)
    lo = float(np.max((ag + rem / tp.max(axis=1)) / d))  # even the fastest type alone cannot beat it
    hi = float(np.max((ag + rem / iso) / d))  # the isolated allocation is feasible
    lp = RequirementMaxMin(tp, g, cap, budget)  # one model for all the bisection steps of this solve
    best = None
    steps, converged = 0, False
    for steps in range(max_bisections + 1):
        converged = hi - lo <= rel_tol * hi
        if converged or steps == max_bisections:
            break
        mid = lo + _PROBE * (hi - lo)
        slack = mid * d - ag  # > 0: mid > lo >= age_j / denom_j
        y, z = _max_min_ratio(lp, tp, rem / slack)
        # any X is feasible: its own max rho bounds the optimum from above (tightens hi fast)
        rho_y = _max_rho(tp, y, rem, ag, d)
        if rho_y < hi:
            hi, best = rho_y, y
        if z >= 1.0 - 1e-9:
            if mid < hi:
                hi, best = mid, y
        else:
            lo = mid
        if z > 0:
            # z is the best min_j throughput_j / need_j(mid): reaching need_j(rho) needs a ratio of
            # slack_j / (rho * d_j - age_j), so some job caps rho* from below (bisects far less)
            lo = max(lo, float(np.min((slack / (z * (1 + 1e-9)) + ag) / d)))
    budget.note(BISECTIONS, steps, not converged)
    if best is None:  # the isolated shares are optimal (or within rel_tol of it)
        share = cap[None, :] / (len(rows) * g[:, None])
        best = share / np.maximum(share.sum(axis=1, keepdims=True), 1.0)
    x[rows] = best
    return x, hi


def _max_rho(tp, y, rem, age, denom) -> float:
    thr = (tp * y).sum(axis=1)
    with np.errstate(divide="ignore"):
        return float(np.max((age + rem / thr) / denom))


def _max_min_ratio(lp: RequirementMaxMin, tp: np.ndarray, need: np.ndarray) -> tuple[np.ndarray, float]:
    """X maximizing min_j throughput_j / need_j, and that min (>= 1: every job reaches its need)."""
    y = lp.solve(need)
    return y, float(((tp * y).sum(axis=1) / need).min())
