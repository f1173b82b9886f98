"""Themis (Mahajan et al., "Themis: Fair and Efficient GPU Cluster Scheduling", NSDI'20):
finish-time fairness through short-term auctions of GPU leases.

The algorithm, as the paper and its authors' simulator and YARN prototype do it (facts in
docs/baselines.md). A job's finish-time fairness is rho = T_shared / T_ideal. GPUs are handed
out as leases. Whenever GPUs are free, the arbiter ranks the jobs that want GPUs by rho, worst
first, and offers the free GPUs to the worst floor((1 - f) x n) of those n jobs (at least one;
f in [0, 1) is the fairness knob). Each offered job bids only for bundles that would lower its
rho; the partial-allocation auction picks the allocation maximizing the product of the
participants' rho improvements. While GPUs remain free, the auction is repeated among the
next-worst jobs (the simulator's leftover allocation).

How this module maps it onto rounds and GPU types:

- Bundles: a job runs its whole gang on one GPU type, so a bid is a value per type. On type k,
  T_shared = age + switch overhead on k (``view.switch_cost_s``) + remaining / throughput[k].
  A job that wants GPUs holds none, so (``waiting_rho``):
  ``unbounded`` (default): its rho now is unbounded and every feasible type would lower it, so
  it bids on every type. The product of rho improvements is then largest with the most winners;
  among those, the product of the improvements against the ``lease_wait`` estimate below
  decides: bid value M + log(rho_wait / rho_k) with M large enough that one more winner
  outweighs any change among the others (``unbounded_bids``).
  ``lease_wait``: its rho now is estimated as if it waited one more lease and then ran on its
  fastest type (T_shared = age + lease + remaining / best throughput); bid value
  log(rho_wait / rho_k), T_ideal cancelling; only values > 0 bid, so a long job may refuse a
  much slower type and leave it idle.
  The auction is a max-weight assignment of jobs to types under per-type GPU capacity: FFT's
  gang assignment program with cost = -bid and no floor on the GPUs used
  (``fairsim.solve.auction``), pruned exactly to the candidates that could win
  (``prune_dominated``), with a greedy fallback (``solve_greedy``) above ``max_milp_jobs``
  candidates. Auctions of at most ``exact_gpus`` free GPUs (every auction of the 36-GPU
  testbed) are solved exactly (HiGHS' MILP, within ``dive_gap``). Larger ones are dived as FFT's
  rounds are (``lp_dive``); the dive's answer stands when it is within ``dive_gap`` of the LP
  bound or of the LP with a valid cut on the number of winners, else the MILP runs, with the
  cut. ``solver=milp`` always runs the MILP.
- T_ideal (``t_ideal``): ``alone`` (default, as both the authors' simulator and their YARN
  prototype compute it: the job alone at its full demand, no 1/N factor): work / its throughput
  on its fastest type. ``share`` (the paper's definition): the job's throughput on a 1/N share
  of every type, using its fastest types first, each for at most (count_k / N) / workers of the
  time, the time fractions summing to <= 1; T_ideal = work / that throughput. Either only ranks
  jobs (who is offered first): T_ideal cancels in the bids.
- Auctions per round: the ranked jobs are cut into successive groups, floor((1 - f) x remaining)
  at a time, worst rho first; each group holds one auction on the GPUs still free; a job
  offered once is not offered again that round (its rho did not change). The loop ends when no
  waiting job's gang fits in the free GPUs or every job has been offered.
- Ranking uses a finite rho for every job: lease holders at their leased type's speed, the
  others with the ``lease_wait`` estimate above.
- Leases: a lease lasts ``lease_s`` seconds, rounded up to whole rounds. A job keeps its type
  until its lease ends (or it finishes); then its GPUs return to the pool and it bids again, with
  no switch overhead on the type it holds, so renewals are cheap. Leases are per job, so with
  staggered expiries only some GPUs are auctioned in a given round, as in Themis.
- Omitted: hidden payments (the fraction of each winner's allocation Themis withholds to make
  truthful bidding a best response). Simulated jobs bid truthfully, and a gang cannot run on a
  fraction of its GPUs, so every winner gets its whole bundle. Themis' app-level bidding
  (several jobs of one app) collapses to one job per app here.

Options and defaults: ``fairness_knob`` f = 0.2 and ``lease_s`` = 300 s are the defaults of
the authors' YARN prototype (its simulator sweeps the fraction offered); ``rank`` = wanting
(only jobs without a lease are ranked and offered, as in the simulator) or all (every job is
ranked, lease holders take offer slots without bidding); ``leftover`` = auction (repeat among
the next-worst) or greedy (GPUs left after the first auction go to the jobs not offered any,
worst rho first, each on its fastest free type, whatever its bid); ``waiting_rho`` =
unbounded or lease_wait (above). ``fairness_knob=0.8 lease_s=600 rank=all leftover=greedy
waiting_rho=lease_wait`` is a simpler reading (every job ranked, one auction, leftovers handed
out greedily, lease-wait bids; measured beside the default in docs/baselines.md);
``t_ideal`` = alone or share (above); ``max_milp_jobs`` (default 2000).
"""

from __future__ import annotations

import math

import numpy as np

from fairsim.cluster import ClusterSpec
from fairsim.errors import require
from fairsim.fairness.share import share_rate
from fairsim.policies.base import NOT_RUN, Policy, PolicyView
from fairsim.policies.queues import fastest_first, greedy_fill
from fairsim.solve.auction import auction_problem, solve_auction
from fairsim.solve.budget import DEFAULT_LIMITS, DIVE_LPS, LP_ITERATIONS, MIP_NODES, Budget, Limits, check_limits
from fairsim.solve.program import AssignmentProblem, prune_dominated, solve_greedy


def ideal_throughput(view: PolicyView) -> np.ndarray:
    """Throughput of each job on a 1/N share of every GPU type (N = jobs in the view)."""
    return share_rate(np.where(view.feasible, view.throughput, 0.0), view.workers, view.capacity, view.num_jobs)


def alone_throughput(view: PolicyView) -> np.ndarray:
    """Throughput of each job alone on the cluster at its full demand: its gang on its fastest type."""
    return np.where(view.feasible, view.throughput, 0.0).max(axis=1)


IDEALS = {"alone": alone_throughput, "share": ideal_throughput}  # T_ideal = work / this


def unbounded_bids(gain: np.ndarray) -> np.ndarray:
    """Bid values of jobs that hold no GPUs, whose rho is unbounded: every feasible bundle lowers
    it, so every one is a bid. The product of rho improvements is then largest with the most
    winners; among allocations with as many winners, the product of the finite improvements
    ``gain`` (log rho_wait - log rho_k, the lease-wait estimate) decides. Value: big + gain,
    shifted to be >= 1, with big so large that one more winner outweighs any change among the
    others. Infeasible bundles (gain = -inf) get -inf."""
    finite = np.isfinite(gain)
    if not finite.any():
        return np.full(gain.shape, -np.inf)
    low, high = gain[finite].min(), gain[finite].max()
    big = 1.0 + (high - low) * (gain.shape[0] + 1)
    return np.where(finite, big + (gain - low), -np.inf)


SOLVERS = ("lp_dive", "milp")
RANKS = ("wanting", "all")
LEFTOVERS = ("auction", "greedy")
WAITING_RHOS = ("unbounded", "lease_wait")
LIMIT_KINDS = (LP_ITERATIONS, MIP_NODES, DIVE_LPS)  # the auctions' work limits, counted in the summary


class ThemisPolicy(Policy):
    def __init__(
        self,
        fairness_knob: float = 0.2,
        lease_s: float = 300.0,
        max_milp_jobs: int = 2000,
        rank: str = "wanting",
        leftover: str = "auction",
        waiting_rho: str = "unbounded",
        t_ideal: str = "alone",
        solver: str = "lp_dive",
        exact_gpus: int = 64,
        dive_gap: float = 1e-4,
        lp_iterations: int | None = DEFAULT_LIMITS.lp_iterations,
        mip_nodes: int | None = DEFAULT_LIMITS.mip_nodes,
        dive_lps: int | None = DEFAULT_LIMITS.dive_lps,
    ):
        require(0 <= fairness_knob < 1, "policy", "fairness_knob", f"must be in [0, 1), got {fairness_knob!r}")
        require(lease_s > 0, "policy", "lease_s", f"must be > 0 seconds, got {lease_s!r}")
        require(max_milp_jobs >= 0, "policy", "max_milp_jobs", f"must be >= 0, got {max_milp_jobs!r}")
        require(rank in RANKS, "policy", "rank", f"{rank!r} is not one of {', '.join(RANKS)}")
        require(leftover in LEFTOVERS, "policy", "leftover", f"{leftover!r} is not one of {', '.join(LEFTOVERS)}")
        require(
            waiting_rho in WAITING_RHOS,
            "policy",
            "waiting_rho",
            f"{waiting_rho!r} is not one of {', '.join(WAITING_RHOS)}",
        )
        require(t_ideal in IDEALS, "policy", "t_ideal", f"{t_ideal!r} is not one of {', '.join(IDEALS)}")
        self.ideal_rate = IDEALS[t_ideal]
        require(solver in SOLVERS, "policy", "solver", f"{solver!r} is not one of {', '.join(SOLVERS)}")
        require(exact_gpus >= 0, "policy", "exact_gpus", f"must be >= 0, got {exact_gpus!r}")
        require(0 <= dive_gap < 1, "policy", "dive_gap", f"must be in [0, 1), got {dive_gap!r}")
        check_limits("policy", lp_iterations=lp_iterations, mip_nodes=mip_nodes, dive_lps=dive_lps)
        self.limits = Limits(lp_iterations=lp_iterations, mip_nodes=mip_nodes, dive_lps=dive_lps)
        self.dive = solver == "lp_dive"
        self.exact_gpus = int(exact_gpus)
        self.dive_gap = float(dive_gap)
        self.f = float(fairness_knob)
        self.lease_s = float(lease_s)
        self.max_milp_jobs = int(max_milp_jobs)
        self.rank_all = rank == "all"
        self.greedy_leftover = leftover == "greedy"
        self.waiting_unbounded = waiting_rho == "unbounded"

    def reset(self, cluster: ClusterSpec, num_jobs: int, seed: int) -> None:
        self.held = np.full(num_jobs, NOT_RUN, dtype=np.int64)  # type of the job's current lease
        self.lease_end = np.full(num_jobs, -np.inf)
        self.auctions = 0
        self.greedy_auctions = 0
        self.solver_fallbacks = 0  # auctions whose MILP failed and the greedy answered
        self.dive_auctions = 0  # auctions the LP dive answered
        self.dive_misses = 0  # auctions the dive tried but could not show within dive_gap: the MILP answered
        self.budget = Budget(self.limits)  # the auctions' work limits and every hit of them

    def lease_len(self, view: PolicyView) -> float:
        return math.ceil(self.lease_s / view.round_len - 1e-9) * view.round_len

    def rho(self, view: PolicyView, holding: np.ndarray, t_wait: np.ndarray) -> np.ndarray:
        """Current finish-time-fairness estimate: lease holders at their leased type's speed,
        everyone else as if they waited a lease and then ran on their fastest type."""
        age = view.now - view.arrival
        rows = np.flatnonzero(holding)
        t_shared = t_wait.copy()
        held = self.held[view.job_id[rows]]
        t_shared[rows] = age[rows] + view.remaining[rows] / view.throughput[rows, held]
        return t_shared * self.ideal_rate(view) / view.work

    def offered_count(self, n: int) -> int:
        """Jobs offered GPUs in one auction: floor((1 - f) x n), at least one."""
        return max(1, math.floor((1.0 - self.f) * n + 1e-9))

    def decide(self, view: PolicyView) -> np.ndarray:
        ids = view.job_id
        holding = (self.lease_end[ids] > view.now + 1e-6) & (view.last_type >= 0)
        assignment = np.where(holding, self.held[ids], NOT_RUN)
        used = np.bincount(assignment[holding], weights=view.workers[holding], minlength=view.num_types)
        free = view.capacity - used.astype(np.int64)
        wanting = ~holding
        widths = view.workers
        if not wanting.any() or free.max() < widths[wanting].min():
            return assignment
        lease = self.lease_len(view)
        age = view.now - view.arrival
        best = np.where(view.feasible, view.throughput, 0.0).max(axis=1)
        t_wait = age + lease + view.remaining / best
        rho = self.rho(view, holding, t_wait)
        tput = np.where(view.feasible, view.throughput, np.nan)
        t_run = age[:, None] + view.switch_cost_s + view.remaining[:, None] / tput
        # log(rho waiting a lease / rho with the bundle); T_ideal cancels. With lease_wait only
        # values > 0 bid; with unbounded every feasible bundle bids (unbounded_bids).
        value = np.nan_to_num(np.log(t_wait[:, None] / t_run), nan=-np.inf)

        ranked = np.flatnonzero(np.ones(view.num_jobs, dtype=bool) if self.rank_all else wanting)
        ranked = ranked[np.lexsort((ranked, -rho[ranked]))]  # worst rho first
        while len(ranked):
            offered = self.offered_count(len(ranked))
            group, ranked = ranked[:offered], ranked[offered:]
            participants = group[wanting[group]]
            if len(participants):
                bids = unbounded_bids(value[participants]) if self.waiting_unbounded else value[participants]
                won = self.auction(bids, widths[participants], free)
                winners = participants[won >= 0]
                assignment[winners] = won[won >= 0]
                free -= np.bincount(won[won >= 0], weights=widths[winners], minlength=view.num_types).astype(np.int64)
            waiting = ranked[wanting[ranked]]
            if len(waiting) == 0 or free.max() < widths[waiting].min():
                break
            if self.greedy_leftover:
                # the greedy reading: leftovers to the jobs not offered any, worst rho first,
                # each on its fastest free type whatever its bid
                greedy_fill(view, waiting, fastest_first(view), free=free, assignment=assignment)
                break

        started = (assignment >= 0) & ~holding
        self.held[ids[started]] = assignment[started]
        self.lease_end[ids[started]] = view.now + lease
        return assignment

    def auction(self, value: np.ndarray, widths: np.ndarray, free: np.ndarray) -> np.ndarray:
        """One auction: a type per participant (or -1) maximizing the bids' total, on the
        candidates that could win (the program's exact pruning, ``prune_dominated``)."""
        self.auctions += 1
        out = np.full(len(widths), NOT_RUN, dtype=np.int64)
        pruned = prune_dominated(auction_problem(value, widths, free))
        rows = np.flatnonzero(pruned.feasible.any(axis=1))
        if len(rows) == 0:
            return out
        p = AssignmentProblem(pruned.cost[rows], pruned.feasible[rows], pruned.workers[rows], pruned.capacity, 0)
        if len(rows) > self.max_milp_jobs:
            self.greedy_auctions += 1
            out[rows] = solve_greedy(p).assignment
            return out
        try:
            sol = solve_auction(
                p, dive=self.dive and int(free.sum()) > self.exact_gpus, gap=self.dive_gap, budget=self.budget
            )
        except Exception:  # noqa: BLE001 - a solver crash is a failure like any other: the greedy answers
            sol = solve_greedy(p)
            sol.fallback = True
        if sol.fallback:  # the solvers' own fallback is this same greedy packing
            self.solver_fallbacks += 1
        else:
            self.dive_auctions += sol.info["auction"] == "dive"
            self.dive_misses += sol.info["auction"] == "milp_after_dive"
        out[rows] = sol.assignment
        return out

    def stats(self) -> dict[str, float]:
        return {
            "themis_auctions": float(self.auctions),
            "themis_greedy_auctions": float(self.greedy_auctions),
            "solver_fallbacks": float(self.solver_fallbacks),
            "themis_dive_auctions": float(self.dive_auctions),
            "themis_dive_misses": float(self.dive_misses),
            **self.budget.stats(LIMIT_KINDS),
        }
