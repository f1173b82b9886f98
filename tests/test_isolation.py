"""Nothing from the folder that holds the clone reaches a test or a sweep worker.

The clone's top folder is no package (no __init__.py): pytest would import one as a package and
put the folder above it first on sys.path, and a file there (a stray click.py) would shadow the
real package in every test and, through the PYTHONPATH fairsim.sweep passes on, in every worker.
A copy of the clone's layout with poisoned modules beside it shows both unaffected."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT

from fairsim.api import _child_path

POISON = 'raise ImportError("poisoned: the folder that holds the clone is on sys.path")\n'

PROBE = """
import sys
from pathlib import Path

import fairsim

BESIDE = Path(__file__).resolve().parents[2]  # the folder that holds this clone


def test_nothing_beside_the_clone_is_on_the_path(tmp_path):
    assert str(BESIDE) not in {str(Path(p or ".").resolve()) for p in sys.path}, sys.path
    import click
    import yaml

    assert Path(click.__file__).parent.name == "click" and Path(yaml.__file__).parent.name == "yaml"
    assert Path(fairsim.__file__).resolve() == BESIDE / "fairsim" / "fairsim" / "__init__.py"
    assert str(BESIDE) not in _child_path_of_this_clone()
    sweep = fairsim.sweep("policy=fifo", "num_jobs=4", "seed=0,1", track=False, results_dir=str(tmp_path), sweep_name="probe")
    assert len(sweep.results) == 2


def _child_path_of_this_clone():
    from fairsim.api import _child_path

    return _child_path(BESIDE / "fairsim").split(":")
"""


def test_the_clone_has_no_top_level_package():
    assert not (ROOT / "__init__.py").exists()


def test_a_sweeps_path_leaves_out_the_repository_and_the_folder_holding_it(tmp_path, monkeypatch):
    mine, theirs = tmp_path / "mypolicies", tmp_path / "more"
    mine.mkdir()
    theirs.mkdir()
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", [str(ROOT.parent), "", str(ROOT), str(mine), sys.prefix])
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(ROOT.parent), str(theirs)]))
    assert _child_path(ROOT).split(os.pathsep) == [str(tmp_path.resolve()), str(mine.resolve()), str(theirs.resolve())]


def _copy_of_the_clone(beside: Path) -> Path:
    """The repository's files (tracked and new, as git lists them) under ``beside/fairsim``."""
    names = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT,
        capture_output=True,
        check=True,
    ).stdout.split(b"\0")
    clone = beside / "fairsim"
    for name in filter(None, (n.decode() for n in names)):
        if name.startswith("paper_figs/") or not (ROOT / name).is_file():
            continue
        (clone / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / name, clone / name)
    return clone


@pytest.mark.slow
def test_modules_beside_the_clone_reach_no_test_and_no_sweep_worker(tmp_path):
    clone = _copy_of_the_clone(tmp_path)
    for name in ("click", "yaml"):  # click: mlflow's; yaml: omegaconf's, imported by every run.py
        (tmp_path / f"{name}.py").write_text(POISON)
    (clone / "tests" / "test_probe_isolation.py").write_text(PROBE)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTEST_ADDOPTS")}
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/test_probe_isolation.py"]
    proc = subprocess.run(command, cwd=clone, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    # the probe sees the leak where there is one: with a top-level __init__.py, pytest puts the
    # folder holding the clone first on sys.path
    (clone / "__init__.py").write_text("")
    leaky = subprocess.run(command + ["-x"], cwd=clone, env=env, capture_output=True, text=True, timeout=600)
    assert leaky.returncode == 1 and "not in" in leaky.stdout, leaky.stdout[-3000:]
