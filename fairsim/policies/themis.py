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
  The auction is a max-weight assignment of jobs to types under per-type GPU capacity, solved
  exactly with scipy's MILP (HiGHS) on the candidates that could win (for each gang width and
  type, the best-valued jobs up to the number of gangs of that width the free GPUs can hold),
  with a greedy fallback above ``max_milp_jobs`` candidates. Auctions of more than
  ``exact_gpus`` free GPUs (only at scale: the testbed has 36) first try the LP relaxation and a
  dive (``auction_dive``), whose answer stands when it is within ``dive_gap`` of an upper bound,
  the gap HiGHS' MILP stops on; else the MILP runs, with a valid cut on the number of winners.
  ``solver=milp`` always runs the plain MILP.
- T_ideal: the job's throughput on a 1/N share of every type, using its fastest types first,
  each for at most (count_k / N) / workers of the time, the time fractions summing to <= 1;
  T_ideal = work / that throughput. It only ranks jobs (who is offered first).
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
``max_milp_jobs`` (default 2000).
"""

from __future__ import annotations

import math

import numpy as np
from scipy.optimize import Bounds, LinearConstraint, milp
from scipy.sparse import csr_matrix

from fairsim.cluster import ClusterSpec
from fairsim.errors import require
from fairsim.fairness.share import share_rate
from fairsim.policies.base import NOT_RUN, Policy, PolicyView
from fairsim.policies.queues import fastest_first, greedy_fill
from fairsim.solve.auction import dive_value_assignment, feasible_pairs, max_winners


def ideal_throughput(view: PolicyView) -> np.ndarray:
    """Throughput of each job on a 1/N share of every GPU type (N = jobs in the view)."""
    return share_rate(np.where(view.feasible, view.throughput, 0.0), view.workers, view.capacity, view.num_jobs)


def auction_candidates(value: np.ndarray, widths: np.ndarray, free: np.ndarray) -> np.ndarray:
    """Rows that can appear in some optimal allocation: per gang width w and type k, the M_w
    best bids on k, where M_w = how many width-w gangs all free GPUs can hold (any winner
    outside that set could be swapped for an idle one in it without losing value)."""
    keep = np.zeros(len(widths), dtype=bool)
    for w in np.unique(widths):
        rows = np.flatnonzero(widths == w)
        slots = int((free // w).sum())
        if slots == 0:
            continue
        for k in range(value.shape[1]):
            if free[k] < w:
                continue
            good = rows[value[rows, k] > 0]
            if len(good) > slots:
                good = good[np.argsort(-value[good, k], kind="stable")[:slots]]
            keep[good] = True
    return np.flatnonzero(keep)


def max_value_assignment(value: np.ndarray, widths: np.ndarray, free: np.ndarray) -> np.ndarray:
    """Exact max sum of value[j, k] x[j, k] with one type per job and sum_j widths_j x[j, k] <= free_k,
    over positive values only (HiGHS MILP). Returns a type per row or -1."""
    exact = milp_value_assignment(value, widths, free)
    return greedy_value_assignment(value, widths, free) if exact is None else exact


def milp_value_assignment(value: np.ndarray, widths: np.ndarray, free: np.ndarray,
                          winner_cut: bool = False) -> np.ndarray | None:
    """The MILP of ``max_value_assignment``; None when HiGHS fails or raises (the caller falls back).
    ``winner_cut`` adds the valid cut "at most ``max_winners`` winners": the same optimum, and on
    large packings of gangs HiGHS proves it in tens of milliseconds instead of seconds."""
    n, t = value.shape
    pairs = feasible_pairs(value, widths, free)
    out = np.full(n, NOT_RUN, dtype=np.int64)
    if len(pairs) == 0:
        return out
    m = len(pairs)
    j, k = pairs[:, 0], pairs[:, 1]
    cols = np.arange(m)
    one_type = csr_matrix((np.ones(m), (j, cols)), shape=(n, m))
    capacity = csr_matrix((widths[j].astype(np.float64), (k, cols)), shape=(t, m))
    constraints = [LinearConstraint(one_type, 0, 1), LinearConstraint(capacity, 0, free.astype(np.float64))]
    try:
        most = max_winners(value, widths, free, pairs) if winner_cut else None
        if most is not None:
            constraints.append(LinearConstraint(np.ones((1, m)), 0, most))
        res = milp(-value[j, k], integrality=np.ones(m), bounds=Bounds(0, 1), constraints=constraints)
    except Exception:  # noqa: BLE001 - a solver crash is a failure like any other
        return None
    if res.x is None:
        return None
    chosen = res.x > 0.5
    out[j[chosen]] = k[chosen]
    return out


def greedy_value_assignment(value: np.ndarray, widths: np.ndarray, free: np.ndarray) -> np.ndarray:
    """Best bid first: each (job, type) pair in descending value, taken if the job is unplaced and fits."""
    free = free.copy()
    out = np.full(value.shape[0], NOT_RUN, dtype=np.int64)
    flat = np.argsort(-value, axis=None, kind="stable")
    for idx in flat:
        j, k = divmod(int(idx), value.shape[1])
        if value[j, k] <= 0:
            break
        if out[j] < 0 and free[k] >= widths[j]:
            out[j] = k
            free[k] -= widths[j]
            if free.max() <= 0:
                break
    return out


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


class ThemisPolicy(Policy):
    def __init__(self, fairness_knob: float = 0.2, lease_s: float = 300.0, max_milp_jobs: int = 2000,
                 rank: str = "wanting", leftover: str = "auction", waiting_rho: str = "unbounded",
                 solver: str = "lp_dive", exact_gpus: int = 64, dive_gap: float = 1e-4):
        require(0 <= fairness_knob < 1, "policy", "fairness_knob", f"must be in [0, 1), got {fairness_knob!r}")
        require(lease_s > 0, "policy", "lease_s", f"must be > 0 seconds, got {lease_s!r}")
        require(max_milp_jobs >= 0, "policy", "max_milp_jobs", f"must be >= 0, got {max_milp_jobs!r}")
        require(rank in RANKS, "policy", "rank", f"{rank!r} is not one of {', '.join(RANKS)}")
        require(leftover in LEFTOVERS, "policy", "leftover", f"{leftover!r} is not one of {', '.join(LEFTOVERS)}")
        require(waiting_rho in WAITING_RHOS, "policy", "waiting_rho",
                f"{waiting_rho!r} is not one of {', '.join(WAITING_RHOS)}")
        require(solver in SOLVERS, "policy", "solver", f"{solver!r} is not one of {', '.join(SOLVERS)}")
        require(exact_gpus >= 0, "policy", "exact_gpus", f"must be >= 0, got {exact_gpus!r}")
        require(0 <= dive_gap < 1, "policy", "dive_gap", f"must be in [0, 1), got {dive_gap!r}")
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
        return t_shared * ideal_throughput(view) / view.work

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
        self.auctions += 1
        rows = auction_candidates(value, widths, free)
        out = np.full(len(widths), NOT_RUN, dtype=np.int64)
        if len(rows) == 0:
            return out
        if len(rows) > self.max_milp_jobs:
            self.greedy_auctions += 1
            out[rows] = greedy_value_assignment(value[rows], widths[rows], free)
        else:
            large = self.dive and int(free.sum()) > self.exact_gpus
            exact = self.dive_assignment(value[rows], widths[rows], free) if large else None
            if exact is None:
                exact = milp_value_assignment(value[rows], widths[rows], free, winner_cut=large)
            if exact is None:
                self.solver_fallbacks += 1
                exact = greedy_value_assignment(value[rows], widths[rows], free)
            out[rows] = exact
        return out

    def dive_assignment(self, value: np.ndarray, widths: np.ndarray, free: np.ndarray) -> np.ndarray | None:
        """The LP dive's answer (None: it could not show it within ``dive_gap``; the MILP decides)."""
        out = dive_value_assignment(value, widths, free, self.dive_gap)
        self.dive_auctions += out is not None
        self.dive_misses += out is None
        return out

    def stats(self) -> dict[str, float]:
        return {"themis_auctions": float(self.auctions), "themis_greedy_auctions": float(self.greedy_auctions),
                "solver_fallbacks": float(self.solver_fallbacks), "themis_dive_auctions": float(self.dive_auctions),
                "themis_dive_misses": float(self.dive_misses)}
