"""Gavel-compatible replay: the mechanism and sim=gavel_compat together on a hand-traced instance."""

import sys

import numpy as np
import pandas as pd
import pytest
from conftest import ROOT
from omegaconf import OmegaConf

from fairsim.policies.gavel_mmf import GavelMaxMinFairness
from fairsim.sim.config import SimConfig
from fairsim.sim.engine import simulate
from fairsim.testing import toy_cluster, toy_jobs

CONF = ROOT / "conf"


def gavel_compat() -> SimConfig:
    return SimConfig.from_config(OmegaConf.to_container(OmegaConf.load(CONF / "sim" / "gavel_compat.yaml")))


def test_preset_is_gavels_simulator():
    cfg = gavel_compat()
    assert (cfg.round_len_s, cfg.round_end, cfg.integer_steps, cfg.placement) == (360, "latest_finish", True, False)
    assert not cfg.overheads.any()


def test_hand_traced_schedule_on_one_gpu():
    # one GPU, 1 step/s. A: 3600 steps at t=0; B: 360 steps at t=10; C: 360 steps at t=400.
    #   t=0     X = {A: 1}; A runs.
    #   t=360   B admitted; the reset at t=0 left last_reset at 0, which Gavel reads as "never":
    #           recompute, X = 1/2 each; counters 180/180, deficits 0; tie -> arrival order: A.
    #   t=720   prio A = .5/(540/720) = .67, B = .5/(180/720) = 2: B runs and ends at 1080.
    #           C admitted but 720 - 360 < 1920: no X for C yet (priority 0, never first).
    #   t=1080..2160  A alone runs (C waits for X).
    #   t=2520  first boundary >= 360 + 1920: recompute, X = 1/2 each. Deficit A = .5*2160 - 1800
    #           = -720 < C's 0, priorities tie: C runs and ends at 2880.
    #   A has 3600 - 6*360 = 1440 steps left: 4 rounds, ends at 4320.
    jobs = toy_jobs([[1.0]] * 3, [3600, 360, 360], arrival=[0.0, 10.0, 400.0])
    result = simulate(jobs, toy_cluster({"V100": 1}), GavelMaxMinFairness(), gavel_compat())
    assert result.jobs["finish_s"].tolist() == pytest.approx([4320.0, 1080.0, 2880.0])
    assert result.jobs["jct_s"].tolist() == pytest.approx([4320.0, 1070.0, 2480.0])
    assert result.stats["allocation_recomputes"] == 3  # t = 0, 360, 2520


def test_round_ends_at_the_latest_finish_and_runs_whole_steps():
    # two GPUs of one type; 1-GPU jobs at 1.5 and 1.0 steps/s with 600 and 100 steps:
    # round 1 runs floor(1.5*360) = 540 and 100 steps; it lasts 540/1.5 = 360 s (job 1 finished
    # at 100 s, its GPU idles); round 2 runs job 0's last 60 steps: 40 s
    jobs = toy_jobs([[1.5], [1.0]], [600, 100])
    result = simulate(jobs, toy_cluster({"V100": 2}), GavelMaxMinFairness(), gavel_compat())
    assert result.jobs["finish_s"].tolist() == pytest.approx([400.0, 100.0])
    assert result.rounds["duration_s"].tolist() == pytest.approx([360.0, 40.0])


def test_bench_gavel_trace_point_runs_and_reports_the_documented_replay(capsys):
    from fairsim.bench.gavel import main

    assert main(["--points", "trace"]) == 0
    row = capsys.readouterr().out.splitlines()[1].split()
    # point, wall, cpu, sim, rounds, LPs, LP s, avg JCT h, makespan h, Gavel s, speed-up
    assert row[0] == "trace" and int(row[4]) == 457 and int(row[5]) == 65
    assert (row[7], row[8], row[9]) == ("17.99", "45.69", "2.3")  # docs/gavel_compat.md's table


def test_bench_gavel_allox_point_replays_gavels_allox(capsys):
    # Gavel's own simulator (AlloX_Perf, the 96-job trace on one GPU per job, 4:4:4, seed 0)
    # gives 12.42 h average JCT and 48.79 h makespan, every job within 1 ms (docs/gavel_compat.md, "AlloX")
    from fairsim.bench.gavel import main

    assert main(["--points", "allox_trace"]) == 0
    row = capsys.readouterr().out.splitlines()[1].split()
    assert row[0] == "allox_trace" and (row[7], row[8]) == ("12.42", "48.79")


def test_single_gpu_trace_keeps_every_job_but_its_gang(tmp_path):
    from fairsim.bench.gavel import single_gpu_trace
    from fairsim.workload.gavel_trace import read_gavel_trace, shipped_trace

    ours, theirs = read_gavel_trace(single_gpu_trace(tmp_path)), read_gavel_trace(shipped_trace("max_min_fairness"))
    assert len(ours) == 96 and set(ours["workers"]) == {1} and set(theirs["workers"]) == {1, 2, 4}
    same = [c for c in ours.columns if c != "workers"]
    pd.testing.assert_frame_equal(ours[same], theirs[same])


def test_bench_gavel_compares_job_by_job():
    # our JCTs 10, 20, 40 against Gavel's 10, 20, 30 (an extra job 3 of ours is not Gavel's):
    # +16.7% on average, 2 of 3 within 10% (and within 1 s), p99 = the largest, 40 against 30
    from fairsim.bench.gavel import compare

    jct = pd.Series([10.0, 20.0, 40.0, 99.0], index=[0, 1, 2, 3])
    a = compare({"jct_s": jct, "finish_s": jct + 5}, {"jct_s": {0: 10.0, 1: 20.0, 2: 30.0}, "makespan_s": 30.0})
    assert a["avg_dev_pct"] == pytest.approx(100 * (70 / 60 - 1)) and a["within_1s"] == 2 and a["n"] == 3
    assert a["within10_pct"] == pytest.approx(200 / 3) and a["p99_dev_pct"] == pytest.approx(100 / 3)
    # deviations from the means (-10, 0, 10) and (-40/3, -10/3, 50/3): 300 / sqrt(200 * 1400/3)
    assert a["r"] == pytest.approx(300 / np.sqrt(200 * 1400 / 3))
    assert (a["theirs_makespan"], a["ours_makespan"]) == (30.0, 45.0)  # Gavel's last end; our last finish
    assert np.isnan(a["theirs_restarts"])  # Gavel prints no per-job preemptions
    with pytest.raises(SystemExit, match="did not finish jobs Gavel finished: \\[2\\]"):
        compare({"jct_s": jct.drop(2), "finish_s": jct}, {"jct_s": {0: 10.0, 2: 30.0}, "makespan_s": 30.0})


def test_stopping_at_the_window_end_keeps_the_window_results():
    # sim=gavel_compat ends when jobs 40-59 are done; every window statistic equals the one of
    # the same run carried on to the last job (stopping early only drops later rounds), and a
    # trace that ran out before the window finished is flagged
    from fairsim.experiment.compose import compose_config
    from fairsim.experiment.single import run_config

    base = [
        "policy=gavel_mmf",
        "workload=gavel_generated",
        "workload.num_jobs=80",
        "workload.window=[40,60]",
        "workload.rate_per_hour=40",
        "cluster=gavel",
        "cluster.counts.v100=2",
        "cluster.counts.p100=2",
        "cluster.counts.k80=2",
        "sim=gavel_compat",
        "seed=3",
    ]
    window = run_config(compose_config(base))
    everything = run_config(compose_config(base + ["sim.until=all"]))
    w, e = window.summary, everything.summary
    assert w["finished_jobs"] == e["finished_jobs"] == 20
    assert (w["avg_jct_s"], w["p95_jct_s"], w["rho_max"]) == (e["avg_jct_s"], e["p95_jct_s"], e["rho_max"])
    assert w["rounds"] < e["rounds"]
    assert window.jobs["finish_s"].isna().any() and not everything.jobs["finish_s"].isna().any()
    assert w["unarrived_jobs_at_end"] == 0 and "raise workload.num_jobs" in w["warning"]
    assert "warning" not in e  # a run to the last job has no window end to outlive


FAKE_GAVEL_DRIVER = """
import sys
args = sys.argv[1:]
open("args.txt", "w").write(" ".join(args))
for job, end in ((0, 100.0), (1, 500.0), (2, 300.0)):
    sys.stderr.write("[Job succeeded]\\tJob ID: %d\\tStart timestamp: 0.00\\tEnd timestamp: %.2f\\tDuration: 1.00\\n" % (job, end))
print("Job completion times:")
print("Job 0: 100.000")
print("Job 2: 290.000")
"""


def test_run_gavel_reads_the_windows_jobs_at_a_paper_point(tmp_path):
    # at a paper point Gavel's trace driver runs the dumped jobs on 36:36:36 with the window
    # 4000-4999 and prints the window's JCTs; the makespan is the last end among those jobs
    from fairsim.bench.gavel import GAVEL_JOBS, run_gavel

    drivers = tmp_path / "gavel" / "scheduler" / "scripts" / "drivers"
    drivers.mkdir(parents=True)
    (drivers / "simulate_scheduler_with_trace.py").write_text(FAKE_GAVEL_DRIVER)
    args = tmp_path / "gavel" / "scheduler" / "args.txt"  # the fake writes its arguments in its folder
    theirs = run_gavel(tmp_path / "gavel", sys.executable, "paper", tmp_path)
    assert theirs["jct_s"] == {0: 100.0, 2: 290.0} and theirs["makespan_s"] == 300.0
    assert args.read_text() == (
        f"-t {tmp_path / GAVEL_JOBS} -p max_min_fairness_perf -c 36:36:36 -s 4000 -e 5000 --seed 0"
    )
    run_gavel(tmp_path / "gavel", sys.executable, "allox_trace", tmp_path)
    assert args.read_text() == f"-t {tmp_path / 'max_min_fairness_1gpu.trace'} -p allox -c 4:4:4 --seed 0"
