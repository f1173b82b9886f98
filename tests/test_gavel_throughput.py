"""Gavel's max_sum_throughput_perf (the Gavel of Sia's artifact) on hand-made throughput tables."""

import numpy as np
import pytest

from fairsim.policies.gavel_throughput import GavelMaxThroughput
from fairsim.testing import fractions_on, toy_view


def fractions(tput, capacity, **kw):
    return fractions_on(GavelMaxThroughput(), toy_view(tput, capacity, **kw))


def test_each_gpu_goes_to_the_job_that_gains_most_on_it():
    # one fast and one slow GPU; job A gains 8 vs 1, job B 4 vs 3: A on fast (8) + B on slow (3)
    # = 11 beats B on fast + A on slow (4 + 1 = 5); remaining work is not read
    x = fractions([[8.0, 1.0], [4.0, 3.0]], [1, 1], work=[1, 1000])
    assert x == pytest.approx(np.array([[1.0, 0.0], [0.0, 1.0]]))
    x = fractions([[8.0, 1.0], [4.0, 3.0]], [1, 1], work=[1000, 1])
    assert x == pytest.approx(np.array([[1.0, 0.0], [0.0, 1.0]]))


def test_no_fairness_a_slow_job_waits():
    # one GPU: the job with the larger throughput takes all of it, the other none
    x = fractions([[5.0], [2.0]], [1])
    assert x[:, 0] == pytest.approx([1.0, 0.0])


def test_a_gang_is_worth_its_throughput_over_its_gpus():
    # 4 GPUs: a 4-GPU job at 10/s against four 1-GPU jobs at 3/s each (12/s in all)
    x = fractions([[10.0], [3.0], [3.0], [3.0], [3.0]], [4], workers=[4, 1, 1, 1, 1])
    assert x[:, 0] == pytest.approx([0.0, 1.0, 1.0, 1.0, 1.0])
    # at 13/s the gang wins
    x = fractions([[13.0], [3.0], [3.0], [3.0], [3.0]], [4], workers=[4, 1, 1, 1, 1])
    assert x[:, 0] == pytest.approx([1.0, 0.0, 0.0, 0.0, 0.0])


def test_identical_jobs_share_and_weights_are_not_read():
    x = fractions([[2.0], [2.0]], [1], weight=[1.0, 5.0])
    assert x[:, 0] == pytest.approx([0.5, 0.5])
