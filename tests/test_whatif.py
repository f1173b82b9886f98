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


# ---- the user's own presets and GPU types ------------------------------------------------------

MINE = """\
name: mine
gpus_per_host: 8
inter_host_gbps: 400
counts: {H200: 8, MI300X: 8}
gpu_types:
  H200: {memory_gb: 141, fp32_tflops: 67, fp16_tflops: 989, mem_bw_gb_s: 4800}
  MI300X: {memory_gb: 192, fp32_tflops: 81.7, fp16_tflops: 1307.4, mem_bw_gb_s: 5300}
power: {H200: {busy_w: 700, idle_fraction: 0.15}}
price: {H200: {on_demand: 5.0}, MI300X: {on_demand: 4.5}}
"""


@pytest.fixture
def myconf(tmp_path):
    (tmp_path / "myconf" / "cluster").mkdir(parents=True)
    (tmp_path / "myconf" / "cluster" / "mine.yaml").write_text(MINE)
    return tmp_path / "myconf"


@pytest.mark.parametrize("how", ["--config-dir", "hydra.searchpath"])
def test_counts_of_the_users_own_types_are_written_on_their_preset_and_priced(tmp_path, myconf, how):
    from fairsim.whatif.candidates import prepare
    from fairsim.whatif.cli import user_folders

    sets = ["num_jobs=5"] + ([f"hydra.searchpath=[file://{myconf}]"] if how == "hydra.searchpath" else [])
    paths, rest = user_folders(str(myconf) if how == "--config-dir" else None, sets)
    assert paths == [f"file://{myconf.resolve()}"] and rest == ["num_jobs=5"]
    conf_dir = tmp_path / "whatif_conf"
    mine, counted = prepare(["mine", "H200=16,MI300X=4"], conf_dir, rest, "mine", paths)
    assert (mine.name, mine.mix, mine.gpus) == ("mine", "8 H200 + 8 MI300X", 16)
    assert mine.cost_per_h_usd == pytest.approx(8 * 5.0 + 8 * 4.5)
    assert (counted.name, counted.mix, counted.gpus) == ("mine_H200x16_MI300Xx4", "16 H200 + 4 MI300X", 20)
    assert counted.cost_per_h_usd == pytest.approx(16 * 5.0 + 4 * 4.5)
    import yaml

    written = yaml.safe_load((conf_dir / "cluster" / "mine_H200x16_MI300Xx4.yaml").read_text())
    assert written["gpu_types"] == yaml.safe_load(MINE)["gpu_types"] and written["gpus_per_host"] == 8
    assert written["counts"] == {"H200": 16, "MI300X": 4}


def test_counts_on_the_default_base_are_written_as_before(tmp_path):
    """The paper testbed's host size and links with the counts, named by the counts alone: a
    what-if sweep of counts made before --base-cluster keeps its cells."""
    import yaml

    from fairsim.whatif.candidates import prepare

    (cand,) = prepare(["T4=4,V100=4"], tmp_path, [])
    written = (tmp_path / "cluster" / "T4x4_V100x4.yaml").read_text()
    assert yaml.safe_load(written) == {
        **yaml.safe_load((ROOT / "conf" / "cluster" / "paper.yaml").read_text()),
        "name": "T4x4_V100x4",
        "counts": {"T4": 4, "V100": 4},
    }
    assert cand.name == "T4x4_V100x4"


@pytest.mark.parametrize(
    "argv, words",
    [
        (["--clusters", "H200=4"], "--base-cluster"),  # a type no preset of the run defines
        (["--config-dir", "/no/such/folder", "--clusters", "paper"], "--config-dir"),
        (["--clusters", "H200=4", "--base-cluster", "nosuch"], "nosuch"),
    ],
)
def test_bad_user_folders_and_types_are_one_line_and_exit_2(tmp_path, argv, words):
    base = ["--workload", "team_cluster", "--policies", "fifo", "--jct-target-h", "2"]
    args = [*base, *argv, "--set", *SMALL, f"results_dir={tmp_path}"]
    out = subprocess.run([sys.executable, "-m", "fairsim.whatif", *args], capture_output=True, text=True, cwd=ROOT)
    assert out.returncode == 2, out.stderr
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and words in lines[0] and lines[0].startswith("error:"), lines


@pytest.mark.slow
def test_a_whatif_of_the_users_own_cluster_runs_from_another_folder(tmp_path, myconf, monkeypatch, capsys):
    """H200 and MI300X from a preset of the user's, the counts form on it, run from outside the
    repository; MI300X has no power figure, so energy is n/a, not a crash."""
    monkeypatch.chdir(tmp_path)
    argv = ["--config-dir", str(myconf), "--base-cluster", "mine", "--workload", "team_cluster"]
    argv += ["--clusters", "mine", "H200=4", "--policies", "fifo", "--jct-target-h", "2", "--name", "own"]
    assert main([*argv, "--set", *SMALL, f"results_dir={tmp_path / 'results'}"]) == 0
    table = pd.read_csv(tmp_path / "results" / "sweeps" / "own" / "whatif" / "whatif.csv")
    assert list(table["cluster"]) == ["mine", "mine_H200x4"]
    assert list(table["gpus"]) == ["8 H200 + 8 MI300X", "4 H200"]
    assert table["cost_per_h_usd"].tolist() == pytest.approx([8 * 5.0 + 8 * 4.5, 4 * 5.0])
    assert pd.isna(table["energy_kwh"].iloc[0]) and table["energy_kwh"].iloc[1] > 0
    assert (table["finished_jobs"] == table["num_jobs"]).all()
    out = capsys.readouterr().out
    assert "mine_H200x4" in out and "n/a" in out.splitlines()[2]
