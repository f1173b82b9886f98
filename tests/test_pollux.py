"""Pollux's policy on tiny hand-made views with known answers, and end to end on toy elastic jobs."""

import dataclasses
import re

import numpy as np
import pytest

from fairsim.errors import InputError
from fairsim.policies.pollux import PolluxPolicy, Problem, crowding, fronts, type_preference
from fairsim.sim.config import SimConfig
from fairsim.sim.engine import simulate
from fairsim.testing import toy_cluster, toy_elastic, toy_jobs, toy_view


def elastic_view(capacity, n=1, lo=1, hi=8, power=1.0, spread=1.0, gph=4, **kw):
    """n elastic jobs whose goodput with g GPUs on h hosts is g^power x spread^(h > 1), on any type."""
    capacity = np.asarray(capacity)
    view = toy_view(np.ones((n, len(capacity))), capacity, gpus_per_host=gph, **kw)

    def goodput(rows, types, gpus, hosts):
        gpus = np.asarray(gpus, dtype=float)
        hosts = np.ceil(gpus / gph) if hosts is None else np.asarray(hosts)
        return np.where(gpus > 0, gpus**power * np.where(hosts > np.ceil(gpus / gph), spread, 1.0), 0.0)

    return dataclasses.replace(
        view,
        elastic=np.ones(n, dtype=bool),
        min_gpus=np.full(n, lo, dtype=np.int64),
        max_gpus=np.full(n, hi, dtype=np.int64),
        gpus=np.zeros(n, dtype=np.int64) if "last_type" not in kw else view.gpus,
        _goodput=goodput,
    )


def decide(policy, view, seed=0, explored=None, restarts=None):
    policy.reset(view.cluster, view.num_jobs, seed)
    if explored is not None:
        policy.most_gpus[:] = explored
    if restarts is not None:
        policy.restarts[:] = restarts
    answer = policy.decide(view)
    return answer.types.tolist(), answer.gpus.tolist()


def test_a_new_job_explores_one_gpu_first():
    # never run: at most max(2 x 0, 1) = 1 GPU, though 8 are free and it scales linearly
    view = elastic_view([8], now=100.0)
    assert decide(PolluxPolicy(), view) == ([0], [1])


def test_a_lone_job_takes_its_best_speedup():
    # it ran on type 0 on 4 GPUs (so may take 8); goodput g^0.7, 0.85 when spread over more hosts than
    # needed: 8 GPUs on 2 hosts (8^0.7 = 4.29) beat 4 on one (2.64) and 8 on 3 hosts (3.65)
    view = elastic_view([16], power=0.7, spread=0.85, now=100.0, prev_type=[0], first_start=[0.0])
    assert decide(PolluxPolicy(), view, explored=4) == ([0], [8])


@pytest.mark.parametrize(("p", "split"), [(-1.0, [2, 3, 3]), (-3.0, [2, 3, 3])])
def test_three_linear_jobs_split_eight_gpus_as_the_power_mean_says(p, split):
    # new jobs (linear belief: g / fair share), allowed 8 GPUs each: the power mean with p < 0 is best
    # at the most even split, 3 + 3 + 2, the 2 spanning both hosts (one spread job per host)
    view = elastic_view([8], n=3, now=100.0)
    types, gpus = decide(PolluxPolicy(p=p), view, explored=4)
    assert types == [0, 0, 0] and sorted(gpus) == split


def test_p_one_is_the_arithmetic_mean_and_any_full_split_is_best():
    view = elastic_view([8], n=2, now=100.0)
    types, gpus = decide(PolluxPolicy(p=1.0), view, explored=4)
    assert sum(gpus) == 8 and types.count(0) == sum(g > 0 for g in gpus)


@pytest.mark.parametrize(("restarts", "grows"), [(3, False), (0, True)])
def test_the_restart_factor_keeps_an_old_job_in_place(restarts, grows):
    # the job runs on 2 GPUs; 4 give 2^0.1 = 1.072 times its speedup. After 3 restarts its factor is
    # (1000 - 90) / 1030 = 0.88 and it stays; with none, 1000 / 1030 = 0.97 and it grows
    view = elastic_view([8], hi=4, power=0.1, now=1000.0, last_type=[0], prev_type=[0], first_start=[0.0])
    view = dataclasses.replace(view, gpus=np.array([2]))
    assert decide(PolluxPolicy(), view, explored=2, restarts=restarts) == ([0], [4 if grows else 2])


def test_the_restart_factor_is_pollux_s():
    policy = PolluxPolicy(restart_delay_s=30.0)
    view = elastic_view([8], n=3, now=100.0, arrival=[0.0, 0.0, 100.0])
    policy.reset(view.cluster, 3, 0)
    policy.restarts[:] = [1, 4, 0]
    factor = Problem(policy, view, np.arange(3)).factor
    assert factor.tolist() == pytest.approx([70 / 130, 0.0, 0.0])  # age 0: no speedup from a change


def test_rigid_jobs_keep_their_gang():
    view = toy_view([[1.0], [1.0], [1.0]], [8], workers=[2, 3, 5], now=100.0)
    types, gpus = decide(PolluxPolicy(), view)
    run = [g for t, g in zip(types, gpus) if t >= 0]
    assert gpus == [2, 3, 5] and sum(run) <= 8 and len(run) == 2


@pytest.mark.parametrize(("state", "kept", "major", "dropped"), [([4, 4], [4, 0], 0, 4), ([1, 3], [0, 3], 1, 1)])
def test_a_job_keeps_the_type_it_has_most_of(state, kept, major, dropped):
    # one host of 4 per type; the search is blind to types. The artifact keeps a job's GPUs on the
    # type it has most of (a tie: the preferred type, here the cluster's first) and idles the rest
    view = elastic_view([4, 4], now=100.0)
    policy = PolluxPolicy()
    policy.reset(view.cluster, 1, 0)
    policy.most_gpus[:] = 4
    problem = Problem(policy, view, np.arange(1))
    rows, types, counts = policy._one_type(problem, np.array([state]))
    assert (rows.tolist(), types.tolist(), counts.tolist()) == ([kept], [major], [sum(kept)])
    assert policy.stats()["pollux_dropped_gpus"] == dropped
    # mixed_types=repair: the search's own repair keeps one type, so nothing is left to drop (4 + 4
    # is first cut to the job's most, 4 = the smallest type's GPUs, on hosts in random order)
    policy = PolluxPolicy(mixed_types="repair")
    policy.reset(view.cluster, 1, 0)
    policy.most_gpus[:] = 4
    problem = Problem(policy, view, np.arange(1))
    repaired = problem.repair(np.array([[state]]), np.random.default_rng(0))[0, 0].tolist()
    assert repaired in ([kept, kept[::-1]] if state == [4, 4] else [kept])


def test_a_rigid_gang_cut_by_the_drop_is_topped_up_on_its_type():
    # hosts of 1 GPU, types [0, 0, 1, 1]; a rigid 2-GPU job given one GPU of each type keeps type 0
    # (the tie's preferred type) and, below its gang, takes the free host of that type as the
    # artifact's rule for fixed-size jobs does; with no GPU of that type free it does not run
    view = toy_view([[1.0, 1.0], [1.0, 1.0]], [2, 2], workers=[2, 1], gpus_per_host=1, now=100.0)
    policy = PolluxPolicy()
    policy.reset(view.cluster, 2, 0)
    problem = Problem(policy, view, np.arange(2))
    rows, types, counts = policy._one_type(problem, np.array([[1, 0, 1, 0], [0, 0, 0, 1]]))
    assert (rows.tolist(), types[0], counts.tolist()) == ([[1, 1, 0, 0], [0, 0, 0, 1]], 0, [2, 1])
    rows, types, counts = policy._one_type(problem, np.array([[1, 0, 1, 0], [0, 1, 0, 0]]))
    assert (rows.tolist(), counts.tolist()) == ([[0, 0, 0, 0], [0, 1, 0, 0]], [0, 1])
    assert policy.stats()["pollux_topped_up_jobs"] == 1


def test_the_preferred_type_has_the_highest_memory_bandwidth():
    cluster = toy_cluster({"T4": 4, "A100-40GB": 4, "V100": 4})
    assert type_preference(cluster).tolist() == [1, 2, 0]


def random_view(n=30, seed=3):
    rng = np.random.default_rng(seed)
    view = elastic_view([16, 16], n=n, power=0.7, spread=0.9, now=500.0, arrival=rng.uniform(0, 400, n))
    return dataclasses.replace(view, attained_gpu_s=rng.uniform(0, 1000, n))


def test_same_seed_same_answer_other_seed_another_search():
    view = random_view()
    answers, fronts_seen = [], []
    for seed in (0, 0, 1, 2):
        policy = PolluxPolicy()
        answers.append(decide(policy, view, seed=seed, explored=2))
        fronts_seen.append(policy.front)
    assert answers[0] == answers[1] and np.array_equal(fronts_seen[0], fronts_seen[1])
    assert any(f.shape != fronts_seen[0].shape or not np.array_equal(f, fronts_seen[0]) for f in fronts_seen[2:])


def test_every_answer_respects_capacity_ranges_and_one_type():
    view = random_view(n=40, seed=5)
    policy = PolluxPolicy(population=30, generations=30)
    types, gpus = decide(policy, view, explored=8)
    types, gpus = np.array(types), np.array(gpus)
    run = types >= 0
    assert (np.bincount(types[run], weights=gpus[run], minlength=2) <= 16).all()
    assert ((gpus[run] >= 1) & (gpus[run] <= 8)).all()


def test_fronts_and_crowding_on_known_points():
    scores = np.array([[0.0, 3.0], [1.0, 1.0], [3.0, 0.0], [2.0, 2.0], [4.0, 4.0], [1.0, 1.0]])
    assert [f.tolist() for f in fronts(scores, 6)] == [[0, 1, 2, 5], [3], [4]]
    # extremes infinite; the middle point (1/3 + 2/3) per objective, averaged over the two; its repeat 0
    assert crowding(scores[[0, 1, 2, 5]]).tolist() == pytest.approx([np.inf, 1.0, np.inf, 0.0])


@pytest.mark.parametrize(
    ("option", "value", "needle"),
    [
        ("mixed_types", "magic", "mixed_types: unknown mixed_types 'magic' (allowed: drop, repair)"),
        ("population", 1, "population: 1 must be a whole number >= 2"),
        ("generations", 2.5, "generations: 2.5 must be a whole number >= 1"),
        ("crossover_prob", 1.5, "crossover_prob: 1.5 must be a probability in [0, 1]"),
        ("restart_delay_s", -1, "restart_delay_s: -1 must be a number >= 0"),
        ("explore_factor", 0.5, "explore_factor: 0.5 must be a number >= 1"),
        ("p", float("nan"), "p: nan must be a finite number"),
    ],
)
def test_bad_options_are_refused(option, value, needle):
    with pytest.raises(InputError, match=re.escape(needle)) as err:
        PolluxPolicy(**{option: value})
    assert "\n" not in str(err.value)


@pytest.mark.parametrize("clock", ["rounds", "events"])
def test_end_to_end_every_job_finishes_with_invariants_checked(clock):
    class Concave:
        def rate(self, jobs, types, gpus, hosts, done):
            return np.array([1.0, 2.0])[types] * gpus**0.7 * np.where(hosts > -(-gpus // 4), 0.9, 1.0)

    n = 5
    spec = toy_elastic(Concave(), n)
    jobs = toy_jobs(
        np.tile([[1.0, 2.0]], (n, 1)), work=np.linspace(2000, 6000, n), arrival=np.arange(n) * 100.0, elastic=spec
    )
    cluster = toy_cluster({"T4": 8, "V100": 8}, gpus_per_host=4)
    res = simulate(jobs, cluster, PolluxPolicy(), SimConfig(clock=clock, round_len_s=60, check=True))
    assert res.jobs.finish_s.notna().all()
    assert {"pollux_dropped_gpus", "pollux_short_generations"} <= set(res.stats)
    # the first job grows past its first GPU, Pollux's exploration: 1, then up to 2, 4, ...
    assert res.jobs.resizes.iloc[0] >= 1


@pytest.mark.parametrize(("explore_from", "sizes"), [("given", [1, 2, 4]), ("trained", [1, 1, 2])])
def test_a_job_explores_from_the_gpus_it_was_given_or_has_trained_on(explore_from, sizes):
    # a lone linear job on 16 GPUs grows as fast as its bound lets it. At the second decision it
    # holds 1 GPU but has made no progress yet (still in its checkpoint-restore delay): under
    # "given" its bound is already 2 x 1; under "trained" (the artifact's, whose bound reads the
    # replicas of the step times its job has recorded) it stays 1 until the job has trained on it
    policy = PolluxPolicy(explore_from=explore_from)
    got = []
    done = [0.0, 0.0, 5.0]
    for k in range(3):
        ran = k > 0
        view = elastic_view(
            [16],
            hi=16,
            now=100.0 + 60.0 * k,
            done=[done[k]],
            last_type=[0] if ran else None,
            prev_type=[0] if ran else None,
            first_start=[100.0] if ran else None,
        )
        view = dataclasses.replace(view, gpus=np.array([got[-1] if ran else 0]))
        if k == 0:
            policy.reset(view.cluster, 1, 0)
        answer = policy.decide(view)
        assert answer.types.tolist() == [0]
        got.append(int(answer.gpus[0]))
    assert got == sizes


def test_explore_from_must_be_known():
    with pytest.raises(InputError, match="explore_from"):
        PolluxPolicy(explore_from="profiled")
