"""Tiresias-compatible replay: the trace reader, the duration catalog, the presets, and the
shipped traces replayed against the per-job results of Tiresias' own simulator
(tests/data/tiresias_jobs.csv, see tests/data/README.md)."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from conftest import ROOT
from omegaconf import OmegaConf

from fairsim.bench import tiresias as bench
from fairsim.errors import InputError
from fairsim.experiment.compose import compose_config
from fairsim.experiment.single import run_config
from fairsim.sim.config import SimConfig
from fairsim.workload.tiresias_gen import generate
from fairsim.workload.tiresias_trace import (
    read_tiresias_trace,
    shipped_trace,
    shipped_trace_names,
)

HEAD = "job_id,num_gpu,submit_time,iterations,model_name,duration,interval\n"
THEIRS = ROOT / "tests" / "data" / "tiresias_jobs.csv"
SCHEMES = {
    "fifo": ["policy=fifo", "policy.backfill=false"],
    "fjf": ["policy=fifo"],
    "shortest": ["policy=srtf"],
    "shortest-gpu": ["policy=tiresias"],
    "dlas-gpu": ["policy=tiresias_las"],
}
# clock settings over sim=tiresias_compat: its event clock, and 1 s rounds (every time in the
# shipped traces is a whole second, so 1 s round boundaries fall on every event)
CLOCKS = {"events": [], "rounds_1s": ["sim.clock=rounds", "sim.round_len_s=1"]}


def write(tmp_path: Path, text: str, name: str = "t.csv") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


# ---- the reader ---------------------------------------------------------------------------------


def test_good_rows_give_exact_work_gang_and_arrival(tmp_path):
    path = write(tmp_path, HEAD + "7,4,30,10,vgg16,164,5\n3,1,0,99,resnet50,121.5,30\n\n5,8,30,1,alexnet,1800,0\n")
    df = read_tiresias_trace(path)
    assert df["job_id"].tolist() == [3, 5, 7]  # sorted by (arrival, job_id)
    assert df["arrival_s"].tolist() == [0.0, 30.0, 30.0]
    assert df["workers"].tolist() == [1, 8, 4]
    assert df["work"].tolist() == [121.5, 1800.0, 164.0]  # seconds, kept exact (not floored)
    assert df["model"].tolist() == ["resnet50", "alexnet", "vgg16"]


def test_columns_in_any_order_and_only_the_four_it_reads_are_required(tmp_path):
    df = read_tiresias_trace(write(tmp_path, "duration,submit_time,num_gpu,job_id,note\n60,5,2,0,x\n"))
    assert (df["work"].item(), df["arrival_s"].item(), df["workers"].item(), df["model"].item()) == (
        60.0,
        5.0,
        2,
        "job",
    )


BAD = {  # name: (rows after the header, field named, words of the rule)
    "submit_negative": ("0,1,-5,1,vgg16,10,0\n", "submit_time", ">= 0"),
    "submit_text": ("0,1,soon,1,vgg16,10,0\n", "submit_time", "must be a number"),
    "duration_zero": ("0,1,0,1,vgg16,0,0\n", "duration", "> 0"),
    "duration_negative": ("0,1,0,1,vgg16,-3,0\n", "duration", "> 0"),
    "duration_nan": ("0,1,0,1,vgg16,nan,0\n", "duration", "finite"),
    "duration_blank": ("0,1,0,1,vgg16,,0\n", "duration", "must be a number"),
    "num_gpu_zero": ("0,0,0,1,vgg16,10,0\n", "num_gpu", "integer >= 1"),
    "num_gpu_fraction": ("0,1.5,0,1,vgg16,10,0\n", "num_gpu", "integer >= 1"),
    "num_gpu_text": ("0,two,0,1,vgg16,10,0\n", "num_gpu", "must be a number"),
    "job_id_negative": ("-1,1,0,1,vgg16,10,0\n", "job_id", "integer >= 0"),
    "job_id_duplicate": ("4,1,0,1,vgg16,10,0\n4,2,9,1,vgg16,10,0\n", "job_id", "repeats the job of line 3"),
    "fields_short": ("0,1,0,1,vgg16,10\n", "fields", "the header has 7"),
    "model_empty": ("0,1,0,1,,10,0\n", "model_name", "is empty"),
}


@pytest.mark.parametrize("name", sorted(BAD))
def test_bad_row_is_refused_in_one_line_naming_file_line_and_field(tmp_path, name):
    rows, field, rule = BAD[name]
    path = write(tmp_path, HEAD + "9,1,0,1,vgg16,10,0\n" + rows)
    with pytest.raises(InputError) as err:
        read_tiresias_trace(path)
    bad_line = 3 + rows.count("\n") - 1  # the header is line 1, the good row line 2
    msg = str(err.value)
    assert "\n" not in msg
    assert msg.startswith(f"{path}:{bad_line}: {field}: "), msg
    assert rule in msg


@pytest.mark.parametrize(
    "text, field, rule",
    [
        ("job_id,num_gpu,submit_time\n0,1,0\n", "columns", "missing duration"),
        ("", "header", "empty"),
        (HEAD, "rows", "no jobs"),
    ],
)
def test_bad_file_is_refused_naming_the_file(tmp_path, text, field, rule):
    path = write(tmp_path, text)
    with pytest.raises(InputError) as err:
        read_tiresias_trace(path)
    assert str(err.value).startswith(f"{path}: {field}: ") and rule in str(err.value)


def test_bad_row_through_run_py_exits_2_with_one_line(tmp_path, run_py):
    path = write(tmp_path, HEAD + "0,1,0,1,vgg16,0,0\n")
    proc = run_py(
        "workload=tiresias_trace",
        f"workload.path={path}",
        "cluster=tiresias",
        f"results_dir={tmp_path / 'r'}",
        "track=false",
        timeout=120,
        env={"FAIRSIM_DEBUG": None},
    )
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert proc.returncode == 2 and len(lines) == 1, proc.stderr
    assert f"{path}:2: duration: must be > 0" in lines[0]


def test_shipped_traces_by_name_and_the_generator_is_deterministic():
    assert shipped_trace_names() == ["480_job", "60_job", "las_120"]
    assert len(read_tiresias_trace(shipped_trace("60_job"))) == 60
    assert shipped_trace("../60_job") is None
    # the shipped generated traces are what the documented commands make
    for name, (jobs, gpus, seed) in {"las_120": (120, 16, 1), "480_job": (480, 32, 2)}.items():
        shipped = pd.read_csv(shipped_trace(name))
        pd.testing.assert_frame_equal(shipped, generate(jobs, gpus, 0.9, seed), check_dtype=False)


# ---- presets and the duration catalog -----------------------------------------------------------


def run(trace: Path | str, gpus: int, extra: list[str]):
    return run_config(
        compose_config(
            [
                "workload=tiresias_trace",
                f"workload.path={trace}",
                "cluster=tiresias",
                f"cluster.counts.V100={gpus}",
                "sim=tiresias_compat",
                "seed=0",
                *extra,
            ]
        )
    )


def test_sim_preset_is_the_event_clock_without_overheads_or_placement():
    cfg = SimConfig.from_config(OmegaConf.to_container(OmegaConf.load(ROOT / "conf" / "sim" / "tiresias_compat.yaml")))
    assert (cfg.clock, cfg.placement, cfg.round_end, cfg.integer_steps) == ("events", False, "fixed", False)
    assert not cfg.overheads.any() and cfg.overheads.restart_s == 0


def test_cluster_preset_is_one_v100_type_in_hosts_of_four():
    cfg = compose_config(["cluster=tiresias", "cluster.counts.V100=16"])
    assert dict(cfg.cluster.counts) == {"V100": 16} and cfg.cluster.gpus_per_host == 4
    assert dict(compose_config(["cluster=tiresias"]).cluster.counts) == {"V100": 64}  # Tiresias' cluster_spec.csv


ALONE_CLOCKS = {**CLOCKS, "rounds_300s": ["sim.clock=rounds", "sim.round_len_s=300"]}


@pytest.mark.parametrize("clock", sorted(ALONE_CLOCKS))
@pytest.mark.parametrize("policy", sorted(SCHEMES))
def test_a_job_alone_finishes_at_exactly_its_duration(tmp_path, clock, policy):
    extra = ALONE_CLOCKS[clock]
    # submitted on a round boundary of both round lengths, so rounds do not delay its start
    out = run(write(tmp_path, HEAD + "0,4,600,1,vgg16,1000.5,0\n"), 8, SCHEMES[policy] + extra)
    job = out.jobs.iloc[0]
    assert (job["first_start_s"], job["finish_s"], job["jct_s"]) == (600.0, 1600.5, 1000.5)
    assert job["overhead_s"] == 0 and job["attained_gpu_s"] == 4 * 1000.5


# ---- against Tiresias' simulator ----------------------------------------------------------------


def their_jcts(trace: str, scheme: str) -> pd.Series:
    df = pd.read_csv(THEIRS)
    return df[(df["trace"] == trace) & (df["scheme"] == scheme)].set_index("job_id")["jct_s"].sort_index()


# (trace, scheme): the documented agreement (docs/tiresias_compat.md): exact means every job's JCT
# equal; else (max |avg JCT deviation| in %, min per-job correlation)
AGREEMENT = {
    **{("60_job", s): "exact" for s in ("fifo", "fjf", "shortest", "dlas-gpu")},
    ("60_job", "shortest-gpu"): (0.5, 0.998),  # ties in remaining GPU-time broken differently
    **{("las_120", s): "exact" for s in ("fifo", "fjf", "shortest", "shortest-gpu")},
    ("las_120", "dlas-gpu"): (4.2, 0.97),  # Tiresias demotes late (docs/tiresias_compat.md)
}


def check_agreement(trace: str, scheme: str, clock: str) -> None:
    theirs = their_jcts(trace, scheme)
    ours = run(trace, 16, SCHEMES[scheme] + CLOCKS[clock]).jobs.set_index("job_id")["jct_s"].sort_index()
    assert ours.index.tolist() == theirs.index.tolist()
    claim = AGREEMENT[(trace, scheme)]
    if claim == "exact":
        np.testing.assert_allclose(ours.to_numpy(), theirs.to_numpy(), rtol=0, atol=1e-9)
        return
    max_dev, min_corr = claim
    dev = 100 * abs(ours.mean() - theirs.mean()) / theirs.mean()
    assert dev <= max_dev and np.corrcoef(ours, theirs)[0, 1] >= min_corr


@pytest.mark.parametrize("clock", sorted(CLOCKS))
@pytest.mark.parametrize("scheme", sorted(SCHEMES))
def test_shipped_60_job_trace_matches_tiresias_simulator(scheme, clock):
    check_agreement("60_job", scheme, clock)


@pytest.mark.parametrize(
    "clock", ["events", pytest.param("rounds_1s", marks=pytest.mark.slow)]
)  # 1 s rounds: ~100,000 steps
@pytest.mark.parametrize("scheme", sorted(SCHEMES))
def test_las_120_trace_matches_tiresias_simulator(scheme, clock):
    check_agreement("las_120", scheme, clock)


# ---- the bench's plumbing, with a stand-in for Tiresias' simulator ---------------------------

FAKE_RUN_SIM = """
import csv, os, sys
def main():
    args = dict(a[2:].split("=", 1) for a in sys.argv[1:])
    with open(args["trace_file"]) as f:
        rows = list(csv.DictReader(f))
    os.makedirs(args["log_path"])
    with open(os.path.join(args["log_path"], "job.csv"), "w") as f:
        f.write("time,job_id,submit_time,end_time,JCT,preempt\\n")
        for r in rows:  # every job as if alone: JCT = duration; preempted job_id % 3 times
            end = int(r["submit_time"]) + int(r["duration"])
            f.write("%s,%s,%s,%s,%s,%s\\n" % (end, r["job_id"], r["submit_time"], end, r["duration"], int(r["job_id"]) % 3))
"""


def test_bench_reads_the_simulators_job_csv_and_compares(tmp_path, capsys):
    (tmp_path / "simulator").mkdir()
    (tmp_path / "simulator" / "run_sim.py").write_text(FAKE_RUN_SIM)
    out_csv = tmp_path / "theirs.csv"
    assert (
        bench.main(
            [
                "--tiresias",
                str(tmp_path),
                "--python2",
                sys.executable,
                "--traces",
                "60_job",
                "--schemes",
                "fifo",
                "--no-command",
                "--their-jobs",
                str(out_csv),
            ]
        )
        == 0
    )
    lines = capsys.readouterr().out.splitlines()
    row = lines[3].split()
    trace = pd.read_csv(shipped_trace("60_job"))
    durations = trace["duration"]
    assert row[:4] == ["60_job", "16", "fifo", f"{durations.mean() / 3600:.3f}"]
    assert row[4] == "0.056"  # fairsim's fifo on 16 GPUs (docs/tiresias_compat.md)
    # the job-by-job table: scheme, trace/GPUs, their avg h, ours, dev %, r, within 10 %,
    # restarts per job (theirs: job_id % 3; fairsim's FIFO preempts none), p99 %, makespans h
    job_by_job = lines[lines.index(next(x for x in lines if "job by job" in x)) + 2].split()
    assert job_by_job[:4] == ["fifo", "60_job/16", f"{durations.mean() / 3600:.3f}", "0.056"]
    assert job_by_job[7:9] == [f"{(trace['job_id'] % 3).mean():.2f}", "0.00"]
    their_makespan = (trace["submit_time"] + durations).max() - trace["submit_time"].min()
    assert job_by_job[10] == f"{their_makespan / 3600:.2f}"
    written = pd.read_csv(out_csv)
    assert (
        len(written) == 60
        and written["jct_s"].tolist() == trace.sort_values("job_id")["duration"].tolist()
        and written["preemptions"].tolist() == [j % 3 for j in sorted(trace["job_id"])]
    )
