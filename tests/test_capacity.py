"""The fluid capacity bound on hand-made workloads."""

import pytest

from fairsim.experiment.capacity import sustainable_scale
from fairsim.testing import toy_cluster, toy_jobs


def test_scale_is_capacity_over_demand():
    # two 100-unit jobs arriving 100 s apart bring 2 units/s; two GPUs at 1 unit/s deliver 2
    jobs = toy_jobs([[1.0]] * 2, work=[100.0, 100.0], arrival=[0.0, 100.0])
    assert sustainable_scale(jobs, toy_cluster({"T4": 2})) == pytest.approx(1.0)
    # a faster type adds 2 units/s from one GPU: 4 / 2
    jobs2 = toy_jobs([[1.0, 2.0]] * 2, work=[100.0, 100.0], arrival=[0.0, 100.0])
    assert sustainable_scale(jobs2, toy_cluster({"T4": 2, "A10": 1})) == pytest.approx(2.0)


def test_gangs_use_all_their_gpus_and_classes_compete():
    cluster = toy_cluster({"T4": 2})
    # a 2-worker job makes 1.5 units/s on both GPUs: 1.5 / 2 of the demand
    gang = toy_jobs([[1.5]] * 2, work=[100.0, 100.0], arrival=[0.0, 100.0], workers=[2, 2])
    assert sustainable_scale(gang, cluster) == pytest.approx(0.75)
    # with a 1-GPU class beside it (1 unit/s, each class brings 1 unit/s): serving s units/s takes
    # the gang class s / 1.5 jobs = 2s / 1.5 GPUs and the other s GPUs; 2s / 1.5 + s = 2 -> s = 6/7
    mixed = toy_jobs([[1.5], [1.0]], work=[100.0, 100.0], arrival=[0.0, 100.0], workers=[2, 1])
    assert sustainable_scale(mixed, cluster) == pytest.approx(6 / 7)
