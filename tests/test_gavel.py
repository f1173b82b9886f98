"""The FFT paper's Gavel baseline (JCT objective over time fractions) and its Table 1 instance."""

import numpy as np
import pytest

from fairsim.policies.gavel import GavelJct, min_total_jct_fractions
from fairsim.policies.mechanism import GavelMechanism
from fairsim.sim.config import Overheads, SimConfig
from fairsim.sim.engine import simulate
from fairsim.testing import toy_cluster, toy_jobs, toy_view

PER_MIN = 1 / 60  # throughputs below are epochs per minute, the engine wants per second


def test_table1_split_is_fifty_fifty_and_costs_about_20_percent():
    # two identical jobs of 16 epochs; one GPU at 8 epochs/min, one at 1 epoch/min
    x = min_total_jct_fractions(np.array([[8.0, 1.0], [8.0, 1.0]]), np.array([16.0, 16.0]),
                                np.array([1, 1]), np.array([1, 1]), rel_gap=1e-9)
    assert x == pytest.approx(np.full((2, 2), 0.5), abs=2e-3)
    # by hand: each job runs at 0.5*8 + 0.5*1 = 4.5 epochs/min and both finish at 16/4.5 min
    split_total = 2 * 16 / 4.5  # 7.11 min
    # optimum: job A alone on the fast GPU (2 min); job B does 2 epochs on the slow GPU meanwhile,
    # then its last 14 on the fast GPU: 2 + 14/8 = 3.75 min. Total 5.75 min.
    optimum_total = 2.0 + (2.0 + 14 / 8)
    assert optimum_total == pytest.approx(5.75)
    assert split_total / optimum_total == pytest.approx(1.2367, abs=1e-3)


def test_table1_end_to_end_through_the_engine():
    # the mechanism realizes the split in short rounds: total JCT close to the fluid 7.11 min
    jobs = toy_jobs([[8 * PER_MIN, PER_MIN], [8 * PER_MIN, PER_MIN]], [16, 16])
    cluster = toy_cluster({"V100": 1, "K80": 1})
    cfg = SimConfig(round_len_s=6.0, placement=False, fast_forward=False,
                    overheads=Overheads(migration=False, preemption=False))
    policy = GavelJct(mechanism=GavelMechanism(recompute_min_interval_s=0))
    result = simulate(jobs, cluster, policy, cfg)
    total_min = result.jobs["jct_s"].sum() / 60
    assert total_min == pytest.approx(2 * 16 / 4.5, rel=0.01)
    assert total_min >= 1.2 * 5.75  # at least 20% above the optimum


def test_shorter_job_gets_the_square_root_share():
    # remaining 4 vs 16 epochs: optimum throughputs T_A / T_B = sqrt(4/16) = 1/2 with both GPUs
    # and both rows full: 8a + (1-a) = 3 -> a = 2/7 of the fast GPU for the short job
    x = min_total_jct_fractions(np.array([[8.0, 1.0], [8.0, 1.0]]), np.array([4.0, 16.0]),
                                np.array([1, 1]), np.array([1, 1]), rel_gap=1e-10)
    assert x[0] == pytest.approx([2 / 7, 5 / 7], abs=2e-3)
    assert x[1] == pytest.approx([5 / 7, 2 / 7], abs=2e-3)
    # and it finishes first: 4/3 min vs 16/6 min


def test_every_job_keeps_a_share_and_constraints_hold():
    rng = np.random.default_rng(0)
    n = 40
    tput = rng.uniform(0.1, 3.0, (n, 3))
    r = rng.uniform(1, 1000, n)
    workers = rng.choice([1, 2, 4], n)
    cap = np.array([8, 8, 8])
    x = min_total_jct_fractions(tput, r, workers, cap)
    assert (x.sum(axis=1) <= 1 + 1e-9).all()
    assert (workers @ x <= cap + 1e-6).all()
    assert ((tput * x).sum(axis=1) > 0).all()  # no job is starved by the fractional objective


def test_policy_reads_the_view():
    view = toy_view([[8.0, 1.0], [8.0, 1.0]], [1, 1], work=[16, 16], done=[12, 0])
    policy = GavelJct(rel_gap=1e-9)
    policy.reset(view.cluster, 2, 0)
    x = policy.fractions(view)
    assert x[0] == pytest.approx([2 / 7, 5 / 7], abs=2e-3)  # remaining 4 vs 16, as above
