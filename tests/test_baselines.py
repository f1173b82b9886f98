"""All non-Gavel baselines: contract checks on random views, end-to-end runs through the engine,
and their Hydra configs."""

import numpy as np
import pandas as pd
import pytest
from conftest import ROOT
from hydra.utils import instantiate
from omegaconf import OmegaConf

from fairsim.errors import InputError
from fairsim.policies.allox import AlloxPolicy
from fairsim.policies.base import Policy
from fairsim.policies.pal import PalPolicy
from fairsim.policies.srtf import SrtfPolicy
from fairsim.policies.themis import ThemisPolicy
from fairsim.policies.tiresias import TiresiasLasPolicy, TiresiasPolicy
from fairsim.sim.config import SimConfig
from fairsim.sim.engine import simulate
from fairsim.testing import toy_cluster, toy_jobs, toy_view

CONF = ROOT / "conf" / "policy"

POLICIES = {
    "themis": lambda: ThemisPolicy(),
    "themis_f0": lambda: ThemisPolicy(fairness_knob=0.0, lease_s=300),
    "themis_simple_reading": lambda: ThemisPolicy(
        fairness_knob=0.8, lease_s=600, rank="all", leftover="greedy", waiting_rho="lease_wait"
    ),
    "tiresias": lambda: TiresiasPolicy(),
    "tiresias_random": lambda: TiresiasPolicy(queue_choice="random"),
    "tiresias_las": lambda: TiresiasLasPolicy(promote_knob=2.0),
    "allox": lambda: AlloxPolicy(),
    "allox_on_arrival": lambda: AlloxPolicy(queue_choice="on_arrival"),
    "pal": lambda: PalPolicy(),
    "pal_las_head_of_line": lambda: PalPolicy(order="las", head_of_line=True),
    "srtf": lambda: SrtfPolicy(),
}


def random_view(rng, n, types=3):
    capacity = rng.integers(0, 9, size=types)
    capacity[0] = max(capacity[0], 4)
    tput = rng.uniform(0.2, 3.0, size=(n, types)) * (rng.random((n, types)) > 0.2)
    tput[:, 0] = np.maximum(tput[:, 0], 0.1)  # every job can run somewhere
    workers = rng.choice([1, 2, 4], size=n)
    work = rng.uniform(100, 5000, size=n)
    running = rng.random(n) < 0.3
    last = np.where(running, 0, -1)
    # keep the "running" set within type 0's capacity, as a real previous round would
    last[np.flatnonzero(running)[np.cumsum(workers[running]) > capacity[0]]] = -1
    return toy_view(
        tput,
        capacity,
        workers=workers,
        work=work,
        done=work * rng.random(n) * 0.5,
        arrival=np.sort(rng.uniform(0, 1000, n)),
        now=1000,
        last_type=last,
        prev_type=last,
        attained_gpu_s=rng.uniform(0, 20000, n),
        changed=True,
    )


@pytest.mark.parametrize("name", sorted(POLICIES))
def test_assignments_respect_the_rules_on_random_views(name):
    rng = np.random.default_rng(7)
    for _ in range(25):
        view = random_view(rng, int(rng.integers(1, 40)))
        policy = POLICIES[name]()
        policy.reset(view.cluster, view.num_jobs, 0)
        a = policy.decide(view)
        assert a.shape == (view.num_jobs,) and a.dtype.kind == "i"
        assert ((a >= -1) & (a < view.num_types)).all()
        run = a >= 0
        assert view.feasible[run, a[run]].all()  # memory / gang feasibility
        used = np.bincount(a[run], weights=view.workers[run], minlength=view.num_types)
        assert (used <= view.capacity).all()  # capacity per type


def workload(seed=0, n=40):
    rng = np.random.default_rng(seed)
    tput = rng.uniform(0.5, 3.0, size=(n, 3)) * np.array([1.0, 1.6, 2.5])
    return toy_jobs(
        tput,
        work=rng.uniform(500, 20000, n),
        arrival=np.sort(rng.uniform(0, 20000, n)),
        workers=rng.choice([1, 2, 4], size=n),
        state_bytes=rng.uniform(0, 5e9, n),
    )


CLUSTER = toy_cluster({"T4": 8, "A10": 8, "V100": 8})


@pytest.mark.parametrize("name", sorted(POLICIES))
def test_end_to_end_every_job_finishes_under_checked_engine(name):
    res = simulate(workload(), CLUSTER, POLICIES[name](), SimConfig(check=True))
    assert res.jobs["finish_s"].notna().all()
    assert (res.jobs["jct_s"] > 0).all()


@pytest.mark.parametrize("name", ["tiresias", "tiresias_random", "allox", "allox_on_arrival"])
def test_no_cross_type_migration_end_to_end(name):
    res = simulate(workload(1, 60), CLUSTER, POLICIES[name](), SimConfig(check=True))
    assert res.jobs["type_switches"].sum() == 0
    per_type = res.jobs[[c for c in res.jobs.columns if c.startswith("gpu_s_")]].to_numpy()
    assert ((per_type > 0).sum(axis=1) == 1).all()  # each job used exactly one GPU type


def test_allox_never_preempts_end_to_end():
    res = simulate(workload(2, 60), CLUSTER, AlloxPolicy(), SimConfig(check=True))
    assert res.jobs["preemptions"].sum() == 0


@pytest.mark.parametrize("name", ["themis", "tiresias", "tiresias_random", "tiresias_las", "pal"])
def test_same_inputs_same_results(name):
    a = simulate(workload(3), CLUSTER, POLICIES[name](), SimConfig()).jobs
    b = simulate(workload(3), CLUSTER, POLICIES[name](), SimConfig()).jobs
    pd.testing.assert_frame_equal(a, b)


def test_srtf_beats_fifo_like_order_on_mean_jct():
    # single type, one GPU, all jobs at t=0: SRTF order is optimal for mean JCT (SPT rule).
    # Works 300, 100, 200 s -> SRTF finishes at 100, 300, 600: mean (100 + 300 + 600) / 3.
    jobs = toy_jobs([[1.0]] * 3, work=[300, 100, 200])
    res = simulate(jobs, toy_cluster({"T4": 1}), SrtfPolicy(), SimConfig(round_len_s=100, check=True))
    assert res.jobs["finish_s"].tolist() == pytest.approx([600, 100, 300])


@pytest.mark.parametrize("name", ["themis", "tiresias", "tiresias_las", "tiresias_las2q", "allox", "pal", "srtf"])
def test_policy_yaml_builds(name):
    cfg = OmegaConf.to_container(OmegaConf.load(CONF / f"{name}.yaml"))
    assert cfg.pop("name") == name  # the runner drops the label before instantiating
    policy = instantiate(cfg, _convert_="all")
    assert isinstance(policy, Policy)
    view = toy_view([[1.0, 2.0]], capacity=[1, 1])
    policy.reset(view.cluster, 1, 0)
    assert policy.decide(view)[0] in (0, 1)  # a lone job always starts


def test_bad_options_are_input_errors():
    for make in (
        lambda: ThemisPolicy(fairness_knob=1.0),
        lambda: PalPolicy(order="lifo"),
        lambda: TiresiasLasPolicy(thresholds_gpu_s=[10, 5]),
        lambda: AlloxPolicy(max_matched=0),
        lambda: ThemisPolicy(rank="some"),
        lambda: ThemisPolicy(leftover="idle"),
        lambda: ThemisPolicy(waiting_rho="zero"),
        lambda: TiresiasPolicy(queue_choice="fastest"),
        lambda: AlloxPolicy(queue_choice="random"),
        lambda: PalPolicy(head_of_line="yes"),
    ):
        with pytest.raises(InputError):
            make()
