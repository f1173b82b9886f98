"""The job-log readers (fairsim/workload/formats: helios, pai2020, philly_raw) on a few rows
written in each log's documented format (tests/data): the jobs kept and what they become, each
drop reason, the options, and the one-line refusal of a malformed row."""

from __future__ import annotations

import csv
import shutil
from pathlib import Path

import numpy as np
import pytest
from conftest import ROOT

from fairsim.errors import InputError
from fairsim.workload.formats import LOG_COLUMNS, helios

DATA = ROOT / "tests" / "data"
HELIOS = DATA / "helios_cluster_log_sample.csv"


def _accounts_for_every_row(read) -> None:
    assert read.meta["rows_read"] == read.meta["jobs_kept"] + sum(read.dropped.values())
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


@pytest.mark.parametrize("line, old, new, column", [
    (2, ",8,32,", ",eight,32,", "gpu_num"),
    (4, ",1,2,", ",1.5,2,", "gpu_num"),
    (7, "2020-06-09 18:46:00", "2020-06-09 18:46", "start_time"),
    (3, "2020-06-09 18:41:02", "yesterday", "end_time"),
])
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
