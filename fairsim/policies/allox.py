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
- ``queue_choice: gavel`` is AlloX as Gavel's repository implements it (``AlloX_Perf``,
  ``scheduler/policies/allox.py``), for replaying Gavel's simulator (docs/gavel_compat.md,
  "AlloX"): a time-fraction policy realised by Gavel's round mechanism
  (fairsim/policies/mechanism.py; ``mechanism`` takes its options). At each recompute of X the
  jobs that do not hold a GPU type yet are matched to positions on the free *GPUs* (one column
  per GPU and position, single-GPU jobs: t = remaining / throughput), the front job of each GPU
  gets X = 1 on its type and keeps it until it finishes; every other job gets X = 0. The
  mechanism then runs the X = 1 jobs and, as for any Gavel policy, lets X = 0 jobs fill the GPUs
  left over in the greedy pass, so a job may run (and be preempted) before it is matched.
- Not modelled: AlloX's user-level fairness (its knob picks the users with the least
  progress); traces here have no users, so every waiting job is eligible.
"""

from __future__ import annotations

import numpy as np
from scipy.optimize import linear_sum_assignment

from fairsim.cluster import ClusterSpec
from fairsim.errors import require
from fairsim.policies.base import NOT_RUN, Policy, PolicyView
from fairsim.policies.mechanism import as_mechanism
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


QUEUE_CHOICES = ("matching", "on_arrival", "gavel")


class AlloxPolicy(Policy):
    event_driven = True  # nothing changes between arrivals and completions: no preemption

    def __init__(self, max_matched: int = 256, queue_choice: str = "matching", mechanism=None):
        require(max_matched >= 1, "policy", "max_matched", f"must be >= 1, got {max_matched!r}")
        require(
            queue_choice in QUEUE_CHOICES,
            "policy",
            "queue_choice",
            f"{queue_choice!r} is not one of {', '.join(QUEUE_CHOICES)}",
        )
        require(
            mechanism is None or queue_choice == "gavel",
            "policy",
            "mechanism",
            f"only applies with queue_choice=gavel (got queue_choice={queue_choice})",
        )
        self.max_matched = int(max_matched)
        self.on_arrival = queue_choice == "on_arrival"
        self.gavel = queue_choice == "gavel"
        self.mechanism = as_mechanism(mechanism) if self.gavel else None
        self.event_driven = not self.gavel  # Gavel's reading is decided round by round by its mechanism

    def reset(self, cluster: ClusterSpec, num_jobs: int, seed: int) -> None:
        self.matchings = 0
        self.bound = np.full(num_jobs, NOT_RUN, dtype=np.int64)  # on_arrival: each job's queue, for good
        if self.gavel:
            self.mechanism.reset(cluster, num_jobs)
            self.held = np.full(num_jobs, NOT_RUN, dtype=np.int64)  # gavel: the type a job holds X = 1 on
            self.column_types = np.argsort(np.array(cluster.gpu_types), kind="stable")  # Gavel's worker order

    def decide(self, view: PolicyView) -> np.ndarray:
        if self.gavel:
            require(  # here, not in gavel_fractions: the mechanism turns errors there into a fallback X
                not view.changed or bool((view.workers == 1).all()),
                "policy",
                "queue_choice",
                "gavel (Gavel's AlloX_Perf) takes single-GPU jobs only; the workload has multi-GPU jobs",
            )
            return self.mechanism.assign(view, self.gavel_fractions)
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

    def gavel_fractions(self, view: PolicyView) -> np.ndarray:
        """X as Gavel's AlloX_Perf computes it at a recompute: jobs holding a type keep X = 1
        there; the others, oldest first, are matched to (free GPU, position) columns, position q
        from the end of a GPU's queue costing q * remaining / throughput plus the job's age (a
        per-job constant Gavel adds: it does not move the optimum, only how exact ties break);
        each GPU's front job gets X = 1 on the GPU's type. Free GPUs are the type's count minus
        the jobs holding it, laid out in Gavel's worker order (types sorted by name)."""
        x = np.zeros((view.num_jobs, view.num_types))
        held = self.held[view.job_id]
        holding = np.flatnonzero(held >= 0)
        x[holding, held[holding]] = 1.0
        free = view.capacity - np.bincount(held[holding], minlength=view.num_types)
        matched = np.flatnonzero(held < 0)  # oldest first: view rows are in arrival order
        gpu_type = np.repeat(self.column_types, np.maximum(free[self.column_types], 0))
        if not len(matched) or not len(gpu_type):
            return x
        tput = view.throughput[matched][:, gpu_type]
        t = np.where(
            view.feasible[matched][:, gpu_type],
            view.remaining[matched, None] / np.where(tput > 0, tput, 1.0),
            INFEASIBLE_COST,
        )
        age = (view.now - view.arrival[matched])[:, None]
        gpus = len(gpu_type)
        q = np.arange(1, len(matched) + 1, dtype=np.float64)
        cost = (q[None, :, None] * t[:, None, :]).reshape(len(matched), -1) + age  # column (q - 1) * gpus + gpu
        rows, cols = linear_sum_assignment(cost)
        self.matchings += 1
        position, gpu = np.divmod(cols, gpus)
        front = np.full(gpus, -1, dtype=np.int64)
        deepest = np.full(gpus, -1, dtype=np.int64)
        for r, p, g in zip(rows.tolist(), position.tolist(), gpu.tolist()):
            if p > deepest[g]:  # the largest q is the front of the GPU's queue
                deepest[g], front[g] = p, r
        for g in np.flatnonzero(front >= 0):
            row = matched[front[g]]
            x[row, gpu_type[g]] = 1.0
            self.held[view.job_id[row]] = gpu_type[g]
        return x

    def stats(self) -> dict[str, float]:
        if self.gavel:
            return {"allox_matchings": float(self.matchings), **self.mechanism.stats()}
        return {"allox_matchings": float(self.matchings)}
