"""python -m fairsim.whatif end to end on the example job log (2 candidate clusters, 1 policy): its
table is the cells' own summaries, in hours and dollars, and the cheapest cluster meeting the
target is marked; bad input is one line and exit status 2."""

from __future__ import annotations

import json
import subprocess
import sys

import pandas as pd
import pytest
from conftest import ROOT

from fairsim.whatif.cli import main

SMALL = ["track=false", "hydra.launcher.n_jobs=1"]


@pytest.fixture(scope="module")
def whatif(tmp_path_factory):
    results = tmp_path_factory.mktemp("whatif")
    argv = ["--workload", "team_cluster", "--clusters", "paper", "T4=4,V100=4", "--policies", "fifo"]
    argv += ["--jct-target-h", "1.2", "--name", "tiny", "--set", *SMALL, f"results_dir={results}"]
    assert main(argv) == 0
    return results / "sweeps" / "tiny"


@pytest.mark.slow
def test_the_table_is_the_cells_summaries(whatif):
    table = pd.read_csv(whatif / "whatif" / "whatif.csv")
    assert list(table["cluster"]) == ["paper", "T4x4_V100x4"] and set(table["policy"]) == {"fifo"}
    cells = {
        json.loads((d / "summary.json").read_text())["cluster"]: d
        for d in whatif.iterdir()
        if (d / "summary.json").is_file()
    }
    for _, row in table.iterrows():
        summary = json.loads((cells[row["cluster"]] / "summary.json").read_text())
        assert row["avg_jct_h"] == pytest.approx(summary["avg_jct_s"] / 3600, rel=1e-5)
        assert row["p99_jct_h"] == pytest.approx(summary["p99_jct_s"] / 3600, rel=1e-5)
        assert row["rho_fluid_mean"] == pytest.approx(summary["rho_fluid_mean"], rel=1e-5)
        assert row["gpu_utilization"] == pytest.approx(summary["gpu_utilization"], rel=1e-5)
        assert row["energy_kwh"] == pytest.approx(summary["energy_kwh"], rel=1e-5)
        assert row["cost_per_run_usd"] == pytest.approx(summary["cluster_cost_usd"], rel=1e-5)
        assert row["finished_jobs"] == summary["finished_jobs"]
    # the candidate written as counts is priced from the shipped table: 4 T4 + 4 V100 per hour
    prices = pd.read_csv(ROOT / "fairsim" / "data" / "gpu_costs.csv").set_index("gpu")["on_demand_usd_per_gpu_h"]
    assert table.set_index("cluster").loc["T4x4_V100x4", "cost_per_h_usd"] == pytest.approx(
        4 * prices["T4"] + 4 * prices["V100"]
    )


@pytest.mark.slow
def test_the_cheapest_cluster_meeting_the_target_is_marked(whatif):
    table = pd.read_csv(whatif / "whatif" / "whatif.csv")
    meets = (table["finished_jobs"] == table["num_jobs"]) & (table["avg_jct_h"] <= 1.2)
    assert list(table["meets_target"]) == list(meets)
    marked = table[table["cheapest"]]
    assert len(marked) == (1 if meets.any() else 0)
    if meets.any():
        assert marked["cost_per_h_usd"].iloc[0] == table.loc[meets, "cost_per_h_usd"].min()
    assert (whatif / "whatif" / "whatif.png").is_file() and (whatif / "whatif" / "whatif.pdf").is_file()


@pytest.mark.parametrize(
    "argv, words",
    [
        (["--clusters", "nosuchcluster"], "nosuchcluster"),
        (["--clusters", "T4=four"], "whole number"),
        (["--clusters", "X900=4"], "X900"),
        (["--clusters", "T4=-2"], "T4"),
        (["--clusters", "paper", "--policies", ","], "--policies"),
        (["--clusters", "paper", "--budget-per-h", "1"], "budget"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(tmp_path, argv, words):
    base = ["--workload", "team_cluster", "--policies", "fifo", "--jct-target-h", "2"]
    args = [*base, *argv, "--set", *SMALL, f"results_dir={tmp_path}"]
    out = subprocess.run([sys.executable, "-m", "fairsim.whatif", *args], capture_output=True, text=True, cwd=ROOT)
    assert out.returncode == 2, out.stderr
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and words in lines[0] and lines[0].startswith("error:")
