"""HiGHS through ``highspy``, its own Python API: a quiet model, the program passed column-wise,
optimality and the limits a run stopped at, and a time limit per decision (for the opt-in wall
clock of ``budget``). ``highspy`` is imported on first use."""

from __future__ import annotations

import numpy as np

from fairsim.solve.program import ENTRIES_PER_COLUMN, Columns, column_entries


def load_highspy():
    """highspy, imported on first use: the cold path (the default) never needs it."""
    import highspy

    return highspy


def new_highs():
    """A quiet, single-threaded HiGHS for the relaxation: dual simplex, as the cold path
    (linprog highs-ds). The bare binding: ``highspy.Highs`` prints a banner on stdout when made."""
    h = load_highspy()._Highs()
    for key, value in (("output_flag", False), ("threads", 1), ("solver", "simplex"), ("simplex_strategy", 1)):
        h.setOptionValue(key, value)
    return h


def is_optimal(h) -> bool:
    """Whether HiGHS' last ``run`` ended at an optimum."""
    return h.getModelStatus() == load_highspy().HighsModelStatus.kOptimal


def stopped_at_limit(h) -> bool:
    """Whether HiGHS' last ``run`` stopped at an iteration or time limit (not at an answer)."""
    status = load_highspy().HighsModelStatus
    return h.getModelStatus() in (status.kIterationLimit, status.kTimeLimit)


def set_round_time_limit(h, time_limit_s: float) -> None:
    """Give this decision ``time_limit_s`` seconds from now. HiGHS checks ``time_limit`` against the
    time the object has spent in ``run`` over its whole life, so a model kept across rounds would
    otherwise reach a fixed limit after enough rounds, and from then on stop at a moment that
    depends on the machine's speed (a run would no longer give the same numbers twice)."""
    h.setOptionValue("time_limit", float(h.getRunTime()) + float(time_limit_s))


def pass_lp(h, cols: Columns, n: int, t: int, lo: np.ndarray, hi: np.ndarray) -> None:
    """Pass the relaxation to HiGHS column-wise straight from ``column_entries`` (the same
    matrix as ``matrix``, without a sparse conversion). The array form of ``passModel``:
    filling a ``HighsLp`` attribute by attribute costs ten times as much."""
    highspy = load_highspy()
    nv = len(cols.rows)
    index, value = column_entries(n, t, cols)
    inf = highspy.kHighsInf
    h.passModel(
        nv,
        n + t + 1,
        len(index),
        int(highspy.MatrixFormat.kColwise),
        int(highspy.ObjSense.kMinimize),
        0.0,
        np.ascontiguousarray(cols.cost),
        np.zeros(nv),
        np.ones(nv),
        np.where(np.isfinite(lo), lo, -inf),
        np.where(np.isfinite(hi), hi, inf),
        np.arange(0, len(index) + 1, ENTRIES_PER_COLUMN, dtype=np.int32),
        index,
        value,
        np.zeros(nv, dtype=np.int32),
    )  # all continuous
