"""Sia's policy on tiny hand-made views with known answers, and end to end on toy elastic jobs."""

import dataclasses
import re

import numpy as np
import pytest

from fairsim.errors import InputError
from fairsim.policies.sia import SiaPolicy, gpu_counts
from fairsim.sim.config import SimConfig
from fairsim.sim.engine import simulate
from fairsim.testing import toy_cluster, toy_elastic, toy_jobs, toy_view


def elastic_view(speed, capacity, n=1, lo=1, hi=8, power=1.0, gph=4, **kw):
    """n elastic jobs whose goodput on type k with g GPUs is speed[k] x g^power."""
    speed = np.asarray(speed, dtype=float)
    view = toy_view(np.tile(speed, (n, 1)), capacity, gpus_per_host=gph, **kw)

    def goodput(rows, types, gpus, hosts):
        return speed[types] * np.asarray(gpus, dtype=float) ** power

    return dataclasses.replace(
        view,
        elastic=np.ones(n, dtype=bool),
        min_gpus=np.full(n, lo, dtype=np.int64),
        max_gpus=np.full(n, hi, dtype=np.int64),
        gpus=np.zeros(n, dtype=np.int64) if "last_type" not in kw else view.gpus,
        _goodput=goodput,
    )


def decide(policy, view):
    policy.reset(view.cluster, view.num_jobs, 0)
    answer = policy.decide(view)
    return answer.types.tolist(), answer.gpus.tolist()


@pytest.mark.parametrize(
    ("gph", "hosts", "counts"),
    [(4, 3, [1, 2, 4, 8, 12]), (8, 2, [1, 2, 4, 8, 16]), (1, 2, [1, 2]), (6, 1, [1, 2, 4, 6])],
)
def test_configurations_are_powers_of_two_within_a_host_then_whole_hosts(gph, hosts, counts):
    assert gpu_counts(gph, hosts).tolist() == counts


def test_a_lone_job_takes_its_best_goodput():
    # goodput 1 x g^0.7 on type 0, 2 x g^0.7 on type 1; 8 GPUs of each: 8 GPUs of type 1
    view = elastic_view([1.0, 2.0], [8, 8], power=0.7)
    assert decide(SiaPolicy(growth_cap=None, bootstrap="oracle"), view) == ([1], [8])


def test_two_linear_jobs_split_four_gpus_evenly():
    # coefficient g^-0.5 - 1.1 per job: (2, 2) gives 2 x (0.71 - 1.1) = -0.79, better than
    # (4, 0): 0.5 - 1.1 = -0.6 and (3, 1): 0.58 + 1.0 - 2.2 = -0.62
    view = elastic_view([1.0], [4], n=2)
    assert decide(SiaPolicy(growth_cap=None, bootstrap="oracle"), view) == ([0, 0], [2, 2])


def test_a_positive_p_maximises_with_a_gain_per_allocation():
    # p = 1 and lambda_n = -1.1 (the artifact's sign rule: a gain per allocated job): the program
    # maximises sum(speedup + 1.1) over allocated jobs; with linear speedups every split of the
    # 4 GPUs in which both jobs run scores 4 + 2.2, above 4 + 1.1 for one job alone
    view = elastic_view([1.0], [4], n=2)
    types, gpus = decide(SiaPolicy(growth_cap=None, p=1.0, lambda_n=-1.1, bootstrap="oracle"), view)
    assert types == [0, 0] and sum(gpus) == 4


def test_a_new_job_is_known_at_one_gpu_only_when_profiled():
    # before its first run: 1 GPU, either type (they look alike); the oracle takes 8 of type 1
    view = elastic_view([1.0, 2.0], [8, 8], power=0.7)
    types, gpus = decide(SiaPolicy(growth_cap=None, bootstrap="profiled"), view)
    assert gpus == [1] and types[0] in (0, 1)


def test_a_new_job_with_a_floor_above_one_gpu_starts_at_its_floor():
    view = elastic_view([1.0, 2.0], [8, 8], lo=3, power=0.7)
    types, gpus = decide(SiaPolicy(growth_cap=None, bootstrap="profiled"), view)
    assert gpus == [3] and types[0] in (0, 1)


def test_a_new_job_starts_at_the_smallest_count_it_can_run_on():
    # range 4..8, but no progress below 8 GPUs (e.g. memory): it starts on 8, not never
    view = elastic_view([1.0], [8], lo=4, hi=8)
    view = dataclasses.replace(
        view, _goodput=lambda rows, types, gpus, hosts: np.where(np.asarray(gpus) >= 8, 1.0, 0.0)
    )
    assert decide(SiaPolicy(growth_cap=None, bootstrap="profiled"), view) == ([0], [8])


def test_after_running_its_multi_gpu_goodput_is_projected_to_other_types():
    # the job ran on type 0 (1 x g^0.7); type 1's 1-GPU profile is twice as fast: projected 2 x g^0.7,
    # which is the truth here, so it takes 8 GPUs of type 1
    policy = SiaPolicy(growth_cap=None, bootstrap="profiled")
    view = elastic_view([1.0, 2.0], [8, 8], power=0.7)
    policy.reset(view.cluster, 1, 0)
    policy.ran_on[0, 0] = True
    answer = policy.decide(view)
    assert (answer.types.tolist(), answer.gpus.tolist()) == ([1], [8])


def test_a_job_in_a_restart_keeps_its_configuration():
    # the job holds 1 GPU of type 0 and still owes overhead: it keeps it, though 8 of type 1 are better
    view = elastic_view([1.0, 2.0], [8, 8], power=0.7, last_type=[0], prev_type=[0], first_start=[0.0])
    view = dataclasses.replace(view, gpus=np.array([1]), owed_s=np.array([12.0]))
    assert decide(SiaPolicy(growth_cap=None, bootstrap="oracle"), view) == ([0], [1])
    settled = dataclasses.replace(view, owed_s=np.array([0.0]))
    assert decide(SiaPolicy(growth_cap=None, bootstrap="oracle"), settled) == ([1], [8])


@pytest.mark.parametrize(("age", "restarts", "factor"), [(20.0, 0, 1.0), (100.0, 1, 70 / 130), (100.0, 4, 0.0)])
def test_pollux_realloc_factor(age, restarts, factor):
    policy = SiaPolicy(growth_cap=None, restart_penalty_s=30.0)
    view = elastic_view([1.0], [4], now=age)
    policy.reset(view.cluster, 1, 0)
    policy.restarts[0] = restarts
    assert policy._realloc_factor(view).tolist() == pytest.approx([factor])


def test_restart_penalty_by_model_overrides_the_default_per_model():
    # two jobs aged 100 s after 1 restart: "big" pays 50 s ((100 - 50) / 150), "toy" the default
    # 30 s ((100 - 30) / 130); a model younger than its penalty (a 200 s one) keeps factor 1
    policy = SiaPolicy(growth_cap=None, restart_penalty_s=30.0, restart_penalty_by_model={"big": 50, "slow": 200})
    view = toy_view([[1.0], [1.0], [1.0]], [4], now=100.0)
    view = dataclasses.replace(view, model_name=np.array(["big", "toy", "slow"], dtype=object))
    policy.reset(view.cluster, 3, 0)
    policy.restarts[:] = 1
    assert policy._realloc_factor(view).tolist() == pytest.approx([50 / 150, 70 / 130, 1.0])


def test_restart_penalty_by_model_must_be_seconds():
    with pytest.raises(InputError, match="restart_penalty_by_model.big"):
        SiaPolicy(growth_cap=None, restart_penalty_by_model={"big": -1})


@pytest.mark.parametrize(("now", "restarts", "moves"), [(1000.0, 3, False), (20.0, 0, True)])
def test_the_realloc_factor_keeps_an_old_job_where_it_is(now, restarts, moves):
    # 4 GPUs of type 0 (speedup 4 over its 1-GPU worst: coefficient 4^-0.5 = 0.5) or 4 of type 1,
    # 5% faster (4.2: 0.49). An old job that restarted 3 times scales the move by
    # (1000 - 90) / 1030 = 0.88 (3.71: 0.52) and stays; a young one (factor 1) moves
    view = elastic_view([1.0, 1.05], [4, 4], hi=4, now=now, last_type=[0], prev_type=[0], first_start=[0.0])
    view = dataclasses.replace(view, gpus=np.array([4]))
    policy = SiaPolicy(growth_cap=None, bootstrap="oracle")
    policy.reset(view.cluster, 1, 0)
    policy.restarts[0] = restarts
    answer = policy.decide(view)
    assert (answer.types.tolist(), answer.gpus.tolist()) == ([1 if moves else 0], [4])


def test_the_realloc_factor_leaves_a_job_that_holds_nothing_alone():
    # a waiting rigid 1-GPU job (aged 100 s, 1 restart: factor 70 / 130) on a free GPU. Its one
    # configuration has speedup 1, coefficient 1 < lambda_n 1.1: worth running. The artifact
    # scales only jobs that held a configuration last round, so it runs; scaled anyway
    # (realloc_scaled=all) the coefficient is round((70 / 130)^-0.5, 2) = 1.36 > 1.1 and it waits
    view = toy_view([[1.0]], [4], now=100.0, first_start=[0.0])
    for scaled, expect in (("held", [0]), ("all", [-1])):
        policy = SiaPolicy(growth_cap=None, realloc_scaled=scaled)
        policy.reset(view.cluster, 1, 0)
        policy.restarts[0] = 1
        assert policy.decide(view).types.tolist() == expect
    with pytest.raises(InputError, match=re.escape("realloc_scaled")):
        SiaPolicy(growth_cap=None, realloc_scaled="some")


def test_rigid_jobs_only_choose_a_type():
    # a rigid 2-GPU job: its own gang on the faster type
    view = toy_view([[1.0, 3.0]], [4, 4], workers=[2])
    assert decide(SiaPolicy(growth_cap=None, bootstrap="oracle"), view) == ([1], [2])


@pytest.mark.parametrize(
    ("option", "value", "needle"),
    [("bootstrap", "magic", "unknown bootstrap 'magic' (allowed: profiled, oracle)"), ("p", 0.0, "p must be non-zero")],
)
def test_bad_options_are_refused(option, value, needle):
    with pytest.raises(InputError, match=re.escape(needle)):
        SiaPolicy(**{option: value})


@pytest.mark.parametrize("clock", ["rounds", "events"])
def test_end_to_end_every_job_finishes_with_invariants_checked(clock):
    class Concave:
        def rate(self, jobs, types, gpus, hosts, done):
            return np.array([1.0, 2.0])[types] * gpus**0.7

    n = 6
    spec = toy_elastic(Concave(), n)
    jobs = toy_jobs(
        np.tile([[1.0, 2.0]], (n, 1)), work=np.linspace(2000, 8000, n), arrival=np.arange(n) * 100.0, elastic=spec
    )
    cluster = toy_cluster({"T4": 8, "V100": 8}, gpus_per_host=4)
    res = simulate(jobs, cluster, SiaPolicy(growth_cap=None), SimConfig(clock=clock, round_len_s=60, check=True))
    assert res.jobs.finish_s.notna().all()
    assert res.stats["sia_suboptimal_solves"] == 0
    # a lone first job starts on 1 GPU and grows once it has run (profiled bootstrap): it holds
    # more GPU-seconds than seconds
    first = res.jobs.iloc[0]
    assert first.attained_gpu_s > 2 * first.run_s


def test_host_gpus_builds_a_types_configurations_on_hosts_of_that_size():
    # 16 GPUs on the view's 4-GPU hosts: 1, 2, 4, 8, 12, 16; as two 8-GPU hosts (Sia's DGX): no 12
    view = elastic_view([1.0], [16])
    policy = SiaPolicy(growth_cap=None)
    policy.reset(view.cluster, 1, 0)
    assert policy.counts[0].tolist() == [1, 2, 4, 8, 12, 16]
    name = view.cluster.gpu_types[0]
    policy = SiaPolicy(growth_cap=None, host_gpus={name.upper(): 8})
    policy.reset(view.cluster, 1, 0)
    assert policy.counts[0].tolist() == [1, 2, 4, 8, 16]
    with pytest.raises(InputError, match=re.escape("host_gpus.V100: is not a GPU type of this cluster")):
        SiaPolicy(growth_cap=None, host_gpus={"V100": 8}).reset(view.cluster, 1, 0)


def test_growth_cap_doubles_a_job_at_most_each_decision():
    # linear goodput: alone on 8 GPUs it takes all 8 uncapped; capped (the default, the
    # artifact's max_replicas), 1 first, then 2, then 4
    view = elastic_view([1.0], [8])
    assert decide(SiaPolicy(growth_cap=None, bootstrap="oracle"), view) == ([0], [8])
    for policy in (SiaPolicy(bootstrap="oracle", growth_cap=2), SiaPolicy(bootstrap="oracle")):
        policy.reset(view.cluster, 1, 0)
        seen = []
        for _ in range(3):
            answer = policy.decide(view)
            seen.append(int(answer.gpus[0]))
        assert seen == [1, 2, 4]


def test_growth_cap_never_falls_below_a_jobs_floor():
    # an elastic job that needs at least 2 GPUs (its memory) has not run yet: the cap (1 before
    # a first run, the artifact's jobs' floor) would leave it no configuration and stall the run;
    # it starts at its floor, 2, then may double to 4
    view = elastic_view([1.0], [8], lo=2)
    policy = SiaPolicy(bootstrap="oracle")
    policy.reset(view.cluster, 1, 0)
    assert [int(policy.decide(view).gpus[0]) for _ in range(2)] == [2, 4]


@pytest.mark.parametrize(
    ("option", "value", "needle"),
    [("host_gpus", {"T4": 0}, "host_gpus.T4: must be a GPU count >= 1"), ("growth_cap", 0.5, "growth_cap: must be")],
)
def test_bad_replay_options_are_refused(option, value, needle):
    with pytest.raises(InputError, match=re.escape(needle)):
        SiaPolicy(**{option: value})


def test_the_default_restart_penalties_are_the_artifacts_per_model_table():
    # the re-allocation factor (age - restarts x penalty) / (age + penalty) with the artifact's
    # sia.py table: imagenet 250 s, bert 120, yolov3 45, deepspeech2 25, cifar10 30; any other
    # model restart_penalty_s (30)
    view = dataclasses.replace(
        toy_view([[1.0]] * 3, capacity=[4]), model_name=np.array(["imagenet", "yolov3", "ResNet50"])
    )
    assert SiaPolicy()._penalty(view).tolist() == [250.0, 45.0, 30.0]
    assert SiaPolicy(restart_penalty_by_model=None)._penalty(view) == 30.0
