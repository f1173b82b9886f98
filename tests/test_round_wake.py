"""Under rounds, a policy that declares until when its decision stands (``next_decision_s``) is
asked only at arrivals, completions and that time, not every round: the runs are the same, bit
for bit, as when it is asked every round, with fewer decisions."""

import copy
import math
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest
from omegaconf import OmegaConf

from fairsim.experiment.compose import compose_config
from fairsim.experiment.single import build_cluster, build_jobs, build_policy
from fairsim.policies.base import Policy
from fairsim.policies.srtf import SrtfPolicy
from fairsim.sim.config import SimConfig
from fairsim.sim.engine import PolicyContractError, simulate
from fairsim.sim.running import CARRIED, RunningTable


def asked_every_round(policy: Policy) -> Policy:
    """The same policy with the default ``next_decision_s``: one round after each decision."""

    class EveryRound(type(policy)):
        def next_decision_s(self, view, assignment):
            return view.now + view.round_len

    policy.__class__ = EveryRound
    return policy


@pytest.fixture(scope="module")
def crowded():
    """Philly jobs at 1.5x load on a small multi-host cluster: long queues, threshold crossings,
    preemptions, restarts with overheads owed across rounds."""
    cfg = compose_config(["workload=philly", "num_jobs=300", "load=1.5", "seed=5", "track=false"])
    cluster = build_cluster(cfg)
    return build_jobs(cfg, cluster)[1], cluster, OmegaConf.to_container(cfg.sim, resolve=True)


CASES = [
    ("srtf", {}),
    ("tiresias", {}),
    ("tiresias_random", {}),
    ("tiresias_las", {}),
    ("tiresias_las", {"promote_knob": 2}),
    ("tiresias_las", {"thresholds_gpu_s": [600, 1800, 3600]}),
    ("tiresias_las2q", {}),
]


@pytest.mark.parametrize("round_len_s", [300.0, 120.0])
@pytest.mark.parametrize("preset, options", CASES)
def test_a_declared_decision_time_skips_only_unchanged_rounds(crowded, preset, options, round_len_s):
    jobs, cluster, sim = crowded
    setting = {**sim, "clock": "rounds", "round_len_s": round_len_s}
    config = SimConfig.from_config(setting)
    spec = {**OmegaConf.to_container(compose_config([f"policy={preset}"]).policy, resolve=True), **options}
    declared, every = build_policy(spec), asked_every_round(build_policy(spec))
    a, b = simulate(jobs, cluster, declared, config, seed=5), simulate(jobs, cluster, every, config, seed=5)
    pd.testing.assert_frame_equal(a.jobs, b.jobs, check_exact=True)
    timeline = ["t_s", "duration_s", "rounds", "active_jobs", "running_jobs", "busy_gpus"]
    pd.testing.assert_frame_equal(a.rounds[timeline], b.rounds[timeline], check_exact=True)
    assert b.stats["policy_calls"] == b.stats["rounds"]  # the reference decides every round
    assert a.stats["policy_calls"] < b.stats["policy_calls"]  # and the declared one less often
    assert a.jobs["preemptions"].sum() > 0 or preset == "srtf"  # the queues were put to work
    assert a.stats["bulk_rounds"] > 0 and b.stats["bulk_rounds"] == 0
    one_by_one = simulate(
        jobs, cluster, build_policy(spec), SimConfig.from_config({**setting, "fast_forward": False}), seed=5
    )
    pd.testing.assert_frame_equal(a.jobs, one_by_one.jobs, check_exact=True)
    assert one_by_one.stats["bulk_rounds"] == 0


@pytest.mark.parametrize(
    "sim_changes",
    [
        {"placement": False},
        {"overheads": {"migration": False, "preemption": False}},
        {"overheads": {"profiling": True}},
        {"profile_error": 0.3},
    ],
    ids=["no placement", "no overheads", "profiling", "profile error"],
)
@pytest.mark.parametrize("preset, options", [("tiresias_las", {"promote_knob": 2}), ("tiresias", {})])
def test_the_replay_holds_under_every_engine_setting(crowded, sim_changes, preset, options):
    jobs, cluster, sim = crowded
    setting = OmegaConf.to_container(OmegaConf.merge(sim, {"clock": "rounds", **sim_changes}), resolve=True)
    config = SimConfig.from_config(setting)
    spec = {**OmegaConf.to_container(compose_config([f"policy={preset}"]).policy, resolve=True), **options}
    a = simulate(jobs, cluster, build_policy(spec), config, seed=5)
    b = simulate(jobs, cluster, asked_every_round(build_policy(spec)), config, seed=5)
    pd.testing.assert_frame_equal(a.jobs, b.jobs, check_exact=True)
    assert a.stats["bulk_rounds"] > 0 and a.stats["policy_calls"] < b.stats["policy_calls"]


def test_a_declared_time_within_the_next_round_is_asked_every_round(crowded):
    """A policy naming a time up to one round ahead (or nothing usable) decides every round, as
    the default does: a round can end early, and the next decision must not slip past it."""
    jobs, cluster, sim = crowded
    config = SimConfig.from_config({**sim, "clock": "rounds"})
    for ahead in (1.0, 0.5, math.nan):

        class Soon(SrtfPolicy):
            def next_decision_s(self, view, assignment, ahead=ahead):
                return view.now + ahead * view.round_len

        result = simulate(jobs, cluster, Soon(), config, seed=5)
        assert result.stats["policy_calls"] == result.stats["rounds"]


def test_replayed_rounds_are_the_rounds_one_by_one():
    """``RunningTable.replay_rounds`` gives every accumulator the bits of as many ``advance_round``
    calls, and stops before the round in which the first job would finish."""
    rng = np.random.default_rng(0)

    def state():
        return SimpleNamespace(
            acc=rng.uniform(0, 50, (40, len(CARRIED))) * [1, 1, 1, 0, 1],  # nothing owed
            gpu_s_by_type=rng.uniform(0, 9, (40, 3)),
            spread_rounds=rng.integers(0, 5, 40),
        )

    start = state()
    ids = np.arange(0, 40, 2)
    tput = rng.uniform(0.01, 3.0, len(ids))
    work = start.acc[ids, 0] + tput * 300.0 * rng.uniform(5, 60, len(ids))
    tables = {}
    for way in ("bulk", "one by one"):
        tables[way] = table = RunningTable()
        table.add(start, ids, ids % 3, tput, (ids % 4) + 1, work, ids % 6 == 0)
    applied = tables["bulk"].replay_rounds(300.0, 100)
    assert 0 < applied < 100
    for _ in range(applied):
        assert not tables["one by one"].advance_round(300.0, False, False, False)[3].any()
    written = {}
    for way, table in tables.items():
        written[way] = copy.deepcopy(start)
        table.flush(written[way])
    for name in ("acc", "gpu_s_by_type", "spread_rounds"):
        np.testing.assert_array_equal(getattr(written["bulk"], name), getattr(written["one by one"], name))
    assert not np.array_equal(written["bulk"].acc, start.acc)
    assert tables["one by one"].advance_round(300.0, False, False, False)[3].any()  # where replay stopped


def test_a_policy_that_runs_nothing_and_declares_no_decision_is_stopped_as_stalled(crowded):
    """Nothing to replay when nothing runs: the engine's stall check ends such a run in one line."""
    jobs, cluster, sim = crowded

    class Idle(Policy):
        def decide(self, view):
            return view.empty_assignment()

        def next_decision_s(self, view, assignment):
            return math.inf

    config = SimConfig.from_config({**sim, "clock": "rounds"})
    with pytest.raises(PolicyContractError, match="ran no job in 1000 steps"):
        simulate(jobs, cluster, Idle(), config, seed=5)
