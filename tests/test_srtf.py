"""Plain SRTF on hand-made views."""

from fairsim.policies.srtf import SrtfPolicy, best_remaining_time
from fairsim.testing import toy_view


def test_order_by_remaining_time_on_best_type_and_fastest_free_type():
    # types [slow 1/s, fast 2/s], one GPU each. Remaining on the fast type:
    # A 100 -> 50 s, B 40 -> 20 s, C 300 -> 150 s. B first takes the fast type, A the slow one, C waits.
    view = toy_view([[1, 2]] * 3, capacity=[1, 1], work=[100, 40, 300])
    assert best_remaining_time(view).tolist() == [50, 20, 150]
    assert SrtfPolicy().decide(view).tolist() == [0, 1, -1]


def test_preempts_for_a_shorter_newcomer_and_ignores_overheads():
    # job 0 runs on the only GPU with 500 s left; job 1 needs 100 s: it takes over, whatever
    # the restart would cost job 0 later.
    view = toy_view(
        [[1.0]] * 2,
        capacity=[1],
        work=[1000, 100],
        done=[500, 0],
        last_type=[0, -1],
        prev_type=[0, -1],
        switch_cost_s=[[0.0], [1e6]],
    )
    assert SrtfPolicy().decide(view).tolist() == [-1, 0]


def test_ties_by_arrival_and_best_type_uses_job_specific_speed():
    # job 0: 100 units at [1, 4] -> 25 s; job 1: 50 units at [2, 1] -> 25 s: tie, job 0 (earlier) first.
    # job 0 takes type 1 (its fastest), job 1 type 0 (its fastest).
    view = toy_view([[1, 4], [2, 1]], capacity=[1, 1], work=[100, 50])
    assert SrtfPolicy().decide(view).tolist() == [1, 0]
    # with no type-0 GPUs, job 1 waits: job 0 holds the only GPU
    view = toy_view([[1, 4], [2, 1]], capacity=[0, 1], work=[100, 50])
    assert SrtfPolicy().decide(view).tolist() == [1, -1]


def test_backfill_lets_a_narrow_job_use_leftover_gpus():
    # 3 GPUs: job 0 (2 workers, shortest) runs, job 1 (2 workers) does not fit, job 2 (1) does.
    view = toy_view([[1.0]] * 3, capacity=[3], workers=[2, 2, 1], work=[10, 20, 30])
    assert SrtfPolicy().decide(view).tolist() == [0, -1, 0]
    assert SrtfPolicy(backfill=False).decide(view).tolist() == [0, -1, -1]


def test_running_job_keeps_its_type_when_a_faster_one_frees_up():
    # job 0 runs on the slow type 0; the fast type 1 is free. Plain SRTF keeps it where it is
    # (the Fig. 2 strawman srtf_agnostic would move it).
    view = toy_view([[1, 4]], capacity=[1, 1], work=[1000], last_type=[0], prev_type=[0])
    assert SrtfPolicy().decide(view).tolist() == [0]
    # a job that was paused picks afresh: the fast type
    view = toy_view([[1, 4]], capacity=[1, 1], work=[1000], last_type=[-1], prev_type=[0])
    assert SrtfPolicy().decide(view).tolist() == [1]


def test_displaced_job_falls_back_to_the_next_fastest_type():
    # job 0 (500 s left on type 1, its fastest) runs on type 1; job 1 needs 10 s there and is
    # shorter: it takes type 1 and job 0 moves to type 0 (not migration-free).
    view = toy_view(
        [[1, 2], [1, 2]], capacity=[1, 1], work=[2000, 20], done=[1000, 0], last_type=[1, -1], prev_type=[1, -1]
    )
    assert SrtfPolicy().decide(view).tolist() == [0, 1]
