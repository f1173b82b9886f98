"""Gavel's finish-time-fairness LP on instances solvable by hand."""

import numpy as np
import pytest

from fairsim.policies.gavel_ftf import GavelFinishTimeFairness, isolated_throughput
from fairsim.testing import fractions_on, toy_view


def solve(view):
    policy = GavelFinishTimeFairness(rel_tol=1e-9)
    return policy, fractions_on(policy, view)


def test_new_jobs_on_one_gpu_split_it_and_rho_is_one():
    # isolated share 1/2 each; rho_j = (10 / (tput x_j)) / (10 / (tput/2)) = 1 / (2 x_j)
    policy, x = solve(toy_view([[1.0], [3.0]], [1], work=[10, 10]))
    assert x[:, 0] == pytest.approx([0.5, 0.5], abs=1e-6)
    assert policy.last_rho == pytest.approx(1.0, abs=1e-6)


def test_older_job_gets_the_golden_share():
    # job 0 waited 10 s already; both need 10 units at 1 unit/s, isolated time D = 10/0.5 = 20:
    # (10 + 10/x) / 20 = (10/(1-x)) / 20  ->  x^2 + x - 1 = 0  ->  x = 0.618
    view = toy_view([[1.0], [1.0]], [1], work=[10, 10], arrival=[-10.0, 0.0], now=0.0)
    policy, x = solve(view)
    golden = (5**0.5 - 1) / 2
    assert x[:, 0] == pytest.approx([golden, 1 - golden], abs=1e-5)
    assert policy.last_rho == pytest.approx((10 + 10 / golden) / 20, rel=1e-5)


def test_isolated_share_is_capped_at_one_and_divided_by_gang_size():
    # 1 job on 4+4 GPUs: share 4/1 per type, capped so the row sums to 1 -> 0.5 + 0.5
    assert isolated_throughput(np.array([[2.0, 1.0]]), np.array([1]), np.array([4, 4])) == pytest.approx([1.5])
    # 4 jobs of 2 GPUs on 4 GPUs of one type: 4 / (4 * 2) = 1/2 of the time each
    assert isolated_throughput(np.ones((4, 1)), np.full(4, 2), np.array([4])) == pytest.approx([0.5] * 4)


def test_isolated_time_accumulates_across_solves():
    policy, _ = solve(toy_view([[1.0], [1.0]], [1], work=[10, 10]))
    # job 0 did 4 units since; its isolated throughput was 0.5 -> 8 s of isolated-equivalent time
    view = toy_view([[1.0], [1.0]], [1], work=[10, 10], done=[4, 0], now=10.0)
    policy.fractions(view)
    assert policy.isolated_time[:2] == pytest.approx([8.0, 0.0])
    # the next solve divides the work done since by the isolated throughput of the previous
    # solve (0.5 with two jobs), not the current one (1.0 with job 0 alone)
    solo = toy_view([[1.0]], [1], work=[10], done=[5], now=20.0)
    policy.fractions(solo)
    assert policy.isolated_time[0] == pytest.approx(8.0 + 1 / 0.5)


def test_constraints_hold_on_random_instances():
    rng = np.random.default_rng(2)
    for _ in range(5):
        n = int(rng.integers(2, 10))
        tput = rng.uniform(0.2, 2.0, (n, 2))
        workers = rng.choice([1, 2], n)
        view = toy_view(tput, [3, 3], workers=workers, work=rng.uniform(10, 100, n), arrival=-rng.uniform(0, 50, n))
        policy, x = solve(view)
        assert (x.sum(axis=1) <= 1 + 1e-9).all()
        assert (workers @ x <= np.array([3, 3]) + 1e-9).all()
        # every job meets the optimal rho
        rho = (view.now - view.arrival + view.remaining / (tput * x).sum(axis=1)) / (
            view.remaining / isolated_throughput(tput, workers, np.array([3, 3]))
        )
        assert rho.max() == pytest.approx(policy.last_rho, rel=1e-4)


def test_warm_requirement_lp_matches_cold_solves():
    from fairsim.solve.maxmin import RequirementMaxMin, solve_max_min

    rng = np.random.default_rng(5)
    tput = rng.uniform(0.2, 3.0, (12, 3)) * (rng.random((12, 3)) > 0.2)
    tput[:, 1] = np.maximum(tput[:, 1], 0.2)
    g = rng.choice([1.0, 2.0], 12)
    cap = np.array([4.0, 4.0, 4.0])
    lp = RequirementMaxMin(tput, g, cap)
    for _ in range(6):  # successive targets on one model, as in the bisection
        need = rng.uniform(0.1, 2.0, 12)
        warm = ((tput * lp.solve(need)).sum(axis=1) / need).min()
        cold = ((tput * solve_max_min(tput / need[:, None], g, cap)).sum(axis=1) / need).min()
        assert warm == pytest.approx(cold, rel=1e-7)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_min_max_rho_equals_a_plain_bisection_of_cold_lps(seed):
    # the solver's rho against 60 halvings on cold linprog feasibility LPs: the bounds that
    # prune its bisection (each LP's achieved rho above, its max-min value below) must not
    # cut the optimum off
    from fairsim.policies.gavel_ftf import min_max_rho_fractions
    from fairsim.solve.maxmin import solve_max_min

    rng = np.random.default_rng(seed)
    n = int(rng.integers(3, 14))
    tput = rng.uniform(0.2, 3.0, (n, 3)) * (rng.random((n, 3)) > 0.3)
    tput[:, 0] = np.maximum(tput[:, 0], 0.1)
    workers = rng.choice([1, 2, 4], n)
    cap = np.array([4, 4, 4])
    remaining, age = rng.uniform(100, 5000, n), rng.uniform(0, 3000, n)
    denom = rng.uniform(500, 8000, n)
    x, rho = min_max_rho_fractions(tput, remaining, age, denom, workers, cap, rel_tol=1e-7)

    def feasible(r):
        need = remaining / (r * denom - age)
        y = solve_max_min(tput / need[:, None], workers.astype(float), cap.astype(float))
        return ((tput * y).sum(axis=1) / need).min() >= 1 - 1e-9

    lo, hi = float(np.max(age / denom)) * (1 + 1e-12) + 1e-12, 1e6
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        lo, hi = (lo, mid) if feasible(mid) else (mid, hi)
    assert rho == pytest.approx(hi, rel=1e-5)
    achieved = (age + remaining / (tput * x).sum(axis=1)) / denom
    assert achieved.max() == pytest.approx(rho, rel=1e-6)
