"""The launchers beyond the default one (docs/beyond.md): a small sweep through the Dask launcher,
on a local cluster the test starts itself (a scheduler and 2 worker processes on 127.0.0.1), and
through submitit's local executor (hydra-submitit-launcher, Slurm's launcher with local processes)
lands the same cells with the same numbers in results.parquet, jobs.parquet and MLflow as the
default joblib launcher does. Both extras (dask, slurm) are in requirements.lock, so these run in
`make test`. Their cost, medians of 3 on the shared 2-core machine (load average 4.5-6.2): the
joblib baseline with the Dask cluster's start 32 s, the Dask sweep 23 s, the submitit sweep 19 s;
the file 86 s wall, 45 s of CPU (most of it run.py's start, each worker's imports and MLflow
logging, not the 2 tiny cells). The rest of the file: about 1 s.
"""

from __future__ import annotations

import socket
from pathlib import Path

import pandas as pd
import pytest
from conftest import ROOT
from omegaconf import OmegaConf

from fairsim.experiment.refcheck import is_timed
from fairsim.experiment.tracking import CELL_TAG, RESULT_DIR_TAG, SWEEP_TAG, tracking_uri

GRID = ["policy=fifo,srtf", "num_jobs=12"]  # 2 tiny cells
CELLS = ["num_jobs=12,policy=fifo", "num_jobs=12,policy=srtf"]
# what names a sweep rather than its cells: each launcher's sweep has its own name (and so its own
# cell folders) in one results folder, whose MLflow store (made once: about 4 s of CPU) they share
SWEEP_PARAMS = {"sweep_name"}
SWEEP_TAGS = {SWEEP_TAG, RESULT_DIR_TAG}


def sweep(run_py, results: Path, name: str, *launcher: str, env: dict[str, str] | None = None) -> dict:
    proc = run_py("-m", *launcher, *GRID, f"results_dir={results}", f"sweep_name={name}", env=env, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return outcome(results, name)


def outcome(results: Path, name: str) -> dict:
    """What a sweep made, less what measures the machine or names the sweep: the cells' tables
    (results.parquet, jobs.parquet, by cell) and each cell's MLflow run (status, params, metrics, tags)."""
    folder = results / "sweeps" / name
    table = pd.read_parquet(folder / "results.parquet")
    assert set(table.pop("sweep")) == {name}
    table = table[[c for c in table.columns if not is_timed(c)]].sort_values("cell", ignore_index=True)
    jobs = pd.read_parquet(folder / "jobs.parquet").sort_values(["cell", "job_id"], ignore_index=True)
    return {"cells": sorted(table["cell"]), "results": table, "jobs": jobs, "mlflow": mlflow_runs(results, name)}


def mlflow_runs(results: Path, name: str) -> dict[str, dict]:
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=tracking_uri(results))
    runs = {}
    found = client.search_runs([client.get_experiment_by_name(name).experiment_id], max_results=100)
    (parent,) = [r for r in found if r.data.tags.get("fairsim.role") == "sweep"]  # the sweep's one parent run
    for run in found:
        if run is parent:
            continue
        tags, params = run.data.tags, run.data.params
        assert tags["mlflow.parentRunId"] == parent.info.run_id
        assert tags[SWEEP_TAG] == params["sweep_name"] == name
        runs[tags[CELL_TAG]] = {
            "status": run.info.status,
            "params": {k: v for k, v in params.items() if k not in SWEEP_PARAMS},
            "metrics": {k: v for k, v in run.data.metrics.items() if not is_timed(k)},
            "tags": {
                k: v
                for k, v in tags.items()
                if k.startswith(("fairsim.", "mlflow.source", "mlflow.git")) and k not in SWEEP_TAGS
            },
        }
    return runs


def assert_same_sweep(got: dict, want: dict) -> None:
    assert got["cells"] == want["cells"] == CELLS
    pd.testing.assert_frame_equal(got["results"], want["results"])
    pd.testing.assert_frame_equal(got["jobs"], want["jobs"])
    assert sorted(got["mlflow"]) == CELLS  # one run per cell
    for cell in CELLS:
        assert got["mlflow"][cell] == want["mlflow"][cell], cell
        assert got["mlflow"][cell]["status"] == "FINISHED"


@pytest.fixture(scope="module")
def results(tmp_path_factory) -> Path:
    """The results folder of every sweep here (each its own sweep_name), and so one MLflow store."""
    return tmp_path_factory.mktemp("results")


@pytest.fixture(scope="module")
def joblib_sweep(run_py, results) -> dict:
    """The grid on the default launcher (joblib, local processes): what the others must equal."""
    out = sweep(run_py, results, "joblib")
    assert out["results"]["finished_jobs"].tolist() == [12, 12]
    assert len(out["mlflow"][CELLS[0]]["metrics"]) > 10 and out["mlflow"][CELLS[0]]["params"]["num_jobs"] == "12"
    return out


@pytest.fixture
def dask_cluster():
    """A Dask scheduler and 2 worker processes on 127.0.0.1 (ports chosen by the system), closed
    when the test ends, failed or not; yields its address and a client of it."""
    from distributed import Client, LocalCluster

    with (
        LocalCluster(
            n_workers=2,
            threads_per_worker=1,
            processes=True,
            host="127.0.0.1",
            scheduler_port=0,
            dashboard_address=None,
        ) as cluster,
        Client(cluster) as client,
    ):
        yield cluster.scheduler_address, client


@pytest.mark.slow
def test_a_sweep_on_a_local_dask_cluster_equals_the_joblib_sweep(run_py, results, joblib_sweep, dask_cluster):
    from distributed import get_task_stream

    address, client = dask_cluster
    assert len(client.scheduler_info()["workers"]) == 2
    with get_task_stream(client) as tasks:  # what the cluster's workers ran meanwhile
        got = sweep(run_py, results, "dask", "hydra/launcher=dask", env={"DASK_SCHEDULER_ADDRESS": address})
    assert_same_sweep(got, joblib_sweep)
    assert tasks.data and {t["worker"] for t in tasks.data} <= set(client.scheduler_info()["workers"])


@pytest.mark.slow
def test_a_sweep_on_submitit_local_equals_the_joblib_sweep(run_py, results, joblib_sweep):
    got = sweep(run_py, results, "submitit", "hydra/launcher=submitit_local")
    assert_same_sweep(got, joblib_sweep)
    # submitit ran them: its record of each job (a folder named by the job's id) lies beside the cells
    jobs = [p for p in (results / "sweeps" / "submitit" / ".submitit").iterdir() if p.name.isdigit()]
    assert len(jobs) == len(CELLS)


def test_the_dask_launcher_config_reads_the_scheduler_from_the_environment(monkeypatch):
    """conf/hydra/launcher/dask.yaml: DASK_SCHEDULER_ADDRESS, or none (the launcher refuses then)."""
    launcher = OmegaConf.load(ROOT / "conf" / "hydra" / "launcher" / "dask.yaml")
    monkeypatch.setenv("DASK_SCHEDULER_ADDRESS", "tcp://127.0.0.1:8786")
    assert launcher.scheduler_address == "tcp://127.0.0.1:8786"
    monkeypatch.delenv("DASK_SCHEDULER_ADDRESS")
    assert launcher.scheduler_address is None


@pytest.mark.parametrize("address", [None, "", "nonsense", "tcp://127.0.0.1:port"])
def test_the_dask_launcher_refuses_a_missing_or_malformed_address_in_one_line(address, capsys):
    from hydra_plugins.fairsim_dask_launcher.dask_launcher import DaskLauncher

    with pytest.raises(SystemExit) as end:
        DaskLauncher(scheduler_address=address).setup(hydra_context=None, task_function=None, config=None)
    assert end.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("error: hydra/launcher=dask: hydra.launcher.scheduler_address: ")
    assert "DASK_SCHEDULER_ADDRESS=" in err


def test_the_dask_launcher_ends_in_one_line_when_no_scheduler_answers(capsys):
    import dask

    from hydra_plugins.fairsim_dask_launcher.dask_launcher import connected

    with socket.socket() as s:  # a port nothing listens on: bound, then closed
        s.bind(("127.0.0.1", 0))
        address = f"tcp://127.0.0.1:{s.getsockname()[1]}"
    with dask.config.set({"distributed.comm.timeouts.connect": "1s"}), pytest.raises(SystemExit) as end:
        connected(address)
    assert end.value.code == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(
        f"error: hydra/launcher=dask: no Dask scheduler answers at {address} ("
    )


def test_the_dask_launcher_refuses_a_relative_results_dir_when_workers_run_elsewhere(capsys):
    """Their cells would write under their own folder, where the sweep never looks."""
    from hydra_plugins.fairsim_dask_launcher.dask_launcher import check_worker_folders

    check_worker_folders("results/sweeps/s", "/repo", {"/repo"})  # the workers run from here: fine
    check_worker_folders("/shared/results/sweeps/s", "/repo", {"/repo", "/tmp"})  # absolute: fine anywhere
    with pytest.raises(SystemExit) as end:
        check_worker_folders("results/sweeps/s", "/repo", {"/repo", "/tmp"})
    assert end.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("error: hydra/launcher=dask: results_dir: ") and "/tmp" in err
