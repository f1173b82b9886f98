"""Greedy first fit: jobs in a given order, each on the first type of its preference list with
room for its whole gang. The one greedy placement loop of the project: FFT's solver fallback,
the queue-based baselines (through ``fairsim.policies.queues.greedy_fill``) and Themis' leftover
fill all place jobs with it."""

from __future__ import annotations

import numpy as np


def first_fit(
    widths: np.ndarray,
    pref: np.ndarray,
    free: np.ndarray,
    order: np.ndarray,
    assignment: np.ndarray,
    feasible: np.ndarray | None = None,
    backfill: bool = True,
) -> None:
    """Place the rows of ``order`` in turn: row j on the first type k of ``pref[j]`` (type indices,
    -1 padded) with ``free[k] >= widths[j]`` (and ``feasible[j, k]`` when given). ``assignment``
    and ``free`` are updated in place.

    With ``backfill`` a job that fits nowhere is skipped and later jobs may still start; without
    it the first job that does not fit stops the queue (strict FIFO). Stops early once no
    remaining job could fit in the free GPUs, so the loop costs O(started jobs) when the
    cluster is full."""
    if len(order) == 0:
        return
    widths = widths[order]
    suffix_min = np.minimum.accumulate(widths[::-1])[::-1].tolist()  # narrowest job from position i on
    # plain Python ints in the loop (numpy scalar overhead dominates at this size), converted a
    # chunk at a time because the loop usually stops long before the end of a long queue
    free_l = free.tolist()
    chunk = 128
    stopped = False
    for start in range(0, len(order), chunk):
        rows = order[start : start + chunk]
        oks = feasible[rows].tolist() if feasible is not None else [None] * len(rows)
        for i, (d, prefs, ok) in enumerate(zip(widths[start : start + chunk].tolist(), pref[rows].tolist(), oks)):
            max_free = max(free_l)
            if max_free <= 0 or suffix_min[start + i] > max_free:
                stopped = True
                break
            placed = False
            for k in prefs:
                if k < 0:
                    break
                if (ok is None or ok[k]) and free_l[k] >= d:
                    assignment[rows[i]] = k
                    free_l[k] -= d
                    placed = True
                    break
            if not placed and not backfill:
                stopped = True
                break
        if stopped:
            break
    free[:] = free_l
