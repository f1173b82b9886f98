"""run.py end to end: the default run writes complete results; bad input ends with one line and exit 2
(and leaves no folder among the runs); a run from another folder; --version and --help; a sweep
with track=false."""

import json
import platform
import subprocess

import hydra
import pandas as pd
import pytest
from conftest import run_py_command

import fairsim

pytestmark = pytest.mark.slow  # every test here runs run.py in a subprocess


def test_default_run_writes_complete_results(tmp_path, run_py):
    proc = run_py(f"results_dir={tmp_path}", "num_jobs=40")
    assert proc.returncode == 0, proc.stderr
    (folder,) = list((tmp_path / "runs").iterdir())
    summary = json.loads((folder / "summary.json").read_text())
    jobs = pd.read_parquet(folder / "jobs.parquet")
    assert summary["num_jobs"] == 40 == len(jobs)
    assert summary["finished_jobs"] == 40
    assert summary["avg_jct_s"] == pytest.approx(jobs["jct_s"].mean())
    assert "avg JCT" in proc.stdout


@pytest.mark.parametrize(
    "overrides, needle",
    [
        (["+cluster.counts.H900=4"], "counts.H900: unknown GPU type 'H900' (allowed:"),
        (["cluster.counts.T4=-2"], "counts.T4: must be a GPU count >= 0"),
        (["load=0"], "load: must be a number in (0, 10]"),
        (["load=-1"], "load: must be a number in (0, 10]"),
        (["seed=1.5"], "seed: must be an integer >= 0"),
        (["sim.round_len_s=0"], "round_len_s: must be a number of seconds in [1, 86400]"),
        (["workload=nosuch"], "workload"),
        (["policy=fifo", "policy.backfill=maybe"], "policy fifo: backfill: must be bool"),
    ],
)
def test_bad_config_one_line_exit_2(tmp_path, overrides, needle, run_py):
    proc = run_py(f"results_dir={tmp_path}", "num_jobs=20", *overrides)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and needle in lines[0], proc.stderr
    assert "Traceback" not in proc.stderr
    assert not list(tmp_path.glob("runs/*"))  # a refused run is set aside in failed/ or never got a folder


@pytest.mark.parametrize(
    "rows, needle",
    [
        ("job_id,arrival_s,model,workers\n0,0,ResNet50,1\n", "columns: missing work"),
        ("job_id,arrival_s,model,workers,work\n0,0,ResNet50,1,-3\n", "work: must be > 0"),
        ("job_id,arrival_s,model,workers,work\n0,0,ResNet50,64,10\n", "workers:"),
        ("job_id,arrival_s,model,workers,work\n0,0,NoSuchNet,1,10\n", "model: unknown model 'NoSuchNet'"),
    ],
)
def test_bad_trace_file_one_line_exit_2(tmp_path, rows, needle, run_py):
    trace = tmp_path / "bad.csv"
    trace.write_text(rows)
    proc = run_py(f"results_dir={tmp_path}", "workload=file", f"workload.path={trace}")
    assert proc.returncode == 2, proc.stdout + proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and needle in lines[0] and "bad.csv" in lines[0], proc.stderr


def test_a_run_from_another_folder(tmp_path):
    """A shipped preset's repository-relative file is found, results go to the working folder's
    results/, the folder's name gives the cluster and load that are not the defaults, and a refused
    run leaves nothing among the runs (its log goes to results/failed/)."""

    def run(*args):
        return subprocess.run(run_py_command(*args), capture_output=True, text=True, cwd=tmp_path, timeout=300)

    ok = run("workload=team_cluster", "policy=fifo", "track=false")
    assert ok.returncode == 0, ok.stderr
    (folder,) = (tmp_path / "results" / "runs").iterdir()
    assert folder.name.endswith("-fifo-team_cluster-seed0")  # the default cluster and load are not named
    assert "experiments/logs/team_cluster.csv" in json.loads((folder / "provenance.json").read_text())["inputs"]
    named = run("num_jobs=10", "policy=fifo", "cluster=scale8", "load=0.5", "track=false")
    assert named.returncode == 0, named.stderr
    assert sorted(f.name[16:] for f in (tmp_path / "results" / "runs").iterdir()) == [
        "fifo-philly-scale8-load0.5-seed0",
        "fifo-team_cluster-seed0",
    ]
    refused = run("+cluster.counts.H900=4", "track=false")
    assert refused.returncode == 2
    assert len(list((tmp_path / "results" / "runs").iterdir())) == 2
    (log,) = (tmp_path / "results" / "failed").glob("*-ours-philly-seed0/run.log")
    assert log.read_text() == refused.stderr and "unknown GPU type 'H900'" in refused.stderr


def test_two_runs_named_alike_get_two_folders(tmp_path):
    """conf/hydra/fairsim.yaml's run.dir is timed to the second: two runs with one name (two
    processes, or two fairsim.run calls, in one second) get the name and the name ending -2; one
    run resolving its folder again keeps it."""
    from omegaconf import OmegaConf

    import fairsim.experiment.sweep  # noqa: F401  (registers the resolvers, as run.py does)

    folder = tmp_path / "runs" / "20260101-000000-fifo-philly-seed0"
    first, second = (OmegaConf.create({"dir": f"${{fairsim_claimed:{folder}}}"}) for _ in range(2))
    assert first.dir == str(folder) and first.dir == str(folder) and folder.is_dir()
    assert second.dir == f"{folder}-2" and second.dir == f"{folder}-2"
    assert sorted(p.name for p in folder.parent.iterdir()) == [folder.name, f"{folder.name}-2"]


def test_version_and_help_are_fairsims(run_py):
    version = run_py("--version")
    assert version.returncode == 0 and version.stdout == (
        f"fairsim {fairsim.__version__} (Hydra {hydra.__version__}, Python {platform.python_version()})\n"
    )
    helped = run_py("--help")
    assert helped.returncode == 0 and helped.stdout.startswith("fairsim: deep-learning training jobs")
    groups = helped.stdout.index("== Config groups: group=preset ==")
    assert helped.stdout.index("docs/clusters.md") < groups < helped.stdout.index("\npolicy: allox, fifo, gavel")
    assert "== The composed config" in helped.stdout and "--hydra-help" in helped.stdout


def test_a_sweep_with_track_false_collects_and_logs_nothing(tmp_path, run_py):
    out = run_py("-m", "policy=fifo,srtf", "num_jobs=10", "track=false", f"results_dir={tmp_path}", "sweep_name=quiet")
    assert out.returncode == 0, out.stderr
    assert "nothing logged to MLflow (track=false)" in out.stdout
    assert len(pd.read_parquet(tmp_path / "sweeps" / "quiet" / "results.parquet")) == 2
    assert not (tmp_path / "mlflow.db").exists()
