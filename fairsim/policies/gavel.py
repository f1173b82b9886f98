"""``gavel``: the Gavel baseline of the FFT paper -- a heterogeneity-aware, shortest-job-first
objective over time fractions, run through Gavel's round mechanism.

The FFT paper (ICS'25, sec. 2 and Table 1) compares against Gavel (Narayanan et al., OSDI'20)
configured to favour short jobs, and criticizes its time-fraction allocations: two identical
jobs on a fast and a slow GPU get a 50/50 split of both and finish together, 20% later in total
than running one after the other. Gavel's code ships no policy of that name (its ``policies/``:
allox, fifo, finish_time_fairness, gandiva, isolated, max_min_fairness*, max_sum_throughput,
min_total_duration); its AlloX_Perf minimizes JCT as a 0/1 matching of single-GPU jobs and
min_total_duration_perf minimizes makespan. We write SJF the way Gavel writes its policies, as
an LP over time fractions X (its FIFO_Perf and max_sum_throughput_perf are of this form):

    maximize  sum_j weight_j * throughput_j(X) / remaining_j,
    throughput_j(X) = sum_k tput[j, k] * X[j, k]

under Gavel's base constraints (X >= 0, sum_k X[j, k] <= 1, sum_j scale_j X[j, k] <= count_k).
Each term is the rate at which job j eats its remaining work, so a GPU of type k is worth
``tput[j, k] / (remaining_j * scale_j)`` per GPU to job j: the fastest GPUs go to the jobs with
the least remaining service (SRPT when re-solved as jobs progress), and tied, identical jobs
share (jobs with equal rows are merged into one class, the symmetric optimum an interior-point
solver such as Gavel's ECOS returns). On Table 1 this gives the 50/50 split: 7.11 min of total
JCT against the optimal 5.75 min.

Rejected alternative (measured, docs/gavel_compat.md): minimizing sum_j remaining_j /
throughput_j(X), the predicted total JCT, is convex and also gives the Table 1 split, but when
re-solved it gives jobs *less* throughput as they near completion (T ~ sqrt(remaining)), the
opposite of SRPT, and doubled the average JCT of LAS on Gavel's 96-job trace.
"""

from __future__ import annotations

import numpy as np
from scipy import sparse
from scipy.optimize import linprog

from fairsim.policies.base import PolicyView
from fairsim.policies.mechanism import FractionPolicy, as_mechanism
from fairsim.solve.budget import DEFAULT_LIMITS, Budget


class GavelSjf(FractionPolicy):
    def __init__(self, mechanism=None, lp_iterations: int | None = DEFAULT_LIMITS.lp_iterations):
        super().__init__(as_mechanism(mechanism), lp_iterations)

    def fractions(self, view: PolicyView) -> np.ndarray:
        tput = np.where(view.feasible, view.throughput, 0.0)
        value = tput * (view.weight / np.maximum(view.remaining, 1e-300))[:, None]
        return max_weighted_throughput(value, view.workers, view.capacity, self.budget)


def max_weighted_throughput(
    value: np.ndarray, workers: np.ndarray, capacity: np.ndarray, budget: Budget | None = None
) -> np.ndarray:
    """X maximizing sum_jk value[j, k] X[j, k] under Gavel's base constraints, solved over
    classes of identical jobs (same value row and gang size) so tied jobs share symmetrically,
    within the budget's iteration limit (a limit that stops it raises, as any failure)."""
    budget = budget or Budget()
    n, t = value.shape
    x = np.zeros((n, t))
    if n == 0 or not (value > 0).any():
        return x
    keys = np.ascontiguousarray(np.column_stack([value, workers]), dtype=np.float64)
    rows = keys.view(np.dtype((np.void, keys.itemsize * keys.shape[1]))).ravel()
    first, member = np.unique(rows, return_index=True, return_inverse=True)[1:]
    member = member.ravel()
    count = np.bincount(member, minlength=len(first)).astype(np.float64)
    v, w = value[first], workers[first].astype(np.float64)
    c = len(first)
    cls = np.repeat(np.arange(c), t)
    typ = np.tile(np.arange(t), c)
    # per-job fractions y[c, k]: row sums <= 1, capacity sum_c count_c * w_c * y[c, k] <= count_k
    a_ub = sparse.csr_matrix(
        (np.r_[np.ones(c * t), (count * w)[cls]], (np.r_[cls, c + typ], np.r_[np.arange(c * t), np.arange(c * t)])),
        shape=(c + t, c * t),
    )
    b_ub = np.r_[np.ones(c), capacity.astype(np.float64)]
    upper = np.where(v.ravel() > 0, 1.0, 0.0)
    res = linprog(
        -(v * count[:, None]).ravel(),
        A_ub=a_ub,
        b_ub=b_ub,
        bounds=np.column_stack([np.zeros(c * t), upper]),
        method="highs",
        options=budget.linprog_options(),
    )
    budget.note_linprog(res)
    if res.status != 0:
        raise RuntimeError(f"gavel SJF LP failed: {res.message}")
    x[:] = np.clip(res.x.reshape(c, t), 0.0, 1.0)[member] + 0.0  # + 0.0: no negative zeros
    return x
