"""The policy interface: a read-only view of the active jobs in, an assignment out.

A policy is one small class with ``decide(view) -> assignment`` where the assignment is an int
array over the view's jobs: the GPU type index each job runs on this round, or -1 (not run).
The engine enforces the rules (one type per job, capacity, memory feasibility) and raises on a
policy that breaks them; it never looks at a policy's name.

Policies that think in time fractions (Gavel-style: X[j, k] = share of time job j should spend
on type k) subclass ``FractionPolicy`` and implement ``fractions(view)``; a round mechanism
(``fairsim.policies.mechanism``) turns the fractions into this round's assignment.

To add a policy: write ``fairsim/policies/<name>.py`` with a ``Policy`` subclass and
``conf/policy/<name>.yaml`` with ``_target_`` pointing at it. Nothing else changes.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from fairsim.cluster import ClusterSpec

NOT_RUN = -1


@dataclass(frozen=True, eq=False)
class PolicyView:
    """What a policy may see each round. Arrays are indexed by the view's job order (arrival
    order) and are read-only; ``job_id`` maps a row to the engine's job index, which is stable
    for the whole run (use it to keep per-job state between rounds)."""

    now: float  # seconds since the start of the simulation
    round_len: float  # seconds
    cluster: ClusterSpec
    capacity: np.ndarray  # int [T] GPUs per type
    job_id: np.ndarray  # int [n] engine job index (0..J-1, stable)
    arrival: np.ndarray  # float [n] seconds
    workers: np.ndarray  # int [n] gang size
    work: np.ndarray  # float [n] total work (catalog units)
    done: np.ndarray  # float [n] work completed so far
    weight: np.ndarray  # float [n] priority weight
    throughput: np.ndarray  # float [n, T] units/s with the job packed on type k; 0 where infeasible
    feasible: np.ndarray  # bool [n, T] memory fits and the type has enough GPUs
    last_type: np.ndarray  # int [n] type the job ran on in the previous round, -1 if it did not run
    prev_type: np.ndarray  # int [n] type of the job's most recent run, -1 if it never ran
    switch_cost_s: np.ndarray  # float [n, T] seconds of overhead the engine would charge to run on k now
    state_bytes: np.ndarray  # float [n] training state (params + grads + optimizer)
    attained_gpu_s: np.ndarray  # float [n] GPU-seconds received so far
    run_s: np.ndarray  # float [n] wall seconds the job has run so far
    first_start: np.ndarray  # float [n] seconds, NaN if never started
    changed: bool  # a job arrived or finished since the previous decision

    @property
    def num_jobs(self) -> int:
        return len(self.job_id)

    @property
    def num_types(self) -> int:
        return len(self.capacity)

    @property
    def remaining(self) -> np.ndarray:
        return self.work - self.done

    def empty_assignment(self) -> np.ndarray:
        return np.full(self.num_jobs, NOT_RUN, dtype=np.int64)

    @classmethod
    def assemble(cls, fields: dict) -> "PolicyView":
        """A view from a mapping of every field, skipping the frozen dataclass's per-field
        ``__setattr__`` (about 7 us): the engine builds one per round. The view stays frozen."""
        view = object.__new__(cls)
        view.__dict__.update(fields)
        return view


class Policy:
    """Base class. ``event_driven`` policies only change their decision when a job arrives or
    finishes, so the engine may reuse the previous assignment (and skip rounds in bulk)."""

    event_driven: bool = False

    def reset(self, cluster: ClusterSpec, num_jobs: int, seed: int) -> None:
        """Called once before a simulation; drop all per-run state here."""

    def decide(self, view: PolicyView) -> np.ndarray:
        raise NotImplementedError

    def stats(self) -> dict[str, float]:
        """Counters the run's summary should carry (e.g. solver fallbacks)."""
        return {}

    def schedule_columns(self, job_ids: np.ndarray) -> dict[str, np.ndarray]:
        """Per-job values for the schedule record (``sim.record_schedule``), one array per column
        over ``job_ids`` (engine job indices); asked only when the record is on."""
        return {}


class FractionPolicy(Policy):
    """A policy that computes a time-fraction matrix X [n, T] (rows sum to <= 1,
    sum_j workers_j * X[j, k] <= capacity_k) and leaves the per-round choice to a mechanism."""

    def __init__(self, mechanism=None):
        from fairsim.policies.mechanism import GavelMechanism  # local import: mechanism imports base

        self.mechanism = mechanism or GavelMechanism()

    def reset(self, cluster: ClusterSpec, num_jobs: int, seed: int) -> None:
        self.mechanism.reset(cluster, num_jobs)

    def fractions(self, view: PolicyView) -> np.ndarray:
        raise NotImplementedError

    def decide(self, view: PolicyView) -> np.ndarray:
        return self.mechanism.assign(view, self.fractions)

    def stats(self) -> dict[str, float]:
        return self.mechanism.stats()


def greedy_fill(view: PolicyView, order: np.ndarray, type_pref: np.ndarray, free: np.ndarray | None = None,
                assignment: np.ndarray | None = None, backfill: bool = True) -> np.ndarray:
    """Place jobs in ``order`` (rows of the view), each on the first type in its preference row
    ``type_pref[row]`` (type indices, -1 padded) that is feasible and has room for its gang.

    With ``backfill`` a job that fits nowhere is skipped and later jobs may still start; without
    it the first job that does not fit stops the queue (strict FIFO). Stops early once no
    remaining job could fit in the free GPUs, so the loop costs O(started jobs) when the
    cluster is full.
    """
    assignment = view.empty_assignment() if assignment is None else assignment
    free_arr = view.capacity.astype(np.int64).copy() if free is None else free
    if len(order) == 0:
        return assignment
    widths = view.workers[order]
    suffix_min = np.minimum.accumulate(widths[::-1])[::-1].tolist()  # narrowest job from position i on
    # plain Python ints in the loop (numpy scalar overhead dominates at this size), converted a
    # chunk at a time because the loop usually stops long before the end of a long queue
    free_l = free_arr.tolist()
    chunk = 128
    stopped = False
    for start in range(0, len(order), chunk):
        rows = order[start:start + chunk]
        for i, (d, pref, ok) in enumerate(zip(widths[start:start + chunk].tolist(), type_pref[rows].tolist(),
                                                view.feasible[rows].tolist())):
            max_free = max(free_l)
            if max_free <= 0 or suffix_min[start + i] > max_free:
                stopped = True
                break
            placed = False
            for k in pref:
                if k < 0:
                    break
                if ok[k] and free_l[k] >= d:
                    assignment[rows[i]] = k
                    free_l[k] -= d
                    placed = True
                    break
            if not placed and not backfill:
                stopped = True
                break
        if stopped:
            break
    free_arr[:] = free_l
    return assignment


def fastest_first(view: PolicyView) -> np.ndarray:
    """Per job, feasible types sorted by throughput, fastest first; -1 pads infeasible types.
    Ties keep the cluster's type order (stable sort), so the result is deterministic."""
    tput = np.where(view.feasible, view.throughput, -np.inf)
    pref = np.argsort(-tput, axis=1, kind="stable")
    return np.where(np.take_along_axis(view.feasible, pref, axis=1), pref, -1)


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
