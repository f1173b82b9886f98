"""The per-round assignment program of FFT and the ways to solve it.

The program (paper eq. 7): over n jobs and T GPU types, binary x[j, k] = "job j runs on type k",

    minimize    sum_jk cost[j, k] * x[j, k]
    subject to  sum_k x[j, k] <= 1                  (one type per job)
                sum_j d_j x[j, k] <= Y_k            (capacity of each type)
                x[j, k] = 0 where infeasible         (no variable is created there)
                sum_jk d_j x[j, k] >= K              (work conservation)

Variables exist only for feasible (job, type) pairs, so the program has at most n*T columns and
n + T + 1 rows. Three ways to solve it, all returning a ``Solution``:

- ``solve_milp``: the exact program with scipy.optimize.milp (HiGHS branch and bound), a time
  limit and a relative MIP gap. A feasible incumbent found before the limit is used.
- ``solve_lp_repair``: the LP relaxation (HiGHS dual simplex, a vertex solution, after an exact
  pruning of dominated columns), whose integral rows are kept except for a small *core*: the
  fractional jobs (a vertex has at most about one per coupling row: T capacity rows and the K
  row) and the jobs with the smallest LP reduced costs. The core is re-solved exactly as a small
  MILP over the residual capacity. If that cannot reach K, the full MILP is tried. The LP optimum
  is a lower bound, so every answer carries its own certified gap. With a ``WarmStart`` (kept by
  the caller across rounds) the LP is re-solved in HiGHS (``highspy``) from last round's basis.
- ``solve_greedy``: the documented fallback. Jobs in ascending order of their cheapest cost,
  each on its cheapest feasible type with room; every job is tried, so the packing is maximal
  (nothing that still fits is left out) though it may fall short of K.

``max_packing`` computes K: the most GPUs the present jobs can keep busy (exact, by a small ILP
over groups of interchangeable jobs).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np
from scipy import sparse
from scipy.optimize import Bounds, LinearConstraint, linprog, milp

NOT_RUN = -1
_FRACTIONAL_TOL = 1e-6


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


# ---- the program as sparse matrices -----------------------------------------------------------

@dataclass(frozen=True, eq=False)
class _Columns:
    rows: np.ndarray  # job of each column
    types: np.ndarray  # type of each column
    cost: np.ndarray
    width: np.ndarray  # gang size of each column's job


def _columns(p: AssignmentProblem) -> _Columns:
    rows, types = np.nonzero(p.feasible)  # row-major: deterministic column order
    return _Columns(rows, types, p.cost[rows, types].astype(np.float64), p.workers[rows].astype(np.float64))


def _matrix(p: AssignmentProblem, cols: _Columns) -> tuple[sparse.csr_matrix, np.ndarray, np.ndarray]:
    """Rows: n one-type rows, T capacity rows, 1 work-conserving row; returns A, lower, upper."""
    n, t, nv = p.num_jobs, len(p.capacity), len(cols.rows)
    ones = np.ones(nv)
    idx = np.arange(nv)
    r = np.concatenate([cols.rows, n + cols.types, np.full(nv, n + t)])
    c = np.concatenate([idx, idx, idx])
    v = np.concatenate([ones, cols.width, cols.width])
    a = sparse.csr_matrix((v, (r, c)), shape=(n + t + 1, nv))
    return (a, *_row_bounds(p))


def _row_bounds(p: AssignmentProblem) -> tuple[np.ndarray, np.ndarray]:
    n, t = p.num_jobs, len(p.capacity)
    lower = np.concatenate([np.full(n, -np.inf), np.full(t, -np.inf), [float(p.min_gpus)]])
    upper = np.concatenate([np.ones(n), p.capacity.astype(np.float64), [np.inf]])
    return lower, upper


def _to_assignment(p: AssignmentProblem, cols: _Columns, x: np.ndarray) -> np.ndarray:
    chosen = x > 0.5
    out = np.full(p.num_jobs, NOT_RUN, dtype=np.int64)
    out[cols.rows[chosen]] = cols.types[chosen]
    return out


# ---- exact MILP -------------------------------------------------------------------------------

def solve_milp(p: AssignmentProblem, time_limit_s: float = 10.0, mip_gap: float = 1e-4) -> Solution:
    tick = time.perf_counter()
    if p.num_jobs == 0 or not p.feasible.any():
        return Solution(np.full(p.num_jobs, NOT_RUN, dtype=np.int64), 0.0, "milp", True, False, 0.0)
    cols = _columns(p)
    a, lo, hi = _matrix(p, cols)
    res = milp(cols.cost, integrality=np.ones(len(cols.cost)), bounds=Bounds(0, 1),
               constraints=LinearConstraint(a, lo, hi),
               options={"time_limit": float(time_limit_s), "mip_rel_gap": float(mip_gap), "disp": False})
    elapsed = time.perf_counter() - tick
    if res.x is None:
        return _greedy_after_failure(p, "milp", f"status {res.status}: {res.message}", elapsed)
    assignment = _to_assignment(p, cols, res.x)
    if not p.is_valid(assignment):  # paranoia: never hand the engine an invalid answer
        return _greedy_after_failure(p, "milp", "solver answer broke a constraint", elapsed)
    bound = float(getattr(res, "mip_dual_bound", np.nan) or np.nan)
    return Solution(assignment, p.objective(assignment), "milp", res.status == 0, False, elapsed, bound,
                    {"status": int(res.status), "time_limit_hit": res.status == 1})


# ---- LP relaxation + repair ---------------------------------------------------------------------

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


def solve_lp_repair(p: AssignmentProblem, time_limit_s: float = 10.0, mip_gap: float = 1e-4,
                    core: int = 256, keep_types: int = 2, warm: "WarmStart | None" = None) -> Solution:
    """LP relaxation (HiGHS dual simplex: a vertex, so only a few jobs are fractional); keep its
    integral rows except a *core* of the jobs nearest to changing (the fractional ones and the
    ``core`` jobs with the smallest LP reduced costs), and re-solve the core exactly as a small
    MILP over the residual capacity, each core job limited to its ``keep_types`` types of smallest
    reduced cost (plus those the LP used). The LP optimum bounds the gap of the answer.

    With ``warm`` (a ``WarmStart`` kept by the caller from round to round) the relaxation is
    re-solved from the previous round's basis instead of from scratch; the rest is the same."""
    tick = time.perf_counter()
    if p.num_jobs == 0 or not p.feasible.any():
        return Solution(np.full(p.num_jobs, NOT_RUN, dtype=np.int64), 0.0, "lp_repair", True, False, 0.0)
    q = prune_dominated(p)
    return _lp_repair_pruned(p, q, _columns(q), tick, time_limit_s, mip_gap, core, keep_types, warm)


def _lp_repair_pruned(p: AssignmentProblem, q: AssignmentProblem, cols: _Columns, tick: float, time_limit_s: float,
                      mip_gap: float, core: int, keep_types: int, warm: "WarmStart | None") -> Solution:
    """``solve_lp_repair`` once ``q`` (``p`` pruned) and its columns are built."""
    lp_tick = time.perf_counter()
    if warm is None:
        relaxation = _lp_cold(q, cols, *_matrix(q, cols), time_limit_s)
    else:  # builds its own matrix (column-wise, for HiGHS) and only the cold fallback needs this one
        relaxation = warm.relaxation(q, cols, time_limit_s)
    lp_s = time.perf_counter() - lp_tick
    sol = _repair(p, q, cols, relaxation, tick, time_limit_s, mip_gap, core, keep_types, "lp_repair")
    sol.info["lp_s"] = lp_s  # the relaxation's share of time_s (what the warm start saves)
    return sol


@dataclass(frozen=True, eq=False)
class _Relaxation:
    """An optimal vertex of the LP relaxation: x, reduced costs, the duals of the one-type rows, the value."""
    x: np.ndarray
    reduced: np.ndarray
    row_duals: np.ndarray
    value: float


def _lp_cold(q: AssignmentProblem, cols: _Columns, a, lo, hi, time_limit_s: float) -> _Relaxation | str:
    """The relaxation from scratch (scipy linprog, HiGHS dual simplex after presolve); a message on failure."""
    n, t = q.num_jobs, len(q.capacity)
    # linprog wants A_ub x <= b_ub: the K row is negated
    a_ub = sparse.vstack([a[: n + t], -a[n + t:]], format="csr")
    b_ub = np.concatenate([hi[: n + t], [-lo[n + t]]])
    lp = linprog(cols.cost, A_ub=a_ub, b_ub=b_ub, bounds=(0, 1), method="highs-ds",
                 options={"time_limit": float(time_limit_s), "presolve": True})
    if lp.status != 0 or lp.x is None:
        return f"LP status {lp.status}: {lp.message}"
    marginals = lp.ineqlin.marginals
    return _Relaxation(lp.x, cols.cost - a_ub.T @ marginals, marginals[:n], float(lp.fun))


def _repair(p: AssignmentProblem, q: AssignmentProblem, cols: _Columns, lp: _Relaxation | str, tick: float,
            time_limit_s: float, mip_gap: float, core: int, keep_types: int, method: str) -> Solution:
    """Round the LP vertex and re-solve its core exactly (see ``solve_lp_repair``)."""
    if isinstance(lp, str):
        return _escalate(p, tick, time_limit_s, mip_gap, lp, np.nan, 0)
    n = q.num_jobs
    x = lp.x
    frac_col = (x > _FRACTIONAL_TOL) & (x < 1 - _FRACTIONAL_TOL)
    fractional = np.unique(cols.rows[frac_col])
    assignment = _to_assignment(q, cols, x)
    assignment[fractional] = NOT_RUN
    info = {"fractional_jobs": int(len(fractional))}
    if len(fractional) == 0 and q.gpus_used(assignment) >= q.min_gpus:
        return Solution(assignment, p.objective(assignment), method, True, False,
                        time.perf_counter() - tick, lp.value, info)
    rows = _core_jobs(q, cols, x, lp.reduced, lp.row_duals, fractional, core)
    if len(rows) == n:  # the core is everything: this is the exact MILP
        allowed = q.feasible
    else:
        allowed = _core_columns(q, cols, x, lp.reduced, rows, keep_types)
    remaining = max(0.1, time_limit_s - (time.perf_counter() - tick))
    repaired = _solve_sub(q, assignment, rows, allowed, remaining, mip_gap)
    if repaired is None:  # too narrow: all types for the core jobs
        repaired = _solve_sub(q, assignment, rows, q.feasible[rows], remaining, mip_gap)
    if repaired is None:
        return _escalate(p, tick, time_limit_s, mip_gap, "repair could not reach K", lp.value, len(fractional))
    obj = p.objective(repaired)
    info["core_jobs"] = int(len(rows))
    return Solution(repaired, obj, method, _within_gap(obj, lp.value, mip_gap), False,
                    time.perf_counter() - tick, lp.value, info)


class WarmStart:
    """The LP relaxation kept alive in HiGHS (``highspy``) from one round to the next.

    Consecutive rounds differ in a few arriving and finishing jobs and in slowly moving costs,
    so the last round's optimal basis is nearly optimal for this one. Columns are matched by
    (job id, type) and the one-type rows by job id: when the set of columns and rows is the
    same as last round, only the costs are changed in place (HiGHS keeps its factorization);
    otherwise the new program is passed and the last basis is carried over to it (a column or
    row that is new starts nonbasic at 0, resp. basic; HiGHS completes the basis where removed
    jobs left it short). The dual simplex then restarts from there. If HiGHS does not report
    an optimum, the round falls back to the cold relaxation and the state is dropped.

    One object per run: its state is that run's last round, so the answers are a function of
    the run's rounds so far (deterministic for a config and seed)."""

    def __init__(self):
        self._h = None
        self._ids = self._keys = self._lower = self._upper = None  # the model in HiGHS, in its order
        self._sorted_keys = self._key_status = None  # last basis, columns, sorted by key
        self._sorted_ids = self._id_status = None  # last basis, one-type rows, sorted by job id
        self._tail_status = None  # last basis, capacity rows and the K row
        self.counts = {"warm": 0, "in_place": 0, "cold": 0, "fell_back": 0}
        self._failure = ""

    def relaxation(self, q: AssignmentProblem, cols: _Columns, time_limit_s: float) -> _Relaxation | str:
        """The round's relaxation: warm, or cold (``linprog``) if HiGHS reports anything but an optimum."""
        if not self.solve(q, cols, time_limit_s):
            cold = _lp_cold(q, cols, *_matrix(q, cols), time_limit_s)
            return cold if isinstance(cold, _Relaxation) else f"warm LP: {self._failure}; cold LP: {cold}"
        return _relaxation_in(self._h, cols, q.num_jobs, len(q.capacity))

    def solve(self, q: AssignmentProblem, cols: _Columns, time_limit_s: float) -> bool:
        """Re-solve the round's relaxation in HiGHS from last round's basis; False (and a fresh
        start next round) if HiGHS reports anything but an optimum. ``model()`` then holds it."""
        ids = q.job_id if q.job_id is not None else np.arange(q.num_jobs)
        n, t = q.num_jobs, len(q.capacity)
        lo, hi = _row_bounds(q)
        keys = ids[cols.rows] * t + cols.types
        h = self._highs()
        in_place = (self._keys is not None and np.array_equal(keys, self._keys) and np.array_equal(ids, self._ids)
                    and np.array_equal(lo, self._lower) and np.array_equal(hi, self._upper))
        self._keys = None  # until this solve is remembered: a failure midway forces a full pass next round
        if in_place:
            h.changeColsCost(len(keys), np.arange(len(keys), dtype=np.int32), cols.cost)
            h.setOptionValue("presolve", "off")
            self.counts["in_place"] += 1
        else:
            _pass_lp(h, cols, n, t, lo, hi)
            has_basis = self._sorted_keys is not None and len(self._tail_status) == t + 1
            if has_basis:
                has_basis = h.setBasis(self._carried_basis(keys, ids)) == _hs().HighsStatus.kOk
            self.counts["warm" if has_basis else "cold"] += 1
            h.setOptionValue("presolve", "off" if has_basis else "choose")
        set_round_time_limit(h, time_limit_s)
        h.run()
        if not is_optimal(h):
            failure, counts = h.modelStatusToString(h.getModelStatus()), self.counts
            self.__init__()  # a fresh start next round
            self.counts, self._failure = counts, failure
            self.counts["fell_back"] += 1
            return False
        self._remember(h, ids, keys, lo, hi, np.asarray(h.getSolution().col_value), n, t)
        h.setOptionValue("presolve", "off")  # what is solved next in this model restarts from its basis
        return True

    def model(self):
        """The HiGHS object holding the last relaxation ``solve`` returned True for."""
        return self._h

    def _highs(self):
        if self._h is None:
            self._h = new_highs()
        return self._h

    def _carried_basis(self, keys: np.ndarray, ids: np.ndarray):
        col = _lookup(self._sorted_keys, self._key_status, keys, _LOWER)
        row = _lookup(self._sorted_ids, self._id_status, ids, _BASIC)
        status = {int(s): s for s in _hs().HighsBasisStatus.__members__.values()}
        basis = _hs().HighsBasis()
        basis.col_status = [status[c] for c in col.tolist()]
        basis.row_status = [status[r] for r in np.concatenate([row, self._tail_status]).tolist()]
        basis.valid = True
        basis.alien = True  # removed jobs may leave it short of basic variables: HiGHS completes it
        return basis

    def _remember(self, h, ids, keys, lo, hi, x, n, t) -> None:
        """The optimal basis, read cheaply: the basic variables' indices, and every other column
        at the bound its value sits on (a job row can only be at its upper bound, the K row at its lower)."""
        basic = np.asarray(h.getBasicVariables()[1], dtype=np.int64)
        col = np.where(x > 0.5, _UPPER, _LOWER).astype(np.int8)
        col[basic[basic >= 0]] = _BASIC
        row = np.full(n + t + 1, _UPPER, dtype=np.int8)
        row[n + t] = _LOWER
        row[-1 - basic[basic < 0]] = _BASIC
        order = np.argsort(keys, kind="stable")
        self._sorted_keys, self._key_status = keys[order], col[order]
        order = np.argsort(ids, kind="stable")
        self._sorted_ids, self._id_status = ids[order], row[:n][order]
        self._tail_status = row[n:]
        self._ids, self._keys, self._lower, self._upper = ids.copy(), keys, lo.copy(), hi.copy()


_LOWER, _BASIC, _UPPER = 0, 1, 2  # HiGHS's HighsBasisStatus kLower, kBasic, kUpper (checked in the tests)


def _hs():
    """highspy, imported on first use: the cold path (the default) never needs it."""
    import highspy

    return highspy


def new_highs():
    """A quiet, single-threaded HiGHS for the relaxation: dual simplex, as the cold path
    (linprog highs-ds). The bare binding: ``highspy.Highs`` prints a banner on stdout when made."""
    h = _hs()._Highs()
    for key, value in (("output_flag", False), ("threads", 1), ("solver", "simplex"), ("simplex_strategy", 1)):
        h.setOptionValue(key, value)
    return h


def is_optimal(h) -> bool:
    """Whether HiGHS' last ``run`` ended at an optimum."""
    return h.getModelStatus() == _hs().HighsModelStatus.kOptimal


def set_round_time_limit(h, time_limit_s: float) -> None:
    """Give this round ``time_limit_s`` seconds from now. HiGHS checks ``time_limit`` against the
    time the object has spent in ``run`` over its whole life, so a model kept across rounds would
    otherwise reach a fixed limit after enough rounds, and from then on stop at a moment that
    depends on the machine's speed (a run would no longer give the same numbers twice)."""
    h.setOptionValue("time_limit", float(h.getRunTime()) + float(time_limit_s))


def _lookup(sorted_keys: np.ndarray, status: np.ndarray, keys: np.ndarray, missing: int) -> np.ndarray:
    """The status of each key last round, ``missing`` for keys that are new."""
    if not len(sorted_keys):
        return np.full(len(keys), missing, dtype=np.int8)
    pos = np.minimum(np.searchsorted(sorted_keys, keys), len(sorted_keys) - 1)
    return np.where(sorted_keys[pos] == keys, status[pos], missing).astype(np.int8)


def _relaxation_in(h, cols: _Columns, n: int, t: int) -> _Relaxation:
    """The optimal vertex HiGHS holds, with reduced costs c - A'y (A's three entries per column
    as in ``_pass_lp``)."""
    solution = h.getSolution()
    x = np.asarray(solution.col_value)
    y = np.asarray(solution.row_dual)
    reduced = cols.cost - (y[cols.rows] + cols.width * y[n + cols.types] + cols.width * y[n + t])
    return _Relaxation(x, reduced, y[:n], float(h.getInfo().objective_function_value))


def _pass_lp(h, cols: _Columns, n: int, t: int, lo: np.ndarray, hi: np.ndarray) -> None:
    """Pass the relaxation to HiGHS column-wise straight from the columns: each has three
    entries, in row order its job's one-type row, its type's capacity row and the K row (the
    same matrix as ``_matrix``, without a sparse conversion). The array form of ``passModel``:
    filling a ``HighsLp`` attribute by attribute costs ten times as much."""
    highspy = _hs()
    nv = len(cols.rows)
    index = np.empty(3 * nv, dtype=np.int32)
    value = np.empty(3 * nv)
    index[0::3], index[1::3], index[2::3] = cols.rows, n + cols.types, n + t
    value[0::3], value[1::3], value[2::3] = 1.0, cols.width, cols.width
    inf = highspy.kHighsInf
    h.passModel(nv, n + t + 1, 3 * nv, int(highspy.MatrixFormat.kColwise), int(highspy.ObjSense.kMinimize), 0.0,
                np.ascontiguousarray(cols.cost), np.zeros(nv), np.ones(nv), np.where(np.isfinite(lo), lo, -inf),
                np.where(np.isfinite(hi), hi, inf), np.arange(0, 3 * nv + 1, 3, dtype=np.int32), index, value,
                np.zeros(nv, dtype=np.int32))  # all continuous


def _core_jobs(p: AssignmentProblem, cols: _Columns, x: np.ndarray, reduced: np.ndarray, row_duals: np.ndarray,
               fractional: np.ndarray, core: int) -> np.ndarray:
    """Fractional jobs plus the ``core`` jobs closest to changing in the LP: for a job the LP
    leaves out, its smallest |reduced cost|; for a job it runs, also the cost of dropping it
    (its one-type row dual)."""
    n = p.num_jobs
    margin = np.full(n, np.inf)
    off = x < 0.5
    np.minimum.at(margin, cols.rows[off], np.abs(reduced[off]))
    on_rows = cols.rows[~off]
    margin[on_rows] = np.minimum(margin[on_rows], np.abs(row_duals[on_rows]))
    order = np.lexsort((np.arange(n), margin))
    return np.union1d(fractional, order[:core]).astype(np.int64)


def _core_columns(p: AssignmentProblem, cols: _Columns, x: np.ndarray, reduced: np.ndarray, rows: np.ndarray,
                  keep_types: int) -> np.ndarray:
    """bool [len(rows), T]: each core job's ``keep_types`` types of smallest reduced cost, plus any the LP used."""
    t = len(p.capacity)
    rc = np.full((p.num_jobs, t), np.inf)
    rc[cols.rows, cols.types] = reduced
    used = np.zeros((p.num_jobs, t), dtype=bool)
    used[cols.rows, cols.types] = x > _FRACTIONAL_TOL
    sub_rc = rc[rows]
    rank = np.argsort(np.argsort(sub_rc, axis=1, kind="stable"), axis=1, kind="stable")
    return ((rank < keep_types) & np.isfinite(sub_rc)) | used[rows]


def _solve_sub(p: AssignmentProblem, fixed: np.ndarray, rows: np.ndarray, allowed: np.ndarray,
               time_limit_s: float, mip_gap: float) -> np.ndarray | None:
    """Exactly re-assign ``rows`` (on their ``allowed`` types) with the other jobs as in ``fixed``;
    None if K is out of reach that way."""
    base = fixed.copy()
    base[rows] = NOT_RUN
    run = base >= 0
    used = np.bincount(base[run], weights=p.workers[run], minlength=len(p.capacity)).astype(np.int64)
    free = p.capacity - used
    sub = AssignmentProblem(p.cost[rows], allowed & p.feasible[rows] & (p.workers[rows, None] <= free[None, :]),
                            p.workers[rows], free, max(0, int(p.min_gpus - used.sum())))
    sol = solve_milp(sub, time_limit_s, mip_gap)
    if sol.fallback or sub.gpus_used(sol.assignment) < sub.min_gpus:
        return None
    base[rows] = sol.assignment
    return base


def _escalate(p, tick, time_limit_s, mip_gap, reason, bound, n_frac) -> Solution:
    remaining = max(0.1, time_limit_s - (time.perf_counter() - tick))
    sol = solve_milp(p, remaining, mip_gap)
    sol.time_s = time.perf_counter() - tick
    sol.info.update({"escalated": reason, "fractional_jobs": n_frac})
    if np.isfinite(bound):
        sol.lower_bound = bound
    return sol


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
    return _within_gap(sol.objective, sol.lower_bound, gap)


def _has_bound(sol: Solution) -> bool:
    return sol.method != "greedy" and bool(np.isfinite(sol.lower_bound))


def _gap_scale(obj: float, bound: float) -> float:
    return max(abs(obj), abs(bound), 1e-9)


def _within_gap(obj: float, bound: float, gap: float) -> bool:
    return obj - bound <= gap * _gap_scale(obj, bound) + 1e-9


# ---- greedy fallback ------------------------------------------------------------------------------

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
    best = np.take_along_axis(cost, pref[:, :1], axis=1)[:, 0]
    order = np.lexsort((np.arange(n), best))
    free = p.capacity.astype(np.int64).copy()
    narrowest = int(p.workers.min())
    for j in order:
        if not np.isfinite(best[j]) or free.max() < narrowest:
            continue
        d = p.workers[j]
        for k in pref[j]:
            if not np.isfinite(cost[j, k]):
                break
            if free[k] >= d:
                assignment[j] = k
                free[k] -= d
                break
    return Solution(assignment, p.objective(assignment), "greedy", False, False, time.perf_counter() - tick)


def _greedy_after_failure(p: AssignmentProblem, method: str, reason: str, elapsed: float) -> Solution:
    sol = solve_greedy(p)
    sol.fallback = True
    sol.time_s += elapsed
    sol.info = {"failed": method, "reason": reason}
    return sol


# ---- K(t): the most GPUs the present jobs can keep busy ----------------------------------------

def max_packing(workers: np.ndarray, feasible: np.ndarray, capacity: np.ndarray, time_limit_s: float = 10.0) -> int:
    """Exact max of sum d_j x_jk over one-type-per-job, capacity and feasibility.

    Jobs with the same gang size and the same feasible types are interchangeable, so the ILP is
    written over groups: n[g, k] = how many jobs of group g run on type k (a few dozen integer
    variables at most). A greedy packing (widest groups first, each onto the types with the most
    room) is tried first; when it reaches the trivial upper bound min(sum d, sum Y) the ILP is
    skipped. If the ILP fails, the greedy value is returned (feasible, maybe below the max).
    """
    workers = np.asarray(workers, dtype=np.int64)
    capacity = np.asarray(capacity, dtype=np.int64)
    feasible = np.asarray(feasible, dtype=bool)
    ok = feasible.any(axis=1)
    if not ok.any():
        return 0
    workers, feasible = workers[ok], feasible[ok]
    t = feasible.shape[1]
    bits = (feasible.astype(np.int64) << np.arange(t, dtype=np.int64)[None, :]).sum(axis=1)
    width, group_bits, counts = _groups(workers, bits)
    mask = ((group_bits[:, None] >> np.arange(t)[None, :]) & 1).astype(bool)
    upper = int(min((width * counts).sum(), capacity.sum()))
    greedy = _greedy_packing(width, mask, counts, capacity)
    if greedy >= upper:
        return upper
    try:
        exact = _packing_ilp(width, mask, counts, capacity, time_limit_s)
    except Exception:  # noqa: BLE001 - a solver crash: keep the greedy packing, as when the ILP fails
        exact = 0
    return max(greedy, exact)


def _groups(workers: np.ndarray, bits: np.ndarray):
    """The distinct (gang size, feasible-type bits) pairs in lexicographic order, with their
    counts: ``np.unique(..., axis=0)`` by one lexsort (the row-wise unique costs about 5 ms at
    4,000 jobs, every time the set of jobs changes)."""
    order = np.lexsort((bits, workers))
    w, b = workers[order], bits[order]
    start = np.flatnonzero(np.concatenate([[True], (w[1:] != w[:-1]) | (b[1:] != b[:-1])]))
    return w[start], b[start], np.diff(np.append(start, len(order)))


def _greedy_packing(width, mask, counts, capacity) -> int:
    """Widest group first, each onto the types with the most room (ties: the lower type). On
    Python lists: a few dozen groups and types, where numpy's per-call cost would dominate."""
    width, counts, mask = width.tolist(), counts.tolist(), mask.tolist()
    free = [int(c) for c in capacity]
    total = 0
    for g in sorted(range(len(width)), key=lambda g: -width[g]):  # sorted is stable
        left, d = counts[g], width[g]
        for k in sorted(range(len(free)), key=lambda k: -free[k]):
            if left == 0:
                break
            if mask[g][k] and free[k] >= d:
                take = min(left, free[k] // d)
                free[k] -= take * d
                left -= take
                total += take * d
    return total


def _packing_ilp(width, mask, counts, capacity, time_limit_s) -> int:
    g_idx, k_idx = np.nonzero(mask)
    nv = len(g_idx)
    g, t = mask.shape
    idx = np.arange(nv)
    a = sparse.csr_matrix((np.concatenate([np.ones(nv), width[g_idx].astype(float)]),
                           (np.concatenate([g_idx, g + k_idx]), np.concatenate([idx, idx]))), shape=(g + t, nv))
    res = milp(-width[g_idx].astype(float), integrality=np.ones(nv), bounds=Bounds(0, counts[g_idx].astype(float)),
               constraints=LinearConstraint(a, -np.inf, np.concatenate([counts, capacity]).astype(float)),
               options={"time_limit": float(time_limit_s), "disp": False})
    if res.x is None:
        return 0
    return int(round(float(width[g_idx] @ np.round(res.x))))
