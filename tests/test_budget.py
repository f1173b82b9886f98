"""The solvers' work limits (fairsim/solve/budget.py): a limit that binds is counted by kind, the
answer stays feasible, and the same program under the same binding limit gives the same answer;
a wall-clock limit is an opt-in that a run reports as not deterministic."""

import numpy as np
import pytest
from test_lp_dive import gang_heavy

from fairsim.experiment.compose import compose_config
from fairsim.experiment.single import run_config
from fairsim.experiment.tracking import DETERMINISTIC_TAG, run_tags
from fairsim.solve.budget import Budget, Limits
from fairsim.solve.lp_dive import solve_lp_dive
from fairsim.solve.milp import solve_milp
from fairsim.solve.packing import _greedy_packing, _groups, max_packing
from fairsim.solve.program import AssignmentProblem


def multi_knapsack(seed: int) -> AssignmentProblem:
    """40 gangs of 3-13 GPUs worth about their width on 3 types of 20-40 GPUs, no floor: HiGHS
    branches (seed 5: 23 nodes to prove the optimum; seed 38: 19 nodes for the max packing)."""
    rng = np.random.default_rng(seed)
    workers = rng.choice([3, 5, 7, 11, 13], size=40)
    capacity = rng.integers(20, 40, size=3)
    feasible = rng.random((40, 3)) > 0.3
    return AssignmentProblem(-(workers[:, None] * rng.uniform(0.8, 1.2, (40, 3))), feasible, workers, capacity, 0)


def test_a_node_limit_that_binds_is_counted_and_keeps_a_feasible_incumbent():
    p = multi_knapsack(5)
    free = Budget()
    exact = solve_milp(p, free, 0.0)
    assert free.hits == {} and free.peaks["mip_nodes"] > 2 and exact.optimal
    answers = []
    for _ in range(2):
        budget = Budget(Limits(mip_nodes=2))
        sol = solve_milp(p, budget, 0.0)
        assert budget.hits == {"mip_nodes": 1} and budget.peaks["mip_nodes"] == 2
        assert p.is_valid(sol.assignment) and not sol.fallback and not sol.optimal  # an incumbent, not proven
        assert sol.objective >= exact.objective - 1e-9
        answers.append(sol.assignment)
    np.testing.assert_array_equal(*answers)


def test_a_packing_limit_that_binds_keeps_a_feasible_k():
    p = multi_knapsack(38)
    free = Budget()
    k_max = max_packing(p.workers, p.feasible, p.capacity, free)
    assert free.peaks["packing_nodes"] > 1
    bits = (p.feasible.astype(np.int64) << np.arange(3)).sum(axis=1)
    width, group_bits, counts = _groups(p.workers.astype(np.int64), bits)
    greedy = _greedy_packing(width, ((group_bits[:, None] >> np.arange(3)) & 1).astype(bool), counts, p.capacity)
    ks = []
    for _ in range(2):
        budget = Budget(Limits(packing_nodes=1))
        ks.append(max_packing(p.workers, p.feasible, p.capacity, budget))
        assert budget.hits == {"packing_nodes": 1}
    assert ks[0] == ks[1] and greedy <= ks[0] <= k_max  # a packing that exists (the incumbent's or the greedy's)


@pytest.mark.parametrize("limits, kind", [(Limits(lp_iterations=3), "lp_iterations"), (Limits(dive_lps=2), "dive_lps")])
def test_a_dive_cut_short_still_answers_feasibly_and_the_same_each_time(limits, kind):
    p = gang_heavy(1)  # K is every GPU and the dive takes dozens of LP solves unlimited
    free = Budget()
    solve_lp_dive(p, free, exact_columns=0)
    assert free.hits == {} and free.peaks[kind] > 3
    answers = []
    for _ in range(2):
        budget = Budget(limits)
        sol = solve_lp_dive(p, budget, exact_columns=0)
        assert budget.hits.get(kind, 0) > 0
        assert (
            p.is_valid(sol.assignment) and p.gpus_used(sol.assignment) >= p.min_gpus
        )  # the repair or the MILP reached K
        answers.append(sol.assignment)
    np.testing.assert_array_equal(*answers)


def small_run(*overrides: str, jobs: int = 40):
    out = run_config(compose_config([f"num_jobs={jobs}", "track=false", *overrides]))
    assert out.summary["finished_jobs"] == jobs
    return out


@pytest.mark.slow  # two 100-job runs in check mode, about 5 s
def test_ours_with_every_limit_binding_is_feasible_counted_and_repeatable():
    # the dive on the testbed (exact_columns=0: unlimited, up to 69 iterations an LP and 7 dive
    # LPs a round), every limit tiny, the engine checking each round
    tight = [
        "load=3",
        "policy.exact_columns=0",
        "policy.lp_iterations=10",
        "policy.dive_lps=2",
        "policy.mip_nodes=1",
        "sim.check=true",
    ]
    first, second = small_run(*tight, jobs=100), small_run(*tight, jobs=100)
    s = first.summary
    assert s["solver_limit_hits_lp_iterations"] > 0 and s["solver_limit_hits_dive_lps"] > 0
    assert s["solver_max_dive_lps"] == 2 and s["solver_max_lp_iterations"] == 10
    assert s["deterministic"] is True and s["solver_time_limit_hits"] == 0
    assert first.jobs.equals(second.jobs)


@pytest.mark.parametrize("policy", ["gavel", "gavel_mmf", "gavel_ftf"])
def test_gavel_lps_stopped_at_their_iteration_limit_fall_back_and_are_counted(policy):
    s = small_run(f"policy={policy}", "policy.lp_iterations=1").summary
    assert s["solver_limit_hits_lp_iterations"] > 0
    assert 0 < s["solver_fallbacks"] <= s["allocation_recomputes"]  # the mechanism's equal share, counted as before


def test_themis_auctions_within_tight_limits_are_counted():
    s = small_run("policy=themis", "load=2", "policy.exact_gpus=0", "policy.lp_iterations=2").summary
    assert s["solver_limit_hits_lp_iterations"] > 0 and s["solver_max_lp_iterations"] == 2


def test_a_wall_clock_limit_makes_a_run_say_it_is_not_deterministic():
    default, timed = small_run(), small_run("policy.time_limit_s=30")
    assert default.summary["deterministic"] is True and default.provenance["deterministic"] is True
    assert timed.summary["deterministic"] is False and timed.provenance["deterministic"] is False
    assert run_tags("cell", "sweep", timed.provenance)[DETERMINISTIC_TAG] == "false"
    assert default.jobs.equals(timed.jobs)  # 30 s never binds on 40 jobs: only the label differs
