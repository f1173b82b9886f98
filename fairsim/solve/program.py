"""The per-round gang assignment program that FFT solves, and the answers' common form.

Over n jobs and T GPU types, binary x[j, k] = "job j runs on type k" (paper eq. 7):

    minimize    sum_jk cost[j, k] * x[j, k]
    subject to  sum_k x[j, k] <= 1                  (one type per job)
                sum_j d_j x[j, k] <= Y_k            (capacity of each type)
                x[j, k] = 0 where infeasible         (no variable is created there)
                sum_jk d_j x[j, k] >= K              (work conservation)

Variables exist only for feasible (job, type) pairs, so the program has at most n*T columns and
n + T + 1 rows (``columns``, ``matrix``). Every solver returns a ``Solution``; its own lower bound,
when it has one, certifies its gap (``bound_gap``, ``is_certified``: the test the solvers stop on).
``prune_dominated`` drops columns no optimum needs; ``solve_greedy`` is the documented fallback.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from fairsim.solve.first_fit import first_fit

if TYPE_CHECKING:
    from scipy import sparse

NOT_RUN = -1


FRACTIONAL_TOL = 1e-6


@dataclass(frozen=True, eq=False)
class AssignmentProblem:
    cost: np.ndarray  # float [n, T]; ignored where not feasible
    feasible: np.ndarray  # bool [n, T]
    workers: np.ndarray  # int [n]
    capacity: np.ndarray  # int [T]
    min_gpus: int = 0  # K
    job_id: np.ndarray | None = None  # int [n] stable ids across rounds (a warm start matches jobs by them)

    @property
    def num_jobs(self) -> int:
        return self.cost.shape[0]

    def objective(self, assignment: np.ndarray) -> float:
        rows = np.flatnonzero(assignment >= 0)
        return float(self.cost[rows, assignment[rows]].sum())

    def gpus_used(self, assignment: np.ndarray) -> int:
        run = assignment >= 0
        return int(self.workers[run].sum())

    def is_valid(self, assignment: np.ndarray) -> bool:
        """Capacity and feasibility hold (work conservation is checked separately)."""
        run = assignment >= 0
        if not self.feasible[np.flatnonzero(run), assignment[run]].all():
            return False
        used = np.bincount(assignment[run], weights=self.workers[run], minlength=len(self.capacity))
        return bool((used <= self.capacity).all())


@dataclass
class Solution:
    assignment: np.ndarray  # int [n], type index or -1
    objective: float
    method: str  # "milp", "lp_repair", "greedy"
    optimal: bool  # proven optimal within the gap
    fallback: bool  # the solver failed and the greedy fallback was used
    time_s: float
    lower_bound: float = float("nan")  # LP bound when known
    info: dict = field(default_factory=dict)


@dataclass(frozen=True, eq=False)
class Columns:
    rows: np.ndarray  # job of each column
    types: np.ndarray  # type of each column
    cost: np.ndarray
    width: np.ndarray  # gang size of each column's job


def columns(p: AssignmentProblem) -> Columns:
    rows, types = np.nonzero(p.feasible)  # row-major: deterministic column order
    return Columns(rows, types, p.cost[rows, types].astype(np.float64), p.workers[rows].astype(np.float64))


ENTRIES_PER_COLUMN = 3


def column_entries(n: int, t: int, cols: Columns) -> tuple[np.ndarray, np.ndarray]:
    """The constraint matrix, column by column: each column's three entries in row order, its
    job's one-type row (1), its type's capacity row (the gang size) and the K row (the gang
    size). Returns the row indices and the coefficients, three per column. The one statement of
    the program's structure: ``matrix`` (scipy), ``pass_lp`` (HiGHS) and ``reduced_costs`` read it."""
    nv = len(cols.rows)
    index = np.empty(ENTRIES_PER_COLUMN * nv, dtype=np.int32)
    value = np.empty(ENTRIES_PER_COLUMN * nv)
    index[0::3], index[1::3], index[2::3] = cols.rows, n + cols.types, n + t
    value[0::3], value[1::3], value[2::3] = 1.0, cols.width, cols.width
    return index, value


def matrix(p: AssignmentProblem, cols: Columns) -> tuple[sparse.csr_matrix, np.ndarray, np.ndarray]:
    """Rows: n one-type rows, T capacity rows, 1 work-conserving row; returns A, lower, upper."""
    from scipy import sparse  # here: scipy's import is a large part of a run's start-up

    n, t, nv = p.num_jobs, len(p.capacity), len(cols.rows)
    index, value = column_entries(n, t, cols)
    start = np.arange(0, ENTRIES_PER_COLUMN * nv + 1, ENTRIES_PER_COLUMN)
    a = sparse.csc_matrix((value, index, start), shape=(n + t + 1, nv)).tocsr()
    return (a, *row_bounds(p))


def reduced_costs(n: int, t: int, cols: Columns, row_duals: np.ndarray) -> np.ndarray:
    """c - A'y over the program's rows (a cut row beyond them is the caller's to add)."""
    index, value = column_entries(n, t, cols)
    return cols.cost - (value * row_duals[index]).reshape(-1, ENTRIES_PER_COLUMN).sum(axis=1)


def row_bounds(p: AssignmentProblem) -> tuple[np.ndarray, np.ndarray]:
    n, t = p.num_jobs, len(p.capacity)
    lower = np.concatenate([np.full(n, -np.inf), np.full(t, -np.inf), [float(p.min_gpus)]])
    upper = np.concatenate([np.ones(n), p.capacity.astype(np.float64), [np.inf]])
    return lower, upper


def to_assignment(p: AssignmentProblem, cols: Columns, x: np.ndarray) -> np.ndarray:
    chosen = x > 0.5
    out = np.full(p.num_jobs, NOT_RUN, dtype=np.int64)
    out[cols.rows[chosen]] = cols.types[chosen]
    return out


def prune_dominated(p: AssignmentProblem) -> AssignmentProblem:
    """Drop columns no optimal solution needs (exact). At most M_w = floor(sum Y / w) jobs of gang
    size w can run at once; if job j of size w runs on type k while M_w or more same-size jobs are
    cheaper on k (ties: lower row), one of those is idle and swapping it in is no worse. So on
    each type only the M_w cheapest jobs of each size keep their column."""
    feasible = p.feasible.copy()
    total = int(p.capacity.sum())
    for w in np.unique(p.workers):
        limit = total // max(int(w), 1)
        same = np.flatnonzero(p.workers == w)
        if len(same) <= limit:
            continue
        for k in range(len(p.capacity)):
            rows = same[feasible[same, k]]
            if len(rows) > limit:
                order = np.lexsort((rows, p.cost[rows, k]))
                feasible[rows[order[limit:]], k] = False
    return AssignmentProblem(p.cost, feasible, p.workers, p.capacity, p.min_gpus, p.job_id)


def bound_gap(sol: Solution) -> float:
    """The answer's relative distance above its own lower bound (0 for an empty round; inf when a
    round has no bound, e.g. the greedy fallback): the optimum lies between the two."""
    if not _has_bound(sol):
        return 0.0 if sol.optimal and not sol.fallback else np.inf
    return max(0.0, sol.objective - sol.lower_bound) / _gap_scale(sol.objective, sol.lower_bound)


def is_certified(sol: Solution, gap: float) -> bool:
    """Whether the answer is proven within ``gap`` of the optimum by its own lower bound, by the
    same test the solvers stop on."""
    if not _has_bound(sol):
        return sol.optimal and not sol.fallback
    return within_gap(sol.objective, sol.lower_bound, gap)


def _has_bound(sol: Solution) -> bool:
    return sol.method != "greedy" and bool(np.isfinite(sol.lower_bound))


def _gap_scale(obj: float, bound: float) -> float:
    return max(abs(obj), abs(bound), 1e-9)


def within_gap(obj: float, bound: float, gap: float) -> bool:
    return obj - bound <= gap * _gap_scale(obj, bound) + 1e-9


def solve_greedy(p: AssignmentProblem) -> Solution:
    """Jobs by ascending cheapest cost, each on its cheapest feasible type with room (ties: lower
    row, lower type). All jobs are tried, so the packing is maximal but may be below K."""
    tick = time.perf_counter()
    n, t = p.cost.shape
    assignment = np.full(n, NOT_RUN, dtype=np.int64)
    if n == 0:
        return Solution(assignment, 0.0, "greedy", False, False, 0.0)
    cost = np.where(p.feasible, p.cost, np.inf)
    pref = np.argsort(cost, axis=1, kind="stable")
    ranked = np.take_along_axis(cost, pref, axis=1)
    order = np.lexsort((np.arange(n), ranked[:, 0]))
    first_fit(p.workers, np.where(np.isfinite(ranked), pref, -1), p.capacity.astype(np.int64).copy(), order, assignment)
    return Solution(assignment, p.objective(assignment), "greedy", False, False, time.perf_counter() - tick)


def greedy_after_failure(p: AssignmentProblem, method: str, reason: str, elapsed: float) -> Solution:
    sol = solve_greedy(p)
    sol.fallback = True
    sol.time_s += elapsed
    sol.info = {"failed": method, "reason": reason}
    return sol
