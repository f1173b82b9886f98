"""REPORT.md's fairness-readings and ablation tables on hand-made sweeps with known answers."""

import pandas as pd
import pytest

from fairsim.figures.data import Inputs, SweepData
from fairsim.paper.figures import fairness_ablation, fairness_readings
from fairsim.paper.report_table import expand


def cells(policies: dict[str, float]) -> pd.DataFrame:
    """rho readings and JCT per (policy, trace, seed): value = factor x (1 + seed / 10)."""
    rows = []
    for policy, factor in policies.items():
        for workload in ("trace1", "trace2"):
            for seed in range(3):
                v = factor * (1 + seed / 10)
                rows.append(
                    {
                        "cell": f"{policy}-{workload}-{seed}",
                        "policy": policy,
                        "workload": workload,
                        "cluster": "paper",
                        "seed": seed,
                        "avg_jct_s": 3600 * v,
                        "starvation_max_s": 7200 * v,
                        "rho_mean": v,
                        "rho_lt1_share": 0.5 / v,
                        "rho_max": 2 * v,
                        "rho_static_mean": 1.1 * v,
                        "rho_static_lt1_share": 0.4 / v,
                        "rho_static_max": 2.2 * v,
                        "rho_fluid_mean": 1.5 * v,
                        "rho_fluid_lt1_share": 0.2 / v,
                        "rho_fluid_max": 3 * v,
                    }
                )
    return pd.DataFrame(rows)


def sweep(table: pd.DataFrame) -> SweepData:
    return SweepData("s", None, table)


def test_readings_table_and_section(tmp_path):
    data = Inputs({"testbed": sweep(cells({"ours": 1.0, "gavel": 2.0}))}, {})
    table = fairness_readings.readings_table(data.sweep("testbed").cells).set_index(["policy", "reading"])
    assert table.loc[("gavel", "fluid"), "mean"] == pytest.approx(3.0 * 1.1)
    assert table.loc[("ours", "static"), "lt1_share"] == pytest.approx(100 * 0.4 * (1 + 1 / 1.1 + 1 / 1.2) / 3)
    assert (table["lt1_share_lo"] >= 0).all() and (table["mean_lo"] >= 0).all()
    lines = expand(fairness_readings.report_section(data, []), tmp_path / "out")
    assert "Default reading of the headline rows: **fluid**" in "\n".join(lines)
    assert any(line.startswith("| FFT (paper 70%) |") for line in lines)


def test_ablation_marks_only_the_parts_that_change_the_outcome(tmp_path):
    testbed = cells({"ours": 1.0})
    ablation = pd.concat([cells({"ours_nofair": 1.5}), cells({"ours_noswitch": 1.0})], ignore_index=True)
    data = Inputs({"testbed": sweep(testbed), "ablation": sweep(ablation)}, {})
    table = fairness_ablation.ablation_table(data.cells("testbed", "ablation")).set_index(["policy", "metric"])
    assert table.loc[("ours_nofair", "avg_jct_s"), "diff"] == pytest.approx(0.5 * 1.1)
    assert bool(table.loc[("ours_nofair", "avg_jct_s"), "changes"])
    assert not bool(table.loc[("ours_noswitch", "avg_jct_s"), "changes"])  # identical runs: no change
    text = "\n".join(expand(fairness_ablation.report_section(data, []), tmp_path / "out"))
    assert "- no rho (FFT no-fair) changes: avg JCT (h)" in text
    assert "- no switching penalty (FFT no-switch) changes: none of these metrics." in text
