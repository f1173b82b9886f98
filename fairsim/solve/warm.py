"""The LP relaxation kept alive in HiGHS from one round to the next (``WarmStart``)."""

from __future__ import annotations

import numpy as np

from fairsim.solve.budget import Budget
from fairsim.solve.highs import load_highspy, new_highs, pass_lp
from fairsim.solve.program import AssignmentProblem, Columns, matrix, row_bounds
from fairsim.solve.relaxation import Relaxation, lp_cold, relaxation_in


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

    def relaxation(self, q: AssignmentProblem, cols: Columns, budget: Budget) -> Relaxation | str:
        """The round's relaxation: warm, or cold (``linprog``) if HiGHS reports anything but an optimum."""
        if not self.solve(q, cols, budget):
            cold = lp_cold(q, cols, *matrix(q, cols), budget)
            return cold if isinstance(cold, Relaxation) else f"warm LP: {self._failure}; cold LP: {cold}"
        return relaxation_in(self._h, cols, q.num_jobs, len(q.capacity))

    def solve(self, q: AssignmentProblem, cols: Columns, budget: Budget) -> bool:
        """Re-solve the round's relaxation in HiGHS from last round's basis, within the budget;
        False (and a fresh start next round) if HiGHS reports anything but an optimum (a limit
        that stopped it included). ``model()`` then holds it."""
        ids = q.job_id if q.job_id is not None else np.arange(q.num_jobs)
        n, t = q.num_jobs, len(q.capacity)
        lo, hi = row_bounds(q)
        keys = ids[cols.rows] * t + cols.types
        h = self._highs()
        in_place = (
            self._keys is not None
            and np.array_equal(keys, self._keys)
            and np.array_equal(ids, self._ids)
            and np.array_equal(lo, self._lower)
            and np.array_equal(hi, self._upper)
        )
        self._keys = None  # until this solve is remembered: a failure midway forces a full pass next round
        if in_place:
            h.changeColsCost(len(keys), np.arange(len(keys), dtype=np.int32), cols.cost)
            h.setOptionValue("presolve", "off")
            self.counts["in_place"] += 1
        else:
            pass_lp(h, cols, n, t, lo, hi)
            has_basis = self._sorted_keys is not None and len(self._tail_status) == t + 1
            if has_basis:
                has_basis = h.setBasis(self._carried_basis(keys, ids)) == load_highspy().HighsStatus.kOk
            self.counts["warm" if has_basis else "cold"] += 1
            h.setOptionValue("presolve", "off" if has_basis else "choose")
        if not budget.run(h):
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
        status = {int(s): s for s in load_highspy().HighsBasisStatus.__members__.values()}
        basis = load_highspy().HighsBasis()
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


def _lookup(sorted_keys: np.ndarray, status: np.ndarray, keys: np.ndarray, missing: int) -> np.ndarray:
    """The status of each key last round, ``missing`` for keys that are new."""
    if not len(sorted_keys):
        return np.full(len(keys), missing, dtype=np.int8)
    pos = np.minimum(np.searchsorted(sorted_keys, keys), len(sorted_keys) - 1)
    return np.where(sorted_keys[pos] == keys, status[pos], missing).astype(np.int8)
