"""FFT (``policy=ours``) at the decision level: costs, K(t), tau, rho, options, fallback, and the
overhead-agnostic SRTF, on hand-made views with hand-computed expectations."""

import numpy as np
import pytest

from fairsim.errors import InputError
from fairsim.fairness.share import fair_rate, share_rate
from fairsim.policies.fft import FFTPolicy
from fairsim.policies.srtf_agnostic import OverheadAgnosticSRTF
from fairsim.solve import milp, packing, program, relaxation
from fairsim.testing import toy_view


def two_job_view(**kw):
    """Job 0 (1 worker, 900 units, 300 done) ran on type 0 last round; job 1 (2 workers, 600 units)
    is new and cannot use type 1. Rounds of 300 s, now = 600 s."""
    args = dict(
        throughput=[[1.0, 2.0], [1.0, 0.0]],
        capacity=[4, 4],
        workers=[1, 2],
        work=[900, 600],
        done=[300, 0],
        arrival=[0, 300],
        now=600,
        round_len=300,
        last_type=[0, -1],
        switch_cost_s=[[0.0, 60.0], [30.0, 30.0]],
    )
    args.update(kw)
    return toy_view(**args)


def fresh(num_jobs=2, **options):
    policy = FFTPolicy(**options)
    policy.reset(None, num_jobs, 0)
    return policy


def test_costs_follow_eq6_by_hand():
    problem = fresh().build_problem(two_job_view())
    # job 0: theta/round = [300, 600], W = 900, age 2 rounds, d = 1
    #   type 0: 2*300/900 + 900/300 + 0 (stays)            = 3.6667 (minus the 1e-6 stay tie-break)
    #   type 1: 2*600/900 + 900/600 + 60 s / 300 s * 1    = 1.3333 + 1.5 + 0.2 = 3.0333
    # job 1: theta/round = 300, W = 600, age 1 round, d = 2; a new job pays the engine's cost (30 s) as s
    #   type 0: 1*300/600 + 2*600/300 + 30/300*2           = 0.5 + 4 + 0.2 = 4.7
    assert problem.cost[0, 0] == pytest.approx(11 / 3 - 1e-6, abs=1e-9)
    assert problem.cost[0, 1] == pytest.approx(4 / 3 + 1.5 + 0.2)
    assert problem.cost[1, 0] == pytest.approx(4.7)
    assert problem.min_gpus == 3  # K: job 1 only fits type 0, 1 + 2 GPUs


def test_work_term_remaining_and_switch_options():
    view = two_job_view()
    remaining = fresh(work_term="remaining").build_problem(view).cost
    # job 0 with W = 600 left: type 0: 2*300/600 + 600/300 = 3; type 1: 2*600/600 + 600/600 + 0.2 = 3.2
    assert remaining[0, 0] == pytest.approx(3.0, abs=1e-5)
    assert remaining[0, 1] == pytest.approx(3.2)
    # switching penalty of the 2-worker job: gpu_rounds 0.2, rounds 0.1, seconds 30, zero when idle, off
    base = 0.5 + 4.0
    for options, s in (
        ({"switch_units": "rounds"}, 0.1),
        ({"switch_units": "seconds"}, 30.0),
        ({"switch_when_idle": "zero"}, 0.0),
        ({"switch_penalty": False}, 0.0),
    ):
        assert fresh(**options).build_problem(view).cost[1, 0] == pytest.approx(base + s), options


def test_weights_scale_the_age_and_rho_terms():
    view = two_job_view()
    assert fresh(age_weight=0.0).build_problem(view).cost[0, 1] == pytest.approx(1.5 + 0.2)
    policy = fresh(rho_weight=2.0)
    policy.rho[0] = 0.5
    # job 0's best type is type 1 (600/round): theta' = [0.5, 1]; the rho term is 2 * 0.5 * theta'
    cost = policy.build_problem(view).cost
    assert cost[0, 0] == pytest.approx(11 / 3 - 1e-6 - 0.5, abs=1e-9)
    assert cost[0, 1] == pytest.approx(4 / 3 + 1.5 + 0.2 - 1.0)


def test_negative_age_weight_makes_age_a_priority():
    """age_weight < 0 is accepted on purpose (docs/ours.md, age_weight): the first phi term is
    subtracted, so of two otherwise equal jobs the older one is the cheaper to run."""
    view = two_job_view()
    cost = fresh(age_weight=-1.0).build_problem(view).cost
    # job 0 on type 1: -2*600/900 + 900/600 + 0.2
    assert cost[0, 1] == pytest.approx(-4 / 3 + 1.5 + 0.2)
    twins = toy_view(
        throughput=[[1.0], [1.0]],
        capacity=[1],
        workers=[1, 1],
        work=[900, 900],
        done=[0, 0],
        arrival=[0, 300],
        now=600,
        round_len=300,
        last_type=[-1, -1],
        switch_cost_s=[[0.0], [0.0]],
    )
    assert fresh(age_weight=-1.0).decide(twins).tolist() == [0, -1]  # the older job runs
    assert fresh(age_weight=1.0).decide(twins).tolist() == [-1, 0]  # as printed, the younger one


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), "old", True])
def test_age_weight_must_be_a_finite_number(bad):
    with pytest.raises(InputError, match="age_weight: must be a finite number"):
        FFTPolicy(age_weight=bad)


def test_fair_rate_for_multi_worker_jobs():
    tput = np.array([[1.0, 2.0], [1.0, 2.0]])
    workers = np.array([1, 4])
    cap = np.array([4, 4])
    # gpu_share, N = 4: job 0 may use 4/(4*1) = 1 of each type's time, capped at 1 in all: the
    # fast type only -> 2. job 1: 4/(4*4) = 0.25 of each -> 0.25*2 + 0.25*1 = 0.75
    assert fair_rate(tput, workers, cap, 4, "gpu_share").tolist() == pytest.approx([2.0, 0.75])
    # time_share: 1/4 of each type's time whatever the gang size -> 0.75 for both
    assert fair_rate(tput, workers, cap, 4, "time_share").tolist() == pytest.approx([0.75, 0.75])
    # gpu_share is the metric's isolated rate (the policy steers toward what it is judged by)
    assert fair_rate(tput, workers, cap, 4).tolist() == pytest.approx(
        share_rate(tput, workers, cap, np.full(2, 4.0)).tolist()
    )


def test_tau_from_arrival_and_from_now():
    view = two_job_view()
    # N = 2, gpu_share: job 0 gets 4/2 = 2 of each type's time -> capped: all on type 1 -> 2 units/s;
    # job 1 (2 workers, type 0 only) gets 4/(2*2) = 1 -> 1 unit/s
    arrival = fresh()
    arrival.build_problem(view)
    assert arrival.tau.tolist() == pytest.approx([0 + 900 / 2, 300 + 600 / 1])
    now = fresh(tau_from="now")
    now.build_problem(view)
    assert now.tau.tolist() == pytest.approx([600 + 600 / 2, 600 + 600 / 1])


def starving_views():
    """One GPU, two jobs of 10 rounds (3000 units at 1/s), both arrived at 0. The view at round r
    says who ran in round r-1: job 0 in rounds 0-2, job 1 in round 3."""
    last = {0: [-1, -1], 1: [0, -1], 2: [0, -1], 3: [0, -1], 4: [-1, 0]}
    return [
        toy_view([[1.0], [1.0]], [1], work=[3000, 3000], now=300 * r, last_type=last[r], changed=(r == 0))
        for r in range(5)
    ]


def test_rho_rises_while_starved_and_falls_once_running():
    # tau - a = 3000 / 0.5 = 6000 s = 20 rounds; fair work per round (in best-type rounds) = 10/20 = 0.5;
    # mu(r) = r / 20. rho of job 1 after each decision r (update with mu(r-1) and last round's run):
    #   r=1: 0 (mu(0) = 0); r=2: 0.05*0.5 = 0.025; r=3: 0.025 + 0.1*0.5 = 0.075;
    #   r=4 (it ran in round 3): 0.075 + 0.15*(0.5 - 1) = 0.0
    # job 0 always ran at 1 > 0.5 until round 3, so its rho stays 0; in round 3 it waited: 0.15*0.5
    policy = fresh()
    rho = []
    for view in starving_views():
        policy.build_problem(view)
        rho.append(policy.rho_of([0, 1]).tolist())
    assert [r[1] for r in rho] == pytest.approx([0.0, 0.0, 0.025, 0.075, 0.0])
    assert [r[0] for r in rho] == pytest.approx([0.0, 0.0, 0.0, 0.0, 0.075])


def test_rho_ablations():
    nofair, constmu = fresh(fairness=False), fresh(mu="constant", mu_const=1.0)
    for view in starving_views()[:4]:
        nofair.build_problem(view)
        constmu.build_problem(view)
    assert nofair.rho_of([0, 1]).tolist() == [0.0, 0.0]
    # constant mu = 1: job 1 starved in rounds 0 (nobody ran), 1 and 2: 3 * 0.5
    assert constmu.rho_of([1]).tolist() == pytest.approx([1.5])


def test_memory_infeasible_type_never_chosen_even_with_huge_rho():
    view = toy_view([[1.0, 5.0], [1.0, 5.0]], [2, 2], work=[100, 100], feasible=[[True, False], [True, True]])
    policy = fresh()
    policy.rho[:] = 1e6  # every job desperately wants its fastest type
    assignment = policy.decide(view)
    assert assignment[0] == 0  # type 1 would be 5x faster but does not fit job 0's memory
    assert assignment[1] == 1


def test_decision_is_work_conserving_with_positive_costs():
    # 3 single-GPU jobs, 2 GPUs: all costs are positive, yet K = 2 forces two jobs to run, the two cheapest
    view = toy_view([[1.0], [1.0], [1.0]], [2], work=[300, 900, 600])
    assignment = fresh(3).decide(view)
    assert assignment.tolist() == [0, -1, 0]  # SRSF-like: d W / theta = 1, 3, 2 rounds


def test_fig2_decision_keeps_j4_where_srtf_migrates():
    # J4 alone at t = 5 min, 564 of 864 units left, on T4 (1/s) last round; A10 is 1.125/s, moving costs 120 s.
    view = toy_view(
        [[1.0, 1.125]], [1, 1], work=[864], done=[300], now=300, last_type=[0], switch_cost_s=[[0.0, 120.0]]
    )
    assert fresh(1).decide(view).tolist() == [0]
    assert OverheadAgnosticSRTF().decide(view).tolist() == [1]


def test_srtf_orders_by_remaining_time_on_the_fastest_type():
    view = toy_view([[1.0, 2.0], [1.0, 2.0], [1.0, 2.0]], [1, 1], work=[1000, 200, 500], last_type=[1, 0, -1])
    # remaining times 500, 100, 250 s: job 1 gets the fast type, job 2 the slow one, job 0 waits
    assert OverheadAgnosticSRTF().decide(view).tolist() == [-1, 1, 0]


def test_solver_failure_is_counted_and_never_crashes(monkeypatch):
    class Failed:
        x = None
        status = 4
        message = "simulated failure"

    monkeypatch.setattr(relaxation, "linprog", lambda *a, **k: Failed())
    for module in (milp, packing):  # the exact program and K(t)
        monkeypatch.setattr(module, "milp", lambda *a, **k: Failed())
    view = toy_view([[1.0, 2.0], [1.0, 2.0], [1.0, 0.0]], [1, 1], work=[300, 600, 900])
    policy = fresh(3, warm_start=False)  # the cold path's LP is linprog's (the warm one's is highspy's)
    assignment = policy.decide(view)
    assert (assignment >= 0).sum() == 2  # greedy still fills both GPUs
    assert policy.stats()["solver_fallbacks"] == 1


def test_milp_solver_option_gives_the_same_decision():
    view = two_job_view()
    assert fresh(solver="milp").decide(view).tolist() == fresh().decide(view).tolist() == [1, 0]


@pytest.mark.parametrize(
    "options",
    [
        {"solver": "cplex"},
        {"work_term": "half"},
        {"time_limit_s": 0},
        {"repair_core": 0},
        {"mu_const": -1},
        {"tau_from": "later"},
        {"rho_weight": -1},
    ],
)
def test_bad_options_raise_input_error(options):
    with pytest.raises(InputError):
        FFTPolicy(**options)


def test_rounds_above_the_certified_gap_are_counted(monkeypatch):
    """stats() counts the rounds whose answer is more than dive_gap above its own lower bound,
    and keeps the largest such gap; a fallback (no bound) counts as uncertified."""
    from fairsim.policies import fft

    answers = iter([(100.05, 100.0), (101.0, 100.0), (50.0, np.nan)])  # gaps 0.05%, 0.99%, none

    def canned(problem, *args, **kwargs):
        objective, bound = next(answers)
        fallback = np.isnan(bound)
        return program.Solution(
            np.array([0, -1]), objective, "greedy" if fallback else "lp_dive", not fallback, fallback, 0.0, bound
        )

    monkeypatch.setitem(fft.SOLVERS, "lp_dive", canned)
    policy = fresh(dive_gap=1e-3)
    for _ in range(3):
        policy.decide(two_job_view())
    stats = policy.stats()
    assert stats["solver_uncertified_rounds"] == 2
    assert stats["solver_max_bound_gap"] == pytest.approx(1.0 / 101.0)


def test_bound_gap_reads_the_solution_own_bound():
    sol = program.Solution(np.array([0]), -99.0, "lp_dive", False, False, 0.0, -100.0)
    assert program.bound_gap(sol) == pytest.approx(0.01)
    empty = program.Solution(np.array([], dtype=np.int64), 0.0, "lp_dive", True, False, 0.0)
    assert program.bound_gap(empty) == 0.0
    greedy = program.Solution(np.array([0]), 5.0, "greedy", False, True, 0.0)
    assert program.bound_gap(greedy) == np.inf
