"""The running jobs' per-step state, one dense row per running job.

Every step advances every running job, and nothing else: a waiting job neither progresses nor
pays. So what a step updates (progress, run time, GPU-seconds, overhead still owed) lives in
short arrays over the running jobs only, updated in place with a few numpy calls per step, and
not in the engine's per-job arrays over the whole trace, which a step would have to gather from
and scatter back to. A row is loaded from the per-job arrays when its job starts (or moves) and
written back when it stops or finishes, or when something is about to read them (``flush``).
The per-job accumulators sit side by side in one array (``CARRIED``), so a row moves in or out
with one gather or scatter.

The arithmetic of a step is the engine's rule for each job (``advance_round``,
``advance_to_event``): elementwise, so neither where the numbers are kept nor the order of the
rows changes a bit of the results.
"""

from __future__ import annotations

import math

import numpy as np

# the per-job accumulators a step updates, in the order of the engine's accumulator array
CARRIED = ("done", "run_s", "attained_gpu_s", "penalty_left", "overhead_s")
_DONE, _RUN_S, _ATTAINED, _PENALTY, _OVERHEAD, _GPU_S, _TPUT, _WORK = range(8)  # rows of the float block
_IDS, _TYPES, _WORKERS, _SPREAD_STEPS = range(4)  # rows of the integer block


class RunningTable:
    """Rows of the running jobs, in no meaningful order: engine job index, type, gang, rate where
    it runs (spread or packed), true work, whether it is spread, and the accumulators (``CARRIED``,
    the GPU-seconds on its current type, the steps it ran spread). Arrays are views of the
    first ``len(self)`` columns of two blocks (floats, integers) that grow by doubling."""

    def __init__(self) -> None:
        self.n = 0
        self._f = np.zeros((8, 64))
        self._i = np.zeros((4, 64), dtype=np.int64)
        self._spread = np.zeros(64, dtype=bool)

    def __len__(self) -> int:
        return self.n

    ids = property(lambda self: self._i[_IDS, : self.n])
    types = property(lambda self: self._i[_TYPES, : self.n])
    workers = property(lambda self: self._i[_WORKERS, : self.n])
    spread = property(lambda self: self._spread[: self.n])
    tput = property(lambda self: self._f[_TPUT, : self.n])
    work = property(lambda self: self._f[_WORK, : self.n])
    done = property(lambda self: self._f[_DONE, : self.n])
    penalty = property(lambda self: self._f[_PENALTY, : self.n])

    # ---- rows in and out ---------------------------------------------------------------------
    def add(
        self,
        state,
        ids: np.ndarray,
        types: np.ndarray,
        tput: np.ndarray,
        workers: np.ndarray,
        work: np.ndarray,
        spread: np.ndarray,
    ) -> None:
        """Rows for jobs that start running now, their accumulators as the per-job arrays hold them."""
        n, k = self.n, len(ids)
        if n + k > self._f.shape[1]:
            self._grow(2 * (n + k))
        new = slice(n, n + k)
        self._f[: len(CARRIED), new] = state.acc[ids].T
        self._f[_GPU_S, new] = state.gpu_s_by_type[ids, types]
        self._f[_TPUT, new] = tput
        self._f[_WORK, new] = work
        self._i[:, new] = (ids, types, workers, state.spread_rounds[ids])
        self._spread[new] = spread
        self.n = n + k

    def remove(self, state, rows: np.ndarray) -> None:
        """Write back rows ``rows`` (ascending) and drop them: the last rows that stay fill their places."""
        self.write_back(state, rows)
        n, k = self.n, len(rows)
        holes = rows[rows < n - k]
        if len(holes):
            tail = np.setdiff1d(np.arange(n - k, n), rows, assume_unique=True) if k > 1 else n - 1
            self._f[:, holes] = self._f[:, tail, None] if k == 1 else self._f[:, tail]
            self._i[:, holes] = self._i[:, tail, None] if k == 1 else self._i[:, tail]
            self._spread[holes] = self._spread[tail]
        self.n = n - k

    def flush(self, state) -> None:
        """Write every row back, so the per-job arrays are current (the rows stay)."""
        self.write_back(state, slice(0, self.n))

    def write_back(self, state, rows) -> None:
        ids = self._i[_IDS, rows]
        state.acc[ids] = self._f[: len(CARRIED), rows].T
        state.gpu_s_by_type[ids, self._i[_TYPES, rows]] = self._f[_GPU_S, rows]
        state.spread_rounds[ids] = self._i[_SPREAD_STEPS, rows]

    def rows_of(self, ids: np.ndarray) -> np.ndarray:
        """The rows of some of the running jobs (each must be running)."""
        order = np.argsort(self.ids, kind="stable")
        return order[np.searchsorted(self.ids, ids, sorter=order)]

    def _grow(self, size: int) -> None:
        for name in ("_f", "_i", "_spread"):
            old = getattr(self, name)
            new = np.zeros(old.shape[:-1] + (size,), dtype=old.dtype)
            new[..., : self.n] = old[..., : self.n]
            setattr(self, name, new)

    # ---- one step ----------------------------------------------------------------------------
    def advance_round(self, round_len: float, costless: bool, integer_steps: bool, latest_finish: bool):
        """One round: each job pays what it owes of overhead, then progresses for the rest of the
        round or until it finishes. Returns (duration, pay, busy, finishing)."""
        f = self._f[:, : self.n]
        tput = f[_TPUT]
        remaining = f[_WORK] - f[_DONE]
        pay = np.minimum(f[_PENALTY], round_len) if not costless else 0.0
        progress = tput * (round_len - pay)
        if integer_steps:
            progress = np.floor(progress, out=progress)
        finishing = progress >= remaining
        if np.count_nonzero(finishing):
            progress = np.minimum(progress, remaining)
        busy = progress / tput + pay  # seconds the job holds its GPUs
        if latest_finish and len(busy):
            longest = float(busy.max())
            duration = longest if longest > 0 else round_len
        else:
            duration = round_len
        self._accumulate(f, pay, progress, busy, costless)
        return duration, pay, busy, finishing

    def advance_to_event(self, limit: float, costless: bool):
        """Up to the first completion, or ``limit`` seconds if that comes first. Completion times
        (the overhead still owed plus the remaining work at the job's rate) are computed once and
        compared as they are, so the job that sets the step's end finishes in it exactly.
        Returns (duration, pay, busy, finishing); duration is inf when no job runs and ``limit``
        is inf."""
        f = self._f[:, : self.n]
        tput = f[_TPUT]
        remaining = f[_WORK] - f[_DONE]
        penalty = 0.0 if costless else f[_PENALTY]
        to_finish = penalty + np.maximum(remaining, 0.0) / tput
        duration = min(limit, float(to_finish.min())) if self.n else limit
        if not math.isfinite(duration):
            return duration, 0.0, None, None
        pay = np.minimum(penalty, duration) if not costless else 0.0
        progress = tput * (duration - pay)
        # the jobs whose finish is the step's end, and any whose finish falls within float rounding of it
        finishing = (to_finish <= duration) | (progress >= remaining)
        # a job holds its GPUs to its finish or the step's end (every other job's finish is later);
        # a finishing job's progress does not matter: the engine sets its done to its work exactly
        busy = np.minimum(to_finish, duration)
        self._accumulate(f, pay, progress, busy, costless)
        return duration, pay, busy, finishing

    def advance_rounds(self, round_len: float, k: int) -> None:
        """k whole rounds with nothing owed and nothing finishing (the engine's fast-forward)."""
        f = self._f[:, : self.n]
        f[_DONE] += f[_TPUT] * (round_len * k)
        f[_RUN_S] += round_len * k
        gpu_s = self.workers * (round_len * k)
        f[_ATTAINED] += gpu_s
        f[_GPU_S] += gpu_s
        self._i[_SPREAD_STEPS, : self.n] += self.spread * k

    def rounds_to_first_finish(self, round_len: float) -> float:
        """How many whole rounds with nothing owed pass before a job finishes, from the remaining
        work at the rate of a round (the fast-forward's bound; the size of a replay, in which
        ``replay_rounds`` finds the exact round); inf with no job running."""
        f = self._f[:, : self.n]
        return float(np.min((f[_WORK] - f[_DONE]) / (f[_TPUT] * round_len))) if self.n else math.inf

    def replay_rounds(self, round_len: float, k: int) -> int:
        """Up to ``k`` whole rounds in which nothing is owed, with the numbers ``k`` calls of
        ``advance_round`` would give, bit for bit: each accumulator's per-round additions are
        summed one after another (``np.add.accumulate`` adds in order, as ``+=`` round after round
        does). Stops before the first round in which a job would finish; returns the rounds applied."""
        f = self._f[:, : self.n]
        tput = f[_TPUT]
        progress = tput * (round_len - 0.0)  # advance_round's arithmetic with nothing owed
        busy = progress / tput + 0.0
        gpu_s = busy * self.workers
        done = np.empty((k + 1, self.n))
        done[0] = f[_DONE]
        done[1:] = progress
        np.add.accumulate(done, axis=0, out=done)
        finishing = (progress >= f[_WORK] - done[:k]).any(axis=1)
        applied = int(np.argmax(finishing)) if finishing.any() else k
        if applied:
            f[_DONE] = done[applied]
            for row, step in ((_RUN_S, busy), (_ATTAINED, gpu_s), (_GPU_S, gpu_s)):
                f[row] = _summed_in_order(f[row], step, applied)
            self._i[_SPREAD_STEPS, : self.n] += self.spread * applied
        return applied

    def _accumulate(self, f: np.ndarray, pay, progress, busy, costless: bool) -> None:
        if not costless:
            f[_PENALTY] -= pay
            f[_OVERHEAD] += pay
        f[_DONE] += progress
        f[_RUN_S] += busy
        gpu_s = busy * self.workers
        f[_ATTAINED] += gpu_s
        f[_GPU_S] += gpu_s
        spread = self.spread
        if spread.any():
            self._i[_SPREAD_STEPS, : self.n] += spread


def _summed_in_order(start: np.ndarray, step: np.ndarray, k: int) -> np.ndarray:
    """``start`` after ``k`` additions of ``step``, one after another (bit for bit as ``+=`` k times)."""
    sums = np.empty((k + 1, len(start)))
    sums[0] = start
    sums[1:] = step
    return np.add.accumulate(sums, axis=0, out=sums)[k]
