"""Themis on hand-made instances (answers worked out in the comments)."""

import numpy as np
import pytest

from fairsim.policies.themis import ThemisPolicy, ideal_throughput, unbounded_bids
from fairsim.solve.auction import auction_problem, solve_auction
from fairsim.solve.program import solve_greedy
from fairsim.testing import toy_view, with_job_ids


def fresh(policy, num_jobs=4):
    policy.reset(None, num_jobs, 0)
    return policy


def test_ideal_throughput_fills_fastest_types_first():
    # 4 jobs, capacities [4, 2]. Job 0: 1 worker, tput [1, 3]. Its 1/4 share: type 0 for
    # 4/4/1 = 1.0 of the time, type 1 for 2/4/1 = 0.5. Fastest first: 0.5 on type 1 (1.5), the
    # remaining 0.5 of the time on type 0 (0.5) -> 2.0.
    # Job 1: 2 workers, tput [2, 2]: type 0 for 4/4/2 = 0.5, type 1 for 2/4/2 = 0.25 -> 1.5.
    view = toy_view([[1, 3], [2, 2], [1, 1], [1, 1]], capacity=[4, 2], workers=[1, 2, 1, 1])
    assert ideal_throughput(view)[:2] == pytest.approx([2.0, 1.5])


def two_waiting_jobs(capacity=1):
    # one type; job 0 arrived at 0, job 1 at 900; now 1000; both 100 units at 1 unit/s.
    return toy_view([[1.0], [1.0]], capacity=[capacity], work=[100, 100], arrival=[0, 900], now=1000)


def test_worst_rho_job_gets_the_free_gpu():
    # N = 2, one GPU: ideal tput 0.5, T_ideal = 200 s for both. Waiting a 600 s lease:
    # rho_0 = (1000 + 600 + 100) / 200 = 8.5, rho_1 = (100 + 600 + 100) / 200 = 4.
    # f = 0.5 offers the GPU to ceil(0.5 * 2) = 1 job, the worst: job 0.
    policy = fresh(ThemisPolicy(fairness_knob=0.5, lease_s=600))
    assert policy.decide(two_waiting_jobs()).tolist() == [0, -1]


def test_f_zero_lets_the_auction_pick_the_largest_rho_improvement():
    # f = 0: both bid. Improvement of job 0: (1000+600+100)/(1000+100) = 1.55;
    # of job 1: (100+600+100)/(100+100) = 4. One GPU -> the product is largest with job 1.
    policy = fresh(ThemisPolicy(fairness_knob=0.0, lease_s=600))
    assert policy.decide(two_waiting_jobs()).tolist() == [-1, 0]


def test_leftover_gpus_go_to_jobs_outside_the_auction():
    # two GPUs: the auction (only job 0) takes one; the leftover goes to job 1
    policy = fresh(ThemisPolicy(fairness_knob=0.5, lease_s=600))
    assert policy.decide(two_waiting_jobs(capacity=2)).tolist() == [0, 0]


def test_lease_holder_keeps_its_gpu_until_expiry():
    # one GPU, 1 unit/s, 10000 units each, 300 s rounds, 600 s lease (= 2 rounds), f = 0.5.
    policy = fresh(ThemisPolicy(fairness_knob=0.5, lease_s=600))
    v0 = toy_view([[1.0]], capacity=[1], work=[10000], now=0)
    assert policy.decide(with_job_ids(v0, [0])).tolist() == [0]  # alone: lease until t = 600
    # t = 300: job 1 arrives; job 0 still holds its lease
    v1 = toy_view(
        [[1.0], [1.0]],
        capacity=[1],
        work=[10000, 10000],
        done=[300, 0],
        arrival=[0, 300],
        now=300,
        last_type=[0, -1],
        prev_type=[0, -1],
    )
    assert policy.decide(with_job_ids(v1, [0, 1])).tolist() == [0, -1]
    # t = 600: lease over, both bid-eligible. Waiting estimates: job 0: 600 + 600 + 9400 = 10600,
    # job 1: 300 + 600 + 10000 = 10900; same T_ideal -> job 1 has the worse rho and is offered the GPU
    v2 = toy_view(
        [[1.0], [1.0]],
        capacity=[1],
        work=[10000, 10000],
        done=[600, 0],
        arrival=[0, 300],
        now=600,
        last_type=[0, -1],
        prev_type=[0, -1],
    )
    assert policy.decide(with_job_ids(v2, [0, 1])).tolist() == [-1, 0]


def test_lease_rounds_up_to_whole_rounds():
    policy = ThemisPolicy(lease_s=700)
    assert policy.lease_len(toy_view([[1.0]], capacity=[1], round_len=300)) == 900


def test_bid_prefers_fast_type_and_counts_switch_overhead():
    # one job, types [slow 1/s, fast 2/s], 1000 units, age 0: fast: 500 s, slow: 1000 s -> fast.
    policy = fresh(ThemisPolicy(fairness_knob=0.0, lease_s=600))
    assert policy.decide(toy_view([[1.0, 2.0]], capacity=[1, 1], work=[1000])).tolist() == [1]
    # with 600 s of overhead on the fast type it costs 1100 s there vs 1000 s on the slow one
    # (and waiting a 600 s lease for the fast type would cost 1100 s too)
    policy = fresh(ThemisPolicy(fairness_knob=0.0, lease_s=600))
    view = toy_view([[1.0, 2.0]], capacity=[1, 1], work=[1000], switch_cost_s=[[0.0, 600.0]])
    assert policy.decide(view).tolist() == [0]


def test_auction_is_exact_where_greedy_is_not():
    # one type with 2 GPUs: A (2 workers, value 1.0), B and C (1 worker, 0.6 each).
    # greedy takes A (1.0); the optimum is B + C (1.2).
    value = np.array([[1.0], [0.6], [0.6]])
    widths = np.array([2, 1, 1])
    free = np.array([2])
    assert solve_greedy(auction_problem(value, widths, free)).assignment.tolist() == [0, -1, -1]
    assert max_value_assignment(value, widths, free).tolist() == [-1, 0, 0]


def max_value_assignment(value, widths, free):
    """The exact auction (the MILP route of solve_auction)."""
    return solve_auction(auction_problem(value, widths, free), dive=False).assignment


def test_nothing_to_do_when_no_gang_fits():
    policy = fresh(ThemisPolicy())
    view = toy_view([[1.0], [1.0]], capacity=[2], workers=[2, 2], last_type=[0, -1], prev_type=[0, -1])
    policy.held[0], policy.lease_end[0] = 0, 1e9
    assert policy.decide(view).tolist() == [0, -1]


def test_defaults_are_the_prototypes():
    policy = ThemisPolicy()
    assert (policy.f, policy.lease_s) == (0.2, 300.0)


def test_auctions_repeat_among_the_next_worst_while_gpus_remain():
    # three waiting jobs on one type of 3 GPUs, f = 0.5: the first auction offers floor(0.5 x 3) = 1
    # job (the worst), the next floor(0.5 x 2) = 1, the last the remaining one: all three run
    view = toy_view([[1.0]] * 3, capacity=[3], work=[100] * 3, arrival=[0, 500, 900], now=1000)
    policy = fresh(ThemisPolicy(fairness_knob=0.5, lease_s=600), num_jobs=3)
    assert policy.decide(view).tolist() == [0, 0, 0]
    assert policy.auctions == 3


def test_only_jobs_that_want_gpus_are_ranked():
    # job 0 holds the only GPU of type 0 under a lease and has the worst rho; f = 0.5. Ranking the
    # wanting jobs offers the free type-1 GPU to job 1 in an auction. With rank=all every job is
    # ranked: the one slot goes to the lease holder, no auction runs, and job 1 gets the
    # GPU only through the greedy leftover step (leftover=greedy).
    # rho: job 0 (1000 + 1000) x 1 / 1000 = 2; job 1 (1 + 600 + 1e5) x 1 / 1e5 = 1.006
    view = toy_view(
        [[1.0, 1.0], [1.0, 1.0]],
        capacity=[1, 1],
        work=[1000, 1e5],
        arrival=[0, 999],
        now=1000,
        last_type=[0, -1],
        prev_type=[0, -1],
    )
    policy = fresh(ThemisPolicy(fairness_knob=0.5, lease_s=600), num_jobs=2)
    policy.held[0], policy.lease_end[0] = 0, 1e9
    assert policy.decide(view).tolist() == [0, 1]
    assert policy.auctions == 1
    policy = fresh(ThemisPolicy(fairness_knob=0.5, lease_s=600, rank="all", leftover="greedy"), num_jobs=2)
    policy.held[0], policy.lease_end[0] = 0, 1e9
    assert policy.decide(view).tolist() == [0, 1]
    assert policy.auctions == 0


def slow_type_free_view():
    # job 0 holds the fast type (4/s) under a lease; job 1 (10000 units) waits; only its slow
    # type (1/s) is free.
    return toy_view(
        [[4.0, 1.0], [4.0, 1.0]], capacity=[1, 1], work=[1e5, 1e4], arrival=[0, 0], last_type=[0, -1], prev_type=[0, -1]
    )


def test_with_the_lease_wait_estimate_a_job_bids_only_if_its_rho_improves():
    # waiting a 300 s lease and then running fast: 300 + 2500 = 2800 s; running slow now:
    # 10000 s. Its rho would not improve, it does not bid, the slow GPU stays free.
    policy = fresh(ThemisPolicy(waiting_rho="lease_wait"), num_jobs=2)
    policy.held[0], policy.lease_end[0] = 0, 1e9
    assert policy.decide(slow_type_free_view()).tolist() == [0, -1]


def test_a_job_without_gpus_bids_on_any_type():
    # default (unbounded rho without GPUs): any GPU lowers it, so job 1 takes the slow type
    policy = fresh(ThemisPolicy(), num_jobs=2)
    policy.held[0], policy.lease_end[0] = 0, 1e9
    assert policy.decide(slow_type_free_view()).tolist() == [0, 1]


def test_unbounded_bids_favour_more_winners_then_larger_improvement():
    # one type of 2 GPUs; gains log(rho_wait / rho_k): A (2 workers) 2.0, B and C (1 worker) 0.1.
    # Two winners beat one: B + C. Among equal counts the larger improvement wins, even negative.
    bids = unbounded_bids(np.array([[2.0], [0.1], [0.1]]))
    assert max_value_assignment(bids, np.array([2, 1, 1]), np.array([2])).tolist() == [-1, 0, 0]
    bids = unbounded_bids(np.array([[0.5], [-1.0], [0.2]]))
    assert max_value_assignment(bids, np.array([1, 1, 1]), np.array([2])).tolist() == [0, -1, 0]
    assert unbounded_bids(np.array([[-np.inf]])).tolist() == [[-np.inf]]


def test_t_ideal_alone_ranks_as_the_authors_code_and_share_as_the_paper():
    # one type of 2 GPUs, now 1000, leases of one 300 s round; both jobs 100 units at 1 unit/s
    # and waiting. Job 0 (1 worker) arrived at 500, job 1 (2 workers) at 400. Ranking rho =
    # (age + lease + remaining / best) / T_ideal: 900 / T0 and 1000 / T1. f = 0.5 offers one
    # of the two jobs first.
    # alone (the authors' simulator and prototype): T_ideal = 100 / 1 for both -> rho 9 and 10:
    #   job 1 is offered first and takes both GPUs; job 0 no longer fits -> [-1, 0].
    # share (1/N of the cluster, N = 2): job 0 runs on 1 GPU all the time (T 100), job 1's gang
    #   half the time (T 200) -> rho 9 and 5: job 0 first, takes one GPU; job 1 no longer fits.
    view = toy_view([[1.0], [1.0]], capacity=[2], workers=[1, 2], work=[100, 100], arrival=[500, 400], now=1000)
    assert fresh(ThemisPolicy(fairness_knob=0.5), 2).decide(view).tolist() == [-1, 0]
    assert fresh(ThemisPolicy(fairness_knob=0.5, t_ideal="alone"), 2).decide(view).tolist() == [-1, 0]
    assert fresh(ThemisPolicy(fairness_knob=0.5, t_ideal="share"), 2).decide(view).tolist() == [0, -1]
    with pytest.raises(ValueError, match="t_ideal.*alone, share"):
        ThemisPolicy(t_ideal="fair")
