"""Sweeps that several hands share: two sweeps of one grid at once, damaged cells, a
damaged MLflow store, a full disk. Each case ends with the cells exactly once in results.parquet
and in MLflow, or with one line and a non-zero exit and no cell that looks complete."""

from __future__ import annotations

import re
import shutil
import subprocess
import threading
import time
from pathlib import Path

import pandas as pd
import pytest
from conftest import ROOT, run_py_command
from filelock import FileLock

from fairsim.experiment.collect import complete_cells
from fairsim.experiment.compose import compose_config
from fairsim.experiment.run_folder import identity_digest, identity_lock, identity_of_text, why_incomplete
from fairsim.experiment.single import run_config, write_results
from fairsim.experiment.sweep import claim_cell, config_text
from fairsim.experiment.tracking import _client, ensure_store, logged_cells
from fairsim.figures.sweep_summary import draw

GRID = ["policy=fifo,srtf", "load=0.5,0.8", "num_jobs=20"]
CELLS = sorted(f"load={x},num_jobs=20,policy={p}" for p in ("fifo", "srtf") for x in (0.5, 0.8))


@pytest.fixture(scope="module")
def results(tmp_path_factory) -> Path:
    """One results folder and MLflow store for the module (creating a store takes seconds)."""
    path = tmp_path_factory.mktemp("shared")
    ensure_store(path)
    return path


def sweep_args(results: Path, name: str, *grid: str) -> list[str]:
    return ["-m", f"results_dir={results}", f"sweep_name={name}", *(grid or GRID)]


def sweep(run_py, results: Path, name: str, *grid: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return run_py(*sweep_args(results, name, *grid), env=env)


def active_runs(results: Path, name: str) -> list[str]:
    client = _client(results)
    exp = client.get_experiment_by_name(name)
    runs = client.search_runs([exp.experiment_id], max_results=1000)
    assert sum(r.data.tags.get("fairsim.role") == "sweep" for r in runs) == 1  # one parent, whoever logged
    return sorted(r.data.tags["fairsim.cell"] for r in runs if "fairsim.cell" in r.data.tags)


def computed(stdout: str) -> int:
    return int(re.search(r"this run computed (\d+)", stdout).group(1))


@pytest.mark.slow
def test_two_sweeps_of_one_grid_started_together(results):
    """Whether the second waits for cells depends on timing (the claim test below forces it)."""
    name = "together"
    cells = CELLS
    procs = [
        subprocess.Popen(
            run_py_command(*sweep_args(results, name)),
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(2)
    ]
    outs = [p.communicate(timeout=300) for p in procs]
    for proc in procs:
        assert proc.returncode == 0, "\n----\n".join(o + e for o, e in outs)
    sweep_dir = results / "sweeps" / name
    assert sorted(pd.read_parquet(sweep_dir / "results.parquet")["cell"]) == cells  # one row per cell
    assert active_runs(results, name) == cells  # one MLflow run per cell, nothing duplicated
    assert logged_cells(results, name) == cells
    assert sum(computed(out) for out, _ in outs) == len(cells)  # each cell computed by one of them
    for out, _ in outs:  # each says how it got every cell: computed, found complete, or waited for
        counts = re.search(r"computed (\d+), found (\d+) complete, waited for (\d+)", out).groups()
        assert sum(map(int, counts)) == len(cells)


def digest_of(cfg) -> str:
    return identity_digest(identity_of_text(config_text(cfg)))


def test_a_cell_another_sweep_holds_is_waited_for_then_skipped(tmp_path, capsys):
    cfg = compose_config(["policy=fifo", "num_jobs=10"])
    folder = tmp_path / "sweep" / "policy=fifo"
    folder.mkdir(parents=True)
    lock = identity_lock(folder.parent, digest_of(cfg))
    lock.parent.mkdir()
    held = FileLock(lock)
    held.acquire()  # the other sweep is running the cell
    decided = {}

    def second_sweep():
        with claim_cell(folder, cfg) as home:
            decided["home"] = home

    waiter = threading.Thread(target=second_sweep)
    waiter.start()
    time.sleep(0.5)
    assert waiter.is_alive() and "home" not in decided  # it waits while the lock is held
    out = run_config(cfg)
    write_results(out, folder, cfg)
    assert (folder / "config.yaml").read_text() == config_text(cfg)
    held.release()
    waiter.join(timeout=30)
    assert decided == {"home": None}
    printed = capsys.readouterr().out
    assert "another sweep or worker is running this cell; waiting for it" in printed
    assert "skipped (computed by another sweep" in printed


def test_two_spellings_of_one_cell_at_once_compute_it_once_in_one_folder(tmp_path, capsys):
    """``load=1`` and the default ``load: 1.0`` claimed together: the first runs it in its own
    folder; the second waits, finds it there, and its own folder (as Hydra made it) is gone."""
    sweep_dir = tmp_path / "sweep"
    spellings = {
        "num_jobs=10,policy=fifo": ["policy=fifo", "num_jobs=10"],
        "load=1,num_jobs=10,policy=fifo": ["policy=fifo", "num_jobs=10", "load=1"],
    }
    cfgs = {name: compose_config(overrides) for name, overrides in spellings.items()}
    assert len({digest_of(cfg) for cfg in cfgs.values()}) == 1  # one identity, whatever the spelling
    for name in spellings:
        (sweep_dir / name / ".hydra").mkdir(parents=True)  # Hydra makes each job's folder before it runs
    first_in, release = threading.Event(), threading.Event()
    homes, ran = {}, []

    def claim(name):
        with claim_cell(sweep_dir / name, cfgs[name]) as home:
            homes[name] = home
            if home is not None:
                first_in.set()
                release.wait(30)
                write_results(run_config(cfgs[name]), home, cfgs[name])
                ran.append(name)

    first = threading.Thread(target=claim, args=("num_jobs=10,policy=fifo",))
    first.start()
    assert first_in.wait(30)
    second = threading.Thread(target=claim, args=("load=1,num_jobs=10,policy=fifo",))
    second.start()
    time.sleep(0.5)
    assert second.is_alive()  # it waits on the identity's lock, though its folder is another
    release.set()
    for t in (first, second):
        t.join(timeout=60)
    assert ran == ["num_jobs=10,policy=fifo"] and homes["load=1,num_jobs=10,policy=fifo"] is None
    assert sorted(p.name for p in sweep_dir.iterdir() if not p.name.startswith(".")) == ["num_jobs=10,policy=fifo"]
    printed = capsys.readouterr().out
    assert "load=1,num_jobs=10,policy=fifo: the same config as num_jobs=10,policy=fifo" in printed


def test_a_folder_made_before_the_index_is_found_by_another_spelling(tmp_path):
    """A sweep folder from before identities were indexed: the sweep's start indexes it, and a
    spelling of its config (here load=1.0 over the default) is skipped, its own folder removed."""
    from fairsim.experiment.run_folder import INDEX, index_sweep

    sweep_dir = tmp_path / "sweep"
    old_cfg = compose_config(["policy=fifo", "num_jobs=10"])
    write_results(run_config(old_cfg), sweep_dir / "num_jobs=10,policy=fifo", old_cfg)
    assert not (sweep_dir / INDEX).exists()
    assert index_sweep(sweep_dir) == 1 and index_sweep(sweep_dir) == 0
    spelled = sweep_dir / "load=1.0,num_jobs=10,policy=fifo"
    (spelled / ".hydra").mkdir(parents=True)
    with claim_cell(spelled, compose_config(["policy=fifo", "num_jobs=10", "load=1.0"])) as home:
        assert home is None
    assert not spelled.exists()


@pytest.mark.slow
def test_damaged_cells_are_recomputed_and_collected(results, run_py):
    name = "damaged"
    first = sweep(run_py, results, name)
    assert first.returncode == 0, first.stderr[-2000:]
    sweep_dir = results / "sweeps" / name
    torn, garbled = sweep_dir / CELLS[0], sweep_dir / CELLS[1]
    (torn / "summary.json").write_text('{"avg_jct_s": 12')  # cut off mid-write
    (garbled / "jobs.parquet").write_bytes(b"PAR1 not a parquet file PAR1")
    assert why_incomplete(torn).startswith("summary.json is damaged")
    assert why_incomplete(garbled).startswith("jobs.parquet is unreadable")
    assert [c.name for c in complete_cells(sweep_dir)] == CELLS[2:]  # the collector agrees with the runner
    again = sweep(run_py, results, name)
    assert again.returncode == 0, again.stderr[-2000:]
    assert f"{torn.name}: recomputing: summary.json is damaged" in again.stdout
    assert f"{garbled.name}: recomputing: jobs.parquet is unreadable" in again.stdout
    assert computed(again.stdout) == 2 and again.stdout.count("skipped (complete)") == 2
    assert sorted(pd.read_parquet(sweep_dir / "results.parquet")["cell"]) == CELLS
    assert logged_cells(results, name) == CELLS


@pytest.mark.slow
def test_spellings_of_one_cell_share_its_folder_row_and_mlflow_run(results, run_py):
    """Two cells with load left at its default (made here as a sweep made them before its index
    existed), then the sweep with load=1 and load=1.0 (each spelling's jobs running at once on the
    workers): 2 cells, 2 folders, 2 rows, 2 MLflow runs, nothing recomputed."""
    name, grid = "spellings", ["policy=fifo", "seed=0,1", "num_jobs=20"]
    sweep_dir = results / "sweeps" / name
    cells = [f"num_jobs=20,policy=fifo,seed={s}" for s in (0, 1)]
    for seed, cell in enumerate(cells):
        cfg = compose_config(
            ["policy=fifo", f"seed={seed}", "num_jobs=20", f"sweep_name={name}", f"results_dir={results}"]
        )
        write_results(run_config(cfg), sweep_dir / cell, cfg)
    again = sweep(run_py, results, name, *grid, "load=1,1.0")
    assert again.returncode == 0, again.stdout[-2000:] + again.stderr[-2000:]
    assert computed(again.stdout) == 0 and again.stdout.count("skipped (complete)") == 4
    assert "warning" not in again.stdout
    assert sorted(p.name for p in sweep_dir.iterdir() if p.is_dir() and not p.name.startswith(".")) == cells
    assert sorted(pd.read_parquet(sweep_dir / "results.parquet")["cell"]) == cells
    assert active_runs(results, name) == cells


@pytest.mark.slow
def test_duplicates_from_before_are_collected_and_logged_once(results):
    """Two folders of one config, both logged to MLflow before a sweep kept one folder per config:
    the collection keeps the first, names the other, and deletes the other's MLflow run."""
    from fairsim.experiment.sweep import collect_and_log
    from fairsim.experiment.tracking import log_sweep

    name = "duplicates"
    sweep_dir = results / "sweeps" / name
    folders = [sweep_dir / "load=1,num_jobs=10,policy=fifo", sweep_dir / "num_jobs=10,policy=fifo"]
    cfg = compose_config(["policy=fifo", "num_jobs=10"])
    out = run_config(cfg)
    for folder in folders:
        write_results(out, folder, cfg)
    assert log_sweep(results, name, folders) == 2  # as an older sweep logged them
    done = collect_and_log(sweep_dir, results)
    assert [c.name for c in done.cells] == [folders[0].name]
    assert done.incomplete == {
        folders[1].name: f"the same config as {folders[0].name} (one row per config; this folder is not collected)"
    }
    assert active_runs(results, name) == [folders[0].name]


@pytest.mark.slow
def test_a_sweep_of_long_overrides_fits_its_folder_names_and_draws_its_settings(results, run_py):
    """Many long overrides (the cell's name would pass 255 bytes) and a policy option swept: the
    names are cut with a digest, the option is a column of results.parquet and jobs.parquet, and
    the summary figure draws one series per value."""
    name = "long"
    extra = [f"+a_setting_with_a_rather_long_name_{i}=and_a_rather_long_value_{i}" for i in range(8)]
    proc = sweep(run_py, results, name, "policy=fifo", "num_jobs=10", "policy.backfill=true,false", *extra)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    sweep_dir = results / "sweeps" / name
    table = pd.read_parquet(sweep_dir / "results.parquet")
    assert len(table) == 2 and all(len(c.encode()) <= 255 and c.startswith("+a_setting") for c in table["cell"])
    assert sorted(table["policy.backfill"]) == [False, True]
    jobs = pd.read_parquet(sweep_dir / "jobs.parquet")
    assert jobs.groupby("policy.backfill").size().to_dict() == {False: 10, True: 10}
    *_, csv = draw(sweep_dir)
    data = pd.read_csv(csv)
    assert sorted(data.loc[data["metric"] == "avg_jct_h", "policy.backfill"]) == [False, True]
    assert active_runs(results, name) == sorted(table["cell"])


def test_a_summary_that_disagrees_with_its_config_is_not_complete(tmp_path):
    cfg = compose_config(["policy=fifo", "num_jobs=10"])
    write_results(run_config(cfg), tmp_path / "cell", cfg)
    assert why_incomplete(tmp_path / "cell") is None
    text = (tmp_path / "cell" / "summary.json").read_text()
    (tmp_path / "cell" / "summary.json").write_text(text.replace('"policy": "fifo"', '"policy": "srtf"'))
    assert "says policy='srtf' but config.yaml says 'fifo'" in why_incomplete(tmp_path / "cell")


@pytest.mark.slow
def test_a_damaged_mlflow_store_costs_no_results(results, tmp_path, run_py):
    bad = tmp_path / "bad_store"
    bad.mkdir()
    (bad / "mlflow.db").write_text("not a database\n" * 100)
    proc = sweep(run_py, bad, "store")
    assert proc.returncode == 1
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip() and not ln.startswith("[20")]
    assert len(lines) == 1, proc.stderr[-3000:]
    assert (
        lines[0].startswith(f"error: MLflow store sqlite:///{(bad / 'mlflow.db').resolve()}")
        and "file is not a database" in lines[0]
    )
    sweep_dir = bad / "sweeps" / "store"
    assert sorted(pd.read_parquet(sweep_dir / "results.parquet")["cell"]) == CELLS  # results complete
    # the store repaired (here: a good one put in its place), the same command logs what was missed
    shutil.copy(results / "mlflow.db", bad / "mlflow.db")
    again = sweep(run_py, bad, "store")
    assert again.returncode == 0, again.stderr[-2000:]
    assert "4 newly logged to MLflow" in again.stdout
    assert logged_cells(bad, "store") == CELLS


SITE_ENOSPC = """
import errno, os
import pandas as pd
_real = pd.DataFrame.to_parquet
def _disk_full(self, path, *args, **kwargs):
    if "rounds" in str(path):  # after the cell's jobs.parquet landed: the disk fills mid-cell
        raise OSError(errno.ENOSPC, "[errno 28] No space left on device")
    return _real(self, path, *args, **kwargs)
pd.DataFrame.to_parquet = _disk_full
"""


@pytest.mark.slow
def test_a_full_disk_ends_the_sweep_in_one_line_with_no_cell_complete(results, tmp_path, run_py):
    """ENOSPC injected into every process of the sweep (a sitecustomize on PYTHONPATH) at the
    second file a cell writes."""
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(SITE_ENOSPC)
    proc = sweep(run_py, results, "full_disk", env={"PYTHONPATH": f"{site}:{ROOT}"})
    assert proc.returncode == 1
    assert "Traceback" not in proc.stderr
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip() and not ln.startswith("[20")]
    assert len(lines) == 1, proc.stderr[-3000:]
    sweep_dir = results / "sweeps" / "full_disk"
    assert re.match(rf"error: no space left on device: {re.escape(str(sweep_dir))}/\S+: free space there", lines[0])
    assert complete_cells(sweep_dir) == []
    assert not list(sweep_dir.glob("*/summary.json"))
    assert list(sweep_dir.glob("*/jobs.parquet"))  # the cut-off cells got that far, and are not complete
