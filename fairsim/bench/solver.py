"""``python -m fairsim.bench solver``: how long one FFT decision takes at the paper's scale.

Random instances shaped like the paper's scalability setting (PAPER.md sec. 5): 1,000 GPUs of 8
types (the ``scale8`` mix), 1,000-4,000 active jobs of 1/2/4/8 workers at 70/10/15/5%, random
ages, work, progress, throughputs, state sizes, last-round placement and rho, 5% of job-type
pairs memory-infeasible. Columns:

- ``ours``: median wall time of ``FFTPolicy.decide`` (costs, K(t), solve) with the configured solver;
- ``milp``: (``--milp``) the exact program with scipy milp, for the gap of the LP+repair route;
- ``cvxpy``: the same integer program written in cvxpy and solved by its default MILP solver
  (build + solve time). Skipped, and said so, when cvxpy is not installed (it is an optional
  extra, never a runtime dependency);
- gaps: (objective(ours) - objective(other)) / |objective(other)|, and ours against the LP bound.
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

from fairsim.cluster import ClusterSpec
from fairsim.policies.base import PolicyView, fastest_first, greedy_fill
from fairsim.policies.ours import FFTPolicy
from fairsim.policies.solvers import AssignmentProblem, solve_milp

SCALE8 = {"K80": 64, "P100": 96, "T4": 160, "V100": 160, "A10": 160, "L4": 96, "A100-40GB": 160, "A100-80GB": 104}
TYPE_SPEED = np.array([0.25, 0.45, 0.40, 0.75, 0.70, 0.60, 1.20, 1.30])  # rough relative speed, oldest to newest
ROUND_S = 300.0


def random_view(num_jobs: int, seed: int) -> PolicyView:
    """One round's view of a busy 1,000-GPU cluster (see module docstring)."""
    rng = np.random.default_rng(seed)
    cluster = ClusterSpec.from_config({"name": "scale8", "counts": SCALE8})
    t = cluster.num_types
    workers = rng.choice([1, 2, 4, 8], size=num_jobs, p=[0.70, 0.10, 0.15, 0.05]).astype(np.int64)
    base = rng.lognormal(0.0, 0.5, num_jobs)
    tput = base[:, None] * TYPE_SPEED[None, :] * rng.lognormal(0.0, 0.2, (num_jobs, t))
    feasible = rng.random((num_jobs, t)) >= 0.05
    feasible[np.arange(num_jobs), rng.integers(0, t, num_jobs)] = True  # every job runs somewhere
    tput = np.where(feasible, tput, 0.0)
    best = tput.max(axis=1)
    work = best * np.exp(rng.uniform(np.log(1800), np.log(100 * 3600), num_jobs))  # 0.5-100 h on its best type
    done = work * rng.uniform(0.0, 0.9, num_jobs)
    now = 200 * 3600.0
    arrival = np.sort(now - rng.uniform(0, 48 * 3600, num_jobs))
    state = np.exp(rng.uniform(np.log(0.4e9), np.log(107e9), num_jobs))
    move_s = 30.0 + state / cluster.inter_host_bytes_per_s
    # last round: a random maximal packing, so last_type respects capacity
    capacity = cluster.counts.astype(np.int64)
    stub = _view(cluster, capacity, now, workers, work, done, arrival, tput, feasible,
                 np.full(num_jobs, -1), np.zeros((num_jobs, t)), state)
    last = greedy_fill(stub, rng.permutation(num_jobs), fastest_first(stub))
    switch = np.repeat(move_s[:, None], t, axis=1)
    ran = np.flatnonzero(last >= 0)
    switch[ran, last[ran]] = 0.0
    return _view(cluster, capacity, now, workers, work, done, arrival, tput, feasible, last, switch, state)


def _view(cluster, capacity, now, workers, work, done, arrival, tput, feasible, last, switch, state) -> PolicyView:
    n = len(workers)
    return PolicyView(now=now, round_len=ROUND_S, cluster=cluster, capacity=capacity, job_id=np.arange(n),
                      arrival=arrival, workers=workers, work=work, done=done, weight=np.ones(n), throughput=tput,
                      feasible=feasible, last_type=last, prev_type=last.copy(), switch_cost_s=switch,
                      state_bytes=state, attained_gpu_s=np.zeros(n), run_s=np.zeros(n),
                      first_start=np.zeros(n), changed=True)


def fresh_policy(view: PolicyView, seed: int, **options) -> FFTPolicy:
    """A policy in mid-run state: random rho (a deficit of up to a few rounds of best-type work)."""
    policy = FFTPolicy(**options)
    policy.reset(view.cluster, view.num_jobs, seed)
    policy.rho[:] = np.random.default_rng(seed + 1).exponential(2.0, view.num_jobs)
    return policy


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


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="python -m fairsim.bench solver", description=__doc__.splitlines()[0])
    ap.add_argument("--jobs", type=int, nargs="+", default=[1000, 2000, 3000, 4000])
    ap.add_argument("--reps", type=int, default=3, help="decisions per size for the median (default 3)")
    ap.add_argument("--solver", default="lp_repair", choices=["lp_repair", "milp"])
    ap.add_argument("--time-limit", type=float, default=30.0, help="seconds per exact solve (milp, cvxpy)")
    ap.add_argument("--mip-gap", type=float, default=1e-4)
    ap.add_argument("--milp", action="store_true", help="also solve with the exact scipy milp for the gap")
    ap.add_argument("--no-cvxpy", action="store_true", help="skip the cvxpy column")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)

    try:
        import cvxpy  # noqa: F401
        have_cvxpy = not args.no_cvxpy
    except ImportError:
        have_cvxpy = False
        print("cvxpy is not installed: the cvxpy column is skipped (pip install -e '.[bench]' to add it)")
    print(f"FFT decision on 1,000 GPUs of 8 types; solver={args.solver}, {args.reps} reps per size, "
          f"exact solves limited to {args.time_limit:.0f} s, mip gap {args.mip_gap:g}")
    header = f"{'jobs':>6} {'ours_s':>8} {'frac':>5} {'gap_vs_LP':>10}"
    if args.milp:
        header += f" {'milp_s':>8} {'gap_vs_milp':>12}"
    if have_cvxpy:
        header += f" {'cvxpy_s':>8} {'speedup':>8} {'gap_vs_cvxpy':>13}"
    print(header)
    for n in args.jobs:
        ours_t, frac, lp_gap, milp_t, milp_gap, cv_t, cv_gap = [], [], [], [], [], [], []
        for rep in range(args.reps):
            seed = args.seed + 1000 * rep + n
            view = random_view(n, seed)
            policy = fresh_policy(view, seed, solver=args.solver, time_limit_s=args.time_limit, mip_gap=args.mip_gap)
            probe = fresh_policy(view, seed, solver=args.solver).build_problem(view)  # same program, for the others
            tick = time.perf_counter()
            policy.decide(view)
            ours_t.append(time.perf_counter() - tick)
            sol = policy.last_solution
            frac.append(sol.info.get("fractional_jobs", 0))
            if np.isfinite(sol.lower_bound):
                lp_gap.append(_gap(sol.objective, sol.lower_bound))
            if args.milp:
                exact = solve_milp(probe, args.time_limit, args.mip_gap)
                milp_t.append(exact.time_s)
                milp_gap.append(_gap(sol.objective, exact.objective))
            if have_cvxpy:
                obj, secs = cvxpy_solve(probe, args.time_limit, args.mip_gap)
                cv_t.append(secs)
                cv_gap.append(_gap(sol.objective, obj))
        med = statistics.median
        line = f"{n:>6} {med(ours_t):>8.3f} {max(frac):>5} {_fmt_gap(lp_gap):>10}"
        if args.milp:
            line += f" {med(milp_t):>8.2f} {_fmt_gap(milp_gap):>12}"
        if have_cvxpy:
            line += f" {med(cv_t):>8.2f} {med(cv_t) / med(ours_t):>7.1f}x {_fmt_gap(cv_gap):>13}"
        print(line, flush=True)
    print("gaps: (ours - other) / |other|, worst over reps; negative = ours is better (the other hit its time limit)")
    return 0


def _fmt_gap(gaps: list[float]) -> str:
    if not gaps:
        return "-"
    worst = max(gaps)
    return f"{100 * worst:+.4f}%"
