"""Slurm's sacct export read as sacct writes it (fairsim/workload/formats/sacct.py): ``-P``
(``|``, no trailing one), ``-p`` (a trailing ``|``) and a quoted CSV of the same columns, job
steps dropped, each state's treatment, GPUs from AllocTRES or ReqTRES, GPU names by prefix."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from fairsim.cluster import ClusterSpec
from fairsim.errors import InputError
from fairsim.experiment.compose import compose_config
from fairsim.experiment.single import run_config
from fairsim.workload.formats._cells import clock_seconds
from fairsim.workload.jobs_log import log_to_trace, read_log
from fairsim.workload.loader import load_workload
from fairsim.workload.perf_model import paper_catalog

CLUSTER = ClusterSpec.from_config({"name": "c", "counts": {"T4": 8, "V100": 8, "H100-SXM": 8}, "gpus_per_host": 4})
HEADER = "JobID|Account|User|Submit|Start|End|Elapsed|State|NNodes|AllocTRES|ReqTRES"
ROWS = [
    # a job and its steps: the steps are dropped
    "100|nlp|chen|2026-03-02T08:00:00|2026-03-02T08:01:00|2026-03-02T09:01:00|01:00:00|COMPLETED|1|"
    "billing=8,cpu=8,gres/gpu=1,mem=32G,node=1|billing=8,cpu=8,gres/gpu=1,mem=32G,node=1",
    "100.batch|nlp||2026-03-02T08:01:00|2026-03-02T08:01:00|2026-03-02T09:01:00|01:00:00|COMPLETED|1|"
    "cpu=8,gres/gpu=1,mem=32G,node=1|",
    "100.extern|nlp||2026-03-02T08:01:00|2026-03-02T08:01:00|2026-03-02T09:01:00|01:00:00|COMPLETED|1|"
    "billing=8,cpu=8,gres/gpu=1,mem=32G,node=1|",
    "100.0|nlp||2026-03-02T08:01:00|2026-03-02T08:01:00|2026-03-02T09:01:00|01:00:00|COMPLETED|1|cpu=8,node=1|",
    # both the total and the typed count: 4 GPUs of type v100, not 8; over a day
    "101|vision|alice|2026-03-02T08:10:00|2026-03-02T08:20:00|2026-03-03T10:20:00|1-02:00:00|TIMEOUT|1|"
    "billing=32,cpu=32,gres/gpu:v100=4,gres/gpu=4,mem=128G,node=1|cpu=32,gres/gpu=4,mem=128G,node=1",
    # cancelled while pending: never started
    "102|vision|alice|2026-03-02T08:30:00|Unknown|2026-03-02T08:35:00|00:00:00|CANCELLED by 1234|1||"
    "cpu=32,gres/gpu=4,node=1",
    # cancelled after it started: a job of its Elapsed, status CANCELLED
    "103|vision|alice|2026-03-02T08:31:00|2026-03-02T08:32:00|2026-03-02T08:52:00|00:20:00|CANCELLED by 1234|1|"
    "cpu=8,gres/gpu:h100=2,mem=64G,node=1|cpu=8,gres/gpu=2,node=1",
    "104|nlp|bob|2026-03-02T09:00:00|2026-03-02T09:01:00|Unknown|00:40:00|RUNNING|1|"
    "cpu=8,gres/gpu:h100=2,mem=64G,node=1|cpu=8,gres/gpu=2,node=1",
    # an Elapsed under an hour written MM:SS.mmm; 2 nodes
    "105|nlp|bob|2026-03-02T09:05:00|2026-03-02T09:06:00|2026-03-02T09:36:00|30:00.000|FAILED|2|"
    "cpu=16,gres/gpu:h100=8,mem=64G,node=2|cpu=16,gres/gpu=8,node=2",
    # a CPU job
    "106|nlp|bob|2026-03-02T09:06:00|2026-03-02T09:07:00|2026-03-02T10:07:00|01:00:00|COMPLETED|1|"
    "cpu=8,mem=64G,node=1|cpu=8,node=1",
    "107|nlp|bob|2026-03-02T09:07:00|Unknown|Unknown|00:00:00|PENDING|1||cpu=8,gres/gpu=2,node=1",
    # sacct --duplicates: a requeued attempt, then the job's final run
    "108|speech|eli|2026-03-02T09:10:00|2026-03-02T09:11:00|2026-03-02T09:21:00|00:10:00|REQUEUED|1|"
    "cpu=4,gres/gpu:t4=1,node=1|cpu=4,gres/gpu=1,node=1",
    "108|speech|eli|2026-03-02T09:22:00|2026-03-02T09:23:00|2026-03-02T10:23:00|01:00:00|NODE_FAIL|1|"
    "cpu=4,gres/gpu:t4=1,node=1|cpu=4,gres/gpu=1,node=1",
    # no AllocTRES (never allocated), but it ran per its times: the request counts
    "109|speech|eli|2026-03-02T09:30:00|2026-03-02T09:31:00|2026-03-02T09:41:00|00:10:00|OUT_OF_MEMORY|1||"
    "cpu=4,gres/gpu=2,node=1",
    "110|speech|eli|2026-03-02T09:40:00|2026-03-02T09:41:00|2026-03-02T09:51:00|00:10:00|PREEMPTED|1|"
    "cpu=4,gres/gpu:t4=1,node=1|cpu=4,gres/gpu=1,node=1",
]
KEPT = {  # job id -> (seconds, GPUs, GPU type, status)
    "100": (3600.0, 1, None, "COMPLETED"),
    "101": (93600.0, 4, "v100", "TIMEOUT"),
    "103": (1200.0, 2, "h100", "CANCELLED"),
    "105": (1800.0, 8, "h100", "FAILED"),
    "106": (3600.0, 0, None, "COMPLETED"),
    "108": (3600.0, 1, "t4", "NODE_FAIL"),
    "109": (600.0, 2, None, "OUT_OF_MEMORY"),
    "110": (600.0, 1, "t4", "PREEMPTED"),
}
DROPPED = {"job_step": 3, "never_started": 2, "still_running": 1, "requeued": 1}


def write(tmp_path, lines, name="jobs.txt"):
    path = tmp_path / name
    path.write_text("\n".join(lines) + "\n")
    return path


def read(path, **options):
    return read_log({"kind": "jobs_log", "format": "sacct", "path": str(path), **options}, "workload sacct")


def check_read(got):
    log = got.log.set_index("job_id")
    assert sorted(log.index) == sorted(KEPT)
    for job, (seconds, gpus, kind, status) in KEPT.items():
        row = log.loc[job]
        assert row["duration_s"] == seconds and row["gpus"] == gpus and row["status"] == status, job
        assert (None if pd.isna(row["gpu_type"]) else row["gpu_type"]) == kind, job
    assert got.dropped == DROPPED
    assert got.meta["rows"] == len(ROWS) and got.meta["multi_node_jobs"] == 1
    assert log.loc["101", "tenant"] == "vision"
    submit = log["submit_s"]
    assert submit["101"] - submit["100"] == 600.0


def test_parsable2_output_is_read_with_steps_and_states_dropped_by_reason(tmp_path):
    check_read(read(write(tmp_path, [HEADER, *ROWS])))


def test_parsable_output_with_a_trailing_bar_reads_the_same(tmp_path):
    check_read(read(write(tmp_path, [line + "|" for line in (HEADER, *ROWS)])))


def test_a_csv_of_the_same_columns_reads_the_same(tmp_path):
    rows = [line.split("|") for line in ROWS]
    path = tmp_path / "jobs.csv"
    pd.DataFrame(rows, columns=HEADER.split("|")).to_csv(path, index=False)  # quotes the TRES cells
    assert '"billing=8,cpu=8,gres/gpu=1,mem=32G,node=1"' in path.read_text()
    check_read(read(path))


def test_the_trace_runs_what_can_run_and_counts_the_rest(tmp_path):
    got = read(write(tmp_path, [HEADER, *ROWS]))
    cfg = {"format": "sacct", "kind": "jobs_log"}
    trace, report = log_to_trace(got, paper_catalog(CLUSTER), CLUSTER, 0, cfg, "workload sacct")
    # 106 is a CPU job; h100 is H100-SXM by prefix, v100 and t4 datasheet names
    assert report["log_dropped_zero_gpus"] == 1 and "log_unknown_gpu_types" not in report
    assert report["log_jobs"] + sum(v for k, v in report.items() if k.startswith("log_dropped_")) == len(ROWS)
    assert len(trace) == report["log_jobs"]


def test_user_as_tenant_and_a_status_filter(tmp_path):
    got = read(write(tmp_path, [HEADER, *ROWS]), tenant="user")
    assert set(got.log["tenant"]) == {"chen", "alice", "bob", "eli"}
    wl = load_workload(
        {
            "name": "s",
            "kind": "jobs_log",
            "format": "sacct",
            "catalog": "paper",
            "path": str(tmp_path / "jobs.txt"),
            "statuses": ["COMPLETED", "TIMEOUT"],
        },
        CLUSTER,
        0,
    )
    assert wl.report["log_dropped_status_not_kept"] == 5  # of 7 GPU jobs, 2 kept


@pytest.mark.parametrize(
    "cell, column, said",
    [
        ("State=EXPLODED", "State", "'EXPLODED' is not a Slurm job state (one of COMPLETED, FAILED"),
        ("Elapsed=1:2:3", "Elapsed", "must be [D-]HH:MM:SS or MM:SS[.mmm] (or Unknown), got '1:2:3'"),
        ("AllocTRES=cpu=8,gres/gpu=two", "AllocTRES", "gres/gpu=N or gres/gpu:<type>=N"),
        ("Submit=-100", "Submit", "is out of range: a timestamp must lie in the years 1900 to 2199"),
        ("Submit=9999-12-31T00:00:00", "Submit", "is out of range"),
        ("NNodes=x", "NNodes", "must be a whole number of nodes >= 0, got 'x'"),
    ],
)
def test_a_bad_cell_is_refused_naming_its_line_and_column(tmp_path, cell, column, said):
    name, value = cell.split("=", 1)
    names = HEADER.split("|")
    row = ROWS[4].split("|")
    row[names.index(name)] = value
    path = write(tmp_path, [HEADER, *ROWS[:4], "|".join(row)])
    with pytest.raises(InputError) as err:
        read(path)
    assert err.value.source == f"workload sacct: {path}:6" and err.value.field == column
    assert said in err.value.problem and "\n" not in str(err.value)


def test_a_huge_bad_cell_is_quoted_short(tmp_path):
    names = HEADER.split("|")
    row = ROWS[0].split("|")
    row[names.index("State")] = "X" * 1_000_000
    with pytest.raises(InputError) as err:
        read(write(tmp_path, [HEADER, "|".join(row)]))
    assert len(str(err.value)) < 1000 and "(1000000 characters)" in str(err.value)


@pytest.mark.parametrize(
    "drop, said",
    [
        (("AllocTRES", "ReqTRES"), "needs AllocTRES or ReqTRES"),
        (("Elapsed", "End"), "needs Elapsed, or Start and End"),
        (("Account",), "tenant: account reads the column Account"),
    ],
)
def test_a_missing_column_is_refused_saying_what_to_export(tmp_path, drop, said):
    names = HEADER.split("|")
    keep = [i for i, n in enumerate(names) if n not in drop]
    lines = ["|".join(line.split("|")[i] for i in keep) for line in [HEADER, ROWS[0]]]
    with pytest.raises(InputError) as err:
        read(write(tmp_path, lines))
    assert said in str(err.value) and err.value.field == "columns"


def test_without_elapsed_the_run_time_is_end_minus_start(tmp_path):
    names = HEADER.split("|")
    keep = [i for i, n in enumerate(names) if n != "Elapsed"]
    lines = ["|".join(line.split("|")[i] for i in keep) for line in [HEADER, *ROWS]]
    got = read(write(tmp_path, lines)).log.set_index("job_id")
    assert got.loc["101", "duration_s"] == 93600.0 and got.loc["105", "duration_s"] == 1800.0


def test_sacct_clock_formats():
    text = pd.Series(["1-02:03:04", "12:34:56", "00:01.234", "59:59", "1-2:03", "Unknown", None, "61:00"])
    got = clock_seconds(text)
    assert got[:4].tolist() == [93784.0, 45296.0, 1.234, 3599.0]
    assert np.isnan(got[4:]).all()


def test_the_preset_needs_nothing_but_the_path(tmp_path):
    path = write(tmp_path, [HEADER, *ROWS])
    out = run_config(compose_config(["workload=sacct", f"workload.path={path}", "policy=fifo", "track=false"]))
    assert out.summary["log_rows"] == len(ROWS)
    assert out.summary["log_dropped_job_step"] == 3 and out.summary["log_dropped_zero_gpus"] == 1
    # the paper cluster has no H100: its jobs are named as such, not as unknown names
    assert "log_unknown_gpu_types" not in out.summary


def test_the_csv_format_reads_a_bar_separated_file_by_mapping(tmp_path):
    lines = ["JobID|Submit|Elapsed|NGPUS", "1|2026-03-02T08:00:00|01:00:00|1", "2|2026-03-02T08:10:00|00:30:00|2"]
    path = write(tmp_path, lines, "jobs.psv")
    wl = load_workload(
        {
            "name": "s",
            "kind": "jobs_log",
            "catalog": "paper",
            "path": str(path),
            "columns": {"job_id": "JobID", "submit_time": "Submit", "duration_s": "Elapsed", "gpus": "NGPUS"},
        },
        CLUSTER,
        0,
    )
    assert wl.report["log_jobs"] == 2


def test_a_gpu_name_is_matched_by_prefix_in_the_cluster_first(tmp_path):
    lines = ["submit_s,duration_s,gpus,gpu_type"] + [f"{i},600,1,{t}" for i, t in enumerate(["h100", "a100", "A100"])]
    path = tmp_path / "log.csv"
    path.write_text("\n".join(lines) + "\n")
    one_a100 = ClusterSpec.from_config({"name": "c", "counts": {"T4": 8, "A100-80GB": 8}, "gpus_per_host": 4})
    wl = load_workload({"name": "s", "kind": "jobs_log", "catalog": "paper", "path": str(path)}, one_a100, 0)
    assert wl.report["log_jobs"] == 3  # a100 -> A100-80GB, the cluster's; h100 -> H100-SXM, measured there, run here
    assert "log_unknown_gpu_types" not in wl.report
    neither = ClusterSpec.from_config({"name": "c", "counts": {"T4": 8}, "gpus_per_host": 4})
    wl = load_workload({"name": "s", "kind": "jobs_log", "catalog": "paper", "path": str(path)}, neither, 0)
    assert wl.report["log_unknown_gpu_types"].startswith("a100: 2 rows, closest A100-40GB, A100-80GB")
