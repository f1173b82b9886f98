"""``gavel``: the Gavel baseline of the FFT paper -- a heterogeneity-aware, JCT-favouring
(SJF-like) objective over time fractions, run through Gavel's round mechanism.

The FFT paper (ICS'25, sec. 2 and Table 1) compares against Gavel (Narayanan et al., OSDI'20)
configured to favour short jobs, and criticizes its fractional allocations: two identical jobs
on a fast and a slow GPU get a 50/50 split of both GPUs and finish together, 20% later in total
than running one job after the other. Gavel's code ships no policy of that name (its
``policies/``: allox, fifo, finish_time_fairness, gandiva, isolated, max_min_fairness*,
max_sum_throughput, min_total_duration); its AlloX_Perf minimizes JCT but is a 0/1 matching of
single-GPU jobs, and min_total_duration_perf minimizes makespan. We therefore write Gavel's
JCT objective in its own time-fraction form, as its paper does for every policy:

    minimize  sum_j weight_j * (age_j + remaining_j / throughput_j(X)),
    throughput_j(X) = sum_k tput[j, k] * X[j, k]

subject to Gavel's base constraints (X >= 0, sum_k X[j, k] <= 1, sum_j scale_j X[j, k] <= count_k).
It favours short jobs: at the optimum a job's expected time to finish grows only like the
square root of its remaining work, and every job keeps a share (no sequencing) -- exactly the
behaviour Table 1 criticizes (there it gives the 50/50 split: 7.11 min total vs 5.75 optimal).

The objective is convex but not linear; it is solved as a sequence of LPs (Kelley's cutting
planes): remaining_j / T is replaced by the maximum of its tangents, starting from tangents on
a geometric grid and adding tangents at (and 2% around) each job's current throughput until the
LP's value is within ``rel_gap`` of the true objective (X is then within about sqrt(rel_gap)).
"""

from __future__ import annotations

import numpy as np
from scipy import sparse
from scipy.optimize import linprog

from fairsim.policies.base import FractionPolicy, PolicyView
from fairsim.policies.mechanism import as_mechanism


class GavelJct(FractionPolicy):
    def __init__(self, mechanism=None, rel_gap: float = 1e-4, max_iterations: int = 60):
        super().__init__(as_mechanism(mechanism))
        self.rel_gap = float(rel_gap)
        self.max_iterations = int(max_iterations)

    def fractions(self, view: PolicyView) -> np.ndarray:
        tput = np.where(view.feasible, view.throughput, 0.0)
        return min_total_jct_fractions(tput, view.weight * view.remaining, view.workers, view.capacity,
                                       self.rel_gap, self.max_iterations)


GRID_POINTS, GRID_RATIO, BRACKET = 12, 2.0, 0.02  # initial tangents at T_max / 2^i; extra cuts at +-2%


def min_total_jct_fractions(tput: np.ndarray, r: np.ndarray, workers: np.ndarray, capacity: np.ndarray,
                            rel_gap: float = 1e-4, max_iterations: int = 60) -> np.ndarray:
    """X minimizing sum_j r_j / (tput_j . X_j) under Gavel's base constraints (r_j > 0)."""
    n, t = tput.shape
    x = np.zeros((n, t))
    rows = np.flatnonzero((tput > 0).any(axis=1) & (r > 0))
    if not len(rows):
        return x
    tp, rr = tput[rows], r[rows].astype(np.float64)
    lp = _CutLP(tp, workers[rows].astype(np.float64), capacity.astype(np.float64))
    top = tp.max(axis=1)
    for i in range(GRID_POINTS):
        lp.add_cuts(np.arange(len(rows)), top * GRID_RATIO ** -i, rr)
    for _ in range(max_iterations):
        xs, z = lp.solve()
        thr = (tp * xs).sum(axis=1)
        true = rr / np.maximum(thr, 1e-300)
        if true.sum() - z.sum() <= rel_gap * true.sum():
            break
        loose = np.flatnonzero(true - z > 0.1 * rel_gap * true)
        for scale in (1.0, 1.0 + BRACKET, 1.0 - BRACKET):  # bracketing cuts: fewer iterations
            lp.add_cuts(loose, thr[loose] * scale, rr)
    x[rows] = xs
    return x


class _CutLP:
    """min sum_j z_j  s.t. z_j >= 2 r_j / T0 - r_j T_j / T0^2 for each cut (j, T0), base constraints.
    Variables: X over the job's runnable types, then z."""

    def __init__(self, tput: np.ndarray, workers: np.ndarray, capacity: np.ndarray):
        self.tput = tput
        n, t = tput.shape
        self.n, self.t = n, t
        self.j, self.k = np.nonzero(tput > 0)  # X columns
        nx = len(self.j)
        self.nx = nx
        cols = np.arange(nx)
        base = sparse.coo_matrix(
            (np.r_[np.ones(nx), workers[self.j]], (np.r_[self.j, n + self.k], np.r_[cols, cols])),
            shape=(n + t, nx + n))
        self.base = base.tocsr()
        self.base_b = np.r_[np.ones(n), capacity]
        self.cut_rows: list[sparse.csr_matrix] = []
        self.cut_b: list[np.ndarray] = []

    def add_cuts(self, jobs: np.ndarray, t0: np.ndarray, r: np.ndarray) -> None:
        if not len(jobs):
            return
        t0 = np.maximum(t0, 1e-300)
        slope = r[jobs] / t0 ** 2
        # -slope * sum_k tput[j, k] X[j, k] - z_j <= -2 r_j / T0
        sel = np.isin(self.j, jobs)
        pos = np.full(self.n, -1)
        pos[jobs] = np.arange(len(jobs))
        xc = np.flatnonzero(sel)
        cut_of_x = pos[self.j[xc]]
        data = np.r_[-slope[cut_of_x] * self.tput[self.j[xc], self.k[xc]], -np.ones(len(jobs))]
        row = np.r_[cut_of_x, np.arange(len(jobs))]
        col = np.r_[xc, self.nx + jobs]
        self.cut_rows.append(sparse.csr_matrix((data, (row, col)), shape=(len(jobs), self.nx + self.n)))
        self.cut_b.append(-2.0 * r[jobs] / t0)

    def solve(self) -> tuple[np.ndarray, np.ndarray]:
        a_ub = sparse.vstack([self.base, *self.cut_rows], format="csr")
        b_ub = np.concatenate([self.base_b, *self.cut_b])
        cost = np.r_[np.zeros(self.nx), np.ones(self.n)]
        res = linprog(cost, A_ub=a_ub, b_ub=b_ub, bounds=(0, None), method="highs")
        if res.status != 0:
            raise RuntimeError(f"gavel JCT LP failed: {res.message}")
        x = np.zeros((self.n, self.t))
        x[self.j, self.k] = np.clip(res.x[:self.nx], 0.0, 1.0)
        return x, res.x[self.nx:]
