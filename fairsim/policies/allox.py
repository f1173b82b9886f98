"""AlloX (Le et al., "AlloX: Compute Allocation in Hybrid Clusters", EuroSys'20), with GPU types
as AlloX's interchangeable resources.

The paper's algorithm. Jobs run on one of several resource kinds at different speeds. For the
queued jobs, AlloX builds a bipartite graph between jobs and "positions": position q on machine
m means "the q-th job from the end of m's queue", and job j there costs q * p[j, m], since its
processing time p delays itself and the q - 1 jobs behind it. A min-cost matching (Hungarian
method) of jobs to positions minimizes the total completion time; each machine then runs its
matched jobs front to back. Online, the matching is recomputed for the waiting jobs when jobs
arrive or machines free up, with the remaining time of the running jobs added to every waiting
position of their machine. Jobs are not preempted and never switch resources once started.

Adaptation to GPU types (the FFT paper's AlloX baseline, "new job to the type queue with the
smallest JCT increase, no switching"):

- Machines are GPU types. AlloX assumes single-demand jobs; a type k with c_k GPUs serving a
  gang of d_j workers is modelled as one machine that processes the job in
  t[j, k] = (remaining_j / throughput[j, k]) * d_j / c_k seconds, i.e. the type's GPUs shared
  in proportion to the gang size. When every job has d workers and c_k is a multiple of d (the
  FFT paper's trace 1: all jobs have 4 workers), this is the fluid version of c_k / d parallel
  gang slots. Position costs are q * t[j, k] + (the t of the jobs already running on k).
- The matching (scipy.optimize.linear_sum_assignment) runs whenever a job arrives or finishes
  and a type has free GPUs; each type then starts its matched jobs front to back while they
  fit (a gang that does not fit is skipped, so smaller ones behind it may start).
- No preemption and no switching: a started job runs to completion on the type it started on.
- Scale: the matching takes the ``max_matched`` waiting jobs with the shortest best-case
  processing time (those AlloX would put at the front of a queue); default 256.
- ``queue_choice``: ``matching`` (default, the above: AlloX's own algorithm, which places a
  new job at the queue position of least JCT contribution and may re-place waiting jobs at later
  events) or ``on_arrival``, the FFT paper's wording read literally ("allocates newly arrived
  jobs to the GPU queue with the lowest JCT contribution"): each new job, in arrival order,
  joins for good the type queue where it adds the least to the total completion time (its own
  finish time after the running work and the shorter queued jobs, plus its processing time
  once for each longer queued job it overtakes); inside a queue, shortest first. Waiting jobs
  are then never re-placed.
- Not modelled: AlloX's user-level fairness (its knob picks the users with the least
  progress); traces here have no users, so every waiting job is eligible.
"""

from __future__ import annotations

import numpy as np
from scipy.optimize import linear_sum_assignment

from fairsim.cluster import ClusterSpec
from fairsim.errors import require
from fairsim.policies.base import NOT_RUN, Policy, PolicyView
from fairsim.policies.queues import fill_queue

INFEASIBLE_COST = 1e30  # larger than any real total completion time


def allox_positions(t: np.ndarray, offset: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Min-cost matching of jobs (rows of ``t``, processing time per type; inf = cannot run)
    to queue positions. Returns each job's type and its rank in that type's queue (0 = front)."""
    n, types = t.shape
    q = np.arange(1, n + 1, dtype=np.float64)  # position q from the end of a queue
    cost = t[:, :, None] * q[None, None, :] + offset[None, :, None]  # [job, type, q]
    cost = np.where(np.isfinite(cost), cost, INFEASIBLE_COST).reshape(n, types * n)
    rows, cols = linear_sum_assignment(cost)
    kind, pos = np.divmod(cols, n)
    job_type = np.empty(n, dtype=np.int64)
    from_end = np.empty(n, dtype=np.int64)
    job_type[rows], from_end[rows] = kind, pos
    return job_type, -from_end  # larger q = earlier in the queue


QUEUE_CHOICES = ("matching", "on_arrival")


class AlloxPolicy(Policy):
    event_driven = True  # nothing changes between arrivals and completions: no preemption

    def __init__(self, max_matched: int = 256, queue_choice: str = "matching"):
        require(max_matched >= 1, "policy", "max_matched", f"must be >= 1, got {max_matched!r}")
        require(
            queue_choice in QUEUE_CHOICES,
            "policy",
            "queue_choice",
            f"{queue_choice!r} is not one of {', '.join(QUEUE_CHOICES)}",
        )
        self.max_matched = int(max_matched)
        self.on_arrival = queue_choice == "on_arrival"

    def reset(self, cluster: ClusterSpec, num_jobs: int, seed: int) -> None:
        self.matchings = 0
        self.bound = np.full(num_jobs, NOT_RUN, dtype=np.int64)  # on_arrival: each job's queue, for good

    def decide(self, view: PolicyView) -> np.ndarray:
        assignment = view.last_type.copy()  # started jobs run to completion where they are
        running = assignment != NOT_RUN
        used = np.bincount(assignment[running], weights=view.workers[running], minlength=view.num_types)
        free = view.capacity - used.astype(np.int64)
        waiting = np.flatnonzero(~running)

        tput = np.where(view.feasible, view.throughput, np.nan)
        t = view.remaining[:, None] / tput * view.workers[:, None] / view.capacity[None, :]
        t = np.where(np.isnan(t), np.inf, t)
        offset = np.bincount(assignment[running], weights=t[running, assignment[running]], minlength=view.num_types)
        if self.on_arrival:
            self.bind_new_jobs(view, t, offset, waiting)
        if len(waiting) == 0 or free.max() < view.workers[waiting].min():
            return assignment
        if self.on_arrival:
            job_type = self.bound[view.job_id[waiting]]
            rank = t[waiting, job_type]  # shortest first inside a queue, as the matching orders it
        else:
            if len(waiting) > self.max_matched:
                waiting = waiting[np.lexsort((waiting, t[waiting].min(axis=1)))[: self.max_matched]]
            job_type, rank = allox_positions(t[waiting], offset)
            self.matchings += 1

        for k in range(view.num_types):
            in_queue = np.flatnonzero(job_type == k)
            queue = waiting[in_queue[np.lexsort((waiting[in_queue], rank[in_queue]))]]
            take = fill_queue(view.workers[queue], int(free[k]))
            assignment[queue[take]] = k
        return assignment

    def bind_new_jobs(self, view: PolicyView, t: np.ndarray, offset: np.ndarray, waiting: np.ndarray) -> None:
        """The FFT paper's reading: each new job, in arrival order, joins for good the type queue
        where it adds the least to the total completion time. In a queue kept shortest first,
        job j on type k finishes after the running work, the queued jobs shorter than it and
        itself, and delays each longer queued job by t[j, k]."""
        ids = view.job_id
        bound = self.bound[ids]
        for row in waiting[bound[waiting] < 0]:  # view rows are in arrival order
            queued = waiting[bound[waiting] >= 0]
            increase = np.full(view.num_types, np.inf)
            for k in np.flatnonzero(np.isfinite(t[row])):
                mine = t[queued[bound[queued] == k], k]
                tj = t[row, k]
                increase[k] = offset[k] + mine[mine <= tj].sum() + tj + tj * (mine > tj).sum()
            bound[row] = int(np.argmin(increase))  # ties -> cluster order
            self.bound[ids[row]] = bound[row]

    def stats(self) -> dict[str, float]:
        return {"allox_matchings": float(self.matchings)}
