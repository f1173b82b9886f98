"""Capacity over time (fairsim.capacity_timeline, fairsim.sim.outages): hosts that fail, go into
maintenance or are reclaimed evict the jobs on them, which lose the work since their last
checkpoint and pay a restart when they run again. Each case is worked by hand, under both
clocks, with every invariant checked after every step."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from conftest import ROOT

from fairsim.capacity_timeline import CapacityConfig, CapacityTimeline
from fairsim.errors import InputError
from fairsim.metrics import capacity_summary
from fairsim.policies.fifo import FifoPolicy
from fairsim.sim.config import SimConfig
from fairsim.sim.engine import simulate
from fairsim.testing import toy_cluster, toy_jobs, toy_mixed_jobs

CLOCKS = ["events", "rounds"]


def run(jobs, cluster, capacity: dict, clock: str, **sim):
    outages = CapacityConfig.from_config(capacity, cluster)
    config = SimConfig.from_config({"clock": clock, "check": True, **sim})
    return simulate(jobs, cluster, FifoPolicy(), config, capacity=outages)


@pytest.mark.parametrize("clock", CLOCKS)
def test_a_host_fails_under_a_four_gpu_job_mid_run(clock, tmp_path):
    """One host of 4 V100s; a 4-GPU job of 2000 units at 1 unit/s checkpoints every 300 s of
    progress. The host fails at 1000 s (a failure record, repaired at 1500 s): the job loses
    1000 mod 300 = 100 units (done 900), waits for the host, resumes at 1500 s paying the 30 s
    restart, and does the 1100 units left from 1530 s: it finishes at 2630 s."""
    log = tmp_path / "failures.csv"
    log.write_text("time_s,gpu_type,hosts,cause\n1000,V100,0,failure\n1500,V100,1,failure\n")
    cluster = toy_cluster({"V100": 4})
    jobs = toy_jobs([[1.0]], [2000.0], workers=[4])
    result = run(jobs, cluster, {"checkpoint_interval_s": 300, "trace": str(log)}, clock)
    job = result.jobs.iloc[0]
    assert job["finish_s"] == pytest.approx(2630.0)
    assert job["lost_work"] == pytest.approx(100.0)
    assert job["lost_gpu_s"] == pytest.approx(400.0)  # 100 s of 4 GPUs redone
    assert job["evictions"] == 1 and job["preemptions"] == 0  # the cluster stopped it, not the policy
    assert job["overhead_s"] == pytest.approx(30.0)
    assert result.stats["outages_failure"] == 1
    assert result.stats["gpu_s_down_failure"] == pytest.approx(500.0 * 4)
    # the run waited for the host: a round or event ends at the failure and at the repair
    assert {1000.0, 1500.0} <= set(result.rounds["t_s"])
    assert result.rounds.loc[result.rounds["t_s"] == 1000.0, "capacity_gpus"].item() == 0


@pytest.mark.parametrize("clock", CLOCKS)
def test_the_failure_model_fails_the_host_under_the_job_at_its_drawn_time(clock):
    """The same by the failure model: its first failure of the one host (at t1, read from the
    timeline), a fixed half-hour repair, and a job sized to finish before the second failure
    (t2). The job loses t1 mod 300 units, resumes at t1 + 1800 s with its 30 s restart, and does
    the rest at 1 unit/s."""
    cluster = toy_cluster({"V100": 4})
    raw = {"checkpoint_interval_s": 300, "failures": {"gpu_mtbf_h": 4, "repair": "fixed", "repair_h": 0.5}}
    timeline = CapacityTimeline(CapacityConfig.from_config(raw, cluster), cluster, seed=3)
    t1 = timeline.next_s
    timeline.pop(t1)
    timeline.pop(timeline.next_s)  # the repair
    t2 = timeline.next_s
    kept = t1 - math.fmod(t1, 300.0)  # done at the last checkpoint
    work = kept + (t2 - 100.0) - (t1 + 1830.0)  # finishes 100 s before the second failure
    assert work > t1  # the failure falls mid-run
    jobs = toy_jobs([[1.0]], [work], workers=[4])
    outages = CapacityConfig.from_config(raw, cluster)
    config = SimConfig.from_config({"clock": clock, "check": True})
    result = simulate(jobs, cluster, FifoPolicy(), config, seed=3, capacity=outages)
    job = result.jobs.iloc[0]
    assert job["lost_work"] == pytest.approx(t1 - kept)
    assert job["finish_s"] == pytest.approx(t2 - 100.0)
    assert job["evictions"] == 1 and result.stats["outages_failure"] == 1


@pytest.mark.parametrize("clock", CLOCKS)
def test_a_maintenance_window_moves_the_job_to_the_other_host(clock):
    """Two hosts of 4 V100s; host 0 (where best fit puts the job) is in maintenance from 360 s
    to 720 s. At 360 s the job (1000 units at 1/s, a checkpoint every 100 s) loses 60 units
    and restarts at once on host 1 with its 30 s restart: 700 units from 390 s, done at 1090 s."""
    cluster = toy_cluster({"V100": 8})
    jobs = toy_jobs([[1.0]], [1000.0], workers=[4])
    window = {"start_h": 0.1, "duration_h": 0.1, "gpu_type": "V100", "hosts": 1}
    result = run(jobs, cluster, {"checkpoint_interval_s": 100, "maintenance": [window]}, clock)
    job = result.jobs.iloc[0]
    assert job["finish_s"] == pytest.approx(1090.0)
    assert job["lost_work"] == pytest.approx(60.0)
    assert job["overhead_s"] == pytest.approx(30.0)
    assert result.stats["outages_maintenance"] == 1
    assert result.stats["gpu_s_down_maintenance"] == pytest.approx(360.0 * 4)
    assert result.stats["gpu_s_down_V100"] == pytest.approx(360.0 * 4)


@pytest.mark.parametrize("clock", CLOCKS)
def test_a_spot_reclaim_and_return(clock, tmp_path):
    """Two 4-GPU jobs fill two hosts (job 0 on host 0, job 1 on host 1). The spot pool drops to
    one host at 360 s (the highest-numbered goes) and is back at 720 s: job 1 loses 60 units
    (checkpoints every 100 s), waits, resumes at 720 s with its restart, and does 700 units from
    750 s: done at 1450 s. Job 0 never notices: done at 1000 s."""
    pool = tmp_path / "spot.csv"
    pool.write_text("time_s,gpu_type,hosts\n360,V100,1\n720,V100,2\n")
    cluster = toy_cluster({"V100": 8})
    jobs = toy_jobs([[1.0], [1.0]], [1000.0, 1000.0], workers=[4, 4])
    result = run(jobs, cluster, {"checkpoint_interval_s": 100, "trace": str(pool)}, clock)
    assert result.jobs["finish_s"].tolist() == pytest.approx([1000.0, 1450.0])
    assert result.jobs["evictions"].tolist() == [0, 1]
    assert result.jobs["lost_work"].tolist() == pytest.approx([0.0, 60.0])
    assert result.stats["outages_reclaim"] == 1
    assert result.stats["gpu_s_down_reclaim"] == pytest.approx(360.0 * 4)


@pytest.mark.parametrize("clock", CLOCKS)
def test_without_periodic_checkpoints_an_eviction_loses_everything_since_the_start(clock, tmp_path):
    log = tmp_path / "failures.csv"
    log.write_text("time_s,gpu_type,hosts,cause\n1000,V100,0,failure\n1500,V100,1,failure\n")
    cluster = toy_cluster({"V100": 4})
    jobs = toy_jobs([[1.0]], [2000.0], workers=[4])
    result = run(jobs, cluster, {"trace": str(log)}, clock)
    job = result.jobs.iloc[0]
    assert job["lost_work"] == pytest.approx(1000.0)
    assert job["finish_s"] == pytest.approx(1530.0 + 2000.0)


def test_the_failure_model_draws_its_means_and_each_host_its_own_history():
    cluster = toy_cluster({"V100": 8})  # two hosts
    # 40 h per GPU: a host of 4 fails every 10 h on average
    cfg = CapacityConfig.from_config({"failures": {"gpu_mtbf_h": 40, "repair": "fixed", "repair_h": 1}}, cluster)
    timeline = CapacityTimeline(cfg, cluster, seed=7)
    downs: dict[int, list[float]] = {0: [], 1: []}
    ups: dict[int, list[float]] = {0: [], 1: []}
    t = 0.0
    while len(downs[0]) < 3000:
        t = timeline.next_s
        went, came = timeline.pop(t)
        for h in went.tolist():
            downs[h].append(t)
        for h in came.tolist():
            ups[h].append(t)
    repair = np.array(ups[0][:2999]) - np.array(downs[0][:2999])
    assert repair == pytest.approx(3600.0)  # fixed repairs of an hour
    between = np.array(downs[0][1:2999]) - np.array(ups[0][:2998])  # up time: from a repair to the next failure
    assert between.mean() / 3600 == pytest.approx(10.0, rel=0.07)  # 3000 draws: a standard error of 1.8%
    # a host's history does not depend on how many hosts the cluster has
    small = CapacityTimeline(
        CapacityConfig.from_config(
            {"failures": {"gpu_mtbf_h": 40, "repair": "fixed", "repair_h": 1}}, toy_cluster({"V100": 4})
        ),
        toy_cluster({"V100": 4}),
        seed=7,
    )
    first = [small.next_s]
    small.pop(first[0])
    assert first[0] == downs[0][0]


def test_a_weibull_failure_model_keeps_the_mean():
    cluster = toy_cluster({"V100": 4})
    raw = {
        "failures": {
            "distribution": "weibull",
            "weibull_shape": 0.7,
            "gpu_mtbf_h": 20,
            "repair": "fixed",
            "repair_h": 0.5,
        }
    }
    timeline = CapacityTimeline(CapacityConfig.from_config(raw, cluster), cluster, seed=1)
    downs, ups = [], []
    while len(downs) < 4000:
        t = timeline.next_s
        went, came = timeline.pop(t)
        (downs if len(went) else ups).append(t)
    between = np.array(downs[1:]) - np.array(ups[: len(downs) - 1])
    assert between.mean() / 3600 == pytest.approx(5.0, rel=0.1)  # shape 0.7: cv 1.46, standard error 2.3%


def test_overlapping_outages_keep_a_host_down_until_both_end(tmp_path):
    """A maintenance window (0.5 h to 1.5 h) inside a reclaim (from 0.25 h to 1 h): the host is
    down from 900 s to 5400 s once; each cause counts its own span."""
    pool = tmp_path / "spot.csv"
    pool.write_text("time_s,gpu_type,hosts\n900,V100,0\n3600,V100,1\n")
    cluster = toy_cluster({"V100": 4})
    cfg = CapacityConfig.from_config(
        {"trace": str(pool), "maintenance": [{"start_h": 0.5, "duration_h": 1.0}]}, cluster
    )
    timeline = CapacityTimeline(cfg, cluster, seed=0)
    changes = []
    while math.isfinite(timeline.next_s):
        t = timeline.next_s
        went, came = timeline.pop(t)
        changes.append((t, went.tolist(), came.tolist()))
    assert changes == [(900.0, [0], []), (1800.0, [], []), (3600.0, [], []), (5400.0, [], [0])]
    seen = timeline.outage_seconds(10_000.0)
    assert seen["by_type"].tolist() == pytest.approx([4 * 4500.0])
    assert seen["by_cause"].tolist() == pytest.approx([0.0, 4 * 3600.0, 4 * 2700.0])


def test_a_maintenance_window_repeats():
    cluster = toy_cluster({"V100": 8})
    cfg = CapacityConfig.from_config(
        {"maintenance": [{"start_h": 1, "duration_h": 1, "hosts": 1, "every_h": 24}]}, cluster
    )
    timeline = CapacityTimeline(cfg, cluster, seed=0)
    starts = []
    while len(starts) < 3:
        t = timeline.next_s
        went, _ = timeline.pop(t)
        if len(went):
            starts.append((t / 3600, went.tolist()))
    assert starts == [(1.0, [0]), (25.0, [0]), (49.0, [0])]


def test_a_spot_pool_lends_and_reclaims_only_its_hosts():
    """Spot on the last host of each of V100 and T4 (two hosts each): only hosts 1 and 3 ever go,
    each for the cause reclaim, with mean spans up and down near the settings."""
    cluster = toy_cluster({"V100": 8, "T4": 8})
    cfg = CapacityConfig.from_config({"spot": {"hosts": 1, "up_h": 6, "down_h": 2}}, cluster)
    timeline = CapacityTimeline(cfg, cluster, seed=2)
    seen, down_at, spans = set(), {}, {"up": [], "down": []}
    up_at = {1: 0.0, 3: 0.0}
    while len(spans["down"]) < 4000:
        t = timeline.next_s
        went, came = timeline.pop(t)
        for h in went.tolist():
            seen.add(h)
            down_at[h] = t
            spans["up"].append(t - up_at[h])
        for h in came.tolist():
            up_at[h] = t
            spans["down"].append(t - down_at[h])
    assert seen == {1, 3}
    assert np.mean(spans["up"]) / 3600 == pytest.approx(6.0, rel=0.07)
    assert np.mean(spans["down"]) / 3600 == pytest.approx(2.0, rel=0.07)
    assert timeline.events[1:].tolist() == [0, timeline.events[2]] and timeline.events[0] == 0  # all reclaims


@pytest.mark.parametrize(
    "raw, field",
    [
        ({"failure": {}}, "failure"),
        ({"failures": {"gpu_mtbf_h": 0}}, "failures.gpu_mtbf_h"),
        ({"failures": {"gpu_mtbf_h": 10, "distribution": "gamma"}}, "failures.distribution"),
        ({"failures": {"repair_h": 3}}, "failures.gpu_mtbf_h"),
        ({"failures": {"gpu_mtbf_h": 10, "by_type": {"A100": {"gpu_mtbf_h": 3}}}}, "failures.by_type.A100"),
        ({"spot": {"up_h": 5}}, "spot.down_h"),
        ({"spot": {"up_h": 5, "down_h": 1, "hosts": 3}}, "spot.hosts"),
        ({"spot": {"up_h": 5, "down_h": 1, "gpu_types": ["K80"]}}, "spot.gpu_types"),
        ({"checkpoint_interval_s": -5}, "checkpoint_interval_s"),
        ({"maintenance": [{"start_h": 1}]}, "maintenance[0].duration_h"),
        ({"maintenance": [{"start_h": 1, "duration_h": 2, "hosts": 3}]}, "maintenance[0].hosts"),
        ({"maintenance": [{"start_h": 1, "duration_h": 2, "every_h": 1}]}, "maintenance[0].every_h"),
        ({"trace": "no/such/file.csv"}, "trace"),
    ],
)
def test_bad_settings_are_refused_naming_the_field(raw, field):
    with pytest.raises(InputError) as err:
        CapacityConfig.from_config(raw, toy_cluster({"V100": 8}))
    assert err.value.field == field and "\n" not in str(err.value)


@pytest.mark.parametrize(
    "text, line, field, words",
    [
        ("time_s,gpu_type\n0,V100\n", 1, "header", "misses the column(s) hosts"),
        ("time_s,gpu_type,hosts\n0,V100,3\n", 2, "hosts", "whole number of hosts in 0..2"),
        ("time_s,gpu_type,hosts\n0,H100,1\n", 2, "gpu_type", "unknown GPU type 'H100'"),
        ("time_s,gpu_type,hosts\n10,V100,1\n5,V100,2\n", 3, "time_s", "rows must be in time order"),
        ("time_s,gpu_type,hosts,cause\n0,V100,1,storm\n", 2, "cause", "must be one of failure"),
        # a bad row after a blank line is named by its own line
        ("time_s,gpu_type,hosts\n0,V100,1\n\n\n1,V100,x\n", 5, "hosts", "got 'x'"),
        ("time_s,gpu_type,hosts\n0,V100,1,2\n", 2, "fields", "has 4 comma-separated fields, expected 3"),
        ("time_s,gpu_type,hosts,hosts\n0,V100,1,2\n", 1, "header", "names the column(s) 'hosts' more than once"),
        ("time_s,gpu_type,hosts\n1e400,V100,1\n", 2, "time_s", "must be a time in seconds in [0, 1e+12]"),
        ("time_s,gpu_type,hosts\n1_000,V100,1\n", 2, "time_s", "got '1_000'"),
        ("time_s,gpu_type,hosts\n0,V100,1\xe9\n", 2, "file", "byte 0xe9 at column 9 is not UTF-8"),
    ],
)
def test_a_bad_capacity_trace_is_refused_naming_the_file_line_and_column(tmp_path, text, line, field, words):
    path = tmp_path / "pool.csv"
    path.write_bytes(text.encode("utf-8", "surrogateescape") if "\xe9" not in text else text.encode("latin-1"))
    with pytest.raises(InputError) as err:
        CapacityConfig.from_config({"trace": str(path)}, toy_cluster({"V100": 8}))
    assert err.value.source == f"capacity trace: {path}:{line}" and err.value.field == field, str(err.value)
    assert words in err.value.problem and "\n" not in str(err.value)


def test_a_capacity_trace_with_a_bom_crlf_and_blank_lines_reads_as_plain(tmp_path):
    plain = tmp_path / "plain.csv"
    plain.write_text("time_s,gpu_type,hosts\n0,V100,1\n600,V100,2\n")
    other = tmp_path / "other.csv"
    other.write_bytes(b"\xef\xbb\xbftime_s,gpu_type,hosts\r\n\r\n0,V100,1\r\n600,V100,2\r\n")
    cluster = toy_cluster({"V100": 8})
    assert CapacityConfig.from_config({"trace": str(other)}, cluster).trace == (
        CapacityConfig.from_config({"trace": str(plain)}, cluster).trace
    )


@pytest.mark.parametrize(
    "data, words",
    [
        ("time_s,gpu_type,hosts\n0,V100,1\n".encode("utf-16"), "is UTF-16 text; save it as UTF-8"),
        (b"time_s,gpu_type,hosts\n0,V100," + b"9" * 200_000 + b"\n", "(200000 characters)"),
        (b'time_s,gpu_type,hosts\n0,"' + b"V" * 200_000 + b'",1\n', "(200000 characters)"),
    ],
)
def test_utf16_and_huge_cells_are_one_short_line(tmp_path, data, words):
    path = tmp_path / "pool.csv"
    path.write_bytes(data)
    with pytest.raises(InputError) as err:
        CapacityConfig.from_config({"trace": str(path)}, toy_cluster({"V100": 8}))
    assert words in str(err.value) and len(str(err.value)) < 10_000 and str(path) in err.value.source


@pytest.mark.parametrize(
    "raw, field, words",
    [
        ({"failures": {"gpu_mtbf_h": 0.01}}, "failures.gpu_mtbf_h", "a host must stay up 1 minute on average"),
        (
            {"failures": {"gpu_mtbf_h": 100, "by_type": {"V100": {"gpu_mtbf_h": 0.05}}}},
            "failures.by_type.V100.gpu_mtbf_h",
            "a host must stay up",
        ),
        ({"failures": {"gpu_mtbf_h": 1e308}}, "failures.gpu_mtbf_h", "a number of hours > 0 and <= 1e+09"),
        ({"failures": {"gpu_mtbf_h": 100, "repair_h": 1e300}}, "failures.repair_h", "<= 1e+09"),
        ({"spot": {"up_h": 0.001, "down_h": 1}}, "spot.up_h", "must be at least"),
    ],
)
def test_failure_rates_that_would_keep_a_run_from_ending_are_refused(raw, field, words):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(InputError) as err:
            CapacityConfig.from_config(raw, toy_cluster({"V100": 8}))
    assert err.value.field == field and words in err.value.problem


def test_a_run_is_stopped_after_the_most_outages_a_run_may_take(monkeypatch):
    import fairsim.capacity_timeline as ct

    monkeypatch.setattr(ct, "MAX_OUTAGES", 5)
    cluster = toy_cluster({"V100": 8})
    jobs = toy_jobs([[1.0]], [100_000.0])
    with pytest.raises(InputError) as err:
        run(jobs, cluster, {"failures": {"gpu_mtbf_h": 2, "repair_h": 0.1}}, "events")
    assert err.value.field == "failures.gpu_mtbf_h" and "more than 5 times" in err.value.problem


def test_a_checkpoint_interval_for_a_model_the_catalog_lacks_is_refused():
    cfg = CapacityConfig.from_config({"checkpoint_interval_s_by_model": {"ResNet-50": 600}}, toy_cluster({"V100": 8}))
    with pytest.raises(InputError) as err:
        cfg.check_models(["ResNet50", "VGG16"])
    assert err.value.field == "checkpoint_interval_s_by_model.ResNet-50" and "known: ResNet50, VGG16" in str(err.value)
    CapacityConfig.from_config(
        {"checkpoint_interval_s_by_model": {"VGG16": 600}}, toy_cluster({"V100": 8})
    ).check_models(["ResNet50", "VGG16"])


@pytest.mark.parametrize(
    "sim, field", [({"placement": False}, "placement"), ({"round_origin": "zero"}, "round_origin")]
)
def test_engine_settings_without_hosts_or_with_a_fixed_grid_are_refused(sim, field):
    cluster = toy_cluster({"V100": 8})
    jobs = toy_jobs([[1.0]], [100.0])
    with pytest.raises(InputError) as err:
        run(jobs, cluster, {"failures": {"gpu_mtbf_h": 10}}, "rounds", **sim)
    assert err.value.field == field


def test_no_capacity_source_leaves_the_run_as_it_was():
    cluster = toy_cluster({"V100": 8})
    jobs = toy_jobs([[1.0], [2.0]], [1000.0, 500.0], workers=[4, 2])
    config = SimConfig.from_config({"check": True})
    plain = simulate(jobs, cluster, FifoPolicy(), config)
    none = simulate(jobs, cluster, FifoPolicy(), config, capacity=CapacityConfig.from_config({"name": "none"}, cluster))
    assert plain.jobs.equals(none.jobs)
    assert plain.rounds.drop(columns="policy_s").equals(none.rounds.drop(columns="policy_s"))  # policy_s: wall time
    assert "evictions" not in none.jobs and "capacity_gpus" not in none.rounds


def test_availability_counts_only_hosts_down_not_an_idle_cluster_waiting():
    """Two jobs a day apart: the idle cluster between them has no rounds, yet every host is up,
    so availability is 1 (a maintenance window after the run changes nothing)."""
    cluster = toy_cluster({"V100": 8})
    jobs = toy_jobs([[1.0], [1.0]], [600.0, 600.0], arrival=[0.0, 86_400.0], workers=[4, 4])
    result = run(jobs, cluster, {"maintenance": [{"start_h": 1000, "duration_h": 1}]}, "rounds")
    assert result.rounds["duration_s"].sum() < 86_400  # the gap has no rows
    summary = capacity_summary(result.jobs, result.rounds, cluster, result.stats, None)
    assert summary["availability"] == 1.0 and summary["availability_V100"] == 1.0
    assert summary["gpu_utilization_of_up"] == pytest.approx(2 * 600 * 4 / (8 * (86_400 + 600)))


@pytest.mark.slow
@pytest.mark.parametrize("preset", sorted(p.stem for p in (ROOT / "conf" / "policy").glob("*.yaml")))
def test_every_policy_preset_runs_through_outages_with_invariants_checked(preset):
    """Hosts that fail every half hour on average and come back in six minutes: every policy
    keeps the contract (no job on a down host, capacity respected) and every job finishes."""
    from fairsim.experiment.compose import compose_config
    from fairsim.experiment.single import build_policy

    jobs, _ = toy_mixed_jobs(7, 40, work=(300, 3000), span_s=5_000, max_state_bytes=2e9)
    cluster = toy_cluster({"T4": 4, "A10": 4, "V100": 8})
    outages = CapacityConfig.from_config(
        {"checkpoint_interval_s": 600, "failures": {"gpu_mtbf_h": 2, "repair_h": 0.1}}, cluster
    )
    small = ["policy.population=16", "policy.generations=8"] if preset == "pollux" else []  # its search, cut down
    policy = build_policy(compose_config([f"policy={preset}", *small]).policy)
    res = simulate(jobs, cluster, policy, SimConfig.from_config({"clock": "events", "check": True}), capacity=outages)
    assert np.isfinite(res.jobs["finish_s"]).all()
    assert res.stats["outages_failure"] > 10 and res.jobs["evictions"].sum() > 0
