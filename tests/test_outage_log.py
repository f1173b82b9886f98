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
