"""A cluster's failure records as a capacity trace (fairsim.experiment.outage_log), on a small
hand-made Slurm export whose outages are known."""

from __future__ import annotations

import pandas as pd
import pytest

from fairsim.capacity_timeline import CapacityConfig
from fairsim.experiment.outage_log import main
from fairsim.testing import toy_cluster

LOG = """JobID,Submit,End,GPUType,State
1,2026-03-02T08:00:00,2026-03-02T09:00:00,v100,COMPLETED
2,2026-03-02T08:30:00,2026-03-02T10:00:00,v100,NODE_FAIL
3,2026-03-02T09:00:00,2026-03-02T10:30:00,V100,node_fail
4,2026-03-02T09:10:00,2026-03-02T11:00:00,a10g,NODE_FAIL
5,2026-03-02T09:20:00,2026-03-02T12:00:00,tpu,FAILED
"""


def convert(tmp_path, *extra):
    log = tmp_path / "sacct.csv"
    log.write_text(LOG)
    out = tmp_path / "failures.csv"
    args = [str(log), "--cluster", "paper", "--time", "End", "--status", "State", "--submit", "Submit"]
    return main([*args, "--out", str(out), *extra]), out


def test_node_failures_become_hosts_down_for_the_repair_time(tmp_path):
    """From 08:00: two V100 hosts fail at 2 h and 2.5 h, an A10 (a10g) host at 3 h; each is back
    an hour later. The paper cluster has 3 hosts of each type."""
    code, out = convert(tmp_path, "--type", "GPUType", "--gpu-map", "a10g=A10", "--repair-h", "1")
    assert code == 0
    rows = pd.read_csv(out)
    assert rows.values.tolist() == [
        [7200.0, "V100", 2, "failure"],
        [9000.0, "V100", 1, "failure"],
        [10800.0, "A10", 2, "failure"],  # at one time, in the cluster's type order
        [10800.0, "V100", 2, "failure"],
        [12600.0, "V100", 3, "failure"],
        [14400.0, "A10", 3, "failure"],
    ]
    CapacityConfig.from_config({"trace": str(out)}, toy_cluster({"T4": 12, "A10": 12, "V100": 12}))  # a valid trace


def test_without_a_type_column_the_largest_type_fails(tmp_path):
    code, out = convert(tmp_path, "--repair-h", "1")
    assert code == 0 and set(pd.read_csv(out)["gpu_type"]) == {"T4"}  # three of 3 hosts each; the first is the largest


@pytest.mark.parametrize(
    "extra, words",
    [
        (["--repair-h", "0"], "--repair-h"),
        (["--type", "Gpu"], "header: misses the column(s) Gpu"),
        (["--gpu-map", "a10g"], "NAME=TYPE"),
    ],
)
def test_bad_options_are_one_line_errors(tmp_path, capsys, extra, words):
    code, _ = convert(tmp_path, *extra)
    err = capsys.readouterr().err
    assert code == 2 and words in err and err.count("\n") == 1


def test_a_header_only_log_is_one_line(tmp_path, capsys):
    log = tmp_path / "sacct.csv"
    log.write_text(LOG.splitlines()[0] + "\n")
    args = [str(log), "--cluster", "paper", "--time", "End", "--status", "State", "--submit", "Submit"]
    assert main([*args, "--out", str(tmp_path / "out.csv")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no rows" in err and str(log) in err
    assert not (tmp_path / "out.csv").exists()


def test_a_repeated_record_is_one_failure_and_a_failure_without_a_time_is_counted(tmp_path, capsys):
    lines = LOG.splitlines()
    log_text = "\n".join([*lines, lines[2], "6,2026-03-02T09:30:00,,v100,NODE_FAIL"]) + "\n"
    log = tmp_path / "sacct.csv"
    log.write_text(log_text)
    out = tmp_path / "failures.csv"
    args = [str(log), "--cluster", "paper", "--time", "End", "--status", "State", "--submit", "Submit"]
    assert main([*args, "--type", "GPUType", "--gpu-map", "a10g=A10", "--repair-h", "1", "--out", str(out)]) == 0
    said = capsys.readouterr().out
    assert "(failure rows skipped: 1 repeated row, 1 no time)" in said
    code, plain = convert(tmp_path, "--type", "GPUType", "--gpu-map", "a10g=A10", "--repair-h", "1")
    assert pd.read_csv(out).equals(pd.read_csv(plain))  # the same failures as the log without them


@pytest.mark.parametrize(
    "cell, extra, words",
    [
        ("tomorrow", [], "is not a timestamp in ISO 8601 (or set --timestamp-format), or epoch seconds"),
        ("9999-03-02T10:00:00", [], "out of range: a timestamp must lie in the years 1900 to 2199"),
        ("-100", [], "out of range"),
        ("1e300", [], "'1e300' is not a timestamp in ISO 8601"),  # among timestamps
    ],
)
def test_a_bad_time_names_the_file_line_column_and_the_option(tmp_path, capsys, cell, extra, words):
    log = tmp_path / "sacct.csv"
    log.write_text(LOG.replace("2026-03-02T10:00:00,v100,NODE_FAIL", f"{cell},v100,NODE_FAIL"))
    args = [str(log), "--cluster", "paper", "--time", "End", "--status", "State", "--submit", "Submit"]
    assert main([*args, *extra, "--out", str(tmp_path / "out.csv")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"{log}:3: End: " in err and words in err, err


def test_a_timestamp_format_reads_another_spelling(tmp_path):
    log = tmp_path / "sacct.csv"
    log.write_text(LOG.replace("T", " ").replace("-", "/"))
    args = [str(log), "--cluster", "paper", "--time", "End", "--status", "State", "--submit", "Submit"]
    out = tmp_path / "out.csv"
    assert main([*args, "--timestamp-format", "%Y/%m/%d %H:%M:%S", "--repair-h", "1", "--out", str(out)]) == 0
    code, plain = convert(tmp_path, "--repair-h", "1")
    assert pd.read_csv(out).equals(pd.read_csv(plain))


def test_epoch_seconds_beyond_1e12_are_refused_naming_the_row():
    from fairsim.errors import InputError
    from fairsim.workload.formats.csv import seconds_since_epoch

    assert seconds_since_epoch(pd.Series(["0", "1.7e9", ""]), None, "End", str).tolist()[:2] == [0.0, 1.7e9]
    with pytest.raises(InputError) as err:
        seconds_since_epoch(pd.Series(["0", "-1e300"]), None, "End", lambda i: f"log.csv:{i + 2}")
    assert str(err.value) == "log.csv:3: End: '-1e300' is no time: epoch seconds must lie within 1e+12 of 1970"
