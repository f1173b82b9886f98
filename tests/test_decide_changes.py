"""Policies that decide from what changed (``Policy.decide_changes``) decide exactly what their
``decide`` does: the same runs, bit for bit, through the incremental path and through the view."""

import numpy as np
import pandas as pd
import pytest
from omegaconf import OmegaConf

from fairsim.capacity_timeline import CapacityConfig
from fairsim.experiment.compose import compose_config
from fairsim.experiment.single import build_cluster, build_jobs
from fairsim.policies.base import decides_by_changes
from fairsim.policies.fifo import FifoPolicy
from fairsim.policies.tiresias import TiresiasPolicy
from fairsim.sim.config import SimConfig
from fairsim.sim.engine import simulate


class FifoByView(FifoPolicy):
    def decide(self, view):  # overriding decide alone sends the engine through the view
        return super().decide(view)


class TiresiasByView(TiresiasPolicy):
    def decide(self, view):
        return super().decide(view)


@pytest.fixture(scope="module")
def crowded():
    """A few hundred Philly jobs at 1.5x load on a small multi-host cluster: long queues,
    preemptions, spread gangs and consolidations."""
    cfg = compose_config(["workload=philly", "num_jobs=300", "load=1.5", "seed=3", "track=false"])
    cluster = build_cluster(cfg)
    return build_jobs(cfg, cluster)[1], cluster, OmegaConf.to_container(cfg.sim, resolve=True)


CASES = [
    (FifoPolicy, FifoByView, {}),
    (FifoPolicy, FifoByView, {"backfill": False}),
    (TiresiasPolicy, TiresiasByView, {}),
    (TiresiasPolicy, TiresiasByView, {"queue_choice": "random"}),
]


@pytest.mark.parametrize("clock", ["events", "rounds"])
@pytest.mark.parametrize("by_changes, by_view, options", CASES)
def test_the_incremental_decision_is_the_views(crowded, clock, by_changes, by_view, options):
    jobs, cluster, sim = crowded
    config = SimConfig.from_config({**sim, "clock": clock})
    fast, slow = by_changes(**options), by_view(**options)
    assert decides_by_changes(fast) and not decides_by_changes(slow)
    a, b = simulate(jobs, cluster, fast, config, seed=3), simulate(jobs, cluster, slow, config, seed=3)
    pd.testing.assert_frame_equal(a.jobs, b.jobs, check_exact=True)
    assert a.stats["policy_calls"] == b.stats["policy_calls"]
    assert np.count_nonzero(a.jobs["preemptions"]) or by_changes is FifoPolicy  # Tiresias was put to work


@pytest.mark.parametrize("clock", ["events", "rounds"])
@pytest.mark.parametrize("by_changes, by_view, options", CASES[::2])
def test_the_incremental_decision_is_the_views_under_outages(crowded, clock, by_changes, by_view, options):
    """Evicted jobs wait again and capacity moves: the incremental path must see both."""
    jobs, cluster, sim = crowded
    config = SimConfig.from_config({**sim, "clock": clock})
    outages = CapacityConfig.from_config(
        {"checkpoint_interval_s": 1800, "failures": {"gpu_mtbf_h": 160, "repair_h": 3}}, cluster
    )
    fast, slow = by_changes(**options), by_view(**options)
    a = simulate(jobs, cluster, fast, config, seed=3, capacity=outages)
    b = simulate(jobs, cluster, slow, config, seed=3, capacity=outages)
    pd.testing.assert_frame_equal(a.jobs, b.jobs, check_exact=True)
    assert a.jobs["evictions"].sum() > 10  # the outages hit running jobs
