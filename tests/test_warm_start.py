"""FFT's warm start (``policy.warm_start=true``): the LP relaxation kept in HiGHS across rounds,
checked against the cold path (a fresh linprog each round) on churned sequences of rounds."""

import numpy as np
import pytest

from fairsim.bench.solver import ChurnedRounds, start_policy
from fairsim.solve import lp_repair, program, warm
from fairsim.solve.budget import Budget, Limits
from fairsim.solve.lp_repair import solve_lp_repair
from fairsim.solve.program import AssignmentProblem
from fairsim.solve.warm import WarmStart


def churned_pair(num_jobs=250, seed=0, divide=8, **options):
    options.setdefault("solver", "lp_repair")  # the LP + repair route (tests/test_lp_dive.py has the dive's)
    options.setdefault("repair_core", 40)  # below the job count: the LP + repair route, not the exact MILP
    seq = ChurnedRounds(num_jobs, seed, divide=divide)
    ids = 10 * num_jobs
    cold = start_policy(seq, seed, ids, warm_start=False, **options)
    warm = start_policy(seq, seed, ids, warm_start=True, **options)
    return seq, cold, warm


def capture_relaxations(monkeypatch):
    """Record the LP relaxation every solve_lp_repair call rounds."""
    seen = []
    real = lp_repair.repair

    def spy(p, q, cols, lp, *args):
        seen.append(lp)
        return real(p, q, cols, lp, *args)

    monkeypatch.setattr(lp_repair, "repair", spy)
    return seen


@pytest.mark.slow
@pytest.mark.parametrize("seed", [0, 1])
def test_warm_lp_is_the_cold_lp_round_after_round(monkeypatch, seed):
    seen = capture_relaxations(monkeypatch)
    seq, cold, warm = churned_pair(seed=seed)
    rounds, churned = 8, 0
    for _ in range(rounds):
        view = seq.view()
        churned += int(view.changed)
        decided = cold.decide(view)
        warm.decide(view)
        lp_cold, lp_warm = seen[-2:]
        assert lp_warm.value == pytest.approx(lp_cold.value, rel=1e-9, abs=1e-7)
        # a vertex with distinct random costs: the primal optimum is unique, so the same x
        np.testing.assert_allclose(lp_warm.x, lp_cold.x, atol=1e-6)
        for policy in (cold, warm):
            sol, problem = policy.last_solution, policy.last_problem
            assert problem.is_valid(sol.assignment) and problem.gpus_used(sol.assignment) >= problem.min_gpus
            assert not sol.fallback and "escalated" not in sol.info
        # the same certified bound; each answer within its own certified gap of the other
        assert warm.last_solution.lower_bound == pytest.approx(cold.last_solution.lower_bound, rel=1e-9)
        seq.advance(decided)
    counts = warm._solver_options["warm"].counts
    assert churned >= rounds - 1  # jobs came and went between rounds
    assert counts["cold"] == 1 and counts["warm"] + counts["in_place"] == rounds - 1 and counts["fell_back"] == 0


def test_warm_and_cold_decide_the_same_when_the_repair_is_exact():
    # a core as large as the job set makes the repair the exact MILP over every job, whatever the
    # LP's duals: then warm and cold must agree job for job
    seq, cold, warm = churned_pair(num_jobs=120, seed=3, divide=16, repair_core=10_000)
    for _ in range(6):
        view = seq.view()
        decided = cold.decide(view)
        assert np.array_equal(warm.decide(view), decided)
        assert warm.last_solution.objective == cold.last_solution.objective
        seq.advance(decided)


def test_unchanged_rounds_update_costs_in_place():
    rng = np.random.default_rng(7)
    n, t = 60, 3
    feasible = rng.random((n, t)) > 0.2
    workers = rng.choice([1, 2], size=n)
    capacity = np.array([12, 10, 8])
    warm = WarmStart()
    base = rng.normal(5.0, 2.0, (n, t))
    for step in range(4):
        cost = base + step * rng.normal(0.0, 0.01, (n, t))  # costs move slowly, the jobs stay
        p = AssignmentProblem(cost, feasible, workers, capacity, 25, np.arange(100, 100 + n))
        cold_sol = solve_lp_repair(p)
        warm_sol = solve_lp_repair(p, warm=warm)
        assert warm_sol.lower_bound == pytest.approx(cold_sol.lower_bound, rel=1e-9)
        assert p.is_valid(warm_sol.assignment) and p.gpus_used(warm_sol.assignment) >= 25
    # pruning depends on the costs, so a round may change the columns; most keep them
    assert warm.counts["cold"] == 1 and warm.counts["in_place"] >= 1
    assert warm.counts["in_place"] + warm.counts["warm"] == 3


def test_remembered_basis_is_hig_hs_basis():
    seq, _, warm = churned_pair(num_jobs=200, seed=5)
    for _ in range(2):
        view = seq.view()
        seq.advance(warm.decide(view))
    state = warm._solver_options["warm"]
    basis = state._h.getBasis()
    col = np.array([int(s) for s in basis.col_status])
    row = np.array([int(s) for s in basis.row_status])
    mine_col = np.empty_like(col)
    mine_col[np.argsort(state._keys, kind="stable")] = state._key_status
    mine_row = np.empty(len(state._ids), dtype=np.int64)
    mine_row[np.argsort(state._ids, kind="stable")] = state._id_status
    np.testing.assert_array_equal(mine_col, col)
    np.testing.assert_array_equal(np.concatenate([mine_row, state._tail_status]), row)


@pytest.mark.parametrize("solver", ["lp_repair", "lp_dive"])
def test_a_failed_warm_solve_falls_back_to_the_cold_lp(solver):
    seq, cold, warm = churned_pair(num_jobs=150, seed=2, solver=solver, exact_columns=0)
    view = seq.view()
    cold.decide(view)
    seq.advance(warm.decide(view))
    state = warm._solver_options["warm"]
    state._h.setOptionValue("time_limit", 0.0)  # HiGHS stops before an optimum (the budget sets no time limit)
    view = seq.view()
    # the round is then the cold path's: the same LP, the same repair or dive, the same decision
    assert np.array_equal(warm.decide(view), cold.decide(view))
    assert state.counts["fell_back"] == 1 and state.counts["cold"] == 1 and state._h is None  # next round starts afresh
    assert not warm.last_solution.fallback


def test_warm_start_option_is_checked():
    from fairsim.errors import InputError
    from fairsim.policies.fft import FFTPolicy

    with pytest.raises(InputError, match="warm_start"):
        FFTPolicy(warm_start="yes")
    assert not FFTPolicy(solver="milp", warm_start=True).warm_start  # nothing to keep for the exact MILP


def test_basis_status_codes_are_highs_own():
    import highspy

    status = highspy.HighsBasisStatus
    assert (warm._LOWER, warm._BASIC, warm._UPPER) == (int(status.kLower), int(status.kBasic), int(status.kUpper))


def test_a_warm_run_is_deterministic_and_finishes_every_job():
    from fairsim.experiment.compose import compose_config
    from fairsim.experiment.single import run_config

    cfg = ["num_jobs=60", "load=1.5", "policy.warm_start=true"]
    first, second = run_config(compose_config(cfg)), run_config(compose_config(cfg))
    assert first.summary["finished_jobs"] == 60 and first.summary["solver_fallbacks"] == 0
    assert first.summary["solver_calls"] > 0
    assert first.jobs["jct_s"].tolist() == second.jobs["jct_s"].tolist()


def test_warm_reduced_costs_are_c_minus_a_transpose_y():
    rng = np.random.default_rng(11)
    n, t = 80, 4
    p = AssignmentProblem(
        rng.normal(5.0, 2.0, (n, t)),
        rng.random((n, t)) > 0.2,
        rng.choice([1, 2, 4], size=n),
        np.array([10, 8, 8, 6]),
        25,
        np.arange(n),
    )
    q = program.prune_dominated(p)
    cols = program.columns(q)
    warm = WarmStart()
    lp = warm.relaxation(q, cols, Budget())
    y = np.asarray(warm._h.getSolution().row_dual)
    a, _, _ = program.matrix(q, cols)
    np.testing.assert_allclose(lp.reduced, cols.cost - a.T @ y, atol=1e-9)
    np.testing.assert_allclose(lp.reduced, np.asarray(warm._h.getSolution().col_dual), atol=1e-7)


def test_a_long_lived_model_keeps_a_time_limit_per_round():
    # HiGHS checks time_limit against its whole life's run time: a fixed limit would be reached
    # after enough rounds and then cut rounds short at machine-dependent moments
    seq = ChurnedRounds(600, 4, divide=2)
    policy = start_policy(seq, 4, 6000)
    p = program.prune_dominated(policy.build_problem(seq.view()))
    cols = program.columns(p)
    warm, rng, limit = WarmStart(), np.random.default_rng(0), 0.1  # each solve takes a few ms
    budget = Budget(Limits(wall_s=limit))  # the wall clock is an opt-in; this is its per-round bookkeeping
    for _ in range(60):
        moved = program.Columns(cols.rows, cols.types, cols.cost * rng.uniform(0.9, 1.1, len(cols.cost)), cols.width)
        budget.start()
        assert warm.solve(p, moved, budget)
    assert warm.model().getRunTime() > limit  # the model has outlived one round's limit
    assert warm.counts["fell_back"] == 0
