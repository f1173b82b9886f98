"""Gavel's heterogeneity-aware max-min fairness (``max_min_fairness_perf``, its LAS policy).

Gavel (Narayanan et al., OSDI'20, sec. 4.1; ``policies/max_min_fairness.py``) picks the time
fractions X [n, T] that maximize the smallest normalized effective throughput:

    maximize  min_j  scale_j * sum_k tput[j, k] * X[j, k] / (weight_j * tput_equal_j)
    s.t.      X >= 0,   sum_k X[j, k] <= 1,   sum_j scale_j * X[j, k] <= count_k

where ``tput_equal_j = sum_k tput[j, k] * count_k / n`` is the job's throughput under an equal
1/n share of every type (Gavel's normalizer ignores the scale factor; the factor scale_j in the
numerator gives a gang of s GPUs 1/s of a single-GPU job's time, i.e. equal GPU time). Any
uniform rescaling of the normalizer (Gavel's code divides by the total GPU count instead of n)
leaves the optimal X unchanged.

Solved as an LP with HiGHS (fairsim/solve/maxmin.py) instead of cvxpy/ECOS. Jobs with identical objective rows
and gang sizes are merged into one class first: by symmetry some optimal X gives them the same
row (averaging an optimum over permutations of identical jobs stays optimal, the min being
concave), which is also what an interior-point solver such as ECOS returns; the LP shrinks from
n to at most (#models x #gang sizes) rows. Where the optimum is not unique, HiGHS returns a
vertex where ECOS returns an interior point (docs/gavel_compat.md).
"""

from __future__ import annotations

import numpy as np

from fairsim.cluster import ClusterSpec
from fairsim.policies.base import PolicyView
from fairsim.policies.mechanism import FractionPolicy, as_mechanism
from fairsim.solve.budget import DEFAULT_LIMITS, Budget
from fairsim.solve.maxmin import WarmMaxMin, solve_max_min


class GavelMaxMinFairness(FractionPolicy):
    """``gavel_mmf``: Gavel's max_min_fairness_perf through Gavel's round mechanism.

    ``warm_start``: keep one HiGHS model across recomputes, each job's class found once when it
    arrives (fast; same optimum, possibly another vertex when the optimum is not unique), or
    solve each LP cold with linprog."""

    def __init__(
        self, mechanism=None, warm_start: bool = True, lp_iterations: int | None = DEFAULT_LIMITS.lp_iterations
    ):
        super().__init__(as_mechanism(mechanism), lp_iterations)
        self.warm_start = warm_start

    def reset(self, cluster: ClusterSpec, num_jobs: int, seed: int) -> None:
        super().reset(cluster, num_jobs, seed)
        self.lp = WarmMaxMin(cluster.counts, self.budget) if self.warm_start else None
        self.job_class = np.full(num_jobs, _UNKNOWN, dtype=np.int64)
        self.class_of: dict[bytes, int] = {}

    def fractions(self, view: PolicyView) -> np.ndarray:
        if self.lp is None:
            return max_min_fractions(self._coefficients(view, slice(None)), view.workers, view.capacity, self.budget)
        ids = view.job_id
        fresh = np.flatnonzero(self.job_class[ids] == _UNKNOWN)
        if len(fresh):
            self._classify(view, fresh)
        cls = self.job_class[ids]
        run = cls >= 0
        y = self.lp.solve(np.bincount(cls[run], minlength=self.lp.num_classes))
        x = np.zeros((view.num_jobs, view.num_types))
        x[run] = y[cls[run]]
        return x

    def _coefficients(self, view: PolicyView, rows) -> np.ndarray:
        """Normalized throughput per unit of time on each type. Normalizer: the job's throughput
        under a share of each type proportional to its size (Gavel's code; GAVEL.md's 1/n share
        differs by one factor for every job: same optimum), so a job's row never changes."""
        tput = np.where(view.feasible[rows], view.throughput[rows], 0.0)
        equal_share = tput @ (view.capacity / view.capacity.sum())
        scale = view.workers[rows] / (view.weight[rows] * np.maximum(equal_share, 1e-300))
        return tput * np.asarray(scale)[..., None]

    def _classify(self, view: PolicyView, rows: np.ndarray) -> None:
        coef = self._coefficients(view, rows)
        for r, a_row in zip(rows.tolist(), coef):
            if not (a_row > 0).any():
                self.job_class[view.job_id[r]] = _NOWHERE
                continue
            gang = int(view.workers[r])
            key = a_row.tobytes() + gang.to_bytes(4, "little")
            c = self.class_of.get(key)
            if c is None:
                c = self.class_of[key] = self.lp.add_class(a_row, gang)
            self.job_class[view.job_id[r]] = c


_UNKNOWN, _NOWHERE = -1, -2  # job_class markers: not classified yet / can run on no type


def max_min_fractions(
    coef: np.ndarray, workers: np.ndarray, capacity: np.ndarray, budget: Budget | None = None
) -> np.ndarray:
    """X maximizing min_j sum_k coef[j, k] X[j, k] under Gavel's base constraints, solved cold
    over classes of identical jobs. Rows of coef that are all zero (jobs that can run nowhere)
    get X = 0 and are ignored."""
    n, t = coef.shape
    x = np.zeros((n, t))
    runnable = (coef > 0).any(axis=1)
    if not runnable.any():
        return x
    keys = np.ascontiguousarray(np.column_stack([coef[runnable], workers[runnable]]), dtype=np.float64)
    rows = keys.view(np.dtype((np.void, keys.itemsize * keys.shape[1]))).ravel()  # one bytes key per job
    first, member = np.unique(rows, return_index=True, return_inverse=True)[1:]
    count = np.bincount(member.ravel(), minlength=len(first)).astype(np.float64)
    classes = keys[first]
    y = solve_max_min(classes[:, :t], classes[:, t] * count, capacity.astype(np.float64), budget)
    x[runnable] = y[member.ravel()]
    return x
