"""``python -m fairsim.bench solver``: how long one FFT decision takes at the paper's scale,
round after round.

Each size runs ``--reps`` sequences of ``--rounds`` consecutive rounds of one busy cluster shaped
like the paper's scalability setting (PAPER.md sec. 5): 1,000 GPUs of 8 types (the ``scale8``
mix), jobs of 1/2/4/8 workers at 70/10/15/5%, random ages, work, progress, throughputs, state
sizes and rho, 5% of job-type pairs memory-infeasible. Between rounds the placed jobs progress
and finish, and new jobs arrive (``ChurnedRounds``), as in a simulation. Two FFT policies see the
same rounds: one re-solves the LP from scratch each round (cold, ``warm_start=false``), one keeps
it in HiGHS and restarts from the last basis (warm); the cold one's decisions drive the sequence.
The first round of each sequence (where both start cold) is left out of the medians. Columns:

- ``ours_s``: median seconds of ``FFTPolicy.decide`` (costs, K(t), solve) with the configured
  solver and the policy's default warm start setting (warm: `warm_start: true` in conf/policy/ours.yaml);
- ``cold_s``, ``warm_s``: the two, and ``warm_x`` = cold / warm; ``lp_cold_s``, ``lp_warm_s``:
  the LP relaxation's share of each (the rest is costs, K(t), pruning and the repair's sub-MILP);
- ``same``: share of rounds in which the two decided the same, job for job; ``warm_vs_cold``:
  median over rounds of (objective(warm) - objective(cold)) / |objective(cold)|;
- ``frac``: most fractional jobs in an LP vertex; ``gap_vs_LP``: worst certified gap (ours vs LP bound);
- ``milp``: (``--milp``) the exact program with scipy milp on ``--exact-rounds`` rounds per
  sequence, for the gap of the LP+repair route (``-`` when it never finished within the limit);
- ``cvxpy``: the same integer program written in cvxpy and solved by its default MILP solver
  (build + solve time), on the same rounds. Skipped, and said so, when cvxpy is not installed (an
  optional extra, never a runtime dependency);
- gaps: (objective(ours) - objective(other)) / |objective(other)|.

``--csv PATH`` writes the table as CSV as well (the same columns, gaps as fractions, not %).
"""

from __future__ import annotations

import argparse
import csv
import statistics
import time

import numpy as np

from fairsim.cluster import ClusterSpec
from fairsim.policies.base import PolicyView
from fairsim.policies.fft import SOLVERS, FFTPolicy
from fairsim.policies.queues import fastest_first, greedy_fill
from fairsim.solve.budget import Budget, Limits
from fairsim.solve.milp import solve_milp
from fairsim.solve.program import AssignmentProblem

SCALE8 = {"K80": 64, "P100": 96, "T4": 160, "V100": 160, "A10": 160, "L4": 96, "A100-40GB": 160, "A100-80GB": 104}
TYPE_SPEED = np.array([0.25, 0.45, 0.40, 0.75, 0.70, 0.60, 1.20, 1.30])  # rough relative speed, oldest to newest
ROUND_S = 300.0
START_S = 200 * 3600.0


def scale8(divide: int = 1) -> ClusterSpec:
    """The scale8 mix; ``divide`` > 1 shrinks every type (for tests: the same shape, smaller)."""
    return ClusterSpec.from_config({"name": "scale8", "counts": {k: max(1, v // divide) for k, v in SCALE8.items()}})


def draw_jobs(rng: np.random.Generator, count: int, now: float, cluster: ClusterSpec, max_age_s: float) -> dict:
    """``count`` jobs shaped like the paper's scalability setting (module docstring), arrived in
    the last ``max_age_s`` seconds (0: arriving now)."""
    t = cluster.num_types
    workers = rng.choice([1, 2, 4, 8], size=count, p=[0.70, 0.10, 0.15, 0.05]).astype(np.int64)
    base = rng.lognormal(0.0, 0.5, count)
    tput = base[:, None] * TYPE_SPEED[None, :] * rng.lognormal(0.0, 0.2, (count, t))
    feasible = rng.random((count, t)) >= 0.05
    feasible[np.arange(count), rng.integers(0, t, count)] = True  # every job runs somewhere
    feasible &= workers[:, None] <= cluster.counts[None, :]  # (on a divided cluster, not always)
    tput = np.where(feasible, tput, 0.0)
    work = tput.max(axis=1) * np.exp(rng.uniform(np.log(1800), np.log(100 * 3600), count))  # 0.5-100 h on its best type
    done = work * rng.uniform(0.0, 0.9, count) if max_age_s > 0 else np.zeros(count)
    arrival = now - rng.uniform(0, max_age_s, count) if max_age_s > 0 else np.full(count, now)
    state = np.exp(rng.uniform(np.log(0.4e9), np.log(107e9), count))
    return {
        "workers": workers,
        "throughput": tput,
        "feasible": feasible,
        "work": work,
        "done": done,
        "arrival": arrival,
        "state_bytes": state,
        "move_s": 30.0 + state / cluster.inter_host_bytes_per_s,
    }


class ChurnedRounds:
    """Consecutive rounds of one busy 1,000-GPU cluster, as a simulation would show them to FFT.

    Round 0 is ``num_jobs`` jobs in mid-run (random progress and ages over two days, the last
    round a random maximal packing). ``advance(assignment)`` plays one round: the jobs placed
    progress by a round of their type's throughput and leave when done, and new jobs arrive, a
    Poisson number with the departures of the round as its mean (at least ``min_arrivals``), so the
    active count wanders around where it started. Job ids are stable and never reused.
    ``divide`` shrinks the cluster (``scale8``), for tests."""

    def __init__(self, num_jobs: int, seed: int, min_arrivals: float = 2.0, divide: int = 1):
        self.rng = np.random.default_rng(seed)
        self.cluster = scale8(divide)
        self.capacity = self.cluster.counts.astype(np.int64)
        self.min_arrivals = float(min_arrivals)
        self.now = START_S
        self.jobs = draw_jobs(self.rng, num_jobs, self.now, self.cluster, 48 * 3600.0)
        order = np.argsort(self.jobs["arrival"], kind="stable")
        self.jobs = {k: v[order] for k, v in self.jobs.items()}
        self.job_id = np.arange(num_jobs)
        self.next_id = num_jobs
        self.last = np.full(num_jobs, -1)
        self.changed = True
        idle = self.view()
        self.last = greedy_fill(idle, self.rng.permutation(num_jobs), fastest_first(idle))

    def view(self) -> PolicyView:
        j, n, t = self.jobs, len(self.job_id), self.cluster.num_types
        switch = np.repeat(j["move_s"][:, None], t, axis=1)
        ran = np.flatnonzero(self.last >= 0)
        switch[ran, self.last[ran]] = 0.0
        return PolicyView(
            now=self.now,
            round_len=ROUND_S,
            cluster=self.cluster,
            capacity=self.capacity,
            job_id=self.job_id.copy(),
            arrival=j["arrival"],
            workers=j["workers"],
            work=j["work"],
            done=j["done"].copy(),
            weight=np.ones(n),
            throughput=j["throughput"],
            feasible=j["feasible"],
            last_type=self.last.copy(),
            prev_type=self.last.copy(),
            switch_cost_s=switch,
            state_bytes=j["state_bytes"],
            attained_gpu_s=np.zeros(n),
            run_s=np.zeros(n),
            first_start=np.zeros(n),
            changed=self.changed,
        )

    def advance(self, assignment: np.ndarray) -> None:
        j = self.jobs
        ran = np.flatnonzero(assignment >= 0)
        j["done"][ran] += j["throughput"][ran, assignment[ran]] * ROUND_S
        stay = j["done"] < j["work"]
        departed = int((~stay).sum())
        arriving = int(self.rng.poisson(max(departed, self.min_arrivals)))
        self.now += ROUND_S
        new = draw_jobs(self.rng, arriving, self.now, self.cluster, 0.0)
        self.jobs = {k: np.concatenate([v[stay], new[k]]) for k, v in j.items()}
        self.job_id = np.concatenate([self.job_id[stay], np.arange(self.next_id, self.next_id + arriving)])
        self.next_id += arriving
        self.last = np.concatenate([assignment[stay], np.full(arriving, -1)])
        self.changed = departed + arriving > 0


def cvxpy_solve(problem: AssignmentProblem, time_limit_s: float, mip_gap: float) -> tuple[float, float] | None:
    """Build and solve the same ILP in cvxpy; (objective, seconds) or None without cvxpy."""
    try:
        import cvxpy as cp
    except ImportError:
        return None
    from scipy import sparse

    tick = time.perf_counter()
    rows, types = np.nonzero(problem.feasible)
    nv = len(rows)
    n, t = problem.feasible.shape
    width = problem.workers[rows].astype(float)
    one_type = sparse.csr_matrix((np.ones(nv), (rows, np.arange(nv))), shape=(n, nv))
    per_type = sparse.csr_matrix((width, (types, np.arange(nv))), shape=(t, nv))
    x = cp.Variable(nv, boolean=True)
    cons = [one_type @ x <= 1, per_type @ x <= problem.capacity.astype(float), width @ x >= problem.min_gpus]
    prob = cp.Problem(cp.Minimize(problem.cost[rows, types] @ x), cons)
    kwargs = {"time_limit": time_limit_s, "mip_rel_gap": mip_gap} if "HIGHS" in cp.installed_solvers() else {}
    prob.solve(solver=cp.HIGHS if kwargs else None, **kwargs)
    elapsed = time.perf_counter() - tick
    if x.value is None:
        return float("nan"), elapsed
    chosen = x.value > 0.5
    assignment = np.full(n, -1, dtype=np.int64)
    assignment[rows[chosen]] = types[chosen]
    return problem.objective(assignment), elapsed


def _gap(ours: float, other: float) -> float:
    return (ours - other) / max(abs(other), 1e-12)


def start_policy(rounds: ChurnedRounds, seed: int, ids: int, **options) -> FFTPolicy:
    """A policy in mid-run state: random rho (a deficit of up to a few rounds of best-type work)
    for the jobs present, room for ``ids`` job ids in all."""
    policy = FFTPolicy(**options)
    policy.reset(rounds.cluster, ids, seed)
    n = len(rounds.job_id)
    policy.rho[:n] = np.random.default_rng(seed + 1).exponential(2.0, n)
    return policy


def run_size(n: int, args) -> dict:
    """Timings and checks over ``args.reps`` churned sequences of ``args.rounds`` rounds at ``n`` jobs."""
    common = {
        "solver": args.solver,
        "mip_gap": args.mip_gap,
    }  # the policy's own work limits; the wall clock is the exact solves' alone
    cold_t, warm_t, ours_t, same, frac, lp_gap, lp_cold, lp_warm, diff = [], [], [], [], [], [], [], [], []
    milp_t, milp_gap, cv_t, cv_gap = [], [], [], []
    default_is_warm = FFTPolicy(solver=args.solver).warm_start  # what ``policy=ours`` runs
    exact_at = (
        set(np.linspace(1, args.rounds - 1, args.exact_rounds).round().astype(int).tolist())
        if args.rounds > 1
        else set()
    )
    for rep in range(args.reps):
        seed = args.seed + 1000 * rep + n
        seq = ChurnedRounds(n, seed)
        ids = n + 50 * args.rounds + 10 * n  # never reached: arrivals are a few per round
        cold = start_policy(seq, seed, ids, warm_start=False, **common)
        warm = start_policy(seq, seed, ids, warm_start=True, **common)
        for r in range(args.rounds):
            view = seq.view()
            tick = time.perf_counter()
            decided_cold = cold.decide(view)
            t_cold = time.perf_counter() - tick
            tick = time.perf_counter()
            decided_warm = warm.decide(view)
            t_warm = time.perf_counter() - tick
            if r > 0:  # round 0: both start from scratch
                cold_t.append(t_cold)
                warm_t.append(t_warm)
                ours_t.append(t_warm if default_is_warm else t_cold)
                same.append(bool(np.array_equal(decided_cold, decided_warm)))
                lp_cold.append(cold.last_solution.info.get("lp_s", np.nan))
                lp_warm.append(warm.last_solution.info.get("lp_s", np.nan))
                diff.append(_gap(warm.last_solution.objective, cold.last_solution.objective))
            for sol in (cold.last_solution, warm.last_solution):
                frac.append(sol.info.get("fractional_jobs", 0))
                if np.isfinite(sol.lower_bound):
                    lp_gap.append(_gap(sol.objective, sol.lower_bound))
            if r in exact_at and (args.milp or args.have_cvxpy):
                problem = cold.last_problem
                if args.milp:
                    exact = solve_milp(problem, Budget(Limits(wall_s=args.time_limit)), args.mip_gap)
                    milp_t.append(exact.time_s)
                    if exact.optimal:  # only where the exact MILP finishes (not a time-limited incumbent)
                        milp_gap.append(_gap(cold.last_solution.objective, exact.objective))
                if args.have_cvxpy:
                    obj, secs = cvxpy_solve(problem, args.time_limit, args.mip_gap)
                    cv_t.append(secs)
                    cv_gap.append(_gap(cold.last_solution.objective, obj))
            seq.advance(decided_cold)
    med = statistics.median
    row = {
        "jobs": n,
        "ours_s": med(ours_t),
        "cold_s": med(cold_t),
        "warm_s": med(warm_t),
        "warm_x": med(cold_t) / med(warm_t),
        "lp_cold_s": med(lp_cold),
        "lp_warm_s": med(lp_warm),
        "same": float(np.mean(same)),
        "warm_vs_cold": med(diff),
        "frac": max(frac),
        "gap_vs_LP": max(lp_gap) if lp_gap else float("nan"),
    }
    if args.milp:
        row.update({"milp_s": med(milp_t), "gap_vs_milp": max(milp_gap) if milp_gap else float("nan")})
    if args.have_cvxpy:
        row.update({"cvxpy_s": med(cv_t), "speedup": med(cv_t) / row["ours_s"], "gap_vs_cvxpy": max(cv_gap)})
    return row


_FORMAT = {
    "jobs": ("{:>6}", "{:>6d}"),
    "ours_s": ("{:>8}", "{:>8.3f}"),
    "cold_s": ("{:>8}", "{:>8.3f}"),
    "warm_s": ("{:>8}", "{:>8.3f}"),
    "warm_x": ("{:>7}", "{:>6.1f}x"),
    "lp_cold_s": ("{:>9}", "{:>9.3f}"),
    "lp_warm_s": ("{:>9}", "{:>9.3f}"),
    "same": ("{:>5}", "{:>5.2f}"),
    "warm_vs_cold": ("{:>13}", None),
    "frac": ("{:>5}", "{:>5d}"),
    "gap_vs_LP": ("{:>10}", None),
    "milp_s": ("{:>8}", "{:>8.2f}"),
    "gap_vs_milp": ("{:>12}", None),
    "cvxpy_s": ("{:>8}", "{:>8.2f}"),
    "speedup": ("{:>8}", "{:>7.1f}x"),
    "gap_vs_cvxpy": ("{:>13}", None),
}


def _cell(key: str, value) -> str:
    head, body = _FORMAT[key]
    if body is None:  # a gap, in percent
        return head.format("-" if not np.isfinite(value) else f"{100 * value:+.4f}%")
    return body.format(int(value) if "d}" in body else value)


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="python -m fairsim.bench solver", description=__doc__.splitlines()[0])
    ap.add_argument("--jobs", type=int, nargs="+", default=[1000, 2000, 3000, 4000])
    ap.add_argument("--reps", type=int, default=3, help="churned sequences per size (default 3)")
    ap.add_argument("--rounds", type=int, default=8, help="consecutive rounds per sequence (default 8)")
    ap.add_argument("--solver", default="lp_dive", choices=list(SOLVERS))
    ap.add_argument("--time-limit", type=float, default=30.0, help="seconds per exact solve (milp, cvxpy)")
    ap.add_argument("--mip-gap", type=float, default=1e-4)
    ap.add_argument("--milp", action="store_true", help="also solve with the exact scipy milp for the gap")
    ap.add_argument("--exact-rounds", type=int, default=2, help="rounds per sequence solved exactly (milp, cvxpy)")
    ap.add_argument("--no-cvxpy", action="store_true", help="skip the cvxpy column")
    ap.add_argument("--csv", metavar="PATH", help="also write the table as CSV to PATH")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    if args.reps < 1 or args.rounds < 2:
        ap.error("--reps must be >= 1 and --rounds >= 2 (round 0 is left out of the medians)")

    try:
        import cvxpy  # noqa: F401

        args.have_cvxpy = not args.no_cvxpy
    except ImportError:
        args.have_cvxpy = False
        print("cvxpy is not installed: the cvxpy column is skipped (pip install -e '.[bench]' to add it)")
    print(
        f"FFT decision on 1,000 GPUs of 8 types; solver={args.solver}, {args.reps} sequences x {args.rounds} "
        f"churned rounds per size (round 0 left out), exact solves limited to {args.time_limit:.0f} s, "
        f"mip gap {args.mip_gap:g}"
    )
    keys = [
        "jobs",
        "ours_s",
        "cold_s",
        "warm_s",
        "warm_x",
        "lp_cold_s",
        "lp_warm_s",
        "same",
        "warm_vs_cold",
        "frac",
        "gap_vs_LP",
    ]
    if args.milp:
        keys += ["milp_s", "gap_vs_milp"]
    if args.have_cvxpy:
        keys += ["cvxpy_s", "speedup", "gap_vs_cvxpy"]
    print(" ".join(_FORMAT[k][0].format(k) for k in keys), flush=True)
    rows = []
    for n in args.jobs:
        rows.append(run_size(n, args))
        print(" ".join(_cell(k, rows[-1][k]) for k in keys), flush=True)
    print("gaps: (ours - other) / |other|, worst over rounds; negative = ours is better (the other hit its time limit)")
    if args.csv:
        with open(args.csv, "w", newline="") as f:
            writer = csv.DictWriter(f, fieldnames=keys, extrasaction="ignore")
            writer.writeheader()
            writer.writerows(rows)
    return 0
