"""PAL with GPU types as performance classes, on hand-made views."""

import numpy as np
import pytest

from fairsim.errors import InputError
from fairsim.policies.pal import HostMap, PalPolicy
from fairsim.testing import toy_view


def fragmented_view():
    # two types of 8 GPUs on 4-GPU hosts. Jobs 0 and 1 (3 workers, tput [4, 1]: the most
    # variability-sensitive class, placed first) take one type-0 host each (best fit, sf 1 vs 4),
    # leaving 1 + 1 free GPUs on type 0: two free, but no host with two.
    # Job 2 (2 workers) has tput [3, 2] -> slowdown sf = [1.0, 1.5].
    return toy_view([[4, 1], [4, 1], [3, 2]], capacity=[8, 8], workers=[3, 3, 2], arrival=[0, 1, 2])


def test_locality_penalty_pushes_a_gang_to_a_slower_type_that_packs():
    # type 0 across hosts: 1.0 x 1.7 = 1.7 > type 1 packed: 1.5 x 1 = 1.5 -> type 1
    assert PalPolicy(locality_penalty=1.7).decide(fragmented_view()).tolist() == [0, 0, 1]


def test_small_locality_penalty_keeps_the_fast_type():
    # type 0 across hosts: 1.0 x 1.2 = 1.2 < 1.5 -> type 0, spread over the two hosts
    assert PalPolicy(locality_penalty=1.2).decide(fragmented_view()).tolist() == [0, 0, 0]


def test_variability_sensitive_jobs_are_placed_first():
    # one GPU of each type. Job 0 (earlier) runs at [1, 1]: insensitive (ratio 1, class 0).
    # Job 1 runs at [3, 1] (ratio 3, class 3). Both fit in the cluster, so PAL places job 1 first:
    # it takes type 0 (sf 1), job 0 gets type 1. Plain FIFO would give job 0 type 0 (tie -> cluster order).
    view = toy_view([[1, 1], [3, 1]], capacity=[1, 1], arrival=[0, 1])
    assert PalPolicy().decide(view).tolist() == [1, 0]


def mixed_two_type_view():
    # two types of 4 GPUs. Job 0 (4 workers, type 0 only) runs there; job 1 (4 workers, type 0
    # only) waits for it; jobs 2 and 3 (2 workers) run anywhere. A head cut at the cluster's 8 GPUs
    # (jobs 0 and 1) that stops at the first failure would give [0, -1, -1, -1], type 1 idle
    # beside two jobs that fit it; PAL passes job 1 over instead.
    return toy_view(
        [[1, 0], [1, 0], [1, 1], [1, 1]],
        capacity=[4, 4],
        workers=[4, 4, 2, 2],
        arrival=[0, 1, 2, 3],
        last_type=[0, -1, -1, -1],
        prev_type=[0, -1, -1, -1],
    )


def test_a_job_that_fits_no_type_idles_no_gpu_and_stops_nobody():
    assert PalPolicy(head_of_line=False).decide(mixed_two_type_view()).tolist() == [0, -1, 1, 1]


def test_head_of_line_blocks_only_the_types_the_blocked_job_could_use():
    # job 1 reserves type 0, which it alone could use; type 1 still serves jobs 2 and 3
    assert PalPolicy(head_of_line=True).decide(mixed_two_type_view()).tolist() == [0, -1, 1, 1]


def test_head_of_line_on_one_type_is_the_artifacts_cut():
    # one type of 4 GPUs: job 0 (2 workers) runs, job 1 (4) cannot start. The artifact stops
    # there and idles 2 GPUs beside job 2 (1 worker), and so does head_of_line=true; the default
    # (false) passes job 1 over.
    view = toy_view(
        [[1.0]] * 3, capacity=[4], workers=[2, 4, 1], arrival=[0, 1, 2], last_type=[0, -1, -1], prev_type=[0, -1, -1]
    )
    assert PalPolicy(head_of_line=True).decide(view).tolist() == [0, -1, -1]
    assert PalPolicy().decide(view).tolist() == [0, -1, 0]
    assert PalPolicy(head_of_line=False).decide(view).tolist() == [0, -1, 0]


def test_running_jobs_behind_a_failure_keep_running():
    # types of 4 and 2 GPUs. Job 0 (2 workers) runs on type 0; job 1 (4 workers, type 0 only)
    # cannot start beside it; job 2 (2 workers) runs on type 1. The old version cut the head
    # after job 1 (2 + 4 = 6 GPUs), stopped at its failure and preempted job 2: [0, -1, -1].
    view = toy_view(
        [[1, 1], [1, 0], [1, 1]],
        capacity=[4, 2],
        workers=[2, 4, 2],
        arrival=[0, 1, 2],
        last_type=[0, -1, 1],
        prev_type=[0, -1, 1],
    )
    assert PalPolicy().decide(view).tolist() == [0, -1, 1]
    assert PalPolicy(head_of_line=False).decide(view).tolist() == [0, -1, 1]


def test_class_order_that_strands_a_head_job_falls_back_to_the_scheduler_order():
    # types of 2 and 1 GPUs. FIFO places job 0 (2 workers, type 0 only) on type 0 and job 1
    # (1 worker, 3x faster on type 0: the most sensitive class) on type 1. Placing job 1 first
    # would take type 0 and strand job 0, so PAL keeps the FIFO placement.
    view = toy_view([[1, 0], [3, 1]], capacity=[2, 1], workers=[2, 1], arrival=[0, 1])
    policy = PalPolicy()
    policy.reset(view.cluster, 2, seed=0)
    assert policy.decide(view).tolist() == [0, 1]
    assert policy.stats()["pal_class_order_fallbacks"] == 1


def test_replace_waiting_keeps_running_jobs_on_their_type():
    # job 0 runs on its slow type 1; its fast type 0 is free. replace=waiting does not migrate it.
    view = toy_view([[4, 1]], capacity=[1, 1], last_type=[1], prev_type=[1])
    assert PalPolicy(replace="waiting").decide(view).tolist() == [1]
    # a paused job picks again: the fast type
    view = toy_view([[4, 1]], capacity=[1, 1], last_type=[-1], prev_type=[1])
    assert PalPolicy(replace="waiting").decide(view).tolist() == [0]


def test_replace_all_re_places_running_jobs_as_the_artifact():
    # the artifact releases every job each round and places all afresh: job 0, running on its
    # slow type 1, takes its free fast type 0 (sf 1 against 4)
    view = toy_view([[4, 1]], capacity=[1, 1], last_type=[1], prev_type=[1])
    assert PalPolicy().decide(view).tolist() == [0]
    assert PalPolicy(replace="all").decide(view).tolist() == [0]
    # two running jobs, one GPU of each type: job 0 (arrived first) ran on slow type 1, job 1 on
    # fast type 0; both are insensitive alike (ratio 2). Afresh, FIFO gives job 0 the fast type
    # and moves job 1 to type 1; replace=waiting keeps both where they are.
    view = toy_view([[2, 1], [2, 1]], capacity=[1, 1], arrival=[0, 1], last_type=[1, 0], prev_type=[1, 0])
    assert PalPolicy().decide(view).tolist() == [0, 1]
    assert PalPolicy(replace="waiting").decide(view).tolist() == [1, 0]


def test_order_options():
    # one GPU; job 0 arrived first with more attained service and more work left
    view = toy_view([[1.0], [1.0]], capacity=[1], work=[100, 10], attained_gpu_s=[50, 0], run_s=[50, 0], arrival=[0, 1])
    assert PalPolicy(order="fifo").decide(view).tolist() == [0, -1]
    assert PalPolicy(order="las").decide(view).tolist() == [-1, 0]
    assert PalPolicy(order="srtf").decide(view).tolist() == [-1, 0]


def test_las_counts_wall_seconds_by_default_as_the_artifact():
    # job 0 ran 100 s on 1 GPU (100 GPU-s); job 1 ran 60 s on 4 GPUs (240 GPU-s); 4 GPUs, room
    # for one of them at a time. The artifact's Las counts wall-clock service: job 1 (60 s) first;
    # by GPU-seconds job 0 (100) first.
    view = toy_view(
        [[1.0], [1.0]],
        capacity=[4],
        workers=[1, 4],
        attained_gpu_s=[100, 240],
        run_s=[100, 60],
        arrival=[0, 1],
    )
    assert PalPolicy(order="las").decide(view).tolist() == [-1, 0]
    assert PalPolicy(order="las", las_service="wall").decide(view).tolist() == [-1, 0]
    assert PalPolicy(order="las", las_service="gpu_s").decide(view).tolist() == [0, -1]


def test_new_options_name_their_allowed_values():
    with pytest.raises(InputError, match="replace.*all, waiting"):
        PalPolicy(replace="some")
    with pytest.raises(InputError, match="las_service.*wall, gpu_s"):
        PalPolicy(las_service="gpu")


def test_host_map_best_fit_then_fewest_hosts():
    view = toy_view([[1.0]], capacity=[10], gpus_per_host=4)  # hosts 4, 4, 2
    hosts = HostMap(view.cluster, view.capacity)
    hosts.take(0, 2)  # best fit: the 2-GPU host
    assert hosts.free[0] == [4, 4, 0]
    hosts.take(0, 3)  # best fit among hosts with >= 3: first 4-GPU host
    assert hosts.free[0] == [1, 4, 0]
    hosts.take(0, 5)  # no single host: fullest first -> 4 from host 1, then 1 from host 0
    assert hosts.free[0] == [0, 0, 0]


def test_host_map_leaves_out_the_hosts_an_outage_took():
    view = toy_view([[1.0]], capacity=[10], gpus_per_host=4)  # hosts 4, 4, 2
    assert HostMap(view.cluster, np.array([6])).free[0] == [4]  # down to the up hosts' GPUs, last hosts first
    assert HostMap(view.cluster, np.array([8])).free[0] == [4, 4]
