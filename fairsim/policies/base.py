"""The policy interface: a read-only view of the active jobs in, an assignment out.

A policy is one small class with ``decide(view) -> assignment`` where the assignment is an int
array over the view's jobs: the GPU type index each job runs on this round, or -1 (not run).
The engine enforces the rules (one type per job, capacity, memory feasibility) and raises on a
policy that breaks them; it never looks at a policy's name.

A policy that sizes elastic jobs (``fairsim.workload.elastic``: Pollux, Sia) returns an
``Allocation`` instead: the type and the GPU count of each job. A plain type array runs every job
on its requested count (``workers``), elastic or not; rigid jobs only ever run there.

Policies that think in time fractions (Gavel-style: X[j, k] = share of time job j should spend
on type k) subclass ``fairsim.policies.mechanism.FractionPolicy`` and implement
``fractions(view)``; Gavel's round mechanism turns the fractions into this round's assignment.
Queue-based policies place jobs with the helpers of ``fairsim.policies.queues``.

A policy whose decision follows from the previous one and what changed since (a job arrived or
finished) may also implement ``decide_changes(changes) -> Moves``: the engine then hands it only
the jobs that arrived or finished and takes back only the jobs whose type changes, so a decision
costs what changed, not what is active (``Changes``, ``Moves``). It must decide exactly what
``decide`` would; ``decide`` stays the reference (and what tests and a subclass that overrides
``decide`` get).

To add a policy: write ``fairsim/policies/<name>.py`` with a ``Policy`` subclass and
``conf/policy/<name>.yaml`` with ``_target_`` pointing at it. Nothing else changes.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from fairsim.cluster import ClusterSpec
from fairsim.solve.program import NOT_RUN


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
    model_name: np.ndarray | None = None  # object [n] the job's model (catalog name); "" in a view built by hand
    # elastic jobs (fairsim.workload.elastic); for a rigid job min_gpus = max_gpus = workers.
    # Left out (a view built by hand), every job is rigid.
    elastic: np.ndarray | None = None  # bool [n] the policy may choose the job's GPU count
    min_gpus: np.ndarray | None = None  # int [n]
    max_gpus: np.ndarray | None = None  # int [n]
    gpus: np.ndarray | None = None  # int [n] GPUs the job holds now, 0 if it does not run
    owed_s: np.ndarray | None = None  # float [n] overhead seconds a running job still pays before progress
    _goodput: Callable[[np.ndarray, np.ndarray, np.ndarray, np.ndarray | None], np.ndarray] | None = None

    def __post_init__(self) -> None:
        """A view built by hand (tests, benchmarks) has rigid, unnamed jobs unless it says otherwise."""
        n = len(self.job_id)
        rigid = dict(
            model_name=np.full(n, "", dtype=object),
            elastic=np.zeros(n, dtype=bool),
            min_gpus=self.workers,
            max_gpus=self.workers,
            gpus=np.where(self.last_type >= 0, self.workers, 0),
            owed_s=np.zeros(n),
            _goodput=self._rigid_goodput,
        )
        for name, value in rigid.items():
            if getattr(self, name) is None:
                object.__setattr__(self, name, value)

    def _rigid_goodput(self, rows, types, gpus, hosts) -> np.ndarray:
        """Goodput of rigid jobs from the view's own arrays: the packed throughput at the gang size."""
        return np.where(gpus == self.workers[rows], self.throughput[rows, types], 0.0)

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

    def goodput(
        self, rows: np.ndarray, types: np.ndarray, gpus: np.ndarray, hosts: np.ndarray | None = None
    ) -> np.ndarray:
        """float: work units per second job ``rows[i]`` (a row of this view) would make now on
        ``gpus[i]`` GPUs of type ``types[i]`` over ``hosts[i]`` hosts (None: as few as hold
        them). An elastic job's goodput at its progress so far; a rigid job's throughput, packed
        or spread, at its own gang size and 0 at any other count; 0 where it cannot run."""
        return self._goodput(np.asarray(rows), np.asarray(types), np.asarray(gpus), hosts)

    @classmethod
    def assemble(cls, fields: dict) -> PolicyView:
        """A view from a mapping of every field, skipping the frozen dataclass's per-field
        ``__setattr__`` (about 7 us): the engine builds one per round. The view stays frozen."""
        view = object.__new__(cls)
        view.__dict__.update(fields)
        return view


@dataclass(frozen=True, eq=False)
class Allocation:
    """A decision that sizes jobs: per view row, the GPU type (-1: not run) and the GPU count
    (read only where the type is >= 0; a rigid job's must be its ``workers``)."""

    types: np.ndarray  # int [n]
    gpus: np.ndarray  # int [n]


@dataclass(frozen=True, eq=False)
class Changes:
    """What an incremental policy (``Policy.decide_changes``) sees at a decision: the jobs that
    arrived or finished since its previous decision, the free GPUs, and the jobs' attributes as
    read-only arrays over the whole trace, indexed by engine job index (``PolicyView.job_id``)."""

    now: float  # seconds since the start of the simulation
    round_len: float  # seconds
    cluster: ClusterSpec
    capacity: np.ndarray  # int [T] GPUs per type
    arrived: np.ndarray  # int: jobs admitted since the previous decision, in arrival order
    finished: np.ndarray  # int: jobs that finished since the previous decision
    evicted: np.ndarray  # int: running jobs an outage stopped since then (capacity may have changed too)
    free: np.ndarray  # int [T] GPUs of each type that no running job holds
    current_type: np.ndarray  # int [J] the type each job runs on now, -1 if it does not run
    arrival: np.ndarray  # float [J] seconds
    workers: np.ndarray  # int [J] gang size
    weight: np.ndarray  # float [J]
    throughput: np.ndarray  # float [J, T] as PolicyView.throughput
    feasible: np.ndarray  # bool [J, T] as PolicyView.feasible
    changed: bool  # a job arrived or finished since the previous decision
    _remaining: Callable[[np.ndarray], np.ndarray]
    _view: Callable[[], PolicyView]

    @classmethod
    def assemble(cls, fields: dict) -> Changes:
        """As ``PolicyView.assemble``: the engine builds one per decision."""
        changes = object.__new__(cls)
        changes.__dict__.update(fields)
        return changes

    def remaining(self, jobs: np.ndarray) -> np.ndarray:
        """What ``PolicyView.remaining`` says of these jobs now (work as the policy sees it, less what is done)."""
        return self._remaining(jobs)

    def view(self) -> PolicyView:
        """The full view over the active jobs, as ``decide`` gets it (costs what is active)."""
        return self._view()


@dataclass(frozen=True, eq=False)
class Moves:
    """An incremental decision: the jobs whose type changes now, each with its new type (-1 stops
    it); every other job keeps its type. ``wake_s``: what ``Policy.next_decision_s`` would say;
    None for its default (``Policy.default_wake_s``)."""

    jobs: np.ndarray  # int: engine job indices
    types: np.ndarray  # int: GPU type index from now on, or -1
    wake_s: float | None = None


def decides_by_changes(policy: Policy) -> bool:
    """Whether the engine asks ``policy.decide_changes`` rather than ``decide``: yes when the class
    that defines ``decide_changes`` is the one that defines ``decide`` and ``next_decision_s`` or
    a subclass of them, so a subclass that overrides either alone is asked through the view."""
    mro = type(policy).__mro__
    by_changes = next(c for c in mro if "decide_changes" in vars(c))
    return by_changes is not Policy and all(
        issubclass(by_changes, next(c for c in mro if name in vars(c))) for name in ("decide", "next_decision_s")
    )


class Policy:
    """Base class. ``event_driven`` policies only change their decision when a job arrives or
    finishes, so the engine may reuse the previous assignment (and skip rounds in bulk)."""

    event_driven: bool = False
    # whether the same config and seed give the same decisions on any machine at any load; a
    # policy with a wall-clock limit that can cut a decision short is not (the run says so)
    deterministic: bool = True

    def reset(self, cluster: ClusterSpec, num_jobs: int, seed: int) -> None:
        """Called once before a simulation; drop all per-run state here."""

    def decide(self, view: PolicyView) -> np.ndarray | Allocation:
        raise NotImplementedError

    def decide_changes(self, changes: Changes) -> Moves:
        """Optional: the same decision as ``decide`` from what changed since the previous one
        (module docstring). The engine asks it at the same moments it would ask ``decide``."""
        raise NotImplementedError

    def next_decision_s(self, view: PolicyView, assignment: np.ndarray) -> float:
        """The time of the next decision this policy needs even if no job arrives or finishes,
        given the view it just decided on and its ``assignment`` (the types); math.inf for none: until then
        ``decide`` would return the same assignment. The engine decides at every arrival and
        completion anyway. Under ``events`` a step ends at this time; under ``rounds`` the policy
        is asked again at the first round that starts at or after it, and the rounds before are
        applied in bulk (a time within the next round means every round). The default keeps a
        round-based policy on its own period (one round after this decision) and asks nothing of
        an event-driven one."""
        return self.default_wake_s(view.now, view.round_len)

    def default_wake_s(self, now: float, round_len: float) -> float:
        """``next_decision_s`` of a policy that does not override it."""
        return math.inf if self.event_driven else now + round_len

    def stats(self) -> dict[str, float]:
        """Counters the run's summary should carry (e.g. solver fallbacks)."""
        return {}

    def schedule_columns(self, job_ids: np.ndarray) -> dict[str, np.ndarray]:
        """Per-job values for the schedule record (``sim.record_schedule``), one array per column
        over ``job_ids`` (engine job indices); asked only when the record is on."""
        return {}
