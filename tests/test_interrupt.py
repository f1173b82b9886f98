"""Ctrl-C is an ordinary end: one line on stderr saying what was kept, exit status 130, no
traceback, nothing half-written that looks complete.

- A single run interrupted mid-simulation: no summary.json (an earlier run's, in the same
  folder, stays as it was).
- A sweep interrupted while its long cells run, by SIGINT to the whole process group (as a
  terminal sends Ctrl-C) or to the parent alone: the workers are stopped, the complete cells
  are collected into results.parquet and logged to MLflow, the cut-off cells have no summary,
  no worker is left.
- ``python -m fairsim.paper.reproduce``: the sweep it runs collects first, then it ends too.

Subprocesses start in a session of their own (their own process group) and are waited for by
files appearing: the long cells take 20 s or more, the short ones about a second.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys

import pandas as pd
import pytest
import yaml
from conftest import ROOT, run_py_command
from omegaconf import OmegaConf
from test_faults import alive, cmdline, descendants, kill_started, wait_for

from fairsim.experiment import interrupt
from fairsim.experiment.collect import complete_cells
from fairsim.experiment.compose import compose_config
from fairsim.experiment.single import run_config, write_results
from fairsim.experiment.tracking import ensure_store, logged_cells
from fairsim.paper import reproduce

# two short cells finish first (joblib dispatches in order, one per core), then the two long
# ones run (3000 jobs: 20 s and more) when Ctrl-C comes
GRID = ["policy=ours", "num_jobs=20,3000", "seed=0,1"]
SHORT = [f"num_jobs=20,policy=ours,seed={s}" for s in (0, 1)]
LONG = [f"num_jobs=3000,policy=ours,seed={s}" for s in (0, 1)]
CELLS = SHORT + LONG
RUN_LINE = "interrupted: the run had not finished; nothing was written as complete"


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    """One results folder and MLflow store (created once: its migrations take seconds)."""
    path = tmp_path_factory.mktemp("interrupt")
    ensure_store(path)
    return path


def start(*args: str, module: str | None = None) -> subprocess.Popen:
    cmd = [sys.executable, "-m", module, *args] if module else run_py_command(*args)
    return subprocess.Popen(
        cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True
    )


def ctrl_c(proc: subprocess.Popen, whole_group: bool = True) -> tuple[str, str]:
    """SIGINT to the process group (a terminal's Ctrl-C) or to the process alone; its output."""
    if whole_group:
        os.killpg(proc.pid, signal.SIGINT)
    else:
        os.kill(proc.pid, signal.SIGINT)
    return proc.communicate(timeout=180)


def running_long_cell(sweep_dir) -> bool:
    """At least one cell complete and a long one started (Hydra made its folder)."""
    return (
        sweep_dir.is_dir()
        and bool(complete_cells(sweep_dir))
        and any((sweep_dir / c / ".hydra").exists() for c in LONG)
    )


def end(proc: subprocess.Popen, started: list[int]) -> None:
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    kill_started(started)


# ---- a single run -----------------------------------------------------------------------------


@pytest.mark.slow
def test_ctrl_c_ends_a_single_run_in_one_line(tmp_path):
    folder = tmp_path / "run"
    proc = start("num_jobs=3000", "track=false", f"results_dir={tmp_path}", f"hydra.run.dir={folder}")
    try:
        # Hydra writes .hydra/ just before the run starts; a Ctrl-C earlier is held until then
        wait_for(
            lambda: (folder / ".hydra" / "overrides.yaml").exists() or proc.poll() is not None, 120, "the run to start"
        )
        assert proc.poll() is None, proc.communicate()
        out, err = ctrl_c(proc)
    finally:
        end(proc, [])
    assert proc.returncode == 130, (out, err)
    assert err.splitlines() == [RUN_LINE], err
    assert not (folder / "summary.json").exists() and not (folder / "jobs.parquet").exists()


@pytest.mark.slow
def test_ctrl_c_leaves_an_earlier_run_in_the_same_folder_as_it_was(tmp_path, run_py):
    folder = tmp_path / "run"
    common = ["track=false", f"results_dir={tmp_path}", f"hydra.run.dir={folder}"]
    assert run_py("num_jobs=20", *common).returncode == 0
    before = (folder / "summary.json").read_bytes()
    (folder / ".hydra" / "overrides.yaml").unlink()
    proc = start("num_jobs=3000", *common)
    try:
        wait_for(
            lambda: (folder / ".hydra" / "overrides.yaml").exists() or proc.poll() is not None, 120, "the run to start"
        )
        assert proc.poll() is None, proc.communicate()
        out, err = ctrl_c(proc)
    finally:
        end(proc, [])
    assert proc.returncode == 130, (out, err)
    assert err.splitlines() == [f"{RUN_LINE} ({folder} still holds an earlier run's results)"], err
    assert (folder / "summary.json").read_bytes() == before


def test_a_run_s_ending_says_whether_it_wrote_its_summary(tmp_path):
    cfg = compose_config(["num_jobs=20"])
    fresh = interrupt.run_ending(tmp_path / "a", track=True)
    assert fresh() == RUN_LINE
    write_results(run_config(cfg), tmp_path / "a", cfg)
    assert fresh() == f"interrupted: the run is complete in {tmp_path / 'a'}, but may not be logged to MLflow"
    assert (
        interrupt.run_ending(tmp_path / "a", track=False)()
        == f"{RUN_LINE} ({tmp_path / 'a'} still holds an earlier run's results)"
    )


# ---- the one-line ending ------------------------------------------------------------------------


@pytest.fixture
def ending(monkeypatch):
    """The registered ending put back afterwards; ends_in_one_line must restore the handler."""
    monkeypatch.setattr(interrupt, "_ending", interrupt._ending)
    handler = signal.getsignal(signal.SIGINT)
    yield
    assert signal.getsignal(signal.SIGINT) is handler


def test_ctrl_c_runs_the_registered_ending_and_exits_130(ending, capsys):
    interrupt.on_ctrl_c(lambda: "the line", lambda why: f"cut short: {why}")
    with pytest.raises(SystemExit) as ended, interrupt.ends_in_one_line():
        raise KeyboardInterrupt
    assert ended.value.code == 130
    assert capsys.readouterr().err == "the line\n"


@pytest.mark.parametrize(
    "fault, why", [(KeyboardInterrupt, "a second Ctrl-C"), (ImportError("half imported"), "ImportError: half imported")]
)
def test_an_ending_cut_short_still_ends_in_one_line(ending, capsys, fault, why):
    def end():
        raise fault

    interrupt.on_ctrl_c(end, lambda why: f"cut short ({why})")
    with pytest.raises(SystemExit) as ended, interrupt.ends_in_one_line():
        raise KeyboardInterrupt
    assert ended.value.code == 130
    assert capsys.readouterr().err == f"cut short ({why})\n"


def test_a_held_ctrl_c_is_raised_on_release_and_a_second_one_at_once(ending, capsys):
    interrupt.on_ctrl_c(lambda: "the line", lambda why: why)
    with pytest.raises(SystemExit), interrupt.ends_in_one_line():  # holds Ctrl-C, as while Hydra composes
        signal.raise_signal(signal.SIGINT)  # held
        interrupt.release_ctrl_c()  # raised here
        pytest.fail("the held Ctrl-C was not raised")
    assert capsys.readouterr().err == "the line\n"
    with pytest.raises(SystemExit), interrupt.ends_in_one_line():
        signal.raise_signal(signal.SIGINT)
        with pytest.raises(KeyboardInterrupt):
            signal.raise_signal(signal.SIGINT)  # the second is not held
        interrupt.release_ctrl_c()
    assert capsys.readouterr().err == "the line\n"


class _SwallowsOnDel:
    """Python ignores an exception raised in ``__del__``: a Ctrl-C whose check runs there is lost."""

    def __del__(self):
        try:
            signal.raise_signal(signal.SIGINT)
        except KeyboardInterrupt:
            pass  # what CPython does with it: "Exception ignored in ..."


def test_a_ctrl_c_whose_keyboard_interrupt_was_lost_still_ends_the_run(ending, capsys):
    interrupt.on_ctrl_c(lambda: "the line", lambda why: why)
    with pytest.raises(SystemExit) as ended, interrupt.ends_in_one_line():
        interrupt.release_ctrl_c()
        del_me = _SwallowsOnDel()
        del del_me
        with pytest.raises(KeyboardInterrupt):
            interrupt.raise_if_interrupted()  # as the run does before writing its results
    assert ended.value.code == 130
    assert capsys.readouterr().err == "the line\n"
    with pytest.raises(SystemExit) as ended, interrupt.ends_in_one_line():
        interrupt.release_ctrl_c()
        del_me = _SwallowsOnDel()
        del del_me  # nothing checks before the end: the end itself does
    assert ended.value.code == 130
    assert capsys.readouterr().err == "the line\n"
    with pytest.raises(SystemExit) as ended, interrupt.ends_in_one_line():
        signal.raise_signal(signal.SIGINT)  # held, and never released (a callback that did not run)
        interrupt.raise_if_interrupted()
    assert ended.value.code == 130
    assert capsys.readouterr().err == "the line\n"
    with interrupt.ends_in_one_line():  # a later run starts with no Ctrl-C on record
        interrupt.release_ctrl_c()
        interrupt.raise_if_interrupted()


# ---- a sweep ------------------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("whole_group", [True, False], ids=["group", "parent"])
def test_ctrl_c_stops_a_sweep_and_collects_its_complete_cells(results, whole_group):
    name = f"ctrl_c_{'group' if whole_group else 'parent'}"
    sweep_dir = results / "sweeps" / name
    proc = start("-m", f"results_dir={results}", f"sweep_name={name}", *GRID)
    started: list[int] = []
    try:
        wait_for(
            lambda: running_long_cell(sweep_dir) or proc.poll() is not None,
            300,
            "a complete cell and a long one running",
        )
        assert proc.poll() is None, proc.communicate()
        started = descendants(proc.pid)
        workers = [p for p in started if "loky" in cmdline(p) and "resource_tracker" not in cmdline(p)]
        assert workers, [cmdline(p) for p in started]
        out, err = ctrl_c(proc, whole_group)
        left = [p for p in workers if alive(p)]
    finally:
        end(proc, started)
    assert proc.returncode == 130
    assert "Traceback" not in err
    lines = err.strip().splitlines()
    pattern = (
        rf"\[sweep {name}\] interrupted: (\d+) complete cells kept and collected into "
        rf"{re.escape(str(sweep_dir / 'results.parquet'))} and MLflow \((\d+) newly logged\); (\d+) of the grid's "
        r"(\d+) cells did not finish; rerun the same command to run only those"
    )
    assert len(lines) == 1 and (said := re.fullmatch(pattern, lines[0])), err
    assert left == []  # the workers were stopped before the parent ended
    wait_for(lambda: not any(alive(p) for p in started), 10, "loky's resource trackers to exit")
    done = [c.name for c in complete_cells(sweep_dir)]
    assert done and set(done) <= set(SHORT)
    assert not any((sweep_dir / c / "summary.json").exists() for c in LONG)  # cut off: not complete
    assert sorted(pd.read_parquet(sweep_dir / "results.parquet")["cell"]) == done
    assert logged_cells(results, name) == done
    kept, logged, unfinished, grid = (int(g) for g in said.groups())
    assert kept == logged == len(done) and grid == len(CELLS) and unfinished == len(CELLS) - kept


def test_an_interrupted_rerun_counts_the_grid_s_earlier_complete_cells_as_finished(tmp_path):
    """Cells complete from an earlier run that this run never reached are not 'did not finish':
    the line counts the grid's cells that ended neither in this run nor before it."""
    from fairsim.experiment.sweep import SweepCallback, grid_cells

    hydra_yaml = yaml.safe_load((ROOT / "conf" / "hydra" / "fairsim.yaml").read_text())
    config = OmegaConf.create(
        {
            "hydra": {
                "overrides": {"task": ["policy=fifo", "num_jobs=10", "seed=0,1,2", "sweep_name=x"]},
                "sweeper": {"params": None},
                "job": hydra_yaml["job"],
            }
        }
    )
    grid = grid_cells(config)
    assert grid == [f"num_jobs=10,policy=fifo,seed={k}" for k in (0, 1, 2)]  # as Hydra names them (sweep_name excluded)
    sweep_dir = tmp_path / "sweeps" / "x"
    for seed in (0, 1):  # complete from an earlier run
        cfg = compose_config(["policy=fifo", "num_jobs=10", f"seed={seed}", "track=false"])
        write_results(run_config(cfg), sweep_dir / grid[seed], cfg)
    callback = SweepCallback(str(tmp_path))
    callback.sweep_dir, callback.grid, callback.total = sweep_dir, grid, len(grid)
    assert callback.unfinished({}) == [grid[2]]  # interrupted before any cell reported
    assert callback.unfinished({grid[2]: (1.0, "ran")}) == []
    assert callback.unfinished({grid[2]: (0.0, "failed")}) == [grid[2]]


# ---- reproduce ----------------------------------------------------------------------------------


@pytest.mark.slow
def test_ctrl_c_ends_reproduce_after_its_sweep_has_collected(results, tmp_path):
    plan = {
        "scales": {"small": {"suffix": ""}},
        "sweeps": {"s": {"preset": "smoke", "small": ["load=0.5", *GRID]}},
        "figures": {"fig7": {"module": "fairsim.paper.figures.fig7", "sweeps": ["s"], "what": "JCT ratios"}},
        "headlines": [],
    }
    (tmp_path / "plan.yaml").write_text(yaml.safe_dump(plan))
    sweep_dir = results / "sweeps" / "smoke"
    long_cells = [f"load=0.5,{c}" for c in LONG]
    proc = start(
        "--plan",
        str(tmp_path / "plan.yaml"),
        "--results-dir",
        str(results),
        "--out",
        str(tmp_path / "figs"),
        module="fairsim.paper.reproduce",
    )
    started: list[int] = []
    try:
        wait_for(
            lambda: (
                (
                    sweep_dir.is_dir()
                    and bool(complete_cells(sweep_dir))
                    and any((sweep_dir / c / ".hydra").exists() for c in long_cells)
                )
                or proc.poll() is not None
            ),
            300,
            "a complete cell and a long one running",
        )
        assert proc.poll() is None, proc.communicate()
        started = descendants(proc.pid)
        out, err = ctrl_c(proc)
    finally:
        end(proc, started)
    assert proc.returncode == 130
    assert "Traceback" not in err
    lines = err.strip().splitlines()
    assert (
        len(lines) == 2
        and lines[0].startswith("[sweep smoke] interrupted: ")
        and lines[1] == reproduce.INTERRUPTED_LINE
    ), err
    done = [c.name for c in complete_cells(sweep_dir)]
    assert done and sorted(pd.read_parquet(sweep_dir / "results.parquet")["cell"]) == done
    assert not (tmp_path / "figs" / "REPORT.md").exists()


@pytest.mark.parametrize("bar", [False, True])
def test_run_sweep_waits_for_an_interrupted_sweep_instead_of_killing_it(capfd, bar):
    """Ctrl-C reaches reproduce while its sweep still collects: it waits for the sweep's last
    line and exit (subprocess.run would kill it), then stops."""
    script = (
        "import os, signal, sys, time\n"
        "signal.signal(signal.SIGINT, signal.SIG_IGN)\n"
        "os.kill(os.getppid(), signal.SIGINT)\n"
        "time.sleep(1)\n"
        "print('[sweep s] collected', flush=True)\n"
        "sys.exit(130)\n"
    )
    with pytest.raises(KeyboardInterrupt):
        reproduce.run_sweep([sys.executable, "-c", script], "s", bar=bar)
    assert "[sweep s] collected" in capfd.readouterr().out
