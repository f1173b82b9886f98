"""PAL-compatible replay: the reader of PAL's artifact traces (hal-uw/blox-pal), its iteration
catalog, the presets, and the bench's arithmetic. The traces themselves are not shipped (they
come from Sia's artifact, which has no licence): every file here is written by the test."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from fairsim.bench import pal as bench
from fairsim.errors import InputError
from fairsim.experiment.compose import compose_config
from fairsim.experiment.single import run_config
from fairsim.workload.pal_trace import ARTIFACT_ITERATION_S, read_pal_trace

HEAD = "job_id,num_gpus,submit_time,duration,model\n"
COMPAT = ["workload=pal_trace", "cluster=pal", "sim=pal_compat", "seed=0"]


def write(tmp_path: Path, text: str, name: str = "t.csv") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def run(path: Path, extra: list[str]):
    return run_config(compose_config([*COMPAT, f"workload.path={path}", *extra]))


# ---- the reader ---------------------------------------------------------------------------------


def test_good_rows_give_exact_work_gang_and_arrival(tmp_path):
    path = write(tmp_path, HEAD + "2,12,178,13504.0,BERT\n0,1,98,1481.0,vgg19\n\n1,6,98,4037.5,DCGAN\n")
    df = read_pal_trace(path)
    assert df["job_id"].tolist() == [0, 1, 2]  # sorted by (arrival, job_id)
    assert df["arrival_s"].tolist() == [98.0, 98.0, 178.0]
    assert df["workers"].tolist() == [1, 6, 12]
    assert df["work"].tolist() == [1481.0, 4037.5, 13504.0]  # iterations, as their simulator reads duration
    assert df["model"].tolist() == ["vgg19", "DCGAN", "BERT"]


def test_columns_in_any_order_extra_ones_ignored(tmp_path):
    path = write(tmp_path, "model,extra,duration,submit_time,num_gpus,job_id\nPointNet,x,70,5,12,4\n")
    df = read_pal_trace(path)
    assert (df["job_id"].tolist(), df["workers"].tolist(), df["work"].tolist()) == ([4], [12], [70.0])


BAD = {  # rows after one good row: (rows, field, rule)
    "id": ("x,1,0,10,vgg19\n", "job_id", "must be a number"),
    "negative id": ("-1,1,0,10,vgg19\n", "job_id", "integer >= 0"),
    "repeated id": ("9,1,0,10,vgg19\n", "job_id", "repeats the job of line 2"),
    "gang": ("1,0,0,10,vgg19\n", "num_gpus", "integer >= 1"),
    "fractional gang": ("1,1.5,0,10,vgg19\n", "num_gpus", "integer >= 1"),
    "submit": ("1,1,-5,10,vgg19\n", "submit_time", "must be >= 0"),
    "duration": ("1,1,0,0,vgg19\n", "duration", "must be > 0 iterations"),
    "nan duration": ("1,1,0,nan,vgg19\n", "duration", "must be finite"),
    "model": ("1,1,0,10, \n", "model", "is empty"),
    "fields": ("1,1,0,10\n", "fields", "has 4 comma-separated fields"),
}


@pytest.mark.parametrize("name", sorted(BAD))
def test_bad_row_is_refused_in_one_line_naming_file_line_and_field(tmp_path, name):
    rows, field, rule = BAD[name]
    path = write(tmp_path, HEAD + "9,1,0,10,vgg19\n" + rows)
    with pytest.raises(InputError) as err:
        read_pal_trace(path)
    msg = str(err.value)
    assert "\n" not in msg
    assert msg.startswith(f"{path}:3: {field}: "), msg
    assert rule in msg


@pytest.mark.parametrize(
    "text, field, rule",
    [
        ("job_id,num_gpus,submit_time,duration\n0,1,0,5\n", "columns", "missing model"),
        ("", "header", "empty"),
        (HEAD, "rows", "no jobs"),
        ("job_id,job_id,num_gpus,submit_time,duration,model\n", "header", "more than once"),
    ],
)
def test_bad_file_is_refused_naming_the_file(tmp_path, text, field, rule):
    path = write(tmp_path, text)
    with pytest.raises(InputError) as err:
        read_pal_trace(path)
    assert str(err.value).startswith(f"{path}: {field}: ") and rule in str(err.value)


def test_a_missing_file_and_an_unknown_model_are_refused_naming_the_field(tmp_path):
    with pytest.raises(InputError, match="path: no such file"):
        run(tmp_path / "absent.csv", [])
    with pytest.raises(InputError, match=r"model: no iteration time for 'alexnet'.*workload.iteration_s"):
        run(write(tmp_path, HEAD + "0,1,0,10,alexnet\n"), [])
    with pytest.raises(InputError, match=r"iteration_s.vgg19: must be a number > 0"):
        run(write(tmp_path, HEAD + "0,1,0,10,vgg19\n"), ["workload.iteration_s={vgg19: 0}"])
    with pytest.raises(InputError, match="locality_penalty: must be a number >= 1"):
        run(write(tmp_path, HEAD + "0,1,0,10,vgg19\n"), ["workload.locality_penalty=0.5"])


# ---- the catalog and the presets -----------------------------------------------------------------


def test_presets_are_their_cluster_and_round():
    cfg = compose_config([*COMPAT, "workload.path=x.csv"])
    assert dict(cfg.cluster.counts) == {"V100": 64} and cfg.cluster.gpus_per_host == 4  # 16 nodes of 4
    assert cfg.sim.clock == "rounds" and cfg.sim.round_len_s == 360 and cfg.sim.until == "window"
    assert not any(cfg.sim.overheads[k] for k in ("migration", "preemption", "profiling"))
    assert cfg.sim.overheads.restart_s == 0


@pytest.mark.parametrize(
    "gpus, hosts_spanned_factor",
    [(1, 1.0), (4, 1.0), (8, 1.7), (16, 1.7)],  # wider than a 4-GPU node: always spread
)
def test_a_job_alone_runs_iterations_times_iteration_time_times_locality(tmp_path, gpus, hosts_spanned_factor):
    # submitted on a round boundary, so rounds do not delay its start; the run time is what
    # their simulator computes: duration (iterations) x the model's iteration time x penalty
    out = run(write(tmp_path, HEAD + f"0,{gpus},720,1000,vgg19\n"), ["policy=pal", "policy.head_of_line=true"])
    job = out.jobs.iloc[0]
    expected = 1000 * ARTIFACT_ITERATION_S["vgg19"] * hosts_spanned_factor
    assert job["first_start_s"] == 720.0
    assert job["jct_s"] == pytest.approx(expected, rel=1e-12)


def test_own_iteration_times_and_penalty_change_the_run_time(tmp_path):
    path = write(tmp_path, HEAD + "0,8,0,100,mine\n")
    out = run(path, ["workload.iteration_s={mine: 2.0}", "workload.locality_penalty=3"])
    assert out.jobs.iloc[0]["jct_s"] == pytest.approx(100 * 2.0 * 3, rel=1e-12)


def test_fifo_head_of_line_on_one_pool_runs_jobs_in_order(tmp_path):
    # 64 GPUs: a 48-GPU job runs, a 32-GPU one waits for it, and the 1-GPU job behind it waits too
    # (PAL's cut at the cluster's size; FIFO without backfill does the same)
    text = HEAD + "0,48,0,1000,BERT\n1,32,10,1000,BERT\n2,1,20,10,vgg19\n"
    for policy in (["policy=pal", "policy.head_of_line=true"], ["policy=fifo", "policy.backfill=false"]):
        jobs = run(write(tmp_path, text), policy).jobs.set_index("job_id")
        assert jobs.loc[1, "first_start_s"] >= jobs.loc[0, "finish_s"]
        assert jobs.loc[2, "first_start_s"] >= jobs.loc[1, "first_start_s"]


# ---- the bench's arithmetic -------------------------------------------------------------------------


def test_round_end_reading_and_comparison():
    assert bench.at_round_end(np.array([0.5, 360.0, 360.5, 719.0])).tolist() == [360.0, 360.0, 720.0, 720.0]
    theirs = {0: (98.0, 720.0), 1: (115.0, 1080.0)}  # Blox: finishes at round ends
    ours = {0: (98.0, 500.0), 1: (115.0, 1000.0), 2: (200.0, 300.0)}  # an untracked job is ignored
    c = bench.compare(theirs, ours)
    assert c["theirs_avg"] == pytest.approx((622 + 965) / 2) and c["ours_avg"] == pytest.approx((402 + 885) / 2)
    assert c["dev_end"] == pytest.approx(0.0)  # 500 -> 720, 1000 -> 1080: Blox's reading
    assert c["theirs_makespan"] == 1080 - 98 and c["ours_makespan"] == 1000 - 98
    # job by job: 402 against 622 is 35% off, 885 against 965 within 10%; at the round's end both agree
    assert c["within10_pct"] == 50.0 and c["within10_end_pct"] == 100.0
    assert c["p99_dev_pct"] == pytest.approx(100 * (885 - 965) / 965)  # p99 of two jobs: the larger
    assert c["r"] == pytest.approx(1.0) and np.isnan(c["theirs_restarts"])  # Blox records no restarts
    with pytest.raises(SystemExit, match="did not finish tracked jobs"):
        bench.compare(theirs, {0: (98.0, 500.0)})


def test_bench_refuses_a_folder_that_is_not_the_artifact(tmp_path):
    with pytest.raises(SystemExit, match="no simulator_sia.py"):
        bench.main(["--pal", str(tmp_path)])
