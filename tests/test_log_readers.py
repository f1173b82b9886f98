"""The job-log readers (fairsim/workload/formats: helios, pai2020, philly_log) on a few rows
written in each log's documented format (tests/data): the jobs kept and what they become, each
drop reason, the options, and the one-line refusal of a malformed row."""

from __future__ import annotations

import csv
import json
import shutil
import warnings
from datetime import datetime
from pathlib import Path

import numpy as np
import pytest
from conftest import ROOT

from fairsim.cluster import ClusterSpec
from fairsim.errors import InputError
from fairsim.files import recording_inputs
from fairsim.workload.formats import LOG_COLUMNS, helios, pai2020, philly_log

DATA = ROOT / "tests" / "data"
HELIOS = DATA / "helios_cluster_log_sample.csv"
PAI = DATA / "pai2020_sample"
PHILLY = DATA / "philly_cluster_job_log_sample.json"


def _accounts_for_every_row(read) -> None:
    assert read.meta["rows"] == read.meta["jobs_kept"] + sum(read.dropped.values())
    assert read.meta["jobs_kept"] == len(read.log)
    assert set(read.log.columns) <= set(LOG_COLUMNS)
    submit = read.log["submit_s"].to_numpy()
    assert np.all(np.diff(submit) >= 0)
    assert read.meta["span_s"] == pytest.approx(submit[-1] - submit[0])
    assert (read.log["duration_s"] > 0).all() and (read.log["gpus"] >= 1).all()


def _edited(source: Path, target: Path, line: int, old: str, new: str) -> Path:
    """``source`` written to ``target`` with ``old`` replaced on its 1-based ``line``."""
    lines = source.read_text().splitlines(keepends=True)
    assert old in lines[line - 1]
    lines[line - 1] = lines[line - 1].replace(old, new, 1)
    target.write_text("".join(lines))
    return target


def _pai_copy(tmp_path: Path) -> Path:
    return Path(shutil.copytree(PAI, tmp_path / "pai"))


# ---- Helios ------------------------------------------------------------------------------------


def _helios_rows() -> dict[str, dict]:
    with open(HELIOS, newline="") as f:
        return {row["job_id"]: row for row in csv.DictReader(f)}


def test_helios_keeps_the_gpu_jobs_that_ran_in_submit_order():
    read = helios.read(HELIOS, {}, "workload")
    rows = _helios_rows()
    _accounts_for_every_row(read)
    kept = list(read.log["job_id"])
    assert kept == sorted(kept, key=lambda j: rows[j]["submit_time"])  # the file is not in submit order
    assert set(kept) == {"5001", "5003", "5006"}
    for job in read.log.itertuples():
        row = rows[job.job_id]
        assert job.duration_s == float(row["duration"])  # the log's own end - start
        assert job.gpus == int(row["gpu_num"]) and job.tenant == row["vc"] and job.status == row["state"]
        assert job.gpu_type is None
    assert read.dropped == {"cpu_only": 1, "no_start_or_end": 1, "non_positive_duration": 1, "no_submit_time": 1}


def test_helios_tenant_user_and_gpu_type_options():
    read = helios.read(HELIOS, {"tenant": "user", "gpu_type": "V100"}, "workload")
    rows = _helios_rows()
    assert [t for t in read.log["tenant"]] == [rows[j]["user"] for j in read.log["job_id"]]
    assert set(read.log["gpu_type"]) == {"V100"}
    with pytest.raises(InputError, match="tenant: must be one of vc, user, got 'group'"):
        helios.read(HELIOS, {"tenant": "group"}, "workload")


def test_helios_reads_a_cluster_folder(tmp_path):
    shutil.copy(HELIOS, tmp_path / "cluster_log.csv")
    assert len(helios.read(tmp_path, {}, "workload").log) == len(helios.read(HELIOS, {}, "workload").log)


@pytest.mark.parametrize(
    "line, old, new, column",
    [
        (2, ",8,32,", ",eight,32,", "gpu_num"),
        (4, ",1,2,", ",1.5,2,", "gpu_num"),
        (7, "2020-06-09 18:46:00", "2020-06-09 18:46", "start_time"),
        (3, "2020-06-09 18:41:02", "yesterday", "end_time"),
    ],
)
def test_helios_refuses_a_malformed_row_naming_line_and_column(tmp_path, line, old, new, column):
    bad = _edited(HELIOS, tmp_path / "cluster_log.csv", line, old, new)
    with pytest.raises(InputError) as caught:
        helios.read(bad, {}, "workload")
    message = str(caught.value)
    assert f"{bad}:{line}: {column}: must be" in message and repr(new.strip(",").split(",")[0]) in message
    assert "\n" not in message


def test_helios_refuses_a_missing_column_and_a_short_row(tmp_path):
    no_state = _edited(HELIOS, tmp_path / "no_state.csv", 1, ",state,", ",status,")
    with pytest.raises(InputError, match=r":1: header: misses the column\(s\) state"):
        helios.read(no_state, {}, "workload")
    short = tmp_path / "short.csv"
    short.write_text("".join(HELIOS.read_text().splitlines(keepends=True)[:3]) + "5009,uA,vcA,1\n")
    with pytest.raises(InputError, match=r"short.csv:4: fields: has 4 comma-separated fields, expected 12"):
        helios.read(short, {}, "workload")


# ---- Alibaba PAI 2020 --------------------------------------------------------------------------


def test_pai_sums_the_gpu_tasks_of_a_job():
    read = pai2020.read(PAI, {}, "workload")
    _accounts_for_every_row(read)
    jobs = read.log.set_index("job_id")
    assert list(read.log["job_id"]) == ["j02_kept_ps_worker", "j01_kept_t4"]
    ps_worker = jobs.loc["j02_kept_ps_worker"]
    assert ps_worker.gpus == 4 * 200 // 100  # the ps task asks for no GPU
    assert ps_worker.duration_s == 4700.0 - 920.0  # the worker's run, not the ps task's longer one
    assert ps_worker.gpu_type == "V100" and ps_worker.submit_s == 900.0 and ps_worker.tenant == "user_b"
    t4 = jobs.loc["j01_kept_t4"]
    assert (t4.gpus, t4.duration_s, t4.gpu_type, t4.status) == (2, 600.0, "T4", "Terminated")
    assert read.dropped == {
        "repeated_job_name": 2,
        "no_tasks": 1,
        "cpu_only": 1,
        "fractional_gpu": 1,
        "no_instance_count": 1,
        "mixed_gpu_types": 1,
        "no_submit_time": 1,
        "no_start_or_end": 2,
        "non_positive_duration": 1,
    }
    assert read.meta["task_rows_without_job"] == 1 and read.meta["task_rows_read"] == 14


def test_pai_round_up_gives_each_fractional_instance_a_whole_gpu():
    read = pai2020.read(PAI, {"fractional_gpus": "round_up"}, "workload")
    half = read.log.set_index("job_id").loc["j04_half_gpu"]
    assert half.gpus == 2 and half.gpu_type == "MISC"
    assert "fractional_gpu" not in read.dropped
    with pytest.raises(InputError, match="fractional_gpus: must be one of drop, round_up"):
        pai2020.read(PAI, {"fractional_gpus": "share"}, "workload")


def test_pai_accepts_header_lines_and_tables_named_apart(tmp_path):
    folder = _pai_copy(tmp_path)
    task = folder / "pai_task_table.csv"
    task.write_text(",".join(pai2020.TASK_COLUMNS) + "\n" + task.read_text())
    (folder / "pai_job_table.csv").rename(folder / "jobs.csv")
    read = pai2020.read(folder, {"job_table": "jobs.csv"}, "workload")
    assert read.log.equals(pai2020.read(PAI, {}, "workload").log)


@pytest.mark.parametrize(
    "table, line, old, new, column",
    [
        ("pai_task_table.csv", 3, ",64.0,200.0,V100", ",64.0,two,V100", "plan_gpu"),
        ("pai_task_table.csv", 1, ",2.0,Terminated,", ",2.5,Terminated,", "inst_num"),
        ("pai_task_table.csv", 6, ",1410.0,", ",-,", "start_time"),
        ("pai_job_table.csv", 2, ",900.0,", ",9OO,", "start_time"),
    ],
)
def test_pai_refuses_a_malformed_row_naming_line_and_column(tmp_path, table, line, old, new, column):
    folder = _pai_copy(tmp_path)
    _edited(PAI / table, folder / table, line, old, new)
    with pytest.raises(InputError, match=rf"{table}:{line}: {column}: must be"):
        pai2020.read(folder, {}, "workload")


def test_pai_refuses_a_row_with_missing_fields(tmp_path):
    folder = _pai_copy(tmp_path)
    with open(folder / "pai_job_table.csv", "a") as f:
        f.write("j13_truncated,inst13,user_a\n")
    with pytest.raises(InputError, match=r"pai_job_table.csv:14: fields: has 3 comma-separated fields, expected 6"):
        pai2020.read(folder, {}, "workload")


def test_pai_cluster_from_the_machine_spec_table():
    config = pai2020.cluster_config(PAI, {"V100M32": "V100-32GB", "MISC": "K80"}, "cluster")
    with open(PAI / "pai_machine_spec.csv", newline="") as f:
        machines = [row for row in csv.reader(f)]
    assert sum(config["counts"].values()) == sum(int(m[4]) for m in machines)
    assert config["counts"]["T4"] == sum(int(m[4]) for m in machines if m[1] == "T4")
    assert config["gpus_per_host"] == 8  # 8-GPU machines hold 16 of the sample's 24 GPUs (two-GPU ones 8)
    assert pai2020.cluster_config(PAI, {"MISC": "K80"}, "cluster", gpus_per_host=4)["gpus_per_host"] == 4
    spec = ClusterSpec.from_config(config, "cluster")
    assert spec.total_gpus == sum(config["counts"].values()) and "V100-32GB" in spec.gpu_types


def test_pai_cluster_maps_v100m32_itself_and_refuses_misc_until_mapped():
    mapped = pai2020.cluster_config(PAI / "pai_machine_spec.csv", {"MISC": "K80"}, "cluster")
    assert mapped["counts"]["V100-32GB"] == 8 and mapped["counts"]["K80"] == 8
    for gpu_map in ({}, {"MISC": None}):
        with pytest.raises(
            InputError,
            match=r"cluster: \S+pai_machine_spec.csv: gpu_map: no datasheet type for PAI 2020's GPU name\(s\) MISC \(MISC stands for its other, unnamed models\): set gpu_map: \{MISC: <type>\} with types among K80",
        ):
            pai2020.cluster_config(PAI, gpu_map, "cluster")
    with pytest.raises(InputError, match=r"gpu_map.MISC: unknown GPU type 'Tesla K40m'"):
        pai2020.cluster_config(PAI, {"V100M32": "V100-32GB", "MISC": "Tesla K40m"}, "cluster")


# ---- Philly, as published ------------------------------------------------------------------------


def _philly_jobs() -> dict[str, dict]:
    return {job["jobid"]: job for job in json.loads(PHILLY.read_text())}


def _seconds(start: str, end: str) -> float:
    at = [datetime.strptime(t, "%Y-%m-%d %H:%M:%S") for t in (start, end)]
    return (at[1] - at[0]).total_seconds()


def test_philly_span_runs_from_first_start_to_last_end():
    read = philly_log.read(PHILLY, {}, "workload")
    jobs = _philly_jobs()
    _accounts_for_every_row(read)
    assert set(read.log["job_id"]) == {"application_0001", "application_0002", "application_0009"}
    for job in read.log.itertuples():
        attempts = jobs[job.job_id]["attempts"]
        assert job.duration_s == _seconds(attempts[0]["start_time"], attempts[-1]["end_time"])
        assert job.gpus == sum(len(server["gpus"]) for server in attempts[0]["detail"])
        assert job.tenant == jobs[job.job_id]["vc"] and job.status == jobs[job.job_id]["status"]
    assert read.log.set_index("job_id").loc["application_0009", "gpus"] == 8  # two servers of four
    assert read.dropped == {
        "no_attempts": 1,
        "no_gpus": 1,
        "no_start_or_end": 2,
        "no_submit_time": 1,
        "non_positive_duration": 1,
    }
    assert read.meta["retried_jobs"] == 2 and read.meta["gpus_differ_across_attempts"] == 1


def test_philly_attempts_duration_sums_the_attempts_run_times():
    span = philly_log.read(PHILLY, {}, "workload").log.set_index("job_id")
    read = philly_log.read(PHILLY, {"duration": "attempts", "tenant": "user", "gpu_type": "P100"}, "workload")
    jobs = _philly_jobs()
    for job in read.log.itertuples():
        attempts = jobs[job.job_id]["attempts"]
        assert job.duration_s == sum(_seconds(a["start_time"], a["end_time"]) for a in attempts)
        assert job.tenant == jobs[job.job_id]["user"] and job.gpu_type == "P100"
    retried = read.log.set_index("job_id").loc["application_0001", "duration_s"]
    assert retried < span.loc["application_0001", "duration_s"]  # the wait between the attempts is left out


def test_philly_refuses_an_unreadable_time_naming_the_job(tmp_path):
    bad = tmp_path / "cluster_job_log"
    bad.write_text(PHILLY.read_text().replace('"end_time": "2017-10-07 01:41:00"', '"end_time": "2017/10/07 01:41"'))
    with pytest.raises(
        InputError,
        match=r"cluster_job_log: job 8 \(application_0009\) attempt 0: end_time: must be a time "
        r"written YYYY-MM-DD HH:MM:SS, got '2017/10/07 01:41'",
    ):
        philly_log.read(tmp_path, {}, "workload")


def test_philly_refuses_what_is_not_a_job_list(tmp_path):
    (tmp_path / "object.json").write_text('{"jobid": "application_0001"}')
    with pytest.raises(InputError, match="json: must be a list of jobs, got a dict"):
        philly_log.read(tmp_path / "object.json", {}, "workload")
    (tmp_path / "broken.json").write_text('[{"jobid": "a",\n "attempts": [}]')
    with pytest.raises(InputError, match=r"broken.json:2: json: is not valid JSON"):
        philly_log.read(tmp_path / "broken.json", {}, "workload")
    (tmp_path / "gpus.json").write_text(json.dumps([{"jobid": "a", "attempts": [{"detail": [{"gpus": "gpu0"}]}]}]))
    with pytest.raises(InputError, match=r"job 0 \(a\) attempt 0: detail.gpus: must be a list of GPU ids"):
        philly_log.read(tmp_path / "gpus.json", {}, "workload")


# ---- shared -------------------------------------------------------------------------------------


def test_every_reader_notes_the_files_it_reads():
    with recording_inputs() as seen:
        helios.read(HELIOS, {}, "workload")
        pai2020.read(PAI, {}, "workload")
        pai2020.cluster_config(PAI, {"V100M32": "V100-32GB", "MISC": "K80"}, "cluster")
        philly_log.read(PHILLY, {}, "workload")
    tables = ("pai_job_table.csv", "pai_task_table.csv", "pai_machine_spec.csv")
    expected = {HELIOS, PHILLY, *(PAI / name for name in tables)}
    assert {p.resolve() for p in expected} <= seen  # (the GPU datasheet is read too, for the cluster)


def test_a_log_with_no_gpu_job_left_is_refused_with_the_drop_counts(tmp_path):
    cpu_only = tmp_path / "cluster_log.csv"
    cpu_only.write_text("".join(HELIOS.read_text().splitlines(keepends=True)[i] for i in (0, 2)))
    with pytest.raises(InputError, match=r"no GPU job is left to simulate of 1 read \(cpu_only 1\)"):
        helios.read(tmp_path, {}, "workload")


BAD_OPTION_VALUES = {
    "tenant": "group",
    "gpu_type": 100,
    "fractional_gpus": "share",
    "job_table": 7,
    "task_table": 7,
    "duration": "wall",
}


@pytest.mark.parametrize("module, path", [(helios, HELIOS), (pai2020, PAI), (philly_log, PHILLY)])
def test_every_option_of_a_reader_is_checked(module, path):
    for option in module.OPTIONS:
        with pytest.raises(InputError, match=rf"^workload: {option}: must be"):
            module.read(path, {option: BAD_OPTION_VALUES[option]}, "workload")


# ---- what the fuzzer found (tests/test_fuzz_readers.py), one regression test each -------------------


def _bytes_edited(source: Path, target: Path, line: int, old: bytes, new: bytes) -> Path:
    lines = source.read_bytes().split(b"\n")
    assert old in lines[line - 1]
    lines[line - 1] = lines[line - 1].replace(old, new, 1)
    target.write_bytes(b"\n".join(lines))
    return target


def _refused(read, *args) -> InputError:
    with pytest.raises(InputError) as caught:
        read(*args)
    assert len(str(caught.value).splitlines()) == 1
    return caught.value


def test_a_non_utf8_byte_is_refused_naming_its_line_in_every_reader(tmp_path):
    """A file with one stray Latin-1 byte was refused as "not a text file", with no line."""
    from fairsim.workload.gavel_trace import read_gavel_trace
    from fairsim.workload.tiresias_trace import read_tiresias_trace, shipped_trace
    from fairsim.workload.trace import read_trace

    helios_bad = _bytes_edited(HELIOS, tmp_path / "cluster_log.csv", 4, b"uBeta", b"uB\xe9ta")
    assert _refused(helios.read, helios_bad, {}, "workload").source == f"workload: {helios_bad}:4"
    folder = _pai_copy(tmp_path)
    _bytes_edited(PAI / "pai_task_table.csv", folder / "pai_task_table.csv", 6, b"worker", b"w\xffrker")
    assert _refused(pai2020.read, folder, {}, "workload").source == f"workload: {folder / 'pai_task_table.csv'}:6"
    philly_bad = _bytes_edited(PHILLY, tmp_path / "cluster_job_log", 3, b"01:11:39", b"01:11:39\xc3\x28")
    assert _refused(philly_log.read, philly_bad, {}, "workload").source == f"workload: {philly_bad}:3"
    tiresias_bad = _bytes_edited(shipped_trace("60_job"), tmp_path / "t.csv", 7, b"inception3", b"incepti\xf6n3")
    assert _refused(read_tiresias_trace, tiresias_bad).source == f"{tiresias_bad}:7"
    gavel = ROOT / "fairsim" / "data" / "gavel" / "traces" / "small_test.trace"
    gavel_bad = _bytes_edited(gavel, tmp_path / "g.trace", 5, b"python3", b"pyth\xf6n3")
    assert _refused(read_gavel_trace, gavel_bad).source == f"{gavel_bad}:5"
    trace_bad = tmp_path / "trace.csv"
    trace_bad.write_bytes(b"job_id,arrival_s,model,workers,work\n0,0,ResNet50,1,2\n\n1,0,ResN\xe9t50,1,2\n")
    assert _refused(read_trace, trace_bad).source == f"{trace_bad}:4"


def test_a_repeated_header_column_is_refused_in_every_reader_with_a_header(tmp_path):
    """The first of the two was read silently (helios, tiresias), or pandas raised (openb)."""
    from fairsim.workload.formats import openb
    from fairsim.workload.tiresias_trace import read_tiresias_trace

    twice = _edited(HELIOS, tmp_path / "cluster_log.csv", 1, ",queue", ",gpu_num")
    err = _refused(helios.read, twice, {}, "workload")
    assert (err.source, err.field) == (f"workload: {twice}:1", "header") and "'gpu_num' more than once" in err.problem
    pods = ROOT / "tests" / "data" / "openb_sample" / "openb_pod_list_sample.csv"
    twice = _edited(pods, tmp_path / "pods.csv", 1, ",qos,", ",num_gpu,")
    assert "'num_gpu' more than once" in _refused(openb.read, twice, {}, "workload").problem
    tiresias = tmp_path / "t.csv"
    tiresias.write_text("job_id,num_gpu,submit_time,duration,duration\n0,1,0,10,20\n")
    err = _refused(read_tiresias_trace, tiresias)
    assert (err.source, err.field) == (f"{tiresias}:1", "header") and "'duration' more than once" in err.problem


def test_a_year_9999_time_is_refused_as_too_long_a_job_not_an_overflow(tmp_path):
    """pandas' nanosecond timestamps stop in 2262: Helios' and Philly's times raised OutOfBoundsDatetime."""
    far = _edited(HELIOS, tmp_path / "cluster_log.csv", 2, "2020-06-10 04:55:09", "9999-06-10 04:55:09")
    from fairsim.workload.jobs_log import log_to_trace
    from fairsim.workload.perf_model import paper_catalog

    cluster = ClusterSpec.from_config({"name": "p", "counts": {"V100": 8}})
    err = _refused(log_to_trace, helios.read(far, {}, "workload"), paper_catalog(cluster), cluster, 0, {}, "workload")
    assert (err.source, err.field) == (f"workload: {far}:2", "duration_s") and "in [0.001, 1e+09]" in err.problem
    philly_far = tmp_path / "cluster_job_log"
    philly_far.write_text(PHILLY.read_text().replace('"2017-10-07 03:13:30"', '"9999-10-07 03:13:30"'))
    err = _refused(
        log_to_trace, philly_log.read(philly_far, {}, "workload"), paper_catalog(cluster), cluster, 0, {}, "workload"
    )
    assert err.source == f"workload: {philly_far}: job 0 (application_0001)" and err.field == "duration_s"


def test_a_job_submitted_in_year_9999_runs_after_the_idle_gap(tmp_path):
    from fairsim.experiment.compose import compose_config
    from fairsim.experiment.single import run_config

    late = _edited(HELIOS, tmp_path / "cluster_log.csv", 2, "2020-06-09 18:41:27", "9999-06-09 18:41:27")
    late = _edited(late, late, 2, "2020-06-09 18:45:36,2020-06-10 04:55:09", "9999-06-09 18:45:36,9999-06-10 04:55:09")
    out = run_config(
        compose_config(["workload=helios", f"workload.path={late}", "workload.gpu_type=V100", "policy=fifo"])
    )
    assert out.summary["finished_jobs"] == 3 and out.jobs["arrival_s"].max() > 2.5e11


def test_a_repeated_job_id_is_refused_in_every_log(tmp_path):
    """Helios' and Philly's ids were renumbered silently (openb refuses a repeated pod name, PAI
    drops a repeated job name: both documented)."""
    from fairsim.workload.jobs_log import log_to_trace
    from fairsim.workload.perf_model import paper_catalog

    cluster = ClusterSpec.from_config({"name": "p", "counts": {"V100": 8}})
    again = _edited(HELIOS, tmp_path / "cluster_log.csv", 4, "5003,", "5001,")
    err = _refused(log_to_trace, helios.read(again, {}, "workload"), paper_catalog(cluster), cluster, 0, {}, "workload")
    # in submission order (line 4's job was submitted first), both lines named
    assert (err.source, err.field) == (f"workload: {again}:2", "job_id") and f"(workload: {again}:4)" in err.problem
    jobs = json.loads(PHILLY.read_text())
    jobs[8]["jobid"] = jobs[0]["jobid"]
    (tmp_path / "philly.json").write_text(json.dumps(jobs))
    err = _refused(
        log_to_trace,
        philly_log.read(tmp_path / "philly.json", {}, "workload"),
        paper_catalog(cluster),
        cluster,
        0,
        {},
        "workload",
    )
    assert err.field == "job_id" and "'application_0001' repeats" in err.problem


def test_a_json_object_that_repeats_a_key_is_refused(tmp_path):
    """json keeps the last of two equal keys silently."""
    (tmp_path / "twice.json").write_text('[{"jobid": "a", "jobid": "b", "attempts": []}]')
    err = _refused(philly_log.read, tmp_path / "twice.json", {}, "workload")
    assert err.field == "json" and "names the key 'jobid' twice" in err.problem


def test_a_gpu_count_past_int64_is_dropped_as_too_wide_in_a_reader(tmp_path):
    from fairsim.workload.jobs_log import log_to_trace
    from fairsim.workload.perf_model import paper_catalog

    huge = _edited(HELIOS, tmp_path / "cluster_log.csv", 2, ",8,32,", ",1e308,32,")
    cluster = ClusterSpec.from_config({"name": "p", "counts": {"V100": 8}})
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the cast to int64 warned, and gave INT64_MIN
        _, report = log_to_trace(helios.read(huge, {}, "workload"), paper_catalog(cluster), cluster, 0, {}, "workload")
    assert report["log_dropped_wider_than_any_allowed_type"] == 1


def test_a_node_lists_unmapped_gpu_name_or_huge_count_names_the_node_list(tmp_path):
    """The errors once named only the cluster preset, not the file holding the name or count."""
    from fairsim.workload.formats import openb

    nodes = _edited(
        ROOT / "tests" / "data" / "openb_sample" / "openb_node_list_sample.csv",
        tmp_path / "nodes.csv",
        3,
        ",P100",
        ",X9",
    )
    err = _refused(openb.cluster_config, nodes, {"G2": "A100-80GB", "G3": "H100-SXM"}, "cluster")
    assert (err.source, err.field) == (f"cluster: {nodes}", "gpu_map") and "GPU name(s) X9" in err.problem
    huge = _edited(
        ROOT / "tests" / "data" / "openb_sample" / "openb_node_list_sample.csv",
        tmp_path / "huge.csv",
        3,
        ",2,P100",
        ",9e18,P100",
    )
    err = _refused(openb.cluster_config, huge, {"G2": "A100-80GB", "G3": "H100-SXM"}, "cluster")
    assert (err.source, err.field) == (
        f"cluster: {huge}:3",
        "gpu",
    ) and "<= 1e+06" in err.problem  # was the cluster's count, no file


# ---- through the job log, into a run ---------------------------------------------------------------


@pytest.mark.parametrize(
    "preset, path, module, extra",
    [
        ("helios", HELIOS, helios, ["workload.gpu_type=V100"]),
        ("pai2020", PAI, pai2020, ["workload.gpu_map={V100M32: V100-32GB, MISC: K80}"]),
        ("philly_log", PHILLY, philly_log, []),
    ],
)
def test_each_format_runs_through_its_preset_and_reports_what_it_dropped(preset, path, module, extra):
    from fairsim.experiment.compose import compose_config
    from fairsim.experiment.single import run_config

    cfg = compose_config([f"workload={preset}", f"workload.path={path}", "policy=fifo", "track=false", *extra])
    out = run_config(cfg)
    read = module.read(path, {k: v for k, v in cfg.workload.items() if k in module.OPTIONS}, "sample")
    assert out.summary["log_rows"] == read.meta["rows"]
    for reason, n in read.dropped.items():
        assert out.summary[f"log_dropped_{reason}"] == n
    assert (
        out.summary["log_jobs"] + sum(v for k, v in out.summary.items() if k.startswith("log_dropped_"))
        == read.meta["rows"]
    )
    assert out.summary["finished_jobs"] == out.summary["log_jobs"] > 0
    assert out.tenants is not None and set(out.tenants["tenant"]) <= set(read.log["tenant"].dropna())
    assert any(f.startswith(f"fairsim/workload/formats/{preset}") for f in out.provenance["code_files"])


def test_a_format_outside_the_run_is_outside_its_code_digest():
    from fairsim.experiment import provenance
    from fairsim.experiment.compose import preset
    from fairsim.workload.formats import available

    plain = provenance.code_files({"policy": preset("policy", "fifo"), "workload": preset("workload", "trace3")})
    readers = {f"fairsim/workload/formats/{name}.py" for name in available("read")}
    assert not readers & set(plain)  # the shared private helpers (_cells, _csv_table) read every run's trace rows
    pai = provenance.code_files(
        {
            "policy": preset("policy", "fifo"),
            "workload": preset("workload", "pai2020"),
            "cluster": preset("cluster", "pai2020"),
        }
    )
    assert "fairsim/workload/formats/pai2020.py" in pai and set(plain) < set(pai)


@pytest.mark.parametrize("name", ["nosuch", "_cells", "clusters", "../csv", None])
def test_an_unknown_format_is_refused_naming_the_formats(name):
    """Private helpers and the node-list module are no job-log formats; only a refusal lists them all."""
    from fairsim.workload.formats import available, format_module

    with pytest.raises(InputError) as err:
        format_module(name, "read", "workload log", "format")
    assert err.value.field == "format"
    assert err.value.problem == f"{name!r} is not one of {', '.join(available('read'))}"
    assert "csv" in available("read") and "_cells" not in available("read") and "clusters" not in available("read")
    assert format_module("openb", "read", "w", "format").__name__ == "fairsim.workload.formats.openb"
