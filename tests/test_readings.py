"""Readings of the testbed comparison (fairsim.paper.readings) and the own-clock section, on
hand-made cells whose verdicts are known: on rounds Tiresias is 2x FFT's avg JCT (FFT better,
"yes"); on the event clock 0.5x (FFT worse, "no")."""

import pandas as pd
import yaml

from fairsim.figures.data import Inputs, SweepData
from fairsim.paper import readings
from fairsim.paper.figures import own_clock

from conftest import ROOT

CLAIM = "avg JCT vs Tiresias (testbed) [least-service queue]"


def cells(tiresias_over_fft: float, policies=("ours", "tiresias")) -> pd.DataFrame:
    rows = []
    for workload in ("trace1", "trace2"):
        for seed in range(3):
            base = 100.0 + 10 * seed
            for policy in policies:
                jct = base * (tiresias_over_fft if policy != "ours" else 1.0)
                rows.append({"cell": f"{workload}-{seed}-{policy}", "policy": policy, "workload": workload,
                             "cluster": "paper", "seed": seed, "num_jobs": 800, "avg_jct_s": jct, "makespan_s": 10 * jct,
                             "rho_fluid_mean": jct / 100, "rho_fluid_max": jct / 50, "rho_fluid_lt1_share": 50 / jct,
                             "starvation_max_s": 36 * jct, "switches_to_faster_share": 0.5, "type_switches": 10})
    return pd.DataFrame(rows)


def specs() -> list[dict]:
    return yaml.safe_load((ROOT / "experiments" / "paper.yaml").read_text())["headlines"]


def test_replacing_a_policys_cells_flips_its_verdict():
    testbed = cells(2.0)
    events = cells(0.5, policies=("tiresias",))
    table = readings.verdict_table(specs(), {"rounds": testbed,
                                             "events": readings.replace_cells(testbed, events, ["tiresias"])})
    assert table.at[CLAIM, "rounds"] == "yes"
    assert table.at[CLAIM, "events"] == "no"
    assert table.at["avg JCT vs PAL (testbed)", "events"] == "not measured"  # PAL never ran
    # every claim against Tiresias (JCT, makespan, rho, starvation) flips, the others stay unmeasured
    assert readings.counts(table["rounds"]) == "6 yes, 0 weak, 0 no"
    assert readings.counts(table["events"]) == "0 yes, 0 weak, 6 no"


def test_replace_cells_keeps_the_other_policies_and_drops_a_missing_one():
    testbed = cells(2.0, policies=("ours", "tiresias", "gavel"))
    out = readings.replace_cells(testbed, cells(0.5, policies=("allox",)), ["tiresias", "allox"])
    assert sorted(out["policy"].unique()) == ["allox", "gavel", "ours"]
    assert (out.loc[out["policy"] == "gavel", "avg_jct_s"].to_numpy() == testbed.loc[testbed["policy"] == "gavel", "avg_jct_s"].to_numpy()).all()


def test_own_clock_section_names_the_verdicts_the_clock_changes(tmp_path):
    sweeps = {}
    for role, table in (("testbed", cells(2.0)), ("own_clock", cells(0.5, policies=("tiresias",)))):
        folder = tmp_path / role
        folder.mkdir()
        table.to_parquet(folder / "results.parquet", index=False)
        sweeps[role] = SweepData.load(folder)
    lines = own_clock.report_section(Inputs(sweeps, {}), specs())
    assert lines[0] == "## Each policy on its own clock"
    assert f"| {CLAIM} | Y | N |" in lines
    summary = next(line for line in lines if line.startswith("Verdicts of these"))
    assert f"{CLAIM} (Y -> N)" in summary
    row = next(line for line in lines if line.startswith("| Tiresias | event clock |"))
    assert row.split(" | ")[2].startswith("0.")  # avg JCT in hours: 0.5 x (100-120 s)


def test_own_clock_section_is_empty_without_its_sweep(tmp_path):
    folder = tmp_path / "testbed"
    folder.mkdir()
    cells(2.0).to_parquet(folder / "results.parquet", index=False)
    assert own_clock.report_section(Inputs({"testbed": SweepData.load(folder)}, {}), specs()) == []
