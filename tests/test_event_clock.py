"""The event clock (sim.clock=events) against hand-worked cases, and its contracts."""

import math

import numpy as np
import pytest
from conftest import ROOT

from fairsim.errors import InputError
from fairsim.policies.base import Policy
from fairsim.policies.fifo import FifoPolicy
from fairsim.policies.srtf import SrtfPolicy
from fairsim.policies.tiresias import TiresiasLasPolicy, TiresiasPolicy
from fairsim.sim.config import Overheads, SimConfig
from fairsim.sim.engine import PolicyContractError, simulate
from fairsim.testing import toy_cluster, toy_jobs, toy_mixed_jobs

GB_PER_S_AT_10GBPS = 1.25e9
NO_OVERHEADS = Overheads(migration=False, preemption=False, restart_s=0)


def events(**kw) -> SimConfig:
    return SimConfig(clock="events", **kw)


def test_an_arrival_into_an_idle_cluster_starts_at_once():
    cluster = toy_cluster({"T4": 1})
    jobs = toy_jobs([[1.0], [1.0]], work=[30.0, 45.0], arrival=[0.0, 1000.5])
    res = simulate(jobs, cluster, FifoPolicy(), events(check=True))
    assert res.jobs["first_start_s"].tolist() == [0.0, 1000.5]
    assert res.jobs["finish_s"].tolist() == [30.0, 1045.5]


def test_an_arrival_on_a_busy_cluster_starts_at_the_exact_finish_of_the_job_before_it():
    # under 60 s rounds job 1 waits for the boundary at 60 s (test_engine's counterpart); here it
    # starts on the GPU job 0 frees at 37.25 s
    cluster = toy_cluster({"T4": 1})
    jobs = toy_jobs([[1.0], [1.0]], work=[37.25, 10.0], arrival=[0.0, 10.0])
    res = simulate(jobs, cluster, FifoPolicy(), events(round_len_s=60, check=True))
    assert res.jobs["first_start_s"].tolist() == [0.0, 37.25]
    assert res.jobs["finish_s"].tolist() == [37.25, 47.25]
    rounds = simulate(jobs, cluster, FifoPolicy(), SimConfig(round_len_s=60)).jobs
    assert rounds["first_start_s"].tolist() == [0.0, 60.0]


def test_a_completion_frees_gpus_for_a_wide_job_at_its_exact_finish():
    # two 1-GPU jobs hold a 2-GPU type; the gang of 2 behind them starts when the later one ends
    cluster = toy_cluster({"V100": 2}, gpus_per_host=2)
    jobs = toy_jobs([[1.0], [1.0], [1.0]], work=[12.5, 20.0, 8.0], arrival=[0.0, 0.0, 1.0], workers=[1, 1, 2])
    res = simulate(jobs, cluster, FifoPolicy(), events(check=True))
    assert res.jobs["finish_s"].tolist() == [12.5, 20.0, 28.0]
    assert res.jobs["first_start_s"].iloc[2] == 20.0


def test_srtf_preempts_at_the_arrival_of_a_shorter_job():
    cluster = toy_cluster({"T4": 1})
    jobs = toy_jobs([[1.0], [1.0]], work=[100.0, 10.0], arrival=[0.0, 33.0])
    res = simulate(jobs, cluster, SrtfPolicy(), events(overheads=NO_OVERHEADS, check=True))
    # job 1 runs 33..43; job 0 has 67 left and ends at 110
    assert res.jobs["finish_s"].tolist() == [110.0, 43.0]
    assert res.jobs["preemptions"].tolist() == [1, 0]


def test_overheads_are_charged_under_events_as_under_rounds():
    # the preemption of test_srtf_preempts... with the restart on: job 0 resumes at 43 s, pays
    # 30 s + 2 s of state transfer, then its 67 s of work -> 142 s
    cluster = toy_cluster({"T4": 1})
    jobs = toy_jobs([[1.0], [1.0]], work=[100.0, 10.0], arrival=[0.0, 33.0], state_bytes=[2 * GB_PER_S_AT_10GBPS, 0.0])
    res = simulate(jobs, cluster, SrtfPolicy(), events(check=True))
    job = res.jobs.iloc[0]
    assert job["finish_s"] == pytest.approx(142.0)
    assert job["overhead_s"] == pytest.approx(32.0)
    assert res.jobs["overhead_s"].iloc[1] == 0.0  # a new job pays nothing without profiling
    # the same charge as the round clock makes when a resume happens at a boundary: job 1
    # arriving at 0 s under 60 s rounds runs 0..10, job 0 waits, starts at 60 s with no restart
    # (never ran), so compare the restart on a scripted pause instead
    on_rounds = simulate(
        toy_jobs([[1.0]], work=[100.0], state_bytes=[2 * GB_PER_S_AT_10GBPS]),
        cluster,
        _Pause(at=[60.0], resume=[120.0]),
        SimConfig(round_len_s=60),
    ).jobs.iloc[0]
    on_events = simulate(
        toy_jobs([[1.0]], work=[100.0], state_bytes=[2 * GB_PER_S_AT_10GBPS]),
        cluster,
        _Pause(at=[60.0], resume=[120.0]),
        events(round_len_s=60),
    ).jobs.iloc[0]
    assert on_events["overhead_s"] == on_rounds["overhead_s"] == pytest.approx(32.0)
    assert on_events["finish_s"] == on_rounds["finish_s"] == pytest.approx(192.0)


class _Pause(Policy):
    """One job on type 0, paused from each ``at`` time to the matching ``resume`` time; asks the
    event clock for a decision at each of those times."""

    def __init__(self, at, resume):
        self.times = sorted([*at, *resume])
        self.spans = list(zip(at, resume))

    def decide(self, view):
        paused = any(a <= view.now < r for a, r in self.spans)
        return np.full(view.num_jobs, -1 if paused else 0, dtype=np.int64)

    def next_decision_s(self, view, assignment):
        return next((x for x in self.times if x > view.now), math.inf)


def test_profiling_is_charged_once_under_events():
    cluster = toy_cluster({"T4": 1, "A10": 1})
    jobs = toy_jobs([[1.0, 1.0]], work=[100.0])
    res = simulate(jobs, cluster, FifoPolicy(), events(overheads=Overheads(profiling=True, profiling_s_per_type=10)))
    assert res.jobs["finish_s"].iloc[0] == 120.0


def test_a_2d_las_job_is_demoted_at_its_threshold_crossing():
    # thresholds at 100 GPU-s: job 0 (2 GPUs of 2) crosses at 50 s; job 1, pending in the top
    # queue since 10 s, preempts it then; job 0 resumes when job 1 ends at 80 s
    cluster = toy_cluster({"V100": 2}, gpus_per_host=2)
    jobs = toy_jobs([[1.0], [1.0]], work=[200.0, 30.0], arrival=[0.0, 10.0], workers=[2, 2])
    exact = TiresiasLasPolicy(thresholds_gpu_s=[100.0], jump_time="exact")
    res = simulate(jobs, cluster, exact, events(overheads=NO_OVERHEADS, check=True))
    assert res.jobs["first_start_s"].tolist() == [0.0, 50.0]
    assert res.jobs["finish_s"].tolist() == [230.0, 80.0]
    assert res.jobs["preemptions"].tolist() == [1, 0]
    assert simulate(jobs, cluster, TiresiasLasPolicy(thresholds_gpu_s=[100.0]), events(overheads=NO_OVERHEADS)).jobs[
        "first_start_s"
    ].tolist() == [0.0, 50.0]  # exact is the default
    # Tiresias' simulator's arithmetic (jump_time=simulator): at job 1's arrival (10 s, 10 wall
    # seconds run) it sets job 0's next check (100 - 10) // 2 = 45 s later: the demotion at 55 s
    simulator = TiresiasLasPolicy(thresholds_gpu_s=[100.0], jump_time="simulator")
    res = simulate(jobs, cluster, simulator, events(overheads=NO_OVERHEADS, check=True))
    assert res.jobs["first_start_s"].tolist() == [0.0, 55.0]
    assert res.jobs["finish_s"].tolist() == [230.0, 85.0]
    # on 60 s rounds the demotion waits for the boundary at 60 s
    rounds = simulate(
        jobs,
        cluster,
        TiresiasLasPolicy(thresholds_gpu_s=[100.0], jump_time="exact"),
        SimConfig(round_len_s=60, overheads=NO_OVERHEADS),
    ).jobs
    assert rounds["first_start_s"].iloc[1] == 60.0


def test_a_2d_las_paused_job_is_promoted_when_its_wait_reaches_the_knob():
    # job 0 runs 0..50 s (100 GPU-s, demoted), job 1 runs 50..?; with knob 1, job 0 has run 50 s
    # and is promoted back to the top queue after waiting 50 s: at 100 s, where it preempts job 1
    # (which is now also below the top: 100 GPU-s by 100 s, so job 0 ranks first, ahead in arrival)
    cluster = toy_cluster({"V100": 2}, gpus_per_host=2)
    jobs = toy_jobs([[1.0], [1.0]], work=[200.0, 300.0], arrival=[0.0, 10.0], workers=[2, 2])
    policy = TiresiasLasPolicy(thresholds_gpu_s=[100.0], promote_knob=1.0, jump_time="exact")
    res = simulate(jobs, cluster, policy, events(overheads=NO_OVERHEADS, record_schedule=True))
    starts = res.schedule[(res.schedule["type"] >= 0)].groupby("job_id")["t_s"].apply(list)
    assert 100.0 in starts.loc[0]
    assert res.stats["tiresias_promotions"] >= 1


def test_round_based_policies_keep_their_period_under_events():
    # a policy that is not event-driven decides at every event and at most round_len_s apart
    class Counts(Policy):
        def __init__(self):
            self.times = []

        def decide(self, view):
            self.times.append(view.now)
            return np.zeros(view.num_jobs, dtype=np.int64)

    policy = Counts()
    cluster = toy_cluster({"T4": 2})
    jobs = toy_jobs([[1.0], [1.0]], work=[250.0, 100.0], arrival=[0.0, 30.0])
    simulate(jobs, cluster, policy, events(round_len_s=100, overheads=NO_OVERHEADS))
    assert policy.times == [0.0, 30.0, 130.0, 230.0]  # job 1 ends at 130 s, job 0 at 250 s


def test_event_clock_results_are_bit_identical_across_runs():
    jobs, _ = toy_mixed_jobs(4, 80, work=(100, 5000), span_s=20_000, max_state_bytes=5e9)
    cluster = toy_cluster({"T4": 4, "A10": 4, "V100": 8})
    for make in (FifoPolicy, SrtfPolicy, TiresiasPolicy, TiresiasLasPolicy):
        a = simulate(jobs, cluster, make(), events(check=True))
        b = simulate(jobs, cluster, make(), events(check=True))
        steps = ["t_s", "duration_s", "running_jobs", "decided"]  # policy_s is the machine's time
        assert a.jobs.equals(b.jobs) and a.rounds[steps].equals(b.rounds[steps]), make.__name__
        assert np.isfinite(a.jobs["finish_s"]).all()


def test_a_wake_up_not_after_now_is_a_contract_error():
    class Stuck(FifoPolicy):
        def next_decision_s(self, view, assignment):
            return view.now

    with pytest.raises(PolicyContractError, match="decide again"):
        simulate(toy_jobs([[1.0]], work=[10.0]), toy_cluster({"T4": 1}), Stuck(), events())


def test_a_policy_that_never_runs_a_job_stops_the_run_with_one_line():
    class Idle(FifoPolicy):
        def decide(self, view):
            return view.empty_assignment()

    with pytest.raises(RuntimeError, match="runs no job"):
        simulate(toy_jobs([[1.0]], work=[10.0]), toy_cluster({"T4": 1}), Idle(), events())


@pytest.mark.parametrize(
    "bad, field",
    [
        ({"clock": "event"}, "clock"),
        ({"clock": "events", "round_end": "latest_finish"}, "round_end"),
        ({"clock": "events", "integer_steps": True}, "integer_steps"),
        ({"clock": "events", "min_gap_s": -1}, "min_gap_s"),
        ({"min_gap_s": 60}, "min_gap_s"),  # rounds already space their decisions
    ],
)
def test_bad_clock_settings_are_refused_naming_the_field(bad, field):
    with pytest.raises(InputError, match=f"sim: {field}: "):
        SimConfig.from_config(bad)


def test_min_gap_holds_a_decision_due_sooner_until_the_gap_ends():
    # one GPU; at every event jobs 1 and 2 start at 10 s and 15 s, the finishes before them; with
    # a 100 s gap the decisions due at 8, 9 and 10 s are held until 100 s, job 2's (105 s) until 200 s
    cluster = toy_cluster({"T4": 1})
    jobs = toy_jobs([[1.0]] * 3, work=[10.0, 5.0, 5.0], arrival=[0.0, 8.0, 9.0])
    every = simulate(jobs, cluster, FifoPolicy(), events(overheads=NO_OVERHEADS, check=True))
    assert every.jobs["first_start_s"].tolist() == [0.0, 10.0, 15.0]
    held = simulate(jobs, cluster, FifoPolicy(), events(min_gap_s=100.0, overheads=NO_OVERHEADS, check=True))
    assert held.jobs["first_start_s"].tolist() == [0.0, 100.0, 200.0]
    assert held.jobs["finish_s"].tolist() == [10.0, 105.0, 205.0]
    assert held.rounds.loc[held.rounds["decided"], "t_s"].tolist() == [0.0, 100.0, 200.0]


def test_a_restart_longer_than_the_round_is_allowed_under_events_only():
    with pytest.raises(InputError, match="restart_s"):
        SimConfig.from_config({"round_len_s": 10, "overheads": {"restart_s": 30}})
    assert (
        SimConfig.from_config({"clock": "events", "round_len_s": 10, "overheads": {"restart_s": 30}}).clock == "events"
    )


@pytest.mark.parametrize("preset", sorted(p.stem for p in (ROOT / "conf" / "policy").glob("*.yaml")))
def test_every_policy_preset_runs_under_the_event_clock_with_invariants_checked(preset):
    from fairsim.experiment.compose import compose_config
    from fairsim.experiment.single import build_policy

    jobs, tput = toy_mixed_jobs(7, 40, work=(300, 3000), span_s=5_000, max_state_bytes=2e9)
    cluster = toy_cluster({"T4": 4, "A10": 4, "V100": 8})
    policy = build_policy(compose_config([f"policy={preset}"]).policy)
    res = simulate(jobs, cluster, policy, events(check=True))
    assert np.isfinite(res.jobs["finish_s"]).all()
    assert (res.jobs["finish_s"] >= res.jobs["arrival_s"] + jobs.work / tput.max(axis=1) - 1e-6).all()
