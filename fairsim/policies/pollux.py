"""Pollux (Qiao et al., "Pollux: Co-adaptive cluster scheduling for goodput-optimized deep
learning", OSDI'21) as Sia's artifact runs it on a cluster of several GPU types: a genetic
search over allocation matrices (jobs x hosts) that maximises a power mean of the jobs' speedups,
blind to GPU types.

As the authors' code does it (siasosp23/artifacts, sia-simulator/pollux_unaware.py, which is
Pollux's own simulator/pollux.py of petuum/adaptdl branch osdi21-artifact with p made an option,
and cluster_unaware.py; facts and line numbers in docs/baselines.md "Pollux"):

- The search: NSGA-II (their pymoo 0.4.2), ``population`` states, ``generations`` generations
  counting the first; two objectives, the power mean of the jobs' speedups and the cluster's
  utility (the sum of speedups over the GPUs of the hosts in use). Their second objective chose a
  cluster size for autoscaling; on a fixed cluster it only shapes the search, and the answer is
  the state of the first front with the best power mean. The first decision starts from the
  current allocation, every later one from the previous decision's first front. Their crossover
  (single point over jobs, with probability ``crossover_prob``), mutation (a job's row back to its
  current allocation; rows zeroed in part; GPUs added on hosts with room) and repair (one job
  spanning several hosts per host; a job's GPUs capped at its most and its hosts at
  ``max_hosts_per_job``, hosts taken in random order; host capacity, jobs in order of least GPU
  time received; a job below its fewest GPUs gets none).
- Speedup: goodput at the allocation over goodput on one host with the fair share of GPUs
  (ceil(GPUs / jobs)); a job that has not run is believed to scale linearly (GPUs / fair share).
  Scaled by hosts / GPUs, times the re-allocation factor (age - restarts x delay) / (age + delay)
  where a job's row changes; power mean ((sum (s + 0.001)^p) / jobs)^(1/p), geometric for p = 0.
- A job may grow to twice the most GPUs it has run on (at least 1, at most its ``max_gpus`` and
  the smallest type's GPUs): Pollux explores scale step by step. ``explore_from`` says what
  counts: the GPUs it has trained on (``trained``, the default: the artifact's bound reads the
  step times its job recorded after its checkpoint-restore delay) or those a decision gave the
  job (``given``).
- Types: the search sees hosts, not types. A job given GPUs of several types keeps those of the
  type it has most of (ties: the higher memory bandwidth, their fixed order of GPU power) and the
  rest stay idle this round (``mixed_types: drop``, the artifact's rule; a rigid gang the drop
  cuts takes free GPUs of that type, as the artifact's fixed-size variant does); ``mixed_types: repair``
  does the same inside the repair, so the search only sees states it can run. What the policy
  believes of a job is its goodput on the type it last ran on (the artifact fits one model to
  every type's observations).

fairsim's own: a job only takes hosts of types it can run on (memory, its allowed types); a rigid
job's fewest and most GPUs are its gang; the engine places GPUs on hosts itself (best fit), so
the hosts this policy keeps for a job are its own record, and the engine charges a move only when
a job's type or GPU count changes. Seeded by the run's seed (``numpy.random.default_rng``): the
same run gives the same decisions.
"""

from __future__ import annotations

import math

import numpy as np

from fairsim.cluster import ClusterSpec
from fairsim.errors import InputError
from fairsim.policies.base import Allocation, Policy, PolicyView

MIXED_TYPES = ("drop", "repair")
EXPLORE_FROM = ("given", "trained")
SPEEDUP_FLOOR = 1e-3  # added to every scaled speedup in the power mean (pollux_unaware.py), so 0 has a value
COUNT = np.int16  # GPUs of one job on one host in the search's states (small: the search is memory-bound)


def realloc_factor(age: np.ndarray, restarts: np.ndarray, delay: float | np.ndarray) -> np.ndarray:
    """Pollux's re-allocation factor: the share of a job's life not lost to restarts if it
    restarts once more, (age - restarts x delay) / (age + delay), at least 0; 1 where age + delay
    is 0 (nothing to lose yet)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        factor = np.maximum(age - restarts * delay, 0.0) / (age + delay)
    return np.where(age + delay > 0, factor, 1.0)


class PolluxPolicy(Policy):
    def __init__(
        self,
        p: float = -1.0,
        population: int = 100,
        generations: int = 100,
        restart_delay_s: float = 30.0,
        crossover_prob: float = 0.9,
        reset_prob: float = 0.1,
        zero_row_prob: float = 0.1,
        zero_prob: float = 0.1,
        max_hosts_per_job: int = 16,
        explore_factor: float = 2.0,
        mating_tries: int = 100,
        mixed_types: str = "drop",
        explore_from: str = "trained",
    ):
        if mixed_types not in MIXED_TYPES:
            raise InputError(
                "policy", "mixed_types", f"unknown mixed_types {mixed_types!r} (allowed: {', '.join(MIXED_TYPES)})"
            )
        if explore_from not in EXPLORE_FROM:
            raise InputError(
                "policy",
                "explore_from",
                f"unknown explore_from {explore_from!r} (allowed: {', '.join(EXPLORE_FROM)})",
            )
        if not (isinstance(p, int | float) and math.isfinite(p)):
            raise InputError("policy", "p", f"{p!r} must be a finite number (Pollux's -1; 0: geometric mean)")
        for name, value, least in (
            ("population", population, 2),
            ("generations", generations, 1),
            ("max_hosts_per_job", max_hosts_per_job, 1),
            ("mating_tries", mating_tries, 1),
        ):
            if not (isinstance(value, int) and not isinstance(value, bool) and value >= least):
                raise InputError("policy", name, f"{value!r} must be a whole number >= {least}")
        for name, value in (
            ("crossover_prob", crossover_prob),
            ("reset_prob", reset_prob),
            ("zero_row_prob", zero_row_prob),
            ("zero_prob", zero_prob),
        ):
            if not (isinstance(value, int | float) and 0 <= value <= 1):
                raise InputError("policy", name, f"{value!r} must be a probability in [0, 1]")
        if not (isinstance(restart_delay_s, int | float) and restart_delay_s >= 0):
            raise InputError("policy", "restart_delay_s", f"{restart_delay_s!r} must be a number >= 0")
        if not (isinstance(explore_factor, int | float) and explore_factor >= 1):
            raise InputError("policy", "explore_factor", f"{explore_factor!r} must be a number >= 1")
        self.p, self.population, self.generations = float(p), population, generations
        self.restart_delay_s, self.crossover_prob = float(restart_delay_s), float(crossover_prob)
        self.reset_prob, self.zero_row_prob, self.zero_prob = float(reset_prob), float(zero_row_prob), float(zero_prob)
        self.max_hosts_per_job, self.explore_factor = max_hosts_per_job, float(explore_factor)
        self.mating_tries, self.mixed_types = mating_tries, mixed_types
        self.explore_from = explore_from

    def reset(self, cluster: ClusterSpec, num_jobs: int, seed: int) -> None:
        self.rng = np.random.default_rng(seed)
        self.host_type = cluster.host_types  # int [N]
        self.preference = type_preference(cluster)  # types, most preferred first (a tie of a mixed allocation)
        self.alloc = np.zeros((num_jobs, len(self.host_type)), dtype=np.int64)  # GPUs per host of each job now
        self.restarts = np.zeros(num_jobs, dtype=np.int64)
        self.started = np.zeros(num_jobs, dtype=bool)
        self.most_gpus = np.zeros(num_jobs, dtype=np.int64)  # the most GPUs each job has run on
        self.done_seen = np.zeros(num_jobs)  # each job's work done at the previous decision (explore_from: trained)
        self.front: np.ndarray | None = None  # the previous decision's first front, [K, jobs, N]
        self.front_jobs = np.empty(0, dtype=np.int64)  # its jobs (engine indices)
        self.dropped_gpus = 0
        self.topped_up = 0
        self.short_generations = 0
        self.zero_goodput = 0

    # ---- the decision ---------------------------------------------------------------------------
    def decide(self, view: PolicyView) -> Allocation:
        n = view.num_jobs
        types, counts = view.empty_assignment(), view.workers.copy()
        if n == 0:
            self.front = None
            return Allocation(types, counts)
        if self.explore_from == "trained":
            self._note_trained(view)
        # jobs in the repair's order: least GPU time received first, then arrival (pollux_unaware.py)
        order = np.lexsort((np.arange(n), view.arrival, view.attained_gpu_s))
        ids = view.job_id[order]
        problem = Problem(self, view, order)
        if self.front is None:
            start = problem.base[None]
        else:
            start = self._adapt_front(ids)
        states = Search(problem, self).run(start)
        best = states[0]
        # the first front is saved as the next decision's start
        self.front, self.front_jobs = states, ids
        best, major, kept = self._one_type(problem, best)
        self._remember(problem, ids, best, kept)
        run = kept > 0
        # a count the search kept where the job makes no progress (its model does not fit that many
        # GPUs of the type: after an outage the cut to one type can leave one) is not run
        rows = np.flatnonzero(run)
        stuck = rows[view.goodput(order[rows], major[rows], kept[rows]) <= 0]
        if len(stuck):
            run[stuck] = False
            self.zero_goodput += len(stuck)
        types[order[run]] = major[run]
        counts[order[run]] = kept[run]
        return Allocation(types, counts)

    def _note_trained(self, view: PolicyView) -> None:
        """The most GPUs each job has trained on: a job that made progress since the previous
        decision did so on the GPUs it holds now (the artifact's bound reads the replicas of the
        step times its job recorded, and a job records one only once its checkpoint-restore delay
        is over: job.py step and update_params)."""
        ids = view.job_id
        progressed = (view.gpus > 0) & (view.done > self.done_seen[ids])
        self.most_gpus[ids[progressed]] = np.maximum(self.most_gpus[ids[progressed]], view.gpus[progressed])
        self.done_seen[ids] = view.done

    def _adapt_front(self, ids: np.ndarray) -> np.ndarray:
        """The previous first front over this decision's jobs: a job that was there keeps its
        rows, a new one starts with none (pollux_unaware.py, _adapt_prev_states)."""
        states = np.zeros((len(self.front), len(ids), len(self.host_type)), dtype=COUNT)
        where = {int(j): i for i, j in enumerate(self.front_jobs)}
        src = np.array([where.get(int(j), -1) for j in ids])
        there = src >= 0
        states[:, there] = self.front[:, src[there]]
        return states

    def _one_type(self, problem: Problem, state: np.ndarray):
        """A job's GPUs on the type it has most of, the rest dropped (cluster_unaware.py,
        fix_allocations_by_dropping). A job left below its fewest GPUs (a rigid gang cut by the
        drop) is topped up on that type from the free GPUs, most free hosts first, larger jobs
        first, or does not run (cluster_unaware.py, repair_allocations_mip_fix, the artifact's
        rule for jobs of a fixed size)."""
        major = problem.majority_type(state[None])[0]
        keep = self.host_type[None, :] == major[:, None]
        self.dropped_gpus += int(state[~keep].sum())
        state = np.where(keep, state, 0).astype(np.int64)
        kept = state.sum(axis=1)
        short = np.flatnonzero((kept > 0) & (kept < problem.min_reps))
        state[short] = 0
        for j in short[np.argsort(-problem.min_reps[short], kind="stable")]:
            hosts = np.flatnonzero(problem.allowed[j] & (self.host_type == major[j]))
            free = problem.host_cap[hosts].astype(np.int64) - state[:, hosts].sum(axis=0)
            need = int(problem.min_reps[j])
            if free.sum() < need:
                continue
            for h in np.argsort(-free, kind="stable"):
                take = min(need, int(free[h]))
                state[j, hosts[h]], need = take, need - take
                if need == 0:
                    break
        self.topped_up += int((state[short].sum(axis=1) > 0).sum())
        kept = state.sum(axis=1)
        return state, major, kept

    def _remember(self, problem: Problem, ids: np.ndarray, state: np.ndarray, kept: np.ndarray) -> None:
        run = kept > 0
        moved = (state != problem.base).any(axis=1)
        # cluster_unaware.py / job.py: every start after the first and every change of hosts is a restart
        self.restarts[ids[run & moved & self.started[ids]]] += 1
        self.started[ids[run]] = True
        if self.explore_from == "given":
            self.most_gpus[ids] = np.maximum(self.most_gpus[ids], kept)
        self.alloc[ids] = state

    def stats(self) -> dict[str, float]:
        return {
            "pollux_dropped_gpus": float(self.dropped_gpus),
            "pollux_topped_up_jobs": float(self.topped_up),
            "pollux_short_generations": float(self.short_generations),
            "pollux_zero_goodput_jobs": float(self.zero_goodput),
        }


def type_preference(cluster: ClusterSpec) -> np.ndarray:
    """The cluster's types by memory bandwidth, highest first (Sia's fixed order of its GPU types,
    A100 > V100 > RTX 6000 > 2080Ti > T4, is theirs); the cluster's order where the datasheet does
    not know a type."""
    try:
        bandwidth = np.array([spec.mem_bw_gb_s for spec in cluster.specs], dtype=float)
    except (InputError, KeyError, AttributeError):
        return np.arange(cluster.num_types)
    return np.argsort(-bandwidth, kind="stable")


class Problem:
    """One decision's constants: the current allocation, each job's bounds and the speedups the
    policy believes, over the jobs in the repair's order (rows) and the cluster's hosts."""

    def __init__(self, policy: PolluxPolicy, view: PolicyView, order: np.ndarray):
        self.policy = policy
        ids = view.job_id[order]
        gph = view.cluster.gpus_per_host
        host_type = policy.host_type
        self.host_type, self.preference = host_type, policy.preference
        # host capacity from the view's GPUs per type: whole hosts first, the remainder on the last
        rank = np.arange(len(host_type)) - view.cluster.host_offsets[host_type]
        self.host_cap = np.clip(view.capacity[host_type] - rank * gph, 0, gph).astype(COUNT)
        self.allowed = view.feasible[order][:, host_type] & (self.host_cap[None, :] > 0)
        self.per_host_max = np.where(self.allowed, self.host_cap[None, :], 0).astype(COUNT)
        # bounds: a rigid job its gang; an elastic one up to twice the most it has run on
        elastic = view.elastic[order]
        smallest = int(view.capacity[view.capacity > 0].min()) if (view.capacity > 0).any() else 0
        explored = np.maximum(np.floor(policy.explore_factor * policy.most_gpus[ids]).astype(np.int64), 1)
        grow = np.minimum(np.minimum(view.max_gpus[order], explored), smallest)
        self.min_reps = np.where(elastic, view.min_gpus[order], view.workers[order]).astype(np.int64)
        self.max_reps = np.where(elastic, np.maximum(grow, view.min_gpus[order]), view.workers[order]).astype(np.int64)
        self.max_hosts = policy.max_hosts_per_job
        self.most = self.max_reps.astype(COUNT)
        self.base = self._current(view, order, ids)
        self.speedup = self._speedups(view, order, elastic)
        self.factor = realloc_factor(view.now - view.arrival[order], policy.restarts[ids], policy.restart_delay_s)
        self.scale = len(host_type) / max(int(self.host_cap.sum()), 1)  # dominant share x hosts
        self.p = policy.p

    def _current(self, view: PolicyView, order: np.ndarray, ids: np.ndarray) -> np.ndarray:
        """The jobs' hosts now: the policy's record where it agrees with what runs, else packed anew."""
        rows = self.policy.alloc[ids].copy()
        last, gpus = view.last_type[order], view.gpus[order]
        agrees = np.where(
            last >= 0,
            (rows.sum(axis=1) == gpus) & ((rows == 0) | (self.host_type[None, :] == last[:, None])).all(axis=1),
            rows.sum(axis=1) == 0,
        )
        rows[~agrees] = 0
        for j in np.flatnonzero(~agrees & (last >= 0)):
            free = self.host_cap - rows.sum(axis=0)
            need = int(gpus[j])
            for h in np.flatnonzero(self.host_type == last[j]):
                take = min(need, max(int(free[h]), 0))
                rows[j, h], need = take, need - take
                if need == 0:
                    break
        return rows.astype(COUNT)

    def _speedups(self, view: PolicyView, order: np.ndarray, elastic: np.ndarray) -> np.ndarray:
        """float [jobs, hosts + 1, GPUs + 1]: each job's believed speedup on that many hosts and GPUs."""
        n = len(order)
        gph = view.cluster.gpus_per_host
        hmax = min(self.max_hosts, len(self.host_type))
        gmax = int(self.max_reps.max())
        fair = math.ceil(max(int(view.capacity.sum()), 1) / n)  # ceil(1 / dominant share / jobs)
        table = np.zeros((n, hmax + 1, gmax + 1))
        hh, gg = np.meshgrid(np.arange(hmax + 1), np.arange(gmax + 1), indexing="ij")
        shape_ok = (hh >= 1) & (hh <= gg) & (gg <= hh * gph)
        linear = np.where(shape_ok, gg / fair, 0.0)
        table[:] = linear[None]
        seen = view.prev_type[order] >= 0
        rows_of = order
        # jobs that have run: their goodput on the type they last ran on
        j, h, g = np.nonzero(shape_ok[None] & seen[:, None, None] & (gg[None] <= self.max_reps[:, None, None]))
        if len(j):
            belief = view.prev_type[order][j]
            rate = view.goodput(rows_of[j], belief, g, h)
            ran = np.flatnonzero(seen)
            types = view.prev_type[order][ran]
            one_host = view.goodput(rows_of[ran], types, np.full(len(ran), fair), np.ones(len(ran), dtype=np.int64))
            gang = view.workers[order][ran]
            packed = view.goodput(rows_of[ran], types, gang, -(-gang // gph))
            base = np.zeros(n)
            base[ran] = np.where(elastic[ran], one_host, 0.0)
            # a rigid job (and a count its model cannot run at the fair share): its linear speedup,
            # times its goodput on these hosts over its goodput packed
            rigid_scale = np.zeros(n)
            rigid_scale[ran] = np.where(packed > 0, gang / fair / np.where(packed > 0, packed, 1.0), 0.0)
            with np.errstate(divide="ignore", invalid="ignore"):
                by_base = rate / base[j]
            value = np.where(base[j] > 0, by_base, np.where(elastic[j], g / fair, rate * rigid_scale[j]))
            table[j, h, g] = value
        # a job only ever takes counts in its range
        outside = (gg[None] < self.min_reps[:, None, None]) | (gg[None] > self.max_reps[:, None, None])
        table[outside & (gg[None] > 0)] = 0.0
        return table

    # ---- the objectives -------------------------------------------------------------------------
    def evaluate(self, states: np.ndarray) -> np.ndarray:
        """float [P, 2]: (- power mean of scaled speedups, - cluster utility), both minimised."""
        reps = states.sum(axis=2)
        hosts = np.count_nonzero(states, axis=2)
        rows = np.arange(states.shape[1])[None, :]
        speedups = self.speedup[rows, hosts, reps]
        scaled = speedups * self.scale
        moved = (states != self.base[None]).any(axis=2)
        scaled = np.where(moved, scaled * self.factor[None, :], scaled)
        if self.p == 0:
            mean = np.exp(np.log(np.maximum(scaled, SPEEDUP_FLOOR)).mean(axis=1))
        else:
            mean = np.power(np.power(scaled + SPEEDUP_FLOOR, self.p).mean(axis=1), 1.0 / self.p)
        in_use = (states.sum(axis=1) > 0) @ self.host_cap
        with np.errstate(divide="ignore", invalid="ignore"):
            utility = np.where(in_use > 0, speedups.sum(axis=1) / in_use, 0.0)
        return np.column_stack([-mean, -utility])

    # ---- the operators --------------------------------------------------------------------------
    def majority_type(self, states: np.ndarray) -> np.ndarray:
        """int [P, jobs]: the type holding most of each job's GPUs (ties: the preferred type)."""
        onehot = self.host_type[:, None] == self.preference[None, :]  # [N, T] in preference order
        per_type = states @ onehot.astype(COUNT)
        return self.preference[np.argmax(per_type, axis=2)]

    def repair(self, states: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        states = np.where(self.allowed[None], states, 0)
        # one job spanning several hosts per host, the first in job order keeps it
        spread = np.count_nonzero(states, axis=2) > 1
        crowded = np.cumsum((states > 0) & spread[:, :, None], axis=1, dtype=COUNT) > 1
        states[crowded] = 0
        # at most max_reps GPUs and max_hosts hosts per job, hosts taken in random order
        over = (states.sum(axis=2) > self.max_reps[None, :]) | (np.count_nonzero(states, axis=2) > self.max_hosts)
        p_idx, j_idx = np.nonzero(over)
        if len(p_idx):
            rows = states[p_idx, j_idx]
            shuffle = np.argsort(rng.random(rows.shape), axis=1)
            rows = np.take_along_axis(rows, shuffle, axis=1)
            rows = steps(np.minimum(np.cumsum(rows, axis=1, dtype=COUNT), self.most[j_idx, None]), axis=1)
            first = steps(np.minimum(np.cumsum(rows > 0, axis=1, dtype=COUNT), self.max_hosts), axis=1)
            rows[first == 0] = 0
            states[p_idx, j_idx] = np.take_along_axis(rows, np.argsort(shuffle, axis=1), axis=1)
        # host capacity, jobs in order
        states = steps(np.minimum(np.cumsum(states, axis=1, dtype=COUNT), self.host_cap[None, None, :]), axis=1)
        if self.policy.mixed_types == "repair":
            major = self.majority_type(states)
            states = np.where(self.host_type[None, None, :] == major[:, :, None], states, 0)
        states[states.sum(axis=2) < self.min_reps[None, :]] = 0
        return states

    def mutate(self, states: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        policy = self.policy
        size, jobs, hosts = states.shape
        # (1) a job's row back to its current allocation
        back = rng.random((size, jobs)) < policy.reset_prob
        states = np.where(back[:, :, None], self.base[None], states)
        # (2) some rows have some of their hosts zeroed
        p_idx, j_idx = np.nonzero(rng.random((size, jobs)) < policy.zero_row_prob)
        rows = states[p_idx, j_idx]
        rows[rng.random(rows.shape, dtype=np.float32) < policy.zero_prob] = 0
        states[p_idx, j_idx] = rows
        # (3) GPUs added on hosts with room: any job (1 / jobs), and the jobs already there (1 / how
        # many), the two as independent chances; the new count on that host uniform from what it
        # holds to the host's size
        room = (self.host_cap[None, :] - states.sum(axis=1, dtype=COUNT)) >= 1  # [P, N]
        prob1 = np.where(room, np.float32(1.0 / jobs), np.float32(0.0))[:, None, :]
        there = (states > 0) & room[:, None, :]
        share = (1.0 / np.maximum(there.sum(axis=1, keepdims=True, dtype=COUNT), 1)).astype(np.float32)
        chance = prob1 + there * share * (1 - prob1)
        grow = np.nonzero(rng.random(states.shape, dtype=np.float32) < chance)
        low = states[grow]
        high = np.maximum(self.per_host_max[grow[1], grow[2]], low)
        states[grow] = low + np.floor(rng.random(len(low)) * (high - low + 1)).astype(COUNT)
        return states

    def crossover(self, first: np.ndarray, second: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """Single point over jobs: each child takes the other parent's rows before the point."""
        matings, jobs = first.shape[:2]
        cross = rng.random(matings) < self.policy.crossover_prob
        point = rng.integers(0, jobs, size=matings)
        swap = (np.arange(jobs)[None, :] < point[:, None]) & cross[:, None]
        swap = swap[:, :, None]
        return np.concatenate([np.where(swap, second, first), np.where(swap, first, second)])


class Search:
    """NSGA-II as pymoo 0.4.2 runs it: binary tournaments by domination then crowding, offspring
    without duplicates, survival by rank and crowding."""

    def __init__(self, problem: Problem, policy: PolluxPolicy):
        self.problem, self.policy, self.rng = problem, policy, policy.rng

    def run(self, start: np.ndarray) -> np.ndarray:
        """The final population's first front, best power mean first."""
        problem, rng, policy = self.problem, self.rng, self.policy
        pop = unique_rows(problem.repair(start.copy(), rng))
        scores = problem.evaluate(pop)
        pop, scores, rank, crowd = survive(pop, scores, len(pop), rng)
        for _ in range(policy.generations - 1):
            off = self._offspring(pop, scores, crowd)
            if len(off) == 0:
                break
            pop = np.concatenate([pop, off])
            scores = np.concatenate([scores, problem.evaluate(off)])
            pop, scores, rank, crowd = survive(pop, scores, policy.population, rng)
        front = np.flatnonzero(rank == 0)
        best = front[np.argmin(scores[front, 0])]
        rest = front[front != best]
        return pop[np.r_[best, rest]]

    def _offspring(self, pop, scores, crowd) -> np.ndarray:
        """Up to ``population`` new states, none seen before: as pymoo's mating loop, each of at
        most ``mating_tries`` + 1 rounds mates ceil(remaining / 2) pairs and keeps the children
        that repeat neither the population, nor a child kept, nor one before them in the round.
        The pairs are drawn in batches, never more than the loop could still ask for (children
        are independent given the population, so this is the same draw in fewer numpy calls)."""
        policy = self.policy
        wanted = policy.population
        seen = {row.tobytes() for row in pop}
        kept: list[np.ndarray] = []
        pool = Matings(self, pop, scores, crowd)
        rounds = policy.mating_tries + 1
        for done in range(rounds):
            remaining = wanted - len(kept)
            if remaining <= 0:
                break
            matings = math.ceil(remaining / 2)
            first, second = pool.take(matings, (rounds - done) * matings)
            fresh, in_round = [], set()
            for child in (*first, *second):
                key = child.tobytes()
                if key not in seen and key not in in_round:
                    in_round.add(key)
                    fresh.append((key, child))
            for key, child in fresh[:remaining]:
                seen.add(key)
                kept.append(child)
        if len(kept) < wanted:
            policy.short_generations += 1
        shape = (0, *pop.shape[1:])
        return np.stack(kept) if kept else np.empty(shape, dtype=pop.dtype)


class Matings:
    """Children of tournament-chosen parents, crossed, mutated and repaired, handed out in order
    of their draw, in batches that double while children keep repeating the population."""

    def __init__(self, search: Search, pop, scores, crowd):
        self.search, self.pop, self.scores, self.crowd = search, pop, scores, crowd
        self.batch = 0
        empty = np.empty((0, *pop.shape[1:]), dtype=pop.dtype)
        self.first, self.second = empty, empty

    def take(self, matings: int, most: int) -> tuple[np.ndarray, np.ndarray]:
        """The next ``matings`` pairs' children; ``most``: how many the caller may still ask for."""
        if len(self.first) < matings:
            self.batch = max(matings, 2 * self.batch)
            self._make(max(matings, min(self.batch, most)) - len(self.first))
        first, second = self.first[:matings], self.second[:matings]
        self.first, self.second = self.first[matings:], self.second[matings:]
        return first, second

    def _make(self, matings: int) -> None:
        problem, rng = self.search.problem, self.search.rng
        parents = tournament(self.scores, self.crowd, matings, rng)
        children = problem.crossover(self.pop[parents[:, 0]], self.pop[parents[:, 1]], rng)
        children = problem.repair(problem.mutate(children, rng), rng)
        self.first = np.concatenate([self.first, children[:matings]])
        self.second = np.concatenate([self.second, children[matings:]])


def steps(totals: np.ndarray, axis: int) -> np.ndarray:
    """The differences of running totals along ``axis`` (the first kept), in their own dtype."""
    out = totals.copy()
    lead = [slice(None)] * totals.ndim
    rest = list(lead)
    lead[axis], rest[axis] = slice(1, None), slice(None, -1)
    out[tuple(lead)] -= totals[tuple(rest)]
    return out


def first_occurrences(rows: np.ndarray) -> np.ndarray:
    """bool: each row is the first of its value."""
    seen: set[bytes] = set()
    out = np.zeros(len(rows), dtype=bool)
    for i, row in enumerate(rows):
        key = row.tobytes()
        out[i] = key not in seen
        seen.add(key)
    return out


def unique_rows(states: np.ndarray) -> np.ndarray:
    """The states without repeats, first occurrences in order."""
    return states[first_occurrences(states)]


def dominates(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """bool: a[..., :] dominates b[..., :] (every objective no worse, one better; minimised),
    broadcast over the leading axes; one objective at a time (two here), not a reduction."""
    no_worse = np.ones(np.broadcast_shapes(a.shape[:-1], b.shape[:-1]), dtype=bool)
    better = np.zeros_like(no_worse)
    for k in range(a.shape[-1]):
        no_worse &= a[..., k] <= b[..., k]
        better |= a[..., k] < b[..., k]
    return no_worse & better


def fronts(scores: np.ndarray, enough: int) -> list[np.ndarray]:
    """Non-dominated fronts, best first, until at least ``enough`` points are ranked."""
    beats = dominates(scores[:, None, :], scores[None, :, :])  # [i, k]: i dominates k
    beaten_by = beats.sum(axis=0)
    out, ranked = [], 0
    front = np.flatnonzero(beaten_by == 0)
    while len(front) and ranked < enough:
        out.append(front)
        ranked += len(front)
        beaten_by[front] = -1
        beaten_by -= beats[front].sum(axis=0)
        front = np.flatnonzero(beaten_by == 0)
    return out


def crowding(scores: np.ndarray) -> np.ndarray:
    """NSGA-II's crowding distance of one front (pymoo's: repeated points get 0, the extremes inf)."""
    n, m = scores.shape
    if n <= 2:
        return np.full(n, np.inf)
    unique = first_occurrences(scores)
    points = scores[unique]
    order = np.argsort(points, axis=0, kind="mergesort")
    ranked = points[order, np.arange(m)]
    gaps = np.vstack([ranked, np.full(m, np.inf)]) - np.vstack([np.full(m, -np.inf), ranked])
    span = ranked.max(axis=0) - ranked.min(axis=0)
    span = np.where(span == 0, np.nan, span)
    with np.errstate(invalid="ignore"):
        before, after = gaps[:-1] / span, gaps[1:] / span
    before, after = np.nan_to_num(before, nan=0.0, posinf=np.inf), np.nan_to_num(after, nan=0.0, posinf=np.inf)
    back = np.argsort(order, axis=0)
    distance = (before[back, np.arange(m)] + after[back, np.arange(m)]).sum(axis=1) / m
    out = np.zeros(n)
    out[unique] = distance
    return out


def survive(pop, scores, size, rng):
    """The ``size`` best by rank, the last front cut by crowding (ties in random order)."""
    keep, ranks, crowds = [], [], []
    for k, front in enumerate(fronts(scores, size)):
        distance = crowding(scores[front])
        if len(keep) + len(front) > size:
            shuffled = rng.permutation(len(front))
            pick = shuffled[np.argsort(-distance[shuffled], kind="stable")][: size - len(keep)]
            front, distance = front[pick], distance[pick]
        keep.extend(front.tolist())
        ranks.extend([k] * len(front))
        crowds.extend(distance.tolist())
        if len(keep) >= size:
            break
    keep = np.array(keep, dtype=np.int64)
    return pop[keep], scores[keep], np.array(ranks), np.array(crowds)


def tournament(scores, crowd, matings, rng) -> np.ndarray:
    """int [matings, 2]: parents, each the winner of a binary tournament (domination, then the
    larger crowding distance, then a coin), over concatenated random permutations."""
    n = len(scores)
    draws = matings * 2 * 2
    perms = np.concatenate([rng.permutation(n) for _ in range(math.ceil(draws / n))])[:draws]
    a, b = perms.reshape(-1, 2).T
    coin = rng.random(len(a)) < 0.5
    a_wins = dominates(scores[a], scores[b])
    b_wins = dominates(scores[b], scores[a])
    by_crowd = np.where(crowd[a] > crowd[b], a, np.where(crowd[b] > crowd[a], b, np.where(coin, a, b)))
    winner = np.where(a_wins, a, np.where(b_wins, b, by_crowd))
    return winner.reshape(matings, 2)
