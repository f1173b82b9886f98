"""AlloX on hand-made views: the min-cost matching, running-job offsets, no switching."""

import numpy as np

from fairsim.policies.allox import AlloxPolicy, allox_positions
from fairsim.testing import toy_view


def fresh(policy, num_jobs=8):
    policy.reset(None, num_jobs, 0)
    return policy


def test_matching_minimizes_total_completion_time():
    # processing times t[j, k]: A = [1, 10], B = [2, 2.5].
    # A on 0, B on 1: 1 + 2.5 = 3.5; both on 0 (A first): 1 + 3 = 4; both on 1: 2.5 + 12.5 = 15.
    job_type, rank = allox_positions(np.array([[1.0, 10.0], [2.0, 2.5]]), np.zeros(2))
    assert job_type.tolist() == [0, 1]
    # same jobs, 5 s of running work ahead on type 1: B there costs 2.5 + 5, so both go to type 0,
    # A (shorter) in front: 2 * 1 + 2 = 4 < 1 + 7.5
    job_type, rank = allox_positions(np.array([[1.0, 10.0], [2.0, 2.5]]), np.array([0.0, 5.0]))
    assert job_type.tolist() == [0, 0]
    assert rank[0] < rank[1]


def test_decide_uses_type_queues_not_just_free_gpus():
    # capacities [1, 2]; job R runs on type 1 (10 units at 1/s, 1 of 2 GPUs -> t = 10 * 1/2 = 5).
    # A: 1 unit, tput [1, 0.1] -> t = [1, 10/2 = 5]; B: 2 units, tput [1, 0.8] -> t = [2, 2.5/2 = 1.25].
    # B on type 1 costs 1.25 + 5 = 6.25 (+1 for A on 0) = 7.25; both on type 0 cost 2 + 2 = 4.
    # So B queues behind A on type 0 and waits although a type-1 GPU is free.
    policy = fresh(AlloxPolicy())
    view = toy_view(
        [[1, 1], [1, 0.1], [1, 0.8]], capacity=[1, 2], work=[10, 1, 2], last_type=[1, -1, -1], prev_type=[1, -1, -1]
    )
    assert policy.decide(view).tolist() == [1, 0, -1]


def test_started_jobs_never_move_or_stop():
    # job 0 runs on the slow type; a much shorter job 1 arrives that would love the same type.
    # AlloX does not preempt: job 0 keeps its GPU, job 1 takes the other type.
    policy = fresh(AlloxPolicy())
    view = toy_view(
        [[1, 0.5], [1, 0.5]], capacity=[1, 1], work=[1000, 1], done=[10, 0], last_type=[0, -1], prev_type=[0, -1]
    )
    assert policy.decide(view).tolist() == [0, 1]


def test_unchanged_rounds_keep_the_decision():
    policy = fresh(AlloxPolicy())
    view = toy_view([[1.0], [1.0]], capacity=[1], work=[10, 10], last_type=[0, -1], prev_type=[0, -1], changed=False)
    assert policy.decide(view).tolist() == [0, -1]
    assert policy.matchings == 0  # a full type: no matching needed


def test_gangs_share_a_type_in_proportion():
    # all jobs 4 workers (the FFT paper's trace 1 setting). Type 0: 8 GPUs, type 1: 4 GPUs.
    # t = time * 4 / c: job A (work 8, tput [1, 2]) -> [4, 4]; B, C (work 4, tput [1, 1]) -> [2, 4].
    # Best: B, C on type 0 (positions 2 and 1: 2*2 + 2 = 6) and A on type 1 (4): 10.
    # (A on 0 with B: e.g. B then A: 2*2 + 4 = 8, C on 1: 4 -> 12.)  Type 0 runs B and C (8 GPUs).
    policy = fresh(AlloxPolicy())
    view = toy_view([[1, 2], [1, 1], [1, 1]], capacity=[8, 4], workers=[4, 4, 4], work=[8, 4, 4])
    assert policy.decide(view).tolist() == [1, 0, 0]


def test_max_matched_caps_the_matching():
    policy = fresh(AlloxPolicy(max_matched=2), 8)
    view = toy_view([[1.0]] * 5, capacity=[1], work=[50, 40, 30, 20, 10])
    # only the 2 shortest waiting jobs (20 and 10 units) are matched; on one GPU the shorter goes first
    assert policy.decide(view).tolist() == [-1, -1, -1, -1, 0]
    assert policy.matchings == 1


def test_on_arrival_binds_a_job_to_its_queue_for_good():
    # one GPU per type; R0 runs on type 0 (t = 50), R1 on type 1 (t = 100). New job A has
    # t = [10, 1]: it adds 50 + 10 = 60 on type 0, 100 + 1 = 101 on type 1 -> bound to type 0.
    # When R1 finishes, type 1 is free: the matching moves A there, on_arrival keeps it waiting.
    from fairsim.testing import with_job_ids

    def views():
        v1 = toy_view(
            [[1, 1], [1, 1], [1, 10]], capacity=[1, 1], work=[50, 100, 10], last_type=[0, 1, -1], prev_type=[0, 1, -1]
        )
        v2 = toy_view(
            [[1, 1], [1, 10]],
            capacity=[1, 1],
            work=[50, 10],
            done=[10, 0],
            now=300,
            last_type=[0, -1],
            prev_type=[0, -1],
        )
        return with_job_ids(v1, [0, 1, 2]), with_job_ids(v2, [0, 2])

    policy = fresh(AlloxPolicy(queue_choice="on_arrival"))
    v1, v2 = views()
    assert policy.decide(v1).tolist() == [0, 1, -1]
    assert policy.bound[2] == 0
    assert policy.decide(v2).tolist() == [0, -1]
    policy = fresh(AlloxPolicy())
    assert policy.decide(v1).tolist() == [0, 1, -1]
    assert policy.decide(v2).tolist() == [0, 1]


def test_on_arrival_counts_the_jobs_it_delays():
    # two types of 1 GPU, both busy with t = 5 of running work. Queued on type 0: B (t = 1) and
    # D (t = 10). New job A, t = [2, 3.5]. Type 0: A finishes at 5 + 1 + 2 = 8 and delays D by 2
    # -> 10; type 1: 5 + 3.5 = 8.5 -> type 1 (by A's own finish time alone type 0 would win).
    policy = fresh(AlloxPolicy(queue_choice="on_arrival"))
    policy.bound[:] = [-1, -1, 0, 0, -1, -1, -1, -1]
    view = toy_view(
        [[1, 1], [1, 1], [1, 0], [1, 0], [1, 2 / 3.5]],
        capacity=[1, 1],
        work=[5, 5, 1, 10, 2],
        last_type=[0, 1, -1, -1, -1],
        prev_type=[0, 1, -1, -1, -1],
    )
    assert policy.decide(view).tolist() == [0, 1, -1, -1, -1]
    assert policy.bound[4] == 1


def gavel_allox(num_jobs, cluster):
    policy = AlloxPolicy(queue_choice="gavel")
    policy.reset(cluster, num_jobs, 0)
    return policy


def test_gavel_reading_matches_jobs_to_gpus_and_keeps_holders():
    # Gavel's AlloX_Perf: one fast and one slow GPU; processing times t = work / throughput:
    # A [1, 10], B [2, 3], C [4, 100]. Best total completion time: A then C on the fast GPU
    # (A at q = 2: 2 * 1, C at q = 1: 4) and B on the slow one (3): 9. (All three on the fast
    # GPU, shortest first: 3 + 4 + 4 = 11; B and C fast, A slow: 4 + 4 + 10 = 18.)
    # Each GPU's front job gets X = 1 on its type; C, queued behind A, gets no X yet.
    from fairsim.testing import with_job_ids

    view = toy_view([[1, 0.1], [1, 2 / 3], [1, 0.04]], capacity=[1, 1], work=[1, 2, 4])
    policy = gavel_allox(3, view.cluster)
    assert policy.gavel_fractions(view).tolist() == [[1, 0], [0, 1], [0, 0]]
    # B finished: A keeps its X = 1 (holders are not matched again); the only free GPU is the slow
    # one, so C is matched there although the fast GPU would be 25x faster
    later = with_job_ids(toy_view([[1, 0.1], [1, 0.04]], capacity=[1, 1], work=[1, 4], now=360.0), [0, 2])
    assert policy.gavel_fractions(later).tolist() == [[1, 0], [0, 1]]
    assert policy.matchings == 2


def test_gavel_reading_lets_unmatched_jobs_fill_left_over_gpus():
    # one fast and one very slow GPU; A: t = [1, 100], B: t = [2, 100]. Both queue on the fast GPU
    # (A in front: 2 * 1 + 2 = 4 < 1 + 100), so only A gets X = 1 and the slow GPU has no X.
    # Gavel's mechanism still fills it with B (priority 0 jobs take GPUs left over), while the
    # event-driven matching leaves B waiting for the fast GPU.
    view = toy_view([[1, 0.01], [1, 0.02]], capacity=[1, 1], work=[1, 2])
    assert gavel_allox(2, view.cluster).decide(view).tolist() == [0, 1]
    assert fresh(AlloxPolicy(), 2).decide(view).tolist() == [0, -1]


def test_gavel_reading_takes_single_gpu_jobs_only():
    import pytest

    from fairsim.errors import InputError

    view = toy_view([[1.0], [1.0]], capacity=[4], workers=[1, 2])
    with pytest.raises(InputError, match="queue_choice"):
        gavel_allox(2, view.cluster).decide(view)
    with pytest.raises(InputError, match="mechanism"):
        AlloxPolicy(mechanism={"recompute_min_interval_s": 0})


def test_gavel_reading_runs_every_job_under_the_engine_checks():
    # single-GPU jobs on 2 + 1 GPUs of two types; the engine checks every round (capacity, one
    # type per job) and every job finishes; X = 0 jobs fill left-over GPUs, so jobs do switch
    from fairsim.sim.config import SimConfig
    from fairsim.sim.engine import simulate
    from fairsim.testing import toy_cluster, toy_jobs

    rng = np.random.default_rng(4)
    jobs = toy_jobs(
        rng.uniform(0.5, 2.0, (12, 2)), rng.uniform(500, 5000, 12), arrival=np.sort(rng.uniform(0, 4000, 12))
    )
    res = simulate(jobs, toy_cluster({"V100": 2, "T4": 1}), AlloxPolicy(queue_choice="gavel"), SimConfig(check=True))
    assert res.jobs["finish_s"].notna().all()
    assert res.stats["allox_matchings"] >= 1 and res.stats["allocation_recomputes"] >= res.stats["allox_matchings"]
    assert res.jobs["type_switches"].sum() > 0  # the paper's reading never switches (test_baselines)
