"""The FFT paper's Gavel baseline (SJF LP over time fractions) and its Table 1 instance."""

import numpy as np
import pytest

from fairsim.paper.examples import gavel_round_len_s, table1_example
from fairsim.policies.gavel import GavelSjf, max_weighted_throughput
from fairsim.testing import fractions_on, toy_view

TABLE1 = [[8.0, 1.0], [8.0, 1.0]]  # two identical jobs; one GPU at 8 epochs/min, one at 1


def fractions(tput, capacity, **kw):
    return fractions_on(GavelSjf(), toy_view(tput, capacity, **kw))


def test_table1_split_is_fifty_fifty_and_costs_about_20_percent():
    x = fractions(TABLE1, [1, 1], work=[16, 16])
    assert x == pytest.approx(np.full((2, 2), 0.5), abs=1e-12)  # identical jobs share symmetrically
    # by hand: each job runs at 0.5*8 + 0.5*1 = 4.5 epochs/min and both finish at 16/4.5 min
    split_total = 2 * 16 / 4.5  # 7.11 min
    # optimum: job A alone on the fast GPU (2 min); job B does 2 epochs on the slow GPU meanwhile,
    # then its last 14 on the fast GPU: 2 + 14/8 = 3.75 min. Total 5.75 min.
    optimum_total = 2.0 + (2.0 + 14 / 8)
    assert optimum_total == pytest.approx(5.75)
    assert split_total / optimum_total == pytest.approx(1.2367, abs=1e-3)


def run_table1(work, round_len_s=None):
    """JCTs in minutes of Table 1's jobs under Gavel (paper_examples: what Table 1 and Fig. 3 draw)."""
    ex = table1_example(round_len_s or gavel_round_len_s(), work)
    return ex.run(ex.policy("gavel"), record=False).jobs["jct_s"].to_numpy() / 60


def test_table1_end_to_end_through_the_engine():
    # the mechanism realizes the split in short rounds: total JCT close to the fluid 7.11 min,
    # at least 20% above the optimum
    total = run_table1([16, 16]).sum()
    assert total == pytest.approx(2 * 16 / 4.5, rel=0.01)
    assert total >= 1.2 * 5.75


def test_shorter_job_gets_the_fast_gpu():
    # remaining 4 vs 16 epochs: the fast GPU is worth 8/4 to job A and 8/16 to job B
    x = fractions(TABLE1, [1, 1], work=[16, 16], done=[12, 0])
    assert x == pytest.approx(np.array([[1.0, 0.0], [0.0, 1.0]]))
    # through the engine: A finishes at 0.5 min, B does 0.5 epoch on the slow GPU meanwhile, then
    # 15.5 epochs at 8/min: 0.5 + 1.9375 = 2.4375 min
    jct = run_table1([4, 16])
    assert jct == pytest.approx([0.5, 2.4375], abs=0.11)  # within one 6 s round


def test_gang_pays_per_gpu():
    # one 4-GPU type: a 2-GPU job with 10 left is worth 1/(2*10) per GPU, a 1-GPU job with 15 left
    # 1/15 per GPU: the single job gets its GPU first, the gang the remaining 2 of 3
    x = fractions([[1.0], [1.0]], [3], workers=[2, 1], work=[10, 15])
    assert x[:, 0] == pytest.approx([1.0, 1.0])
    x = fractions([[1.0], [1.0]], [2], workers=[2, 1], work=[10, 15])
    assert x[:, 0] == pytest.approx([0.5, 1.0])


def test_constraints_hold_and_infeasible_types_get_nothing():
    rng = np.random.default_rng(0)
    for _ in range(10):
        n = int(rng.integers(2, 30))
        tput = rng.uniform(0.1, 3.0, (n, 3)) * (rng.random((n, 3)) > 0.3)
        tput[:, 0] = np.maximum(tput[:, 0], 0.1)
        workers = rng.choice([1, 2, 4], n)
        value = tput / rng.uniform(1, 1000, n)[:, None]
        x = max_weighted_throughput(value, workers, np.array([4, 4, 4]))
        assert (x.sum(axis=1) <= 1 + 1e-9).all()
        assert (workers @ x <= 4 + 1e-9).all()
        assert (x[tput == 0] == 0).all()
