"""Tiresias (FFT's per-type adaptation) and Tiresias' own Discretized 2D-LAS, on hand-made views."""

import dataclasses

import numpy as np

from fairsim.policies.tiresias import TiresiasLasPolicy, TiresiasPolicy, fill_queue
from fairsim.testing import toy_view, with_job_ids


def fresh(policy, num_jobs=8):
    policy.reset(None, num_jobs, 0)
    return policy


def test_fill_queue_prefix_then_backfill():
    # 5 free GPUs, queue widths 2, 2, 4, 1, 1: prefix 2 + 2 = 4, then 4 does not fit, 1 does (5 used)
    assert fill_queue(np.array([2, 2, 4, 1, 1]), 5).tolist() == [True, True, False, True, False]
    assert fill_queue(np.array([4, 1]), 0).tolist() == [False, False]


def test_new_jobs_go_to_the_type_with_least_remaining_service():
    # two types, one GPU each, all jobs 1 unit/s everywhere, all new (arrival order 0, 1, 2):
    # job 0 (100 units): loads [0, 0] tie -> type 0; loads [100, 0]
    # job 1 (300 units): -> type 1; loads [100, 300]
    # job 2 (10 units):  -> type 0 (100 < 300); loads [110, 300]
    # inside type 0, shortest remaining service first: job 2 (10) runs, job 0 (100) waits.
    policy = fresh(TiresiasPolicy())
    view = toy_view([[1, 1]] * 3, capacity=[1, 1], work=[100, 300, 10])
    assert policy.decide(view).tolist() == [-1, 1, 0]
    assert policy.bound[:3].tolist() == [0, 1, 0]


def test_remaining_service_counts_gpus_times_time():
    # queued: job 0 on type 0 (100 units at 1/s, 2 workers -> 200 GPU-s),
    #         job 1 on type 1 (150 units at 1/s, 1 worker -> 150 GPU-s).
    # new job 2 -> type 1 (150 < 200); by run time alone it would pick type 0 (100 < 150).
    policy = fresh(TiresiasPolicy())
    policy.bound[:2] = [0, 1]
    view = toy_view(
        [[1, 1]] * 3,
        capacity=[2, 2],
        workers=[2, 1, 1],
        work=[100, 150, 50],
        last_type=[0, 1, -1],
        prev_type=[0, 1, -1],
    )
    assert policy.decide(view).tolist() == [0, 1, 1]
    assert policy.bound[2] == 1


def test_service_is_measured_on_the_jobs_own_type():
    # type 1 is 4x faster for job 0: 400 units there = 100 s. Job 0 is queued on type 1, job 1 on
    # type 0 (150 units at 1/s = 150 s). New job 2 -> type 1 (100 < 150).
    policy = fresh(TiresiasPolicy())
    policy.bound[:2] = [1, 0]
    view = toy_view([[1, 4], [1, 1], [1, 1]], capacity=[1, 1], work=[400, 150, 10])
    assert policy.decide(view)[2] == 1


def test_a_job_never_leaves_its_queue():
    # job 0 (bound to the slow type 0, 1000 units) and job 1 (type 1) run; when job 1 finishes,
    # the fast type is idle, yet job 0 stays on type 0 for the rest of its life.
    policy = fresh(TiresiasPolicy())
    v = toy_view([[1, 10], [1, 10]], capacity=[1, 1], work=[1000, 10])
    policy.bound[:2] = [0, 1]
    assert policy.decide(v).tolist() == [0, 1]
    for t in (300, 600, 900):
        v = with_job_ids(
            toy_view([[1, 10]], capacity=[1, 1], work=[1000], done=[t], now=t, last_type=[0], prev_type=[0]), [0]
        )
        assert policy.decide(v).tolist() == [0]


def test_srsf_preempts_inside_a_queue():
    # both bound to type 0 (one GPU): the running job (500 left) yields to a newcomer with 50
    policy = fresh(TiresiasPolicy())
    policy.bound[:2] = [0, 0]
    view = toy_view([[1, 1]] * 2, capacity=[1, 1], work=[1000, 50], done=[500, 0], last_type=[0, -1], prev_type=[0, -1])
    assert policy.decide(view).tolist() == [-1, 0]


# ---- Discretized 2D-LAS ------------------------------------------------------------------------


def test_las_priority_by_queue_then_arrival():
    # threshold 100 GPU-s: job 0 has 150 (queue 1), jobs 1 and 2 have 0 (queue 0).
    # one GPU type with 2 GPUs: jobs 1 and 2 run, job 0 waits although it arrived first.
    policy = fresh(TiresiasLasPolicy(thresholds_gpu_s=[100]))
    view = toy_view(
        [[1.0]] * 3,
        capacity=[2],
        arrival=[0, 10, 20],
        attained_gpu_s=[150, 0, 0],
        last_type=[0, -1, -1],
        prev_type=[0, -1, -1],
    )
    assert policy.decide(view).tolist() == [-1, 0, 0]


def test_las_gpu_seconds_use_gang_size():
    # thresholds [100]: a 4-worker job with 120 GPU-s (30 s of wall time) is demoted already
    policy = fresh(TiresiasLasPolicy(thresholds_gpu_s=[100]))
    view = toy_view([[1.0]] * 2, capacity=[4], workers=[4, 4], arrival=[0, 10], attained_gpu_s=[120, 0])
    assert policy.decide(view).tolist() == [-1, 0]


def test_las_type_choice_is_heterogeneity_agnostic():
    # job 0 is 10x faster on type 0, but type 1 has more free GPUs (3 vs 1): it goes to type 1.
    # job 1 ran on type 0 before and type 0 has room: it goes back there.
    policy = fresh(TiresiasLasPolicy())
    view = toy_view([[10, 1], [1, 1]], capacity=[1, 3], prev_type=[-1, 0], arrival=[0, 5])
    assert policy.decide(view).tolist() == [1, 0]


def test_las_starvation_promotion():
    # threshold 100: job 0 ran 150 s (150 GPU-s, queue 1), started at 0, paused; now 400:
    # waited 400 - 150 = 250 >= knob 1 x 150 -> back to queue 0, ahead of job 1 by arrival.
    def view():
        return toy_view([[1.0]] * 2, capacity=[1], arrival=[0, 10], attained_gpu_s=[150, 0], now=400, prev_type=[0, -1])

    starved = view()
    starved = dataclasses.replace(starved, run_s=np.array([150.0, 0.0]), first_start=np.array([0.0, np.nan]))
    policy = fresh(TiresiasLasPolicy(thresholds_gpu_s=[100], promote_knob=1.0))
    assert policy.decide(starved).tolist() == [0, -1]
    assert policy.stats()["tiresias_promotions"] == 1
    # with knob 2: 250 < 300, no promotion yet
    policy = fresh(TiresiasLasPolicy(thresholds_gpu_s=[100], promote_knob=2.0))
    assert policy.decide(starved).tolist() == [-1, 0]
    # knob 0 (off): never
    policy = fresh(TiresiasLasPolicy(thresholds_gpu_s=[100]))
    assert policy.decide(starved).tolist() == [-1, 0]


def test_las_skips_a_gang_that_does_not_fit():
    # 3 GPUs: job 0 (2 workers) runs, job 1 (2) does not fit, job 2 (1) does
    policy = fresh(TiresiasLasPolicy())
    view = toy_view([[1.0]] * 3, capacity=[3], workers=[2, 2, 1], arrival=[0, 1, 2])
    assert policy.decide(view).tolist() == [0, -1, 0]


def test_las_running_jobs_stay_ahead_of_pending_ones_in_their_queue():
    # 2 GPUs, one queue in reach. Round 1: job 0 (1 worker) runs, job 1 (2 workers, arrived
    # before job 2) does not fit, job 2 (1 worker) backfills. Round 2: job 0 has finished. Job 2
    # is running, so it stays ahead of the pending job 1 (Tiresias' simulator): job 1 still does
    # not fit. By arrival alone, job 1 would preempt job 2.
    policy = fresh(TiresiasLasPolicy())
    v1 = toy_view([[1.0]] * 3, capacity=[2], workers=[1, 2, 1], arrival=[0, 1, 2])
    assert policy.decide(with_job_ids(v1, [0, 1, 2])).tolist() == [0, -1, 0]
    v2 = toy_view(
        [[1.0]] * 2,
        capacity=[2],
        workers=[2, 1],
        arrival=[1, 2],
        now=300,
        attained_gpu_s=[0, 300],
        last_type=[-1, 0],
        prev_type=[-1, 0],
    )
    assert policy.decide(with_job_ids(v2, [1, 2])).tolist() == [-1, 0]


def test_las_a_demoted_job_joins_the_back_of_its_new_queue():
    # threshold 100 GPU-s, one GPU. Job 0 (pending, queue 1 since the first decision) and job 1
    # (running, just crossed into queue 1): job 1 enters behind job 0 and is preempted.
    policy = fresh(TiresiasLasPolicy(thresholds_gpu_s=[100]))
    v1 = toy_view([[1.0]] * 2, capacity=[1], arrival=[0, 1], attained_gpu_s=[150, 0])
    assert policy.decide(with_job_ids(v1, [0, 1])).tolist() == [-1, 0]
    v2 = toy_view(
        [[1.0]] * 2,
        capacity=[1],
        arrival=[0, 1],
        now=300,
        attained_gpu_s=[150, 300],
        last_type=[-1, 0],
        prev_type=[0, 0],
    )
    assert policy.decide(with_job_ids(v2, [0, 1])).tolist() == [0, -1]


def test_random_queue_choice_is_seeded_and_stays_on_feasible_types():
    # 200 new jobs, three types; type 2 is infeasible for every job
    tput = np.tile([1.0, 2.0, 0.0], (200, 1))
    view = toy_view(tput, capacity=[4, 4, 4], work=np.full(200, 100.0))

    def bound(seed):
        policy = TiresiasPolicy(queue_choice="random")
        policy.reset(None, 200, seed)
        policy.decide(view)
        return policy.bound.copy()

    b0 = bound(0)
    assert set(b0.tolist()) == {0, 1}  # both feasible types drawn, the infeasible one never
    np.testing.assert_array_equal(b0, bound(0))  # same seed, same queues
    assert (b0 != bound(1)).any()
    # least_service would put them all by load, alternating 100 GPU-s on type 0 and 50 on type 1
    policy = fresh(TiresiasPolicy(), num_jobs=200)
    policy.decide(view)
    assert (policy.bound != b0).any()


def test_queue_choice_is_checked():
    import pytest

    from fairsim.errors import InputError

    with pytest.raises(InputError, match="queue_choice"):
        TiresiasPolicy(queue_choice="fastest")


def test_las_jump_time_as_tiresias_simulator_checks_multi_gpu_jobs_early():
    # one 8-GPU job running alone in the top queue (threshold 3,250 GPU-s). Its crossing is at
    # 3250 / 8 = 406.25 s. Tiresias' simulator checks it at (3250 - 0) // 8 = 406 s, finds
    # 406 x 8 = 3,248 GPU-s (still below), and checks again (3250 - 406) // 8 = 355 s later.
    def at(now, service, jump_time):
        view = toy_view([[1.0]], capacity=[8], workers=[8], work=[1e6], now=now, attained_gpu_s=[service])
        policy = TiresiasLasPolicy(jump_time=jump_time) if jump_time else TiresiasLasPolicy()
        policy.reset(view.cluster, 1, 0)
        assignment = policy.decide(view)
        assert assignment.tolist() == [0]
        return policy.next_decision_s(view, assignment)

    assert at(0.0, 0.0, None) == 406.25  # the default is the exact crossing
    assert at(0.0, 0.0, "simulator") == 406.0
    assert at(406.0, 3248.0, "simulator") == 406.0 + 355.0
    assert at(0.0, 0.0, "exact") == 406.25
    assert at(406.0, 3248.0, "exact") == 406.25
    # a 1-GPU job is checked at its crossing under both
    view = toy_view([[1.0]], capacity=[8], work=[1e6], attained_gpu_s=[250.0])
    for jump_time in ("simulator", "exact"):
        policy = TiresiasLasPolicy(jump_time=jump_time)
        policy.reset(view.cluster, 1, 0)
        assert policy.next_decision_s(view, policy.decide(view)) == 3000.0


def test_las_jump_time_is_checked():
    import pytest

    with pytest.raises(ValueError, match="jump_time.*simulator, exact"):
        TiresiasLasPolicy(jump_time="early")
