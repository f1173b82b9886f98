"""Gavel's max-min fairness LP on instances solvable by hand."""

import numpy as np
import pytest

from fairsim.policies.gavel_mmf import GavelMaxMinFairness
from fairsim.solve.maxmin import solve_max_min
from fairsim.testing import fractions_on, toy_view


def fractions(tput, capacity, **kw):
    return fractions_on(GavelMaxMinFairness(), toy_view(tput, capacity, **kw))


def test_table1_identical_jobs_split_both_gpus_in_half():
    # two identical jobs, a fast (8/min) and a slow (1/min) GPU: the unique optimum is 50/50
    assert fractions([[8.0, 1.0], [8.0, 1.0]], [1, 1]) == pytest.approx(np.full((2, 2), 0.5), abs=1e-9)


def test_one_type_equal_time_regardless_of_speed():
    # normalized throughput = X * tput / (tput * 1/2): speed cancels, so each job gets half
    assert fractions([[1.0], [3.0]], [1])[:, 0] == pytest.approx([0.5, 0.5], abs=1e-9)


def test_three_jobs_share_two_gpus():
    assert fractions([[2.0]] * 3, [2])[:, 0] == pytest.approx([2 / 3] * 3, abs=1e-9)


def test_gang_gets_equal_gpu_time_not_equal_wall_time():
    # 1-GPU job A and 2-GPU job B on 2 GPUs: coef A = 1, coef B = 2 (scale factor), so the optimum
    # X_A = 1, X_B = 1/2: both receive 1 GPU-round per round (unique: X_A <= 1, X_A + 2 X_B <= 2)
    x = fractions([[1.0], [1.0]], [2], workers=[1, 2])
    assert x[:, 0] == pytest.approx([1.0, 0.5], abs=1e-9)


def test_weight_doubles_the_share():
    # weight 2 halves job 0's normalized throughput, so it needs twice the time: 2/3 vs 1/3
    x = fractions([[1.0], [1.0]], [1], weight=[2.0, 1.0])
    assert x[:, 0] == pytest.approx([2 / 3, 1 / 3], abs=1e-9)


def test_infeasible_type_gets_no_time_and_constraints_hold():
    rng = np.random.default_rng(0)
    for _ in range(20):
        n, t = rng.integers(2, 12), rng.integers(1, 4)
        tput = rng.uniform(0.1, 3, (n, t)) * (rng.random((n, t)) > 0.3)
        tput[:, 0] = np.maximum(tput[:, 0], 0.1)  # every job can run somewhere
        cap = rng.integers(1, 6, t)
        workers = rng.choice([1, 2], n)
        x = fractions(tput, cap, workers=workers)
        view = toy_view(tput, cap, workers=workers)
        assert (x[~view.feasible] == 0).all()
        assert (x.sum(axis=1) <= 1 + 1e-9).all()
        assert (workers @ x <= cap + 1e-9).all()


def test_class_merging_and_warm_start_reach_the_per_job_optimum():
    # a pool of jobs of 4 models x 2 gang sizes; successive solves over changing subsets reuse
    # one HiGHS model (warm) and must reach the optimum of a cold per-job LP
    rng = np.random.default_rng(1)
    models = rng.uniform(0.2, 3.0, (4, 3))
    pool = 40
    tput = models[rng.integers(0, 4, pool)]
    workers = rng.choice([1, 2], pool)
    cap = np.array([3, 4, 5])
    warm = GavelMaxMinFairness()
    warm.reset(toy_view(tput, cap).cluster, pool, 0)
    cold = GavelMaxMinFairness(warm_start=False)
    cold.reset(toy_view(tput, cap).cluster, pool, 0)
    for _ in range(12):
        ids = np.sort(rng.choice(pool, rng.integers(1, 15), replace=False))
        view = toy_view(tput[ids], cap, workers=workers[ids])
        object.__setattr__(view, "job_id", ids)
        coef = warm._coefficients(view, slice(None))
        per_job = solve_max_min(coef, workers[ids].astype(float), cap.astype(float))
        best = (coef * per_job).sum(axis=1).min()
        for policy in (warm, cold):
            x = policy.fractions(view)
            assert (coef * x).sum(axis=1).min() == pytest.approx(best, rel=1e-7)
            assert (workers[ids] @ x <= cap + 1e-9).all()
    assert warm.lp.num_classes <= 8


def test_warm_start_off_gives_same_table1_answer():
    view = toy_view([[8.0, 1.0], [8.0, 1.0]], [1, 1])
    policy = GavelMaxMinFairness(warm_start=False)
    policy.reset(view.cluster, 2, 0)
    assert policy.fractions(view) == pytest.approx(np.full((2, 2), 0.5), abs=1e-9)
