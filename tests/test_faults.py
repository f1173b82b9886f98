"""Faults: interrupted sweeps lose nothing, solver failures fall back, writes are atomic.

- A sweep whose joblib worker is SIGKILLed mid-cell (one line, exit 1), and separately one whose
  parent is SIGKILLed mid-sweep (its workers follow it within seconds), is rerun with the same command: every cell ends up exactly once in
  results.parquet and in MLflow, cells that were complete are skipped, cells that were cut off
  are run again (never counted as done half-written).
- A solver that hits its time limit or raises inside ``ours`` or ``themis`` falls back to the
  greedy answer (``gavel``: an equal share), is counted in the run's summary, and the run finishes.
- A crash while writing result files leaves the previous files readable and no summary.json
  claiming completeness; MLflow logging cut off mid-way is repaired on the next collection.

Processes are found through /proc (no psutil); every process a test starts is killed by pid.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import pandas as pd
import pytest
from conftest import ROOT, run_py_command

from fairsim.experiment.collect import IDENTITY_COLUMNS, collect, complete_cells
from fairsim.experiment.compose import compose_config
from fairsim.experiment.single import RunOutput, run_config, write_results
from fairsim.experiment.sweep import TRACKER_WARNINGS
from fairsim.experiment.tracking import ensure_store, log_sweep, logged_cells
from fairsim.files import atomic_write

# four cells: two short ones finish first (joblib dispatches in order), two longer ones are
# running when the fault strikes
GRID = ["policy=ours", "num_jobs=20,80", "seed=0,1"]
CELLS = sorted(f"num_jobs={n},policy=ours,seed={s}" for n in (20, 80) for s in (0, 1))


# ---- processes through /proc ------------------------------------------------------------------


def _stat(pid: int) -> list[str] | None:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None


def alive(pid: int) -> bool:
    st = _stat(pid)
    return st is not None and st[0] not in ("Z", "X")


def environ(pid: int) -> dict[str, str]:
    try:
        raw = Path(f"/proc/{pid}/environ").read_bytes().decode(errors="replace")
    except OSError:
        return {}
    return dict(item.split("=", 1) for item in raw.split("\0") if "=" in item)


def cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def children(pid: int) -> list[int]:
    out = []
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            st = _stat(int(d.name))
            if st is not None and int(st[1]) == pid and st[0] not in ("Z", "X"):
                out.append(int(d.name))
    return sorted(out)


def descendants(pid: int) -> list[int]:
    todo, seen = [pid], []
    while todo:
        for kid in children(todo.pop()):
            seen.append(kid)
            todo.append(kid)
    return seen


def kill_started(pids: list[int]) -> None:
    """SIGKILL the processes this test started (recorded by pid while their parent lived)."""
    for pid in pids:
        if alive(pid) and "python" in cmdline(pid):
            os.kill(pid, signal.SIGKILL)


def wait_for(condition, timeout: float, what: str) -> None:
    end = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > end:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


# ---- sweeps -----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def results(tmp_path_factory) -> Path:
    """One results folder (and MLflow store, created once: its migrations take seconds) for the module."""
    path = tmp_path_factory.mktemp("faults")
    ensure_store(path)
    return path


def sweep_args(results: Path, name: str) -> list[str]:
    return ["-m", f"results_dir={results}", f"sweep_name={name}", *GRID]


def launch(results: Path, name: str) -> subprocess.Popen:
    return subprocess.Popen(
        run_py_command(*sweep_args(results, name)),
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )


def rerun(run_py, results: Path, name: str) -> str:
    proc = run_py(*sweep_args(results, name))
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    return proc.stdout


def finished_cells(sweep_dir: Path) -> int:
    """Cells the running sweep has reported (its own progress file, .progress.<run id>)."""
    return sum(len(p.read_text().splitlines()) for p in sweep_dir.glob(".progress.*"))


def assert_every_cell_once(results: Path, name: str) -> None:
    sweep_dir = results / "sweeps" / name
    assert [c.name for c in complete_cells(sweep_dir)] == CELLS
    table = pd.read_parquet(sweep_dir / "results.parquet")
    assert sorted(table["cell"]) == CELLS  # exactly once each
    assert logged_cells(results, name) == CELLS  # one FINISHED MLflow run per cell
    jobs = pd.read_parquet(sweep_dir / "jobs.parquet")
    for cell in CELLS:
        summary = json.loads((sweep_dir / cell / "summary.json").read_text())
        own = pd.read_parquet(sweep_dir / cell / "jobs.parquet")
        assert summary["num_jobs"] == summary["finished_jobs"] == len(own) == int(cell.split(",")[0].split("=")[1])
        labels = [c for c in jobs if c not in own]  # the cell's identity: its labels and the keys that set it apart
        assert set(labels) - set(IDENTITY_COLUMNS) <= {c for c in labels if "." in c}
        mine = jobs[jobs["cell"] == cell].drop(columns=labels).reset_index(drop=True)
        pd.testing.assert_frame_equal(mine, own)


@pytest.mark.slow
def test_worker_killed_mid_cell_then_rerun(results, run_py):
    name = "worker_kill"
    sweep_dir = results / "sweeps" / name
    proc = launch(results, name)
    started: list[int] = []
    try:
        wait_for(lambda: finished_cells(sweep_dir) >= 2 or proc.poll() is not None, 120, "two short cells")
        assert proc.poll() is None, proc.communicate()
        started = descendants(proc.pid)
        workers = [p for p in children(proc.pid) if "loky" in cmdline(p) and "resource_tracker" not in cmdline(p)]
        assert workers, [cmdline(p) for p in started]
        # the tracker would print the killed worker's leaked semaphore at exit (racy, so checked here)
        trackers = [p for p in started if "resource_tracker" in cmdline(p)]
        assert trackers and all(TRACKER_WARNINGS in environ(p).get("PYTHONWARNINGS", "") for p in trackers)
        os.kill(workers[0], signal.SIGKILL)
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait()
        kill_started(started)
    assert proc.returncode == 1  # the dead worker ends the sweep, in one line
    assert "Traceback" not in err and "TerminatedWorkerError" not in err
    lines = [ln for ln in err.splitlines() if ln.strip() and not ln.startswith("[20")]
    assert len(lines) == 1 and lines[0].startswith(
        f"error: a worker process of sweep {name} died (exit codes {{SIGKILL(-9)}}"
    ), err
    done = [c.name for c in complete_cells(sweep_dir)]
    assert 2 <= len(done) < len(CELLS)
    assert not (sweep_dir / "results.parquet").exists()  # nothing was collected from a broken sweep
    assert logged_cells(results, name) == []

    out = rerun(run_py, results, name)
    assert out.count("skipped (complete)") == len(done)  # the finished cells are kept
    assert_every_cell_once(results, name)


@pytest.mark.slow
def test_parent_killed_mid_sweep_workers_follow_then_rerun(results, run_py):
    """SIGKILL the launching process: its loky workers notice (they watch their parent) and exit
    within about a second instead of finishing their cells and idling for loky's 300 s; the cells
    they held have no summary and run again on the rerun."""
    name = "parent_kill"
    sweep_dir = results / "sweeps" / name
    proc = launch(results, name)
    started: list[int] = []
    try:
        wait_for(lambda: finished_cells(sweep_dir) >= 2 or proc.poll() is not None, 120, "two short cells")
        assert proc.poll() is None, proc.communicate()
        started = [p for p in descendants(proc.pid) if "resource_tracker" not in cmdline(p)]
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        killed_at = time.monotonic()
        wait_for(lambda: not any(alive(p) for p in started), 15, "the orphaned workers to exit")
        orphan_life = time.monotonic() - killed_at
        at_kill = [c.name for c in complete_cells(sweep_dir)]
        assert 2 <= len(at_kill) < len(CELLS)
        assert not (sweep_dir / "results.parquet").exists()
        out = rerun(run_py, results, name)
    finally:
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait()
        kill_started(started)
    assert orphan_life < 15
    assert out.count("skipped (complete)") == len(at_kill)
    assert_every_cell_once(results, name)
    assert not list(sweep_dir.glob(".progress.*"))  # the killed parent's file went with the rerun


@pytest.mark.slow
def test_a_refused_cell_leaves_the_others_to_finish(results, run_py):
    """Bad input in one cell: its one-line error is printed and kept beside it, the other cells
    finish and are collected and logged, and the sweep exits non-zero."""
    proc = run_py("-m", f"results_dir={results}", "sweep_name=bad_cell", "policy=fifo", "num_jobs=10", "load=0,0.5")
    assert proc.returncode == 1
    assert "Traceback" not in proc.stderr
    bad, good = "load=0,num_jobs=10,policy=fifo", "load=0.5,num_jobs=10,policy=fifo"
    assert f"{bad}: FAILED: error: config: load: must be a number in (0, 10], got 0" in proc.stderr
    sweep_dir = results / "sweeps" / "bad_cell"
    assert (sweep_dir / bad / "error.txt").exists() and not (sweep_dir / bad / "summary.json").exists()
    assert [c.name for c in complete_cells(sweep_dir)] == [good]
    assert pd.read_parquet(sweep_dir / "results.parquet")["cell"].tolist() == [good]
    assert logged_cells(results, "bad_cell") == [good]


# ---- solver failures inside a policy --------------------------------------------------------------


def small_run(*overrides: str) -> dict:
    out = run_config(compose_config(["num_jobs=30", *overrides]))
    assert out.summary["finished_jobs"] == 30
    return out.summary


def test_ours_milp_time_limit_falls_back_and_is_counted():
    s = small_run("policy.solver=milp", "policy.time_limit_s=1e-6")
    assert s["solver_calls"] > 0
    assert s["solver_fallbacks"] == s["solver_calls"]  # HiGHS finds nothing in 1 us: greedy every round
    assert s["solver_time_limit_hits"] == s["solver_calls"]  # every decision cut short, each counted once
    assert s["deterministic"] is False  # the run says its numbers depend on the machine


def test_ours_lp_time_limit_escalates_and_is_counted():
    s = small_run("policy.time_limit_s=1e-6")
    assert s["solver_escalations"] + s["solver_fallbacks"] > 0
    assert 0 < s["solver_time_limit_hits"] <= s["solver_calls"]
    assert s["deterministic"] is False


def test_ours_solver_that_raises_falls_back(monkeypatch):
    from fairsim.policies import fft
    from fairsim.solve import milp, packing

    def broken(*args, **kwargs):
        raise RuntimeError("HiGHS exploded")

    monkeypatch.setitem(fft.SOLVERS, "lp_dive", broken)
    for module in (milp, packing):  # the exact program and K(t)'s packing ILP
        monkeypatch.setattr(module, "milp", broken)
    s = small_run()
    assert s["solver_calls"] > 0 and s["solver_fallbacks"] == s["solver_calls"]


@pytest.mark.parametrize("failure", ["raises", "no_solution"])
def test_themis_auction_failure_falls_back(monkeypatch, failure):
    from fairsim.solve import milp

    def broken(*args, **kwargs):
        if failure == "raises":
            raise RuntimeError("HiGHS exploded")
        return SimpleNamespace(x=None, status=1, message="time limit reached")

    monkeypatch.setattr(milp, "milp", broken)  # the auctions' exact program (every testbed auction)
    s = small_run("policy=themis", "load=2")
    assert s["solver_fallbacks"] > 0
    assert s["solver_fallbacks"] <= s["themis_auctions"]


def test_gavel_lp_failure_falls_back(monkeypatch):
    """The Gavel mechanism falls back to an equal share when the policy's LP fails."""
    from fairsim.policies import gavel

    monkeypatch.setattr(gavel, "linprog", lambda *a, **k: SimpleNamespace(status=2, x=None, message="infeasible"))
    s = small_run("policy=gavel")
    assert s["solver_fallbacks"] == s["allocation_recomputes"] > 0


# ---- atomic writes ----------------------------------------------------------------------------------


def half_then_crash(self, path, *args, **kwargs):
    """A parquet writer that writes part of a file and then dies (disk full, kill)."""
    Path(path).write_bytes(b"PAR1 half a file")
    raise OSError("disk full")


TINY = ["num_jobs=10", "policy=fifo"]


@pytest.fixture(scope="module")
def tiny_run() -> RunOutput:
    return run_config(compose_config(TINY))


def tiny_cell(run: RunOutput, folder: Path, *extra: str) -> Path:
    """A complete cell: result files and the config they came from (``extra`` overrides make it
    another cell, e.g. ``+tag=b``: a sweep keeps one cell per config)."""
    return write_results(run, folder, compose_config([*TINY, *extra]))


def test_crash_while_writing_a_run_keeps_previous_files_and_no_summary(tmp_path, tiny_run, monkeypatch):
    folder = tmp_path / "cell"
    write_results(tiny_run, folder)
    before = {name: (folder / name).read_bytes() for name in ("jobs.parquet", "rounds.parquet", "tenants.parquet")}
    monkeypatch.setattr(pd.DataFrame, "to_parquet", half_then_crash)
    with pytest.raises(OSError, match="disk full"):
        write_results(tiny_run, folder)
    assert not (folder / "summary.json").exists()  # the rewrite is incomplete, and says so
    for name, data in before.items():
        assert (folder / name).read_bytes() == data  # previous files untouched and readable
    monkeypatch.undo()
    assert len(pd.read_parquet(folder / "jobs.parquet")) == 10
    assert sorted(p.name for p in folder.iterdir()) == [
        "jobs.parquet",
        "rounds.parquet",
        "tenants.parquet",
    ]  # no temporary left


def test_crash_while_collecting_keeps_previous_results_parquet(tmp_path, tiny_run, monkeypatch):
    sweep = tmp_path / "sweep"
    tiny_cell(tiny_run, sweep / "seed=0")
    collect(sweep)
    before = (sweep / "results.parquet").read_bytes()
    tiny_cell(tiny_run, sweep / "seed=1", "+tag=b")
    monkeypatch.setattr(pd.DataFrame, "to_parquet", half_then_crash)
    with pytest.raises(OSError):
        collect(sweep)
    monkeypatch.undo()
    assert (sweep / "results.parquet").read_bytes() == before
    assert pd.read_parquet(sweep / "results.parquet")["cell"].tolist() == ["seed=0"]
    assert not list(sweep.glob(".*.tmp"))
    collect(sweep)
    assert pd.read_parquet(sweep / "results.parquet")["cell"].tolist() == ["seed=0", "seed=1"]


def test_torn_summary_is_not_a_complete_cell(tmp_path, tiny_run):
    tiny_cell(tiny_run, tmp_path / "a")
    tiny_cell(tiny_run, tmp_path / "b")
    (tmp_path / "b" / "summary.json").write_text('{"avg_jct_s": 12')  # as if cut off mid-write by hand
    assert [c.name for c in complete_cells(tmp_path)] == ["a"]


def test_two_writers_of_one_file_do_not_clobber_each_other(tmp_path):
    """An orphaned worker and a rerun may write the same cell at once: interleave two writes."""
    target = tmp_path / "jobs.parquet"
    inner = pd.DataFrame({"x": [1, 2, 3]})
    outer = pd.DataFrame({"x": [4, 5]})

    def outer_write(p):
        outer.to_parquet(p)
        atomic_write(target, lambda q: inner.to_parquet(q))  # the other writer finishes in between

    atomic_write(target, outer_write)
    assert pd.read_parquet(target)["x"].tolist() == [4, 5]  # last rename wins, whole
    assert [p.name for p in tmp_path.iterdir()] == ["jobs.parquet"]


# ---- MLflow logging cut off ---------------------------------------------------------------------


@pytest.mark.slow
def test_mlflow_logging_cut_off_is_repaired_exactly_once(results, tiny_run, monkeypatch):
    from mlflow.tracking import MlflowClient

    sweep = results / "sweeps" / "log_cut"
    for seed in range(3):
        tiny_cell(tiny_run, sweep / f"seed={seed}", f"+tag={seed}")
    _, cells = collect(sweep)
    real = MlflowClient.set_terminated
    calls = {"n": 0}

    def dies_on_second(self, run_id, *args, **kwargs):
        calls["n"] += 1
        if calls["n"] == 2:
            raise KeyboardInterrupt  # the process dies between creating the run and finishing it
        return real(self, run_id, *args, **kwargs)

    monkeypatch.setattr(MlflowClient, "set_terminated", dies_on_second)
    with pytest.raises(KeyboardInterrupt):
        log_sweep(results, "log_cut", cells)
    monkeypatch.undo()
    assert logged_cells(results, "log_cut") == ["seed=0"]
    assert log_sweep(results, "log_cut", cells) == 2  # the torn run is deleted and logged afresh
    assert log_sweep(results, "log_cut", cells) == 0
    assert logged_cells(results, "log_cut") == ["seed=0", "seed=1", "seed=2"]


def test_orphaned_progress_files_of_this_machine_are_removed(tmp_path):
    """A progress file outlives a SIGKILLed parent; the next multirun of the sweep removes it,
    but keeps those of a live process here and of any run on another machine."""
    import socket

    from fairsim.experiment.sweep import new_run_id, progress_file, remove_orphaned_progress

    dead = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True, check=True
    ).stdout.strip()
    files = {
        "dead_here": progress_file(tmp_path, f"{dead}-0badc0de@{socket.gethostname()}"),
        "dead_old_format": progress_file(tmp_path, f"{dead}-0badc0de"),
        "alive_here": progress_file(tmp_path, new_run_id()),
        "elsewhere": progress_file(tmp_path, f"{dead}-0badc0de@another-host.example"),
    }
    for path in files.values():
        path.write_text("cell\t1.0\tran\n")
    remove_orphaned_progress(tmp_path)
    assert {k for k, p in files.items() if p.exists()} == {"alive_here", "elsewhere"}
