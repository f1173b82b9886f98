"""Job logs as workloads: work from the logged duration, column mapping, bad rows, what cannot
run, GPU-type constraints honoured by every policy, tenants and their metrics."""

from __future__ import annotations

import functools
import shlex
import warnings

import numpy as np
import pandas as pd
import pytest
from conftest import ROOT
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fairsim.cluster import ClusterSpec
from fairsim.errors import InputError
from fairsim.experiment.compose import CONF_DIR, compose_config
from fairsim.experiment.single import build_policy, run_config
from fairsim.metrics import jain_index, tenant_table
from fairsim.sim.config import SimConfig
from fairsim.sim.engine import simulate
from fairsim.workload.jobs import JobSet
from fairsim.workload.loader import load_workload
from fairsim.workload.perf_model import paper_catalog

PAPER = ClusterSpec.from_config({"name": "paper", "counts": {"T4": 12, "A10": 12, "V100": 12}, "gpus_per_host": 4})
QUIET = ["sim.overheads.migration=false", "sim.overheads.preemption=false", "track=false"]


def write_log(tmp_path, rows, name="log.csv"):
    path = tmp_path / name
    pd.DataFrame(rows).to_csv(path, index=False)
    return path


def run(path, *overrides):
    cfg = compose_config(
        ["workload=jobs_log", f"workload.path={path}", "cluster=paper", "policy=fifo", *QUIET, *overrides]
    )
    return run_config(cfg)


def workload(path, seed=0, **options):
    cfg = {"name": "log", "kind": "jobs_log", "catalog": "paper", "path": str(path), **options}
    return load_workload(cfg, PAPER, seed)


def test_one_job_into_an_idle_cluster_takes_exactly_its_duration_on_its_reference_type(tmp_path):
    path = write_log(tmp_path, [{"submit_s": 500, "duration_s": 4321.5, "gpus": 2, "gpu_type": "A10"}])
    out = run(path, "workload.pin_to_type=true", "sim.round_len_s=60")
    job = out.jobs.iloc[0]
    assert job["arrival_s"] == 0.0  # rebased to the first submission
    assert job["jct_s"] == pytest.approx(4321.5, rel=1e-12)
    assert job["gpu_s_A10"] == pytest.approx(2 * 4321.5, rel=1e-12)
    assert out.summary["log_rows"] == 1 and out.summary["log_jobs"] == 1


def test_on_another_type_it_runs_at_the_catalogs_speed_ratio(tmp_path):
    path = write_log(
        tmp_path,
        [{"submit_s": 0, "duration_s": 3600, "gpus": 1, "gpu_type": "T4", "gpu_types": "V100", "model": "ResNet50"}],
    )
    out = run(path, "sim.round_len_s=60")
    cat = paper_catalog(PAPER)
    m, slot = cat.models.index("ResNet50"), cat.worker_counts.index(1)
    ratio = cat.packed[m, cat.gpu_types.index("T4"), slot] / cat.packed[m, cat.gpu_types.index("V100"), slot]
    assert out.jobs.iloc[0]["gpu_s_V100"] > 0 and out.jobs.iloc[0]["gpu_s_T4"] == 0
    assert out.jobs.iloc[0]["jct_s"] == pytest.approx(3600 * ratio, rel=1e-12)


def test_the_overheads_the_simulator_charges_come_on_top(tmp_path):
    # profiling: a job that never ran profiles every type first (60 s each, 3 types)
    path = write_log(tmp_path, [{"submit_s": 0, "duration_s": 3600, "gpus": 1, "gpu_type": "V100"}])
    out = run(path, "workload.pin_to_type=true", "sim.round_len_s=60", "sim.overheads.profiling=true")
    assert out.jobs.iloc[0]["jct_s"] == pytest.approx(3600 + 3 * 60, rel=1e-12)


def test_without_a_reference_type_the_duration_is_at_the_mean_speed_of_the_allowed_types(tmp_path):
    path = write_log(tmp_path, [{"submit_s": 0, "duration_s": 1000, "gpus": 1, "model": "VGG16"}])
    w = workload(path)
    cat = w.catalog
    m, slot = cat.models.index("VGG16"), cat.worker_counts.index(1)
    mean = np.mean([cat.packed[m, cat.gpu_types.index(t), slot] for t in PAPER.gpu_types])  # equal counts
    assert w.trace["work"].iloc[0] == pytest.approx(1000 * mean, rel=1e-12)
    w = workload(path, reference_type="T4")
    assert w.trace["work"].iloc[0] == pytest.approx(1000 * cat.packed[m, cat.gpu_types.index("T4"), slot], rel=1e-12)


def test_columns_map_from_the_files_own_names_and_timestamps_parse(tmp_path):
    path = write_log(
        tmp_path,
        [
            {"When": "2026-01-05 10:00:00", "Secs": 600, "N": 1, "Team": "a"},
            {"When": "2026-01-05 09:59:00", "Secs": 60, "N": 4, "Team": "b"},
        ],
    )
    w = workload(
        path,
        columns={"submit_time": "When", "duration_s": "Secs", "gpus": "N", "tenant": "Team"},
        timestamp_format="%Y-%m-%d %H:%M:%S",
    )
    assert w.trace["arrival_s"].tolist() == [0.0, 60.0]
    assert w.trace["workers"].tolist() == [4, 1] and w.trace["tenant"].tolist() == ["b", "a"]
    with pytest.raises(
        InputError, match=r"columns\.gpus: the file has no column 'GPUs' \(it has: When, Secs, N, Team\)"
    ):
        workload(path, columns={"submit_time": "When", "duration_s": "Secs", "gpus": "GPUs"})
    with pytest.raises(InputError, match=r"columns\.start: is not a job log column \(allowed: job_id, submit_s"):
        workload(path, columns={"start": "When"})
    with pytest.raises(InputError, match=r"needs submit_s \(seconds\) or submit_time"):
        workload(path, columns={"duration_s": "Secs", "gpus": "N"})


@pytest.mark.parametrize(
    "row, column, said",
    [
        (
            {"submit_s": "soon", "duration_s": 60, "gpus": 1},
            "submit_s",
            "must be a number of seconds within 1e+12 of the log's origin, got 'soon'",
        ),
        (
            {"submit_s": 5, "duration_s": -1, "gpus": 1},
            "duration_s",
            "must be a number of seconds in [0.001, 1e+09] (a millisecond to "
            "about 31.7 years) or [D-]HH:MM:SS or MM:SS[.mmm], got '-1'",
        ),
        ({"submit_s": 5, "duration_s": 60, "gpus": 1.5}, "gpus", "must be a whole GPU count >= 1, got '1.5'"),
    ],
)
def test_a_bad_row_is_refused_naming_its_file_line_and_column(tmp_path, row, column, said):
    path = write_log(tmp_path, [{"submit_s": 0, "duration_s": 60, "gpus": 1}, row])
    with pytest.raises(InputError) as err:
        workload(path)
    assert err.value.source == f"workload log: {path}:3" and err.value.field == column and err.value.problem == said
    assert len(str(err.value).splitlines()) == 1


def test_bad_timestamps_name_the_line_and_the_format(tmp_path):
    path = write_log(
        tmp_path,
        [{"t": "2026-01-05 10:00:00", "duration_s": 60, "gpus": 1}, {"t": "yesterday", "duration_s": 60, "gpus": 1}],
    )
    with pytest.raises(InputError, match=r"log.csv:3: t: 'yesterday' is not a timestamp in format '%Y-%m-%d %H:%M:%S'"):
        workload(path, columns={"submit_time": "t"}, timestamp_format="%Y-%m-%d %H:%M:%S")


# ---- what the fuzzer found (tests/test_fuzz_readers.py), one regression test each -------------


def write_text(tmp_path, text, name="log.csv"):
    path = tmp_path / name
    path.write_bytes(text if isinstance(text, bytes) else text.encode())
    return path


def refusal(path, **options) -> InputError:
    with pytest.raises(InputError) as err:
        workload(path, **options)
    assert len(str(err.value).splitlines()) == 1
    return err.value


def test_lines_count_blank_lines_and_cells_quoted_across_lines(tmp_path):
    """The reader once computed a row's line as its index + 2."""
    blank = write_text(tmp_path, "submit_s,duration_s,gpus\n0,60,1\n\n\n5,60,1.5\n")
    assert refusal(blank).source == f"workload log: {blank}:5"
    quoted = write_text(tmp_path, 'job_id,submit_s,duration_s,gpus\n"a\nb",0,60,1\nc,5,60,1.5\n', "quoted.csv")
    assert refusal(quoted).source == f"workload log: {quoted}:4"
    crlf = write_text(tmp_path, "submit_s,duration_s,gpus\r\n0,60,1\r\n\r\n5,60,x\r\n", "crlf.csv")
    assert refusal(crlf).source == f"workload log: {crlf}:4"


def test_a_ragged_or_non_utf8_row_is_refused_naming_its_line(tmp_path):
    ragged = write_text(tmp_path, "submit_s,duration_s,gpus\n0,60,1\n5,60,1,9\n")
    err = refusal(ragged)
    assert (err.source, err.field) == (
        f"workload log: {ragged}:3",
        "fields",
    ) and "has 4 comma-separated fields, expected 3" in err.problem
    latin = write_text(tmp_path, b"submit_s,duration_s,gpus,tenant\n0,60,1,a\n5,60,1,caf\xe9\n", "latin.csv")
    err = refusal(latin)
    assert (err.source, err.field) == (
        f"workload log: {latin}:3",
        "file",
    ) and "byte 0xe9 at column 11 is not UTF-8" in err.problem
    unclosed = write_text(tmp_path, 'submit_s,duration_s,gpus\n0,60,1\n"5,60,1\n', "unclosed.csv")
    assert refusal(unclosed).source == f"workload log: {unclosed}:3"


def test_a_refusal_about_the_whole_log_names_its_file(tmp_path):
    """Errors about the log as a whole or a mapped column once named only the workload."""
    path = write_log(tmp_path, [{"When": 0, "duration_s": 60, "gpus": 1}])
    err = refusal(path, columns={"submit_s": "Submit"})
    assert err.source == f"workload log: {path}" and err.field == "columns.submit_s"
    assert refusal(path, max_jobs=1, start_s=100).source == f"workload log: {path}"  # nothing left to run
    model = write_log(
        tmp_path,
        [{"submit_s": 0, "duration_s": 60, "gpus": 1}, {"submit_s": 1, "duration_s": 60, "gpus": 1, "model": "GPT-9"}],
        "model.csv",
    )
    err = refusal(model)
    assert err.source == f"workload log: {model}:3" and "unknown model 'GPT-9'" in err.problem


@pytest.mark.parametrize("duration", ["1e308", "1e15", "2e9", "1e-300", "0.0001"])
def test_a_duration_outside_a_jobs_length_is_refused_naming_the_limit(tmp_path, duration):
    """1e308 s overflowed the engine's fast-forward, 1e15 s ran to sim.max_rounds, 1e-300 s ran as
    zero work with a NaN rho."""
    path = write_text(tmp_path, f"submit_s,duration_s,gpus\n0,60,1\n1,{duration},1\n")
    err = refusal(path)
    assert (err.source, err.field) == (f"workload log: {path}:3", "duration_s")
    assert (
        err.problem
        == f"must be a number of seconds in [0.001, 1e+09] (a millisecond to about 31.7 years) or [D-]HH:MM:SS or MM:SS[.mmm], got '{duration}'"
    )


def test_a_submission_time_past_any_clock_is_refused(tmp_path):
    path = write_text(tmp_path, "submit_s,duration_s,gpus\n-1e308,60,1\n1e308,60,1\n")
    err = refusal(path)
    assert err.source == f"workload log: {path}:2" and err.problem.startswith(
        "must be a number of seconds within 1e+12"
    )


def test_a_gpu_count_past_int64_is_dropped_as_too_wide(tmp_path):
    """It was cast to INT64_MIN (with a RuntimeWarning) and dropped as a gang the catalog lacks."""
    path = write_text(tmp_path, "submit_s,duration_s,gpus\n0,60,1\n0,60,1e308\n")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        w = workload(path)
    assert w.report == {"log_rows": 2, "log_jobs": 1, "log_dropped_wider_than_any_allowed_type": 1}


def test_a_repeated_job_id_is_refused_naming_both_rows(tmp_path):
    """It was silently renumbered: two jobs where the log meant one, or two logs joined."""
    path = write_text(tmp_path, "job_id,submit_s,duration_s,gpus\na,0,60,1\nb,5,60,1\na,9,60,1\n")
    err = refusal(path)
    assert (err.source, err.field) == (f"workload log: {path}:4", "job_id")
    assert err.problem == f"'a' repeats the id of an earlier job (workload log: {path}:2); job ids must be unique"
    missing = write_text(tmp_path, "job_id,submit_s,duration_s,gpus\n,0,60,1\n,5,60,1\n", "missing.csv")
    assert len(workload(missing).trace) == 2  # rows without an id are not compared


def test_a_repeated_header_column_is_refused(tmp_path):
    """pandas renamed the second one gpus.1, and the first was read silently."""
    path = write_text(tmp_path, "submit_s,duration_s,gpus,gpus\n0,60,1,2\n")
    err = refusal(path)
    assert (err.source, err.field) == (f"workload log: {path}:1", "header")
    assert err.problem == "names the column(s) 'gpus' more than once (each column once)"


def test_a_parquet_logs_values_are_shown_as_written(tmp_path):
    """A typed cell was shown as np.float64(1.5)."""
    path = tmp_path / "log.parquet"
    pd.DataFrame({"submit_s": [0.0, 5.0], "duration_s": [60.0, 60.0], "gpus": [1.0, 1.5]}).to_parquet(path)
    err = refusal(path)
    assert (err.source, err.problem) == (f"workload log: {path}: row 1", "must be a whole GPU count >= 1, got '1.5'")


def test_a_byte_order_mark_is_no_part_of_the_first_column(tmp_path):
    path = write_text(tmp_path, b"\xef\xbb\xbfsubmit_s,duration_s,gpus\n0,60,1\n")
    assert len(workload(path).trace) == 1


UNRUNNABLE = [
    {"job_id": "wide", "submit_s": 0, "duration_s": 60, "gpus": 16},
    {"job_id": "three", "submit_s": 1, "duration_s": 60, "gpus": 3},
    {"job_id": "tpu", "submit_s": 2, "duration_s": 60, "gpus": 1, "gpu_type": "TPUv3"},
    {"job_id": "elsewhere", "submit_s": 3, "duration_s": 60, "gpus": 1, "gpu_types": "A100-80GB"},
    {"job_id": "ok", "submit_s": 4, "duration_s": 60, "gpus": 1},
]


def test_jobs_that_cannot_run_are_dropped_and_counted_by_reason(tmp_path):
    w = workload(write_log(tmp_path, UNRUNNABLE))
    assert len(w.trace) == 1 and w.trace["arrival_s"].iloc[0] == 0.0
    assert w.report == {
        "log_rows": 5,
        "log_jobs": 1,
        "log_dropped_gang_size_not_in_catalog": 1,
        "log_dropped_no_allowed_type_in_cluster": 1,
        "log_dropped_unknown_gpu_type": 1,
        "log_dropped_wider_than_any_allowed_type": 1,
        "log_unknown_gpu_types": "TPUv3: 1 row; to run them: workload.gpu_map='{TPUv3: <type>}'",
    }


def test_or_refused_in_one_line(tmp_path):
    with pytest.raises(
        InputError,
        match=r"log.csv:2: unrunnable: job wide cannot run: wider than any allowed type \(set workload.unrunnable=drop",
    ):
        workload(write_log(tmp_path, UNRUNNABLE), unrunnable="refuse")
    with pytest.raises(InputError, match=r"unrunnable: must be one of drop, refuse, got 'skip'"):
        workload(write_log(tmp_path, UNRUNNABLE), unrunnable="skip")
    runnable = write_log(tmp_path, [{"submit_s": 0, "duration_s": 60, "gpus": 1, "gpu_type": "A10"}], "runnable.csv")
    with pytest.raises(InputError, match=r"unrunnable: must be one of drop, refuse, got 'skip'"):
        workload(runnable, unrunnable="skip")  # refused though no job would be dropped


def test_gpu_map_names_the_logs_own_types(tmp_path):
    path = write_log(
        tmp_path,
        [
            {"submit_s": 0, "duration_s": 60, "gpus": 1, "gpu_type": "G2"},
            {"submit_s": 1, "duration_s": 60, "gpus": 1, "gpu_type": "T4"},
        ],
    )
    assert workload(path).report["log_dropped_unknown_gpu_type"] == 1
    w = workload(path, gpu_map={"G2": "V100"}, pin_to_type=True)
    assert w.trace["gpu_types"].tolist() == ["V100", "T4"]
    with pytest.raises(
        InputError, match=r"rows: no job of the log can run on cluster paper \(dropped: 1 unknown gpu type\)"
    ):
        workload(write_log(tmp_path, [{"submit_s": 0, "duration_s": 60, "gpus": 1, "gpu_type": "G2"}], "g2.csv"))
    with pytest.raises(InputError, match=r"gpu_map\.G2: 'X9' is not a datasheet GPU type"):
        workload(path, gpu_map={"G2": "X9"})


def test_models_are_drawn_by_seed_among_those_that_fit_and_named_models_are_kept(tmp_path):
    rows = [
        {"submit_s": i, "duration_s": 60, "gpus": g, "model": "BERT-base" if i == 0 else ""}
        for i, g in enumerate([1, 1, 2, 4, 8] * 8)
    ]
    path = write_log(tmp_path, rows)
    a, b, c = workload(path, seed=1), workload(path, seed=1), workload(path, seed=2)
    assert a.trace.equals(b.trace) and not a.trace["model"].equals(c.trace["model"])
    assert a.trace["model"].iloc[0] == "BERT-base"
    JobSet.build(a.trace, a.catalog, PAPER)  # every drawn model runs with its gang here
    with pytest.raises(InputError, match="unknown model 'GPT-9'"):
        workload(write_log(tmp_path, [{"submit_s": 0, "duration_s": 60, "gpus": 1, "model": "GPT-9"}], "m.csv"))


def test_statuses_time_window_and_max_jobs(tmp_path):
    rows = [
        {"submit_s": 100 * i, "duration_s": 60, "gpus": 1, "status": "Pass" if i % 2 else "Killed"} for i in range(10)
    ]
    path = write_log(tmp_path, rows)
    w = workload(path, statuses=["pass"], start_s=200, span_s=500)
    assert w.trace["arrival_s"].tolist() == [0.0, 200.0]  # jobs 3 and 5 (submitted at 300 and 500), rebased
    assert w.report["log_dropped_status_not_kept"] == 5 and w.report["log_dropped_outside_time_window"] == 3
    assert "log_dropped_beyond_max_jobs" not in w.report
    w = workload(path, statuses=["pass"], start_s=200, span_s=500, max_jobs=1)
    assert len(w.trace) == 1 and w.report["log_dropped_beyond_max_jobs"] == 1


def test_the_example_log_preset_runs(run_py):
    out = run_py(
        "workload=team_cluster", "policy=fifo", "track=false", "hydra.run.dir=${oc.env:TMPDIR,/tmp}/fairsim-team"
    )
    assert out.returncode == 0, out.stderr
    assert (
        "57 jobs of 60 rows run; dropped: 1 gang size not in catalog, 1 unknown gpu type, 1 wider than any allowed type"
        in out.stdout
    )


# ---- logs as schedulers export them (Slurm's sacct): by mapping alone ----------------------------


def test_durations_as_slurm_elapsed_or_from_start_and_end_columns(tmp_path):
    rows = [
        ("2026-03-02T08:00:00", "2026-03-02T08:10:00", "2026-03-03T10:13:04", "1-02:03:04", 1, 1772438400),
        ("2026-03-02T08:05:00", "2026-03-02T08:05:30", "2026-03-02T08:15:30", "00:10:00", 2, 1772438700),
        ("2026-03-02T09:00:00", "2026-03-02T09:00:00", "2026-03-02T10:27:23.5", "1:27:23.5", 4, 1772442000),
    ]
    path = write_log(
        tmp_path,
        [{"Submit": a, "Start": b, "End": c, "Elapsed": d, "NGPUS": g, "Epoch": e} for a, b, c, d, g, e in rows],
    )
    elapsed = workload(path, columns={"submit_time": "Submit", "duration_s": "Elapsed", "gpus": "NGPUS"})
    between = workload(
        path, columns={"submit_time": "Submit", "start_time": "Start", "end_time": "End", "gpus": "NGPUS"}
    )
    epoch = workload(path, columns={"submit_time": "Epoch", "start_time": "Start", "end_time": "End", "gpus": "NGPUS"})
    assert elapsed.trace["arrival_s"].tolist() == [0.0, 300.0, 3600.0]
    assert elapsed.trace.equals(between.trace) and elapsed.trace.equals(epoch.trace)
    seconds = [
        93784.0,
        600.0,
        5243.5,
    ]  # work over the reference speed: the duration in seconds, the same for each reading
    ratio = elapsed.trace["work"].to_numpy() / np.asarray(seconds)
    assert np.allclose(
        ratio,
        workload(
            write_log(
                tmp_path,
                [{"submit_s": t, "duration_s": d, "gpus": g} for t, d, g in zip([0, 300, 3600], seconds, [1, 2, 4])],
                "secs.csv",
            )
        ).trace["work"]
        / seconds,
    )
    for bad, field in (("87:23", "duration_s"), ("1-2:03", "duration_s")):
        clock = write_log(
            tmp_path,
            [{"submit_s": 0, "duration_s": "00:01:00", "gpus": 1}, {"submit_s": 1, "duration_s": bad, "gpus": 1}],
            "c.csv",
        )
        err = refusal(clock)
        assert (err.source, err.field) == (f"workload log: {clock}:3", field) and err.problem.endswith(
            f"or [D-]HH:MM:SS or MM:SS[.mmm], got '{bad}'"
        )
    backwards = write_log(
        tmp_path, [{"s": 0, "b": "2026-03-02T08:00:00", "e": "2026-03-02T07:00:00", "g": 1}], "back.csv"
    )
    err = refusal(backwards, columns={"submit_s": "s", "start_time": "b", "end_time": "e", "gpus": "g"})
    assert (err.source, err.field) == (
        f"workload log: {backwards}:2",
        "e",
    ) and "is before the job's start '2026-03-02T08:00:00' (b)" in err.problem


NEVER_RAN = [
    {
        "JobID": "cpu",
        "Submit": "2026-03-02T08:00:00",
        "Start": "2026-03-02T08:00:05",
        "Elapsed": "00:10:00",
        "NGPUS": 0,
    },
    {"JobID": "pending", "Submit": "2026-03-02T08:01:00", "Start": "Unknown", "Elapsed": "00:00:00", "NGPUS": 4},
    {"JobID": "blank_submit", "Submit": "", "Start": "2026-03-02T08:03:00", "Elapsed": "00:05:00", "NGPUS": 1},
    {
        "JobID": "blank_gpus",
        "Submit": "2026-03-02T08:02:00",
        "Start": "2026-03-02T08:03:00",
        "Elapsed": "00:05:00",
        "NGPUS": "",
    },
    {
        "JobID": "blank_elapsed",
        "Submit": "2026-03-02T08:02:30",
        "Start": "2026-03-02T08:03:00",
        "Elapsed": "",
        "NGPUS": 2,
    },
    {
        "JobID": "ran",
        "Submit": "2026-03-02T08:04:00",
        "Start": "2026-03-02T08:05:00",
        "Elapsed": "01:00:00",
        "NGPUS": 2,
    },
]
SLURM = {"job_id": "JobID", "submit_time": "Submit", "duration_s": "Elapsed", "gpus": "NGPUS"}


def test_rows_of_jobs_that_never_ran_are_dropped_and_counted_or_refused(tmp_path):
    """A CPU job (0 GPUs), a job cancelled while pending (0 s) and rows missing a value once refused the whole log."""
    path = write_log(tmp_path, NEVER_RAN)
    w = workload(path, columns=SLURM)
    assert len(w.trace) == 1 and w.trace["workers"].tolist() == [2]
    assert w.report == {
        "log_rows": 6,
        "log_jobs": 1,
        "log_dropped_missing_duration": 1,
        "log_dropped_missing_gpus": 1,
        "log_dropped_missing_submit": 1,
        "log_dropped_zero_duration": 1,
        "log_dropped_zero_gpus": 1,
    }
    err = refusal(path, columns=SLURM, unrunnable="refuse")
    assert (err.source, err.field) == (f"workload log: {path}:2", "unrunnable")
    assert err.problem == "job cpu cannot run: 0 GPUs (set workload.unrunnable=drop to drop such jobs)"
    err = refusal(write_log(tmp_path, NEVER_RAN[1:2], "pending.csv"), columns=SLURM)
    assert err.problem == "no job of the log is left to run (dropped: 1 zero duration)"


def test_an_unknown_gpu_name_is_named_with_its_rows_the_closest_names_and_a_gpu_map(tmp_path):
    rows = [
        {"submit_s": i, "duration_s": 60, "gpus": 1, "gpu_type": t}
        for i, t in enumerate(["a100", "A100", "v100", "a10g", "tpu"])
    ]
    path = write_log(tmp_path, rows)
    w = workload(path, gpu_map={"a10g": "A10"})
    assert w.report["log_dropped_unknown_gpu_type"] == 3 and w.report["log_jobs"] == 2
    assert w.report["log_unknown_gpu_types"] == (
        "a100: 2 rows, closest A100-40GB, A100-80GB, A10; tpu: 1 row; "
        "to run them: workload.gpu_map='{a10g: A10, a100: A100-40GB, tpu: <type>}'"
    )
    mapped = workload(path, gpu_map={"a10g": "A10", "a100": "A100-40GB", "tpu": "T4"})
    assert (
        mapped.report["log_jobs"] == 5 and "log_unknown_gpu_types" not in mapped.report
    )  # A100-40GB: modelled, not in the cluster
    err = refusal(path, gpu_map={"a10g": "A10"}, unrunnable="refuse")
    assert err.source == f"workload log: {path}:2" and err.problem.startswith(
        "job 0 cannot run: unknown gpu type (a100: 2 rows, closest"
    )


def test_every_missing_column_is_named_in_one_line_with_the_files_likely_ones(tmp_path):
    path = write_log(
        tmp_path,
        [
            {
                "JobID": 1,
                "User": "u",
                "Submit": "2026-03-02T08:00:00",
                "Elapsed": "00:01:00",
                "NGPUS": 1,
                "GPUType": "t4",
            }
        ],
    )
    err = refusal(path, columns={"job_id": "JobID"})
    assert (err.source, err.field) == (f"workload log: {path}", "columns")
    assert err.problem == (
        "the log needs submit_s (seconds) or submit_time (a timestamp or epoch seconds); duration_s (seconds or "
        "[D-]HH:MM:SS or MM:SS[.mmm]) or start_time and end_time; gpus: map the file's columns (JobID, User, Submit, Elapsed, "
        "NGPUS, GPUType), e.g. workload.columns.submit_time=Submit workload.columns.duration_s=Elapsed "
        "workload.columns.gpus=NGPUS"
    )


def test_gpu_map_and_columns_are_set_from_the_command_line_without_a_plus(tmp_path):
    path = write_log(tmp_path, NEVER_RAN)
    cfg = compose_config(
        [
            "workload=jobs_log",
            f"workload.path={path}",
            "workload.columns.job_id=JobID",
            "workload.columns.submit_time=Submit",
            "workload.columns.start_time=Start",
            "workload.columns.end_time=Submit",
            "workload.columns.gpus=NGPUS",
            "workload.gpu_map={a100: A100-80GB}",
        ]
    )
    assert cfg.workload.gpu_map == {"a100": "A100-80GB"} and cfg.workload.columns.start_time == "Start"


def documented(page: str, marker: str) -> str:
    """The one-line command of a docs page that names ``marker`` (run by the venv's python or not)."""
    lines = (line.strip().removeprefix(".venv/bin/") for line in (ROOT / page).read_text().splitlines())
    return next(line for line in lines if line.startswith("python run.py") and marker in line)


@pytest.mark.slow
@pytest.mark.parametrize(
    "marker, pages, said",
    [
        (
            "slurm_sacct.txt",
            ("docs/workload.md", "README.md"),
            [
                "job log         21 jobs of 61 rows run; dropped: 31 job step, 1 never started, 4 unknown gpu type, "
                "4 zero gpus\n",
                "unknown GPUs    a100: 4 rows, closest A100-40GB, A100-80GB, A10; to run them: "
                "workload.gpu_map='{a100: A100-40GB}'\n",
            ],
        ),
        (
            "sacct_example.txt",
            ("docs/workload.md",),
            [
                "job log         26 jobs of 88 rows run; dropped: 58 job step, 1 never started, 2 unknown gpu type, "
                "1 zero gpus\n",
                "unknown GPUs    a100: 2 rows, closest A100-40GB, A100-80GB, A10; to run them: "
                "workload.gpu_map='{a10g: A10, a100: A100-40GB}'\n",
            ],
        ),
    ],
)
def test_the_sacct_exports_run_with_the_preset_as_documented(run_py, tmp_path, marker, pages, said):
    """The docs' commands, as written: the sacct preset, a path and at most a gpu_map (the real
    export none); steps, jobs that never started, CPU jobs and the undecided a100 jobs dropped
    and counted."""
    command = documented(pages[0], marker)
    assert all(documented(page, marker) == command for page in pages)
    args = shlex.split(command)[2:]
    assert args[0] == "workload=sacct" and all(a.startswith(("workload.path=", "workload.gpu_map=")) for a in args[1:])
    assert marker != "slurm_sacct.txt" or len(args) == 2  # the real export: the path and nothing else
    out = run_py(*args, "policy=fifo", "track=false", f"hydra.run.dir={tmp_path / 'run'}")
    assert out.returncode == 0, out.stderr
    for line in said:
        assert line in out.stdout, out.stdout


# ---- GPU-type constraints: every policy -------------------------------------------------------

POLICIES = sorted(p.stem for p in (CONF_DIR / "policy").glob("*.yaml"))
TYPES = ("T4", "A10", "V100")


@functools.cache
def policy_config(name):
    return compose_config([f"policy={name}"]).policy


@st.composite
def constrained_logs(draw):
    n = draw(st.integers(2, 10))
    rows = []
    for i in range(n):
        allowed = draw(st.lists(st.sampled_from(TYPES), min_size=1, max_size=2, unique=True))
        rows.append(
            {
                "job_id": i,
                "submit_s": draw(st.integers(0, 6)) * 300,
                "duration_s": draw(st.integers(1, 24)) * 300,
                "gpus": draw(st.sampled_from([1, 1, 2, 4])),
                "gpu_types": "|".join(allowed),
                "tenant": f"t{i % 2}",
            }
        )
    return pd.DataFrame(rows)


@pytest.mark.slow
@pytest.mark.parametrize("name", POLICIES)
@settings(max_examples=6, deadline=None, derandomize=True, database=None, suppress_health_check=[HealthCheck.too_slow])
@given(log=constrained_logs())
def test_every_policy_honours_each_jobs_allowed_gpu_types(tmp_path_factory, name, log):
    path = tmp_path_factory.mktemp("log") / "log.csv"
    log.to_csv(path, index=False)
    cluster = ClusterSpec.from_config({"name": "small", "counts": {"T4": 4, "A10": 4, "V100": 4}, "gpus_per_host": 4})
    w = load_workload({"name": "log", "kind": "jobs_log", "catalog": "paper", "path": str(path)}, cluster, 0)
    jobs = JobSet.build(w.trace, w.catalog, cluster, source=w.source)
    result = simulate(jobs, cluster, build_policy(policy_config(name)), SimConfig(check=True, max_rounds=20000), seed=0)
    table = result.jobs
    assert np.isfinite(table["finish_s"]).all()
    for t in cluster.gpu_types:
        barred = ~np.array([t in str(a).split("|") for a in w.trace["gpu_types"]])
        assert (table[f"gpu_s_{t}"].to_numpy()[barred] == 0).all(), f"{name} ran a job on {t}, outside its gpu_types"


# ---- tenants ---------------------------------------------------------------------------------------


def test_tenant_metrics_on_a_hand_worked_two_tenant_case():
    table = pd.DataFrame(
        {
            "job_id": [0, 1, 2],
            "tenant": ["a", "b", "a"],
            "finish_s": [10.0, 40.0, np.nan],
            "jct_s": [10.0, 30.0, np.nan],
            "attained_gpu_s": [3600.0, 7200.0, 3600.0],
            "rho_fluid": [1.0, 3.0, np.nan],
            "rho": [2.0, 4.0, np.nan],
            "starvation_s": [0.0, 5.0, 8.0],
        }
    )
    t = tenant_table(table).set_index("tenant")
    assert t.loc["a", "jobs"] == 2 and t.loc["a", "finished_jobs"] == 1 and t.loc["b", "jobs"] == 1
    assert t.loc["a", "gpu_hours"] == 2.0 and t.loc["b", "gpu_hours"] == 2.0 and t.loc["a", "gpu_share"] == 0.5
    assert (
        t.loc["a", "avg_jct_s"] == 10.0
        and t.loc["b", "rho_fluid_mean"] == 3.0
        and t.loc["a", "starvation_max_s"] == 8.0
    )
    # Jain of (1, 3): 16 / (2 * 10) = 0.8
    assert jain_index(t["rho_fluid_mean"].to_numpy()) == pytest.approx(0.8)
    assert jain_index(np.array([2.0, 2.0, 2.0])) == 1.0 and jain_index(np.array([1.0, 0.0])) == 0.5


def test_a_run_writes_tenants_and_their_index(tmp_path):
    path = write_log(
        tmp_path, [{"submit_s": i * 60, "duration_s": 1800, "gpus": 4, "tenant": "ab"[i % 2]} for i in range(12)]
    )
    out = run(path)
    assert sorted(out.tenants["tenant"]) == ["a", "b"] and out.tenants["jobs"].sum() == 12
    assert out.summary["tenant_count"] == 2 and 0.5 <= out.summary["tenant_jain_rho_fluid"] <= 1.0
    assert (out.jobs["tenant"].to_numpy() == np.array(list("ab" * 6))).all()


def test_philly_windows_keep_the_virtual_cluster_as_tenant():
    cfg = compose_config(["workload=philly", "num_jobs=40"])
    from omegaconf import OmegaConf

    w = load_workload(OmegaConf.to_container(cfg.workload, resolve=True), PAPER, 3)
    assert (w.trace["tenant"] != "").all() and w.trace["tenant"].nunique() > 1


def test_a_sweep_gathers_its_cells_tenants(tmp_path):
    from fairsim.experiment.collect import collect
    from fairsim.experiment.single import write_results

    path = write_log(
        tmp_path, [{"submit_s": i * 60, "duration_s": 1800, "gpus": 1, "tenant": "ab"[i % 2]} for i in range(6)]
    )
    sweep = tmp_path / "sweep"
    for policy in ("fifo", "srtf"):
        cfg = compose_config(
            ["workload=jobs_log", f"workload.path={path}", "cluster=paper", f"policy={policy}", *QUIET]
        )
        write_results(run_config(cfg), sweep / f"policy={policy}", cfg)
    collect(sweep)
    tenants = pd.read_parquet(sweep / "tenants.parquet")
    assert sorted(zip(tenants["cell"], tenants["tenant"])) == [
        (f"policy={p}", t) for p in ("fifo", "srtf") for t in "ab"
    ]
    assert len(pd.read_parquet(sweep / "jobs.parquet")) == 12
    for cell in sweep.glob("policy=*"):
        (cell / "tenants.parquet").unlink()
    collect(sweep)
    assert not (sweep / "tenants.parquet").exists()
