"""The max-min linear program behind Gavel's fairness policies, solved with HiGHS.

    maximize z   s.t.  sum_k a[c, k] y[c, k] >= z        (every class reaches z)
                       sum_k y[c, k] <= 1                  (a job's time fractions)
                       sum_c g[c] y[c, k] <= capacity_k    (GPUs of each type)
                       y >= 0,  y[c, k] = 0 where a[c, k] = 0

Rows are job classes: ``g[c]`` is the GPUs one unit of y costs for the whole class (gang size
times the number of jobs in it). Two solvers return the same optimum value:

- ``solve_max_min``: one cold solve through ``scipy.optimize.linprog`` (HiGHS).
- ``WarmMaxMin``: a persistent HiGHS model over every class registered so far. Between solves
  only the class sizes change (a few coefficients and bounds), so HiGHS restarts the dual simplex
  from the previous basis instead of solving from scratch: about 10x faster on Gavel's replays,
  where the allocation is recomputed thousands of times. It uses HiGHS's own Python API
  (``highspy``); if HiGHS ever reports anything but an optimum it goes on with ``linprog``.
  Where the optimum is not unique the vertex it returns can differ from a cold solve's.
- ``RequirementMaxMin``: the same LP for one set of jobs with throughput targets (``a = tput /
  need``, written as ``need_j * z <= tput_j . y_j`` so only z's coefficients change): gavel_ftf's
  bisection re-solves it from the previous basis, 5-10x faster than cold solves.

Both persistent models use ``highspy._Highs``, the binding class itself: ``highspy.Highs`` adds a
modelling layer and callbacks, and prints HiGHS's banner on stdout when it is made. Every solve
runs within a ``Budget`` (a simplex iteration limit; none without one): an LP it stops is a
failure like any other (the warm models go on cold, a cold solve raises).
"""

from __future__ import annotations

import highspy
import numpy as np

from fairsim.solve.budget import Budget


def solve_max_min(a: np.ndarray, g: np.ndarray, capacity: np.ndarray, budget: Budget | None = None) -> np.ndarray:
    """y [C, T] of the LP above, by one cold linprog solve within the budget."""
    budget = budget or Budget()
    from scipy import (
        sparse,  # here, not at the top: the warm path (the default) never needs scipy.optimize,
    )
    from scipy.optimize import (
        linprog,  # whose import is about 0.3 s of a Gavel replay's whole command
    )

    c, t = a.shape
    nv = c * t + 1  # y row-major, then z
    cls = np.repeat(np.arange(c), t)
    typ = np.tile(np.arange(t), c)
    # each y column has 3 entries (its class's throughput row, row-sum row, its type's capacity row)
    m = 3 * c * t
    indices = np.empty(m + c, dtype=np.int32)
    data = np.empty(m + c)
    indices[0:m:3], indices[1:m:3], indices[2:m:3] = cls, c + cls, 2 * c + typ
    data[0:m:3], data[1:m:3], data[2:m:3] = -a.ravel(), 1.0, g[cls]
    indices[m:], data[m:] = np.arange(c), 1.0  # z: +1 in every throughput row
    indptr = np.r_[np.arange(0, m + 1, 3), m + c].astype(np.int32)
    a_ub = sparse.csc_matrix((data, indices, indptr), shape=(2 * c + t, nv))
    b_ub = np.r_[np.zeros(c), np.ones(c), capacity]
    upper = np.r_[np.where(a.ravel() > 0, np.inf, 0.0), np.inf]
    cost = np.zeros(nv)
    cost[-1] = -1.0
    res = linprog(
        cost,
        A_ub=a_ub,
        b_ub=b_ub,
        bounds=np.column_stack([np.zeros(nv), upper]),
        method="highs",
        options=budget.linprog_options(),
    )
    budget.note_linprog(res)
    if res.status != 0:
        raise RuntimeError(f"max-min LP failed: {res.message}")
    return np.clip(res.x[:-1].reshape(c, t), 0.0, 1.0)


class WarmMaxMin:
    """Persistent max-min LP over job classes registered once (``add_class``) and solved many
    times for different class sizes (``solve(count)``).

    Column 0 is z; class c owns columns 1 + c*T .. 1 + c*T + T-1, its throughput row T + 2c and
    its row-sum row T + 2c + 1; rows 0..T-1 are the capacities. A class with no jobs keeps its
    rows and columns but is switched off (free throughput row, columns fixed at 0)."""

    def __init__(self, capacity: np.ndarray, budget: Budget | None = None):
        self.budget = budget or Budget()
        self.t = len(capacity)
        self.capacity = np.asarray(capacity, dtype=np.float64)
        self.a = np.zeros((0, self.t))  # one row of coefficients per class
        self.gang = np.zeros(0)  # GPUs per job of each class
        self.g = np.zeros(0)  # GPUs per unit of y in the model now (0 = switched off)
        self.h = None
        self._build_empty()

    @property
    def num_classes(self) -> int:
        return len(self.gang)

    def _build_empty(self) -> None:
        h = highspy._Highs()
        h.setOptionValue("output_flag", False)
        h.setOptionValue("threads", 1)
        h.setOptionValue("presolve", "off")  # warm restarts from the previous basis
        inf = highspy.kHighsInf
        h.addCol(-1.0, 0.0, inf, 0, np.empty(0, np.int32), np.empty(0))
        h.addRows(
            self.t,
            np.full(self.t, -inf),
            self.capacity,
            0,
            np.zeros(self.t, np.int32),
            np.empty(0, np.int32),
            np.empty(0),
        )
        self.h = h
        self.inf = inf

    def add_class(self, a_row: np.ndarray, gang: float) -> int:
        c = self.num_classes
        a_row = np.array(a_row, dtype=np.float64)
        self.a = np.vstack([self.a, a_row])
        self.gang = np.r_[self.gang, float(gang)]
        self.g = np.r_[self.g, 0.0]
        if self.h is not None:
            h, t, inf = self.h, self.t, self.inf
            row0 = t + 2 * c
            # throughput row starts switched off (free); z enters it with +1
            h.addRows(
                2,
                np.array([-inf, -inf]),
                np.array([inf, 1.0]),
                1,
                np.array([0, 1], np.int32),
                np.array([0], np.int32),
                np.array([1.0]),
            )
            starts = np.arange(0, 3 * t, 3, dtype=np.int32)
            index = np.empty(3 * t, np.int32)
            value = np.empty(3 * t)
            index[0::3], index[1::3], index[2::3] = row0, row0 + 1, np.arange(t)
            value[0::3], value[1::3], value[2::3] = -a_row, 1.0, 0.0
            h.addCols(t, np.zeros(t), np.zeros(t), np.zeros(t), 3 * t, starts, index, value)
        return c

    def solve(self, count: np.ndarray) -> np.ndarray:
        """y [num_classes, T] for ``count[c]`` jobs in class c (classes with 0 jobs get zeros)."""
        new_g = np.asarray(count, dtype=np.float64) * self.gang
        if self.h is not None and not (new_g > 0).any():
            return np.zeros((self.num_classes, self.t))  # nothing to allocate (the LP would be unbounded)
        if self.h is not None:
            self._update(new_g)
            if self.budget.run(self.h):
                col = np.asarray(self.h.getSolution().col_value)
                return np.clip(col[1:].reshape(-1, self.t), 0.0, 1.0) * (new_g > 0)[:, None]
            self.h = None  # a limit, or never seen: keep going on the cold path rather than stop the run
        y = np.zeros((self.num_classes, self.t))
        on = np.flatnonzero(new_g > 0)
        if len(on):
            y[on] = solve_max_min(self.a[on], new_g[on], self.capacity, self.budget)
        return y

    def _update(self, new_g: np.ndarray) -> None:
        # One binding call per entry: each changeCoeff makes HiGHS drop its factorization, so the
        # run after it costs the same whatever the batching (batched bounds measured no faster).
        h, t, inf = self.h, self.t, self.inf
        for c in np.flatnonzero(new_g != self.g).tolist():
            on = new_g[c] > 0
            was_on = self.g[c] > 0
            a_row = self.a[c]
            for k in range(t):
                col = 1 + c * t + k
                h.changeCoeff(k, col, float(new_g[c]))
                if on != was_on:
                    h.changeColBounds(col, 0.0, inf if (on and a_row[k] > 0) else 0.0)
            if on != was_on:
                h.changeRowBounds(t + 2 * c, -inf, 0.0 if on else inf)
        self.g = new_g


class RequirementMaxMin:
    """max z  s.t.  sum_k tput[j, k] y[j, k] >= z * need_j  for every job, base constraints.

    For one fixed set of jobs solved for many ``need`` vectors (the bisection of gavel_ftf):
    only the coefficients of z change between solves, so one HiGHS model is kept and each
    solve restarts from the previous basis (cold ``linprog`` solves if HiGHS ever fails)."""

    def __init__(self, tput: np.ndarray, g: np.ndarray, capacity: np.ndarray, budget: Budget | None = None):
        self.budget = budget or Budget()
        self.tput, self.g = tput, np.asarray(g, dtype=np.float64)
        self.capacity = np.asarray(capacity, dtype=np.float64)
        self.h = self._build()

    def _build(self):
        n, t = self.tput.shape
        nz = 3 * n * t + n
        # column 0 is z (an entry per throughput row), then y row-major with 3 entries each
        index = np.empty(nz, dtype=np.int32)
        value = np.empty(nz)
        index[:n], value[:n] = np.arange(n), 1.0
        job = np.repeat(np.arange(n), t)
        typ = np.tile(np.arange(t), n)
        index[n::3], index[n + 1 :: 3], index[n + 2 :: 3] = job, n + job, 2 * n + typ
        value[n::3], value[n + 1 :: 3], value[n + 2 :: 3] = -self.tput.ravel(), 1.0, self.g[job]
        start = np.r_[0, n + 3 * np.arange(n * t + 1)].astype(np.int32)
        lp = highspy.HighsLp()
        lp.num_col_, lp.num_row_ = n * t + 1, 2 * n + t
        inf = highspy.kHighsInf
        lp.col_cost_ = np.r_[-1.0, np.zeros(n * t)]
        lp.col_lower_ = np.zeros(n * t + 1)
        lp.col_upper_ = np.r_[inf, np.where(self.tput.ravel() > 0, inf, 0.0)]
        lp.row_lower_ = np.full(2 * n + t, -inf)
        lp.row_upper_ = np.r_[np.zeros(n), np.ones(n), self.capacity]
        lp.a_matrix_.format_ = highspy.MatrixFormat.kColwise
        lp.a_matrix_.start_, lp.a_matrix_.index_, lp.a_matrix_.value_ = start, index, value
        lp.a_matrix_.num_col_, lp.a_matrix_.num_row_ = n * t + 1, 2 * n + t
        h = highspy._Highs()
        h.setOptionValue("output_flag", False)
        h.setOptionValue("threads", 1)
        h.passModel(lp)
        return h

    def solve(self, need: np.ndarray) -> np.ndarray:
        n, t = self.tput.shape
        if self.h is not None:
            for j, v in enumerate(need.tolist()):
                self.h.changeCoeff(j, 0, v)
            if self.budget.run(self.h):
                col = np.asarray(self.h.getSolution().col_value)
                return np.clip(col[1:].reshape(n, t), 0.0, 1.0)
            self.h = None  # a limit, or never seen: continue on the cold path
        return solve_max_min(self.tput / need[:, None], self.g, self.capacity, self.budget)
