"""Themis' auctions as the gang assignment program (fairsim/solve/auction.py): the LP dive
against the exact MILP (exact without gangs, within its gap with them), the winner cut, and the
policy's routing."""

import numpy as np
import pytest

from fairsim.errors import InputError
from fairsim.policies.themis import ThemisPolicy, unbounded_bids
from fairsim.solve.auction import auction_problem, max_winners, solve_auction
from fairsim.solve.lp_dive import solve_lp_dive
from fairsim.solve.milp import solve_milp


def milp_value_assignment(value, widths, free, winner_cut=False):
    p = auction_problem(value, widths, free)
    return solve_milp(p, mip_gap=1e-9, max_jobs=max_winners(p) if winner_cut else None).assignment


def dived(value, widths, free, gap=1e-4):
    return solve_auction(auction_problem(value, widths, free), dive=True, gap=gap)


def total(value: np.ndarray, assignment: np.ndarray) -> float:
    rows = np.flatnonzero(assignment >= 0)
    return float(value[rows, assignment[rows]].sum())


def assert_valid(value, widths, free, assignment):
    rows = np.flatnonzero(assignment >= 0)
    assert (value[rows, assignment[rows]] > 0).all()  # only bids win
    used = np.bincount(assignment[rows], weights=widths[rows], minlength=len(free))
    assert (used <= free).all()


def auction(seed: int, jobs: int, types: int, gangs: bool):
    """Unbounded bids of ``jobs`` waiting jobs over ``types`` types with tight capacity; some
    types infeasible for some jobs (memory)."""
    rng = np.random.default_rng(seed)
    gain = rng.normal(0.0, 1.0, (jobs, types))
    gain[rng.random((jobs, types)) < 0.15] = -np.inf
    widths = rng.choice([1, 2, 4, 8], size=jobs, p=[0.5, 0.2, 0.2, 0.1]) if gangs else np.ones(jobs, dtype=np.int64)
    free = rng.integers(2, max(3, jobs // types), size=types)
    return unbounded_bids(gain), widths.astype(np.int64), free.astype(np.int64)


@pytest.mark.parametrize("seed", range(6))
def test_without_gangs_the_lp_is_the_exact_optimum(seed):
    # a transportation problem: the simplex vertex is integral, no dive step needed
    value, widths, free = auction(seed, 120, 4, gangs=False)
    sol = dived(value, widths, free, gap=0.0)
    assert sol.info["auction"] == "dive" and sol.info["dive_lps"] == 0  # the root LP is integral
    dive = sol.assignment
    assert_valid(value, widths, free, dive)
    exact = milp_value_assignment(value, widths, free)
    assert total(value, dive) == pytest.approx(total(value, exact), rel=1e-9)


@pytest.mark.parametrize("seed", range(10))
def test_with_gangs_an_answer_is_valid_and_within_its_gap_of_the_milp(seed):
    value, widths, free = auction(seed, 80, 4, gangs=True)
    exact = total(value, milp_value_assignment(value, widths, free))
    for gap in (1e-4, 1e-6):
        sol = dived(value, widths, free, gap=gap)
        assert_valid(value, widths, free, sol.assignment)
        assert total(value, sol.assignment) >= exact * (1 - gap) - 1e-9


def rounding_trap():
    """Job 0 (4 GPUs) fits only type 1; jobs 1-3 (8 GPUs) fit type 0 (16 free) or type 1 (10
    free) and value type 1 slightly more. The LP runs jobs 1-2 on type 0, job 0 on type 1 and
    splits job 3 across both; rounding job 3 up onto type 1 pushes job 0 out, which in the
    unbounded bids costs a whole winner."""
    gain = np.array([[-np.inf, 0.5], [0.0, 0.1], [0.0, 0.1], [0.0, 0.1]])
    return unbounded_bids(gain), np.array([4, 8, 8, 8]), np.array([16, 10])


def test_the_rounding_trap_keeps_every_winner():
    # the dive's exchanges (a gang for another of the same size on another type) or, failing
    # them, the MILP after the dive reach the three winners that fit
    value, widths, free = rounding_trap()
    exact = milp_value_assignment(value, widths, free)
    assert (exact >= 0).sum() == 3
    sol = dived(value, widths, free)
    assert (sol.assignment >= 0).sum() == 3
    assert total(value, sol.assignment) == pytest.approx(total(value, exact), rel=1e-4)


def test_a_fractional_extra_winner_is_cut_off_and_the_dive_accepted():
    # one type, 12 GPUs, three 8-GPU gangs: the LP runs one and a half gangs, any allocation one.
    # The plain LP bound is half a winner's value away; with at most floor(1.5) = 1 winner the
    # bound is the best single gang, which the dive finds.
    value = unbounded_bids(np.array([[0.3], [0.2], [0.1]]))
    widths, free = np.array([8, 8, 8]), np.array([12])
    sol = dived(value, widths, free)
    assert sol.assignment.tolist() == [0, -1, -1] and sol.info["auction"] == "dive"
    assert sol.lower_bound == pytest.approx(-value[0, 0])  # the LP with the cut certified it
    assert max_winners(auction_problem(value, widths, free)) == 1


@pytest.mark.parametrize("seed", range(8))
def test_the_lp_with_the_winner_cut_bounds_the_optimum(seed):
    value, widths, free = auction(seed, 60, 3, gangs=True)
    exact = total(value, milp_value_assignment(value, widths, free))
    p = auction_problem(value, widths, free)
    bound = solve_lp_dive(p, exact_columns=0, max_nodes=0, max_jobs=max_winners(p)).lower_bound
    assert -bound >= exact * (1 - 1e-9)


def test_the_policy_dives_above_exact_gpus_and_takes_the_milp_when_refused(monkeypatch):
    import fairsim.solve.auction as auction_module
    from fairsim.solve.program import Solution

    value, widths, free = rounding_trap()
    policy = ThemisPolicy(exact_gpus=0)
    policy.reset(None, 4, 0)
    assert (policy.auction(value, widths, free) >= 0).sum() == 3
    assert policy.dive_auctions + policy.dive_misses == 1

    def one_winner(p, **kwargs):  # a dive leaf that lost two winners, and no bound to certify it
        a = np.full(p.num_jobs, -1)
        a[int(np.flatnonzero(p.feasible.any(axis=1))[0])] = int(np.flatnonzero(p.feasible.any(axis=0))[0])
        return Solution(a, p.objective(a), "lp_dive", False, False, 0.0)

    monkeypatch.setattr(auction_module, "solve_lp_dive", one_winner)
    misses = policy.dive_misses
    assert (policy.auction(value, widths, free) >= 0).sum() == 3  # the MILP after the dive
    assert policy.dive_misses == misses + 1
    monkeypatch.undo()
    value, widths, free = auction(0, 120, 4, gangs=False)
    dives = policy.dive_auctions
    policy.auction(value, widths, free)
    assert policy.dive_auctions == dives + 1


def test_small_auctions_and_solver_milp_never_dive(monkeypatch):
    import fairsim.policies.themis as themis

    def no_dive(*args, **kwargs):
        raise AssertionError("the dive ran")

    monkeypatch.setattr(themis, "solve_lp_dive", no_dive, raising=False)
    import fairsim.solve.auction as auction_module

    monkeypatch.setattr(auction_module, "solve_lp_dive", no_dive)
    value, widths, free = auction(1, 120, 4, gangs=False)
    for policy in (ThemisPolicy(exact_gpus=int(free.sum())), ThemisPolicy(solver="milp", exact_gpus=0)):
        policy.reset(None, len(widths), 0)
        assert (policy.auction(value, widths, free) >= 0).any()
        assert policy.dive_auctions == policy.dive_misses == 0


@pytest.mark.parametrize("seed", range(8))
def test_the_winner_cut_keeps_the_milp_optimum(seed):
    value, widths, free = auction(seed, 60, 3, gangs=True)
    plain = total(value, milp_value_assignment(value, widths, free))
    cut = milp_value_assignment(value, widths, free, winner_cut=True)
    assert_valid(value, widths, free, cut)
    assert total(value, cut) == pytest.approx(plain, rel=1e-4)  # both within HiGHS' MIP gap of one optimum


def test_the_winner_cut_is_the_whole_number_below_the_lp():
    value = unbounded_bids(np.array([[0.3], [0.2], [0.1]]))
    widths, free = np.array([8, 8, 8]), np.array([12])
    assert max_winners(auction_problem(value, widths, free)) == 1  # LP: 1.5


@pytest.mark.parametrize("option, bad", [("solver", "cbc"), ("exact_gpus", -1), ("dive_gap", 1.0)])
def test_bad_solver_options_are_refused(option, bad):
    with pytest.raises(InputError, match=option):
        ThemisPolicy(**{option: bad})
