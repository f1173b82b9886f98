"""The FFT assignment program: K(t), the exact MILP, LP + repair, pruning and the greedy fallback,
checked against hand-computed answers and brute force on small instances."""

import itertools

import numpy as np
import pytest

from fairsim.solve import milp, packing, relaxation
from fairsim.solve.lp_repair import solve_lp_repair
from fairsim.solve.milp import solve_milp
from fairsim.solve.packing import max_packing
from fairsim.solve.program import AssignmentProblem, prune_dominated, solve_greedy


def brute_force(p: AssignmentProblem) -> tuple[float, int]:
    """Optimal objective and the max packing, by enumeration."""
    n, t = p.cost.shape
    options = [[-1] + [k for k in range(t) if p.feasible[j, k]] for j in range(n)]
    best, pack = np.inf, 0
    valid = []
    for combo in itertools.product(*options):
        a = np.array(combo)
        if p.is_valid(a):
            valid.append(a)
            pack = max(pack, p.gpus_used(a))
    for a in valid:
        if p.gpus_used(a) >= p.min_gpus:
            best = min(best, p.objective(a))
    return best, pack


def random_problem(rng, n, t, k_from_packing=True, signed=True):
    workers = rng.choice([1, 2, 4], size=n, p=[0.6, 0.25, 0.15])
    capacity = rng.integers(2, 7, size=t)
    feasible = (rng.random((n, t)) > 0.2) & (workers[:, None] <= capacity[None, :])
    cost = rng.normal(5, 4, (n, t)) if signed else rng.uniform(1, 10, (n, t))
    k = max_packing(workers, feasible, capacity) if k_from_packing else 0
    return AssignmentProblem(cost, feasible, workers, capacity, k)


def test_max_packing_needs_the_ilp_when_greedy_falls_short():
    # widths 3,3,2,2,2,2 into two 4-GPU types: widest-first greedy packs 3 + 3 = 6; the max is 2+2 | 2+2 = 8
    assert max_packing(np.array([3, 3, 2, 2, 2, 2]), np.ones((6, 2), bool), np.array([4, 4])) == 8


def test_max_packing_respects_feasibility_and_capacity():
    workers = np.array([4, 2, 1, 1])
    feasible = np.array([[True, False], [False, True], [False, True], [False, True]])
    # type 0 (4 GPUs) only fits the 4-wide job; type 1 (3 GPUs) takes 2 + 1 of the rest
    assert max_packing(workers, feasible, np.array([4, 3])) == 7
    assert max_packing(workers, np.zeros((4, 2), bool), np.array([4, 3])) == 0


@pytest.mark.parametrize("seed", range(12))
def test_max_packing_matches_brute_force(seed):
    rng = np.random.default_rng(seed)
    p = random_problem(rng, 6, 2)
    assert p.min_gpus == brute_force(p)[1]


@pytest.mark.parametrize("seed", range(8))
def test_max_packing_matches_the_ilp_over_single_jobs(seed):
    """Grouped packing (jobs of one gang size and one set of feasible types are interchangeable)
    against the plain ILP with a variable per job and type, on clusters too big to enumerate. Odd
    gang sizes fragment the types, so in 5 of the 8 the packing is below both trivial bounds (a
    group counted one job short or over changes 3 resp. 5 of the answers)."""
    rng = np.random.default_rng(200 + seed)
    n, t = 14, 4
    workers = rng.choice([2, 3, 5, 7], size=n)
    capacity = rng.integers(4, 17, size=t)
    feasible = (rng.random((n, t)) > 0.5) & (workers[:, None] <= capacity[None, :])
    plain = solve_milp(
        AssignmentProblem(-np.where(feasible, workers[:, None], 0).astype(float), feasible, workers, capacity, 0),
        mip_gap=0,
    )
    assert not plain.fallback
    assert max_packing(workers, feasible, capacity) == plain.objective * -1


@pytest.mark.parametrize("seed", range(12))
def test_milp_and_lp_repair_are_optimal_on_small_instances(seed):
    rng = np.random.default_rng(100 + seed)
    p = random_problem(rng, 6, 3)
    best, _ = brute_force(p)
    for sol in (solve_milp(p), solve_lp_repair(p)):
        assert p.is_valid(sol.assignment)
        assert p.gpus_used(sol.assignment) >= p.min_gpus
        assert sol.objective == pytest.approx(best, abs=1e-6)
        assert not sol.fallback


def busy_cluster_problem(seed: int = 7) -> AssignmentProblem:
    """300 jobs of 1-8 workers on 140 GPUs of 4 types: K is every GPU, gangs make the LP fractional."""
    rng = np.random.default_rng(seed)
    n, t = 300, 4
    workers = rng.choice([1, 2, 4, 8], size=n, p=[0.7, 0.1, 0.15, 0.05])
    capacity = np.array([40, 40, 30, 30])
    feasible = rng.random((n, t)) > 0.05
    cost = workers[:, None] * rng.lognormal(2, 1, (n, 1)) / rng.uniform(0.5, 2, (n, t))
    return AssignmentProblem(cost, feasible, workers, capacity, max_packing(workers, feasible, capacity))


def test_lp_repair_with_a_small_core_is_near_the_exact_optimum():
    p = busy_cluster_problem()
    k, capacity = p.min_gpus, p.capacity
    exact = solve_milp(p)
    fast = solve_lp_repair(p, core=30, keep_types=2)
    assert k == capacity.sum()
    assert p.is_valid(fast.assignment) and p.gpus_used(fast.assignment) >= k
    assert fast.lower_bound <= exact.objective + 1e-6
    assert fast.objective <= exact.objective * 1.005  # within 0.5 % with a 30-job core


@pytest.mark.parametrize("seed", range(5))
def test_pruning_keeps_the_optimum(seed):
    rng = np.random.default_rng(200 + seed)
    n, t = 7, 2
    p = AssignmentProblem(
        rng.uniform(1, 10, (n, t)), np.ones((n, t), bool), np.ones(n, dtype=np.int64), np.array([2, 1]), 3
    )
    q = prune_dominated(p)
    assert q.feasible.sum(axis=0).tolist() == [3, 3]  # at most 3 single-GPU jobs run: 3 columns per type
    assert solve_milp(q).objective == pytest.approx(brute_force(p)[0])


def test_greedy_is_valid_and_maximal():
    cost = np.array([[1.0, 2.0], [3.0, 1.0], [2.0, 5.0], [4.0, 4.0]])
    p = AssignmentProblem(cost, np.ones((4, 2), bool), np.array([2, 1, 2, 1]), np.array([2, 2]), 4)
    sol = solve_greedy(p)
    # by cheapest cost: job0 (1, type0), job1 (1, type1), job2 (2: type0 full, type1 has 1 left) -> out, job3 -> type1
    assert sol.assignment.tolist() == [0, 1, -1, 1]
    assert p.is_valid(sol.assignment)


def test_solver_failure_falls_back_to_greedy(monkeypatch):
    class Failed:
        x = None
        status = 4
        message = "simulated failure"

    for module in (milp, packing):  # the exact program and K(t)
        monkeypatch.setattr(module, "milp", lambda *a, **k: Failed())
    monkeypatch.setattr(relaxation, "linprog", lambda *a, **k: Failed())
    rng = np.random.default_rng(3)
    p = random_problem(rng, 6, 3)
    for solve in (solve_milp, solve_lp_repair):
        sol = solve(p)
        assert sol.fallback and sol.method == "greedy"
        assert p.is_valid(sol.assignment)
