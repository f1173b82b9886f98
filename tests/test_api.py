"""fairsim as a library (fairsim/api.py): run, sweep and load on the command line's path, bad
input as InputError, a cheap import, and ``import fairsim`` beside a clone."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from conftest import ROOT

import fairsim
from fairsim.experiment.digest import table_digest
from fairsim.experiment.tracking import RUNS_EXPERIMENT, logged_cells

SMALL = ("policy=fifo", "num_jobs=20")
TIMING = {"policy_s_max", "policy_s_mean", "policy_s_total", "sim_wall_s", "wall_s"}  # seconds of this machine


def test_run_returns_the_folder_it_wrote(tmp_path):
    r = fairsim.run(*SMALL, results_dir=str(tmp_path), track=False, seed=3)
    assert r.folder.parent == tmp_path / "runs" and r.folder.name.endswith("-fifo-philly-seed3")
    assert len(r.jobs) == r.summary["num_jobs"] == 20 and r.summary["seed"] == 3
    assert r.rounds["rounds"].sum() == r.summary["rounds"]  # a row per stretch of identical rounds
    assert r.tenants is not None and r.tenants["jobs"].sum() == 20  # the Philly trace names its virtual clusters
    assert r.schedule is None  # sim.record_schedule is off
    assert r.provenance["code_digest"] and r.config["seed"] == 3
    assert yaml.safe_load((r.folder / ".hydra" / "overrides.yaml").read_text()) == [
        *SMALL,
        f"results_dir={tmp_path}",
        "track=false",
        "seed=3",
    ]
    again = fairsim.load(r.folder)
    assert isinstance(again, fairsim.Run) and table_digest(again.jobs) == table_digest(r.jobs)
    assert not (tmp_path / "mlflow.db").exists()  # track=False


def test_keyword_values_are_written_as_hydra_overrides():
    from fairsim.api import overrides_of

    assert overrides_of(["policy=ours"], {"track": False, "cluster.counts.T4": 4, "x": None, "w": [1, 2]}) == [
        "policy=ours",
        "track=false",
        "cluster.counts.T4=4",
        "x=null",
        "w=[1,2]",
    ]
    assert overrides_of([], {"load": [0.5, 0.8], "policy": ("ours", "themis")}, sweep=True) == [
        "load=0.5,0.8",
        "policy=ours,themis",
    ]
    assert overrides_of([["policy=ours,themis", "load=0.5"], "seed=1"], {}, sweep=True) == [
        "policy=ours,themis",
        "load=0.5",
        "seed=1",
    ]  # fairsim.sweep([...]) as well as fairsim.sweep(...)
    with pytest.raises(fairsim.InputError, match="each must be a string"):
        overrides_of([3], {})


@pytest.mark.parametrize(
    "args, keys, words",
    [
        (("policy=ourss",), {}, "command line: policy: no preset 'ourss'"),
        (("lod=0.5",), {}, "command line: lod: no such key; closest: load"),
        ((), {"load": -1}, "config: load: must be a number in (0, 10], got -1"),
        ((), {"seed": True}, "config: seed: must be an integer >= 0"),
    ],
)
def test_bad_input_raises_input_error_worded_as_the_command_line(tmp_path, capfd, args, keys, words):
    with pytest.raises(fairsim.InputError) as caught:
        fairsim.run(*args, results_dir=str(tmp_path), track=False, **keys)
    assert str(caught.value).startswith(words)
    assert "Error executing job" not in capfd.readouterr().err  # the exception is the message: no line of Hydra's
    assert not list(tmp_path.glob("runs/*"))  # runs/ holds runs: a refused one's folder is in failed/


def test_load_refuses_what_is_no_run_or_sweep(tmp_path):
    with pytest.raises(fairsim.InputError, match="no such folder"):
        fairsim.load(tmp_path / "nowhere")
    with pytest.raises(fairsim.InputError, match="empty folder"):
        fairsim.load(tmp_path)
    (tmp_path / "jobs.parquet").write_text("not parquet")
    with pytest.raises(fairsim.InputError, match="not a complete run folder"):
        fairsim.load(tmp_path)


def test_a_sweep_with_a_bad_preset_starts_no_process(tmp_path):
    with pytest.raises(fairsim.InputError, match="no preset 'nope'"):
        fairsim.sweep("policy=fifo,nope", results_dir=str(tmp_path))
    with pytest.raises(fairsim.InputError, match="lod: no such key"):
        fairsim.sweep("lod=0.5,0.8", results_dir=str(tmp_path))
    assert not (tmp_path / "sweeps").exists()


@pytest.mark.slow
def test_run_is_the_command_lines_run(tmp_path, run_py):
    """The same overrides through fairsim.run and python run.py: the same per-job table and
    summary, the same provenance but for argv, and both logged to MLflow's "runs" experiment."""
    api = fairsim.run(*SMALL, results_dir=str(tmp_path))
    proc = run_py(*SMALL, f"results_dir={tmp_path}")
    assert proc.returncode == 0, proc.stderr
    cli = fairsim.load(next(f for f in (tmp_path / "runs").iterdir() if f != api.folder))
    assert table_digest(api.jobs) == table_digest(cli.jobs)
    assert {k: v for k, v in api.summary.items() if k not in TIMING} == {
        k: v for k, v in cli.summary.items() if k not in TIMING
    }
    same = {"code_digest", "code_files", "config_files", "inputs", "fairsim_version", "packages"}
    assert {k: api.provenance[k] for k in same} == {k: cli.provenance[k] for k in same}
    assert sorted(p.name for p in api.folder.iterdir()) == sorted(p.name for p in cli.folder.iterdir())

    def printed(run):  # but the lines naming its folder or this machine's seconds
        return [
            line
            for line in (run.folder / "run.log").read_text().splitlines()
            if not line.startswith(("  results", "  policy time"))
        ]

    assert printed(api) == printed(cli) and len(printed(api)) > 10
    assert sorted(logged_cells(tmp_path, RUNS_EXPERIMENT)) == sorted([api.folder.name, cli.folder.name])


@pytest.mark.slow
def test_sweep_runs_the_command_lines_sweep(tmp_path, capfd):
    """A failing cell ends the sweep with SweepError keeping the complete one; the same grid's
    complete cell is found again, not recomputed, and the tables read back."""
    with pytest.raises(fairsim.SweepError, match="FAILED") as caught:
        fairsim.sweep(*SMALL, load=[0.5, 20], results_dir=str(tmp_path), sweep_name="api")
    kept = fairsim.load(caught.value.folder)
    assert list(kept.results["cell"]) == ["load=0.5,num_jobs=20,policy=fifo"]
    capfd.readouterr()
    again = fairsim.sweep(*SMALL, "load=0.5", results_dir=str(tmp_path), sweep_name="api")
    assert "this run computed 0, found 1 complete" in capfd.readouterr().out
    assert again.folder == tmp_path / "sweeps" / "api"
    assert len(again.jobs) == 20 and set(again.jobs["cell"]) == {"load=0.5,num_jobs=20,policy=fifo"}
    assert table_digest(again.cells[0].jobs) == table_digest(kept.cells[0].jobs)
    assert logged_cells(tmp_path, "api") == ["load=0.5,num_jobs=20,policy=fifo"]


def _python(code: str, cwd, *flags: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, *flags, "-c", code],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, **(env or {})},
    )


@pytest.mark.slow
def test_import_is_cheap():
    proc = _python(
        "import sys, fairsim; print(fairsim.__version__, sorted({'numpy', 'pandas', 'hydra', 'omegaconf'} & "
        "{m.split('.')[0] for m in sys.modules}))",
        ROOT,
    )
    assert proc.stdout.split() == [fairsim.__version__, "[]"], proc.stderr


@pytest.mark.slow
def test_a_script_beside_the_clone_imports_the_package(tmp_path):
    """From the folder that holds the clone (named fairsim), ``import fairsim`` is the installed
    package, as from any other folder: make setup puts the repository on the venv's path
    (fairsim-repository.pth), which Python searches before it settles for the clone's folder as an
    empty namespace package. The folder itself is no package (no top-level __init__.py)."""
    import sysconfig

    if not (Path(sysconfig.get_path("purelib")) / "fairsim-repository.pth").is_file():
        pytest.skip("this .venv predates make setup's fairsim-repository.pth: rerun make setup")
    (tmp_path / "beside").mkdir()
    (tmp_path / "beside" / "fairsim").symlink_to(ROOT, target_is_directory=True)
    (tmp_path / "elsewhere").mkdir()
    code = "import fairsim; print(fairsim.__file__, fairsim.__version__)"
    installed = _python(code, tmp_path / "elsewhere")
    beside = _python(code, tmp_path / "beside")
    assert beside.returncode == 0 and installed.returncode == 0, beside.stderr + installed.stderr
    assert beside.stdout == installed.stdout and fairsim.__version__ in beside.stdout


@pytest.mark.slow
def test_the_api_tour_runs(tmp_path, monkeypatch):
    """docs/examples/api_tour.py, as a reader would run it, from a folder of its own."""
    import runpy

    monkeypatch.chdir(tmp_path)
    runpy.run_path(str(ROOT / "docs" / "examples" / "api_tour.py"), run_name="__main__")
    assert (tmp_path / "results" / "sweeps" / "tour" / "results.parquet").is_file()
