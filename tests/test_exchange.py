"""``exchange``: the local moves among gangs after a dive. Tiny hand-made programs with one
improving move each, then random programs checked against the exact optimum."""

import numpy as np
import pytest
from test_lp_dive import gang_heavy
from test_solvers import brute_force, random_problem

from fairsim.solve.exchange import improve_by_exchanges
from fairsim.solve.milp import solve_milp
from fairsim.solve.program import AssignmentProblem


def program(cost, workers, capacity, feasible=None):
    cost = np.array(cost, dtype=float)
    feasible = np.ones(cost.shape, bool) if feasible is None else np.array(feasible)
    capacity = np.array(capacity)
    return AssignmentProblem(cost, feasible, np.array(workers), capacity, int(capacity.sum()))


def test_an_idle_gang_replaces_a_dearer_one_on_the_same_gpus():
    p = program([[10, 50], [3, 60], [50, 2]], [4, 4, 4], [4, 4])
    better, moves = improve_by_exchanges(p, np.array([0, -1, 1]))
    assert better.tolist() == [-1, 0, 1] and moves == 1


def test_two_gangs_of_one_size_trade_types():
    p = program([[5, 1], [1, 5]], [2, 2], [2, 2])
    better, _ = improve_by_exchanges(p, np.array([0, 1]))
    assert better.tolist() == [1, 0]


def test_a_gang_splits_into_two_idle_halves():
    p = program([[10, 9], [3, 9], [3, 9], [4, 9]], [8, 4, 4, 4], [8, 8])
    # the 8-wide job holds type 0 at cost 10; the two cheapest 4-wide idle jobs there cost 3 + 3
    better, _ = improve_by_exchanges(p, np.array([0, -1, -1, 1]))
    assert better.tolist() == [-1, 0, 0, 1]


def test_two_halves_merge_into_an_idle_gang():
    p = program([[6, 9], [7, 9], [5, 9], [9, 9]], [2, 2, 4, 4], [4, 4])
    better, _ = improve_by_exchanges(p, np.array([0, 0, -1, 1]))
    assert better.tolist() == [-1, -1, 0, 1]


def test_no_move_onto_an_infeasible_type_and_an_optimum_is_left_alone():
    p = program([[5, 1], [1, 5]], [2, 2], [2, 2], feasible=[[True, False], [True, True]])
    start = np.array([0, 1])  # trading would put job 0 on type 1, where it cannot run
    better, moves = improve_by_exchanges(p, start)
    assert better.tolist() == [0, 1] and moves == 0


@pytest.mark.parametrize("seed", range(20))
def test_never_worse_same_gpus_per_type_and_not_below_the_optimum(seed):
    rng = np.random.default_rng(900 + seed)
    p = random_problem(rng, 7, 3)
    best, _ = brute_force(p)
    start = np.full(7, -1)
    for j in rng.permutation(7):  # a random maximal packing as the starting answer
        for k in rng.permutation(3):
            trial = start.copy()
            trial[j] = k
            if p.feasible[j, k] and p.is_valid(trial):
                start = trial
                break
    before = start.copy()
    better, _ = improve_by_exchanges(p, start)
    assert np.array_equal(start, before)  # the input is not modified
    assert p.is_valid(better)
    for k in range(3):
        assert p.workers[better == k].sum() == p.workers[start == k].sum()
    if p.gpus_used(start) >= p.min_gpus:
        assert best - 1e-9 <= p.objective(better) <= p.objective(start) + 1e-12


def test_improves_dive_like_answers_toward_the_exact_optimum():
    # gang-heavy programs, K every GPU, started from the exact answer with two same-size gangs'
    # types traded: the exchange must undo at least that loss
    gains = 0
    for seed in range(4):
        p = gang_heavy(seed)
        exact = solve_milp(p, mip_gap=0.0)
        a = exact.assignment.copy()
        run = np.flatnonzero((a >= 0) & (p.workers == 8))
        pair = [(i, j) for i in run for j in run if a[i] != a[j] and p.feasible[i, a[j]] and p.feasible[j, a[i]]]
        i, j = pair[0]
        a[i], a[j] = a[j], a[i]
        better, _ = improve_by_exchanges(p, a)
        assert p.is_valid(better) and p.gpus_used(better) == p.gpus_used(a)
        assert exact.objective - 1e-6 <= p.objective(better) <= p.objective(exact.assignment) + 1e-6
        gains += p.objective(better) < p.objective(a)
    assert gains >= 1
