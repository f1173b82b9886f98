"""MLflow logging: each run carries its folder's provenance (MLflow's source, git and user tags,
fairsim's code digest), the simulation's own start and end times and the folder's small files
as artifacts; experiments are marked as classic ML; logging stays exactly-once when it is cut
off after the artifacts and when a cell is recomputed."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pytest

from fairsim.experiment import tracking
from fairsim.experiment.compose import compose_config
from fairsim.experiment.run_folder import PROVENANCE, RUN_LOG
from fairsim.experiment.single import run_config, write_results
from fairsim.experiment.tracking import (
    ARTIFACTS,
    CUSTOM_MODEL_KIND,
    EXPERIMENT_KIND_TAG,
    ensure_store,
    log_sweep,
    logged_cells,
    run_tags,
    runs_url,
)

TINY = ["num_jobs=10", "policy=fifo"]


def ms(stamp: str) -> int:
    return round(dt.datetime.fromisoformat(stamp).timestamp() * 1000)


# ---- without a store ---------------------------------------------------------------------------


def test_tags_follow_mlflow_names_and_a_folder_without_provenance_gets_what_is_known(tmp_path):
    from mlflow.utils import mlflow_tags as mt

    record = {
        "argv": ["run.py", "-m"],
        "git": {"commit": "abc123", "dirty": True},
        "user": "ana",
        "code_digest": "d" * 64,
    }
    tags = run_tags(tmp_path / "seed=0", "sw", record)
    assert tags[mt.MLFLOW_SOURCE_NAME] == "run.py" and tags[mt.MLFLOW_SOURCE_TYPE] == "LOCAL"
    assert tags[mt.MLFLOW_GIT_COMMIT] == "abc123" and tags[mt.MLFLOW_GIT_DIRTY] == tags["fairsim.dirty"] == "true"
    assert tags[mt.MLFLOW_USER] == "ana" and tags["fairsim.code_digest"] == "d" * 64
    assert (tags["fairsim.cell"], tags["fairsim.sweep"]) == ("seed=0", "sw")
    bare = run_tags(tmp_path / "seed=0", "sw", None)
    assert set(bare) == {"fairsim.cell", "fairsim.sweep", "fairsim.result_dir", mt.MLFLOW_SOURCE_TYPE}
    assert mt.MLFLOW_GIT_COMMIT not in run_tags(tmp_path, "sw", {"git": None, "argv": []})


def test_times_come_from_provenance_only_when_both_are_readable_and_in_order():
    start, end = "2026-12-02T01:02:03.123+00:00", "2026-12-02T01:02:05.500+01:00"
    assert tracking._times({"started_at": start, "finished_at": "2026-12-02T01:02:05.500+00:00"}) == (
        ms(start),
        ms(start) + 2377,
    )
    assert tracking._times({"started_at": start, "finished_at": end}) == (None, None)  # ends before it starts
    assert tracking._times({"started_at": start}) == (None, None)
    assert tracking._times({"started_at": "2026-12-02T01:02:03", "finished_at": start}) == (None, None)  # no offset
    assert tracking._times(None) == (None, None)


def test_runs_url_opens_the_runs_table_in_the_ml_layout_and_fairsims_view():
    assert (
        runs_url("7", "http://127.0.0.1:5001/")
        == "http://127.0.0.1:5001/#/experiments/7/runs?workflowType=machine_learning&viewStateShareKey=fairsim"
    )


# ---- with a store ------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def results(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("tracking")
    ensure_store(path)
    return path


@pytest.fixture(scope="module")
def tiny():
    cfg = compose_config(TINY)
    return run_config(cfg), cfg


def cells(results: Path, tiny, sweep: str, n: int = 2) -> list[Path]:
    out, cfg = tiny
    folders = [write_results(out, results / "sweeps" / sweep / f"seed={i}", cfg) for i in range(n)]
    (folders[0] / RUN_LOG).write_text("what the run printed\n")
    return folders


def runs_of(results: Path, sweep: str) -> dict:
    client = tracking._client(results)
    exp = client.get_experiment_by_name(sweep)
    return {
        r.data.tags["fairsim.cell"]: r for r in client.search_runs([exp.experiment_id]) if "fairsim.cell" in r.data.tags
    }


def parents_of(results: Path, sweep: str) -> list:
    client = tracking._client(results)
    exp = client.get_experiment_by_name(sweep)
    return [r for r in client.search_runs([exp.experiment_id]) if r.data.tags.get(tracking.ROLE_TAG) == "sweep"]


@pytest.mark.slow
def test_a_run_carries_its_folders_provenance_times_and_files(results, tiny):
    from mlflow.utils import mlflow_tags as mt

    folders = cells(results, tiny, "prov")
    assert log_sweep(results, "prov", folders) == 2
    client = tracking._client(results)
    runs = runs_of(results, "prov")
    for folder in folders:
        record = json.loads((folder / PROVENANCE).read_text())
        run = runs[folder.name]
        tags = run.data.tags
        assert tags["fairsim.code_digest"] == record["code_digest"]
        if record["git"] is None:  # not a git checkout: nothing to claim
            assert mt.MLFLOW_GIT_COMMIT not in tags
        else:
            assert tags[mt.MLFLOW_GIT_COMMIT] == record["git"]["commit"]
            assert tags["fairsim.dirty"] == tags[mt.MLFLOW_GIT_DIRTY] == str(record["git"]["dirty"]).lower()
        assert tags[mt.MLFLOW_SOURCE_NAME] == record["argv"][0] and tags[mt.MLFLOW_SOURCE_TYPE] == "LOCAL"
        assert tags[mt.MLFLOW_RUN_NAME] == run.info.run_name == f"fifo {folder.name}"  # the policy, then what varies
        if record["user"]:
            assert tags[mt.MLFLOW_USER] == run.info.user_id == record["user"]
        assert tags["fairsim.result_dir"] == str(folder.resolve()) and tags["fairsim.sweep"] == "prov"
        assert (run.info.start_time, run.info.end_time) == (ms(record["started_at"]), ms(record["finished_at"]))
        listed = sorted(a.path for a in client.list_artifacts(run.info.run_id))
        assert listed == sorted(n for n in ARTIFACTS if (folder / n).is_file())
        assert (RUN_LOG in listed) == (folder.name == "seed=0")
        assert "jobs.parquet" not in listed
        store_dir = tracking._artifact_dir(run.info.artifact_uri, results)
        assert store_dir is not None and store_dir.is_relative_to(results.resolve() / "mlartifacts" / "prov")


@pytest.mark.slow
def test_a_folder_without_provenance_is_logged_with_the_loggings_times(results, tiny):
    (folder,) = cells(results, tiny, "old", n=1)
    (folder / PROVENANCE).unlink()
    before = dt.datetime.now(dt.UTC).timestamp() * 1000
    assert log_sweep(results, "old", [folder]) == 1
    run = runs_of(results, "old")[folder.name]
    assert "fairsim.code_digest" not in run.data.tags and run.info.start_time >= before - 1000
    assert log_sweep(results, "old", [folder]) == 0  # no start time to compare: a FINISHED run is kept


@pytest.mark.slow
def test_experiments_are_marked_as_classic_ml_also_when_made_before(results, tiny):
    folders = cells(results, tiny, "kind", n=1)
    log_sweep(results, "kind", folders)
    client = tracking._client(results)
    assert client.get_experiment_by_name("kind").tags[EXPERIMENT_KIND_TAG] == CUSTOM_MODEL_KIND
    bare = client.create_experiment("made_before")  # as an older fairsim (or anyone) left it
    assert EXPERIMENT_KIND_TAG not in client.get_experiment(bare).tags
    listed = tracking.mark_experiments(results)
    assert client.get_experiment(bare).tags[EXPERIMENT_KIND_TAG] == CUSTOM_MODEL_KIND
    assert "kind" in listed and "made_before" not in listed  # only experiments with runs are listed
    log_sweep(results, "made_before", folders)
    assert client.get_experiment(bare).tags[EXPERIMENT_KIND_TAG] == CUSTOM_MODEL_KIND


@pytest.mark.slow
def test_logging_cut_off_after_the_artifacts_is_relogged_once_with_its_files(results, tiny, monkeypatch):
    from mlflow.tracking import MlflowClient

    folders = cells(results, tiny, "torn", n=3)
    real = MlflowClient.set_terminated
    calls = {"n": 0}

    def dies_on_second(self, run_id, *args, **kwargs):
        calls["n"] += 1
        if calls["n"] == 2:
            raise KeyboardInterrupt  # the run has its artifacts but never becomes FINISHED
        return real(self, run_id, *args, **kwargs)

    monkeypatch.setattr(MlflowClient, "set_terminated", dies_on_second)
    with pytest.raises(KeyboardInterrupt):
        log_sweep(results, "torn", folders)
    monkeypatch.undo()
    (torn,) = [r for c, r in runs_of(results, "torn").items() if r.info.status != "FINISHED"]
    torn_dir = tracking._artifact_dir(torn.info.artifact_uri, results)
    assert sorted(p.name for p in torn_dir.iterdir())  # its partial files are there
    assert log_sweep(results, "torn", folders) == 2
    assert not torn_dir.parent.exists()  # deleted with the torn run
    assert log_sweep(results, "torn", folders) == 0
    assert logged_cells(results, "torn") == ["seed=0", "seed=1", "seed=2"]
    client = tracking._client(results)
    for run in runs_of(results, "torn").values():
        assert sorted(a.path for a in client.list_artifacts(run.info.run_id)) == sorted(
            n for n in ARTIFACTS if (Path(run.data.tags["fairsim.result_dir"]) / n).is_file()
        )


@pytest.mark.slow
def test_a_recomputed_cell_replaces_its_run(results, tiny):
    folders = cells(results, tiny, "recomputed", n=2)
    assert log_sweep(results, "recomputed", folders) == 2
    first = runs_of(results, "recomputed")
    record = json.loads((folders[1] / PROVENANCE).read_text())

    def later(stamp):
        return (dt.datetime.fromisoformat(stamp) + dt.timedelta(hours=1)).isoformat(timespec="milliseconds")

    record.update(started_at=later(record["started_at"]), finished_at=later(record["finished_at"]))
    (folders[1] / PROVENANCE).write_text(json.dumps(record))  # as a stale cell's rerun leaves it
    assert log_sweep(results, "recomputed", folders) == 1
    assert log_sweep(results, "recomputed", folders) == 0
    now = runs_of(results, "recomputed")
    assert now["seed=0"].info.run_id == first["seed=0"].info.run_id
    assert now["seed=1"].info.run_id != first["seed=1"].info.run_id
    assert now["seed=1"].info.start_time == ms(record["started_at"])
    assert logged_cells(results, "recomputed") == ["seed=0", "seed=1"]


@pytest.mark.slow
def test_make_ui_prints_each_experiments_runs_table(results, tiny, capsys):
    log_sweep(results, "listed", cells(results, tiny, "listed", n=1))
    assert tracking.main([str(results), "--address", "http://127.0.0.1:5999"]) == 0
    exp_id = tracking._client(results).get_experiment_by_name("listed").experiment_id
    lines = [line.split() for line in capsys.readouterr().out.splitlines()]
    address = (
        f"http://127.0.0.1:5999/#/experiments/{exp_id}/runs?workflowType=machine_learning&viewStateShareKey=fairsim"
    )
    assert ["listed", address] in lines
    assert tracking.main([str(results / "nowhere")]) == 0
    assert "no store" in capsys.readouterr().out and not (results / "nowhere").exists()


@pytest.mark.slow
def test_a_single_run_reads_only_its_own_runs_and_leaves_the_others_alone(results, tiny):
    """The "runs" experiment holds every single run so far: logging one reads its own runs (a
    torn one of its own is replaced), not the whole experiment (another's torn run is left)."""
    from mlflow.entities import RunStatus

    from fairsim.experiment.tracking import RUNS_EXPERIMENT, log_single_run

    first, second = cells(results, tiny, "singles")
    client = tracking._client(results)
    exp_id = tracking._experiment_id(client, RUNS_EXPERIMENT, results)
    torn = {f.name: client.create_run(exp_id, run_name=f.name, tags={"fairsim.cell": f.name}) for f in (first, second)}
    assert log_single_run(results, first) == 1
    runs = client.search_runs([exp_id])
    by_id = {r.info.run_id: r for r in runs}
    assert torn[first.name].info.run_id not in by_id  # its own torn run: deleted, logged afresh
    assert by_id[torn[second.name].info.run_id].info.status == RunStatus.to_string(RunStatus.RUNNING)  # not read
    assert sorted(logged_cells(results, RUNS_EXPERIMENT)) == [first.name]


@pytest.mark.slow
def test_a_sweep_is_one_parent_run_with_its_cells_as_children_however_often_it_is_logged(results, tiny):
    from mlflow.utils.mlflow_tags import MLFLOW_PARENT_RUN_ID

    folders = cells(results, tiny, "nested", n=3)
    assert log_sweep(results, "nested", folders[:1]) == 1
    (parent,) = parents_of(results, "nested")
    assert parent.info.run_name == "nested" and parent.info.status == "FINISHED"
    assert runs_of(results, "nested")["seed=0"].info.run_name == "fifo"  # nothing varies yet
    assert log_sweep(results, "nested", folders) == 2  # resumed with more cells
    assert log_sweep(results, "nested", folders) == 0
    (again,) = parents_of(results, "nested")
    assert again.info.run_id == parent.info.run_id and again.data.metrics["cells"] == 3
    runs = runs_of(results, "nested")
    assert sorted(r.info.run_name for r in runs.values()) == ["fifo seed=0", "fifo seed=1", "fifo seed=2"]
    assert {r.data.tags[MLFLOW_PARENT_RUN_ID] for r in runs.values()} == {parent.info.run_id}
    assert again.info.end_time == max(r.info.end_time for r in runs.values())


@pytest.mark.slow
def test_a_sweep_logged_before_parents_existed_gets_one_and_keeps_its_runs(results, tiny):
    from mlflow.utils.mlflow_tags import MLFLOW_PARENT_RUN_ID

    folders = cells(results, tiny, "legacy", n=2)
    log_sweep(results, "legacy", folders)
    client = tracking._client(results)
    (parent,) = parents_of(results, "legacy")
    client.delete_run(parent.info.run_id)  # as an older fairsim left the store: cells, no parent
    before = runs_of(results, "legacy")
    for run in before.values():
        client.delete_tag(run.info.run_id, MLFLOW_PARENT_RUN_ID)
    assert log_sweep(results, "legacy", folders) == 0
    (made,) = parents_of(results, "legacy")
    after = runs_of(results, "legacy")
    assert {c: r.info.run_id for c, r in after.items()} == {c: r.info.run_id for c, r in before.items()}
    assert {r.data.tags[MLFLOW_PARENT_RUN_ID] for r in after.values()} == {made.info.run_id}


def test_run_names_lead_with_the_policy_then_the_overrides_that_vary(tmp_path):
    folders = []
    for name in (
        "load=0.5,num_jobs=20,policy=ours",
        "load=0.8,num_jobs=20,policy=ours",
        "load=0.8,num_jobs=20,policy=fifo",
    ):
        (tmp_path / name).mkdir()
        folders.append(tmp_path / name)
    (folders[0] / ".hydra").mkdir()  # Hydra's record, where a sweep wrote one, wins over the folder's name
    (folders[0] / ".hydra" / "overrides.yaml").write_text("- load=0.5\n- num_jobs=20\n- policy=FFT\n- sweep_name=s\n")
    names = tracking.run_names(folders, {folders[0].name: "ours", folders[1].name: "ours", folders[2].name: ""})
    assert list(names.values()) == ["ours load=0.5", "ours load=0.8", "fifo load=0.8"]
    assert tracking.run_names(folders[1:2], {}) == {folders[1].name: "ours"}  # the policy of the folder's name
    assert tracking.run_names(folders[:1], {folders[0].name: "ours"}, single=True) == {
        folders[0].name: f"ours {folders[0].name}"
    }


def test_the_saved_view_shows_the_key_metrics_and_the_ui_command_works_from_anywhere(tmp_path):
    state = json.loads(tracking.view_state())
    assert state["selectedColumns"] == ["metrics.`avg_jct_s`", "metrics.`rho_fluid_mean`", "metrics.`makespan_s`"]
    assert runs_url("7").endswith("/#/experiments/7/runs?workflowType=machine_learning&viewStateShareKey=fairsim")
    import shlex
    import sys

    assert shlex.split(tracking.ui_command(tmp_path)) == [
        sys.executable,
        "-m",
        "fairsim.experiment.ui",
        str(tmp_path.resolve()),
    ]
