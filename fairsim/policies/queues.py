"""Queue helpers of the queue-based policies (FIFO, SRTF, Tiresias, AlloX, Themis' leftovers):
a fastest-first type preference per job, a greedy fill of the cluster in queue order, and the
start set of one type's queue."""

from __future__ import annotations

import numpy as np

from fairsim.policies.base import PolicyView
from fairsim.solve.first_fit import first_fit


def greedy_fill(
    view: PolicyView,
    order: np.ndarray,
    type_pref: np.ndarray,
    free: np.ndarray | None = None,
    assignment: np.ndarray | None = None,
    backfill: bool = True,
) -> np.ndarray:
    """Place jobs in ``order`` (rows of the view), each on the first type in its preference row
    ``type_pref[row]`` (type indices, -1 padded) that is feasible and has room for its gang
    (``fairsim.solve.first_fit``; ``free``, when given, is updated in place). With ``backfill``
    a job that fits nowhere is skipped and later jobs may still start; without it the first job
    that does not fit stops the queue (strict FIFO)."""
    assignment = view.empty_assignment() if assignment is None else assignment
    free_arr = view.capacity.astype(np.int64).copy() if free is None else free
    first_fit(view.workers, type_pref, free_arr, order, assignment, feasible=view.feasible, backfill=backfill)
    return assignment


def fastest_first(view: PolicyView) -> np.ndarray:
    """Per job, feasible types sorted by throughput, fastest first; -1 pads infeasible types.
    Ties keep the cluster's type order (stable sort), so the result is deterministic."""
    return fastest_first_of(view.throughput, view.feasible)


def fastest_first_of(throughput: np.ndarray, feasible: np.ndarray) -> np.ndarray:
    """``fastest_first`` of rows of a throughput and a feasibility table."""
    tput = np.where(feasible, throughput, -np.inf)
    pref = np.argsort(-tput, axis=1, kind="stable")
    return np.where(np.take_along_axis(feasible, pref, axis=1), pref, -1)


def fill_queue(widths: np.ndarray, free: int) -> np.ndarray:
    """Which jobs of one queue (already in priority order) start on ``free`` GPUs: the longest
    prefix that fits, then backfill of later jobs that still fit. Costs O(started jobs) numpy
    steps, so a full type is cheap however long its queue."""
    take = np.zeros(len(widths), dtype=bool)
    if len(widths) == 0 or free <= 0:
        return take
    prefix = int(np.searchsorted(np.cumsum(widths), free, side="right"))
    take[:prefix] = True
    free -= int(widths[:prefix].sum())
    pos = prefix
    while free > 0 and pos < len(widths):
        fits = np.flatnonzero(widths[pos:] <= free)
        if len(fits) == 0:
            break
        i = pos + int(fits[0])
        take[i] = True
        free -= int(widths[i])
        pos = i + 1
    return take
