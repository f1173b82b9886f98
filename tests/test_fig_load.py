"""fig_load and REPORT.md's "which claims hold where" table on a hand-made paper_load sweep whose
verdicts are known: Gavel is 0.8x FFT's JCT at load 0.5 and 2x at load 2 (Philly arrivals), and
1.5x at both loads under Poisson arrivals."""

import pandas as pd
import pytest
import yaml
from conftest import ROOT

from fairsim.figures.data import Inputs, SweepData
from fairsim.paper.figures import fig_load
from fairsim.paper.report_table import expand

GAVEL_OVER_FFT = {("philly", 0.5): 0.8, ("philly", 2.0): 2.0, ("poisson", 0.5): 1.5, ("poisson", 2.0): 1.5}


def load_cells() -> pd.DataFrame:
    rows = []
    for (arrivals, load), ratio in GAVEL_OVER_FFT.items():
        for workload in ("trace1", "trace2"):
            for seed in range(3):
                base = 100.0 + 10 * seed  # seed-to-seed spread, identical ratio in every pair
                for policy, jct in (("ours", base), ("gavel", base * ratio)):
                    rows.append(
                        {
                            "cell": f"{arrivals}-{load}-{workload}-{seed}-{policy}",
                            "policy": policy,
                            "workload": workload,
                            "cluster": "paper",
                            "seed": seed,
                            "load": load,
                            "arrivals": arrivals,
                            "num_jobs": 800,
                            "avg_jct_s": jct,
                            "makespan_s": 10 * jct,
                            "rho_fluid_mean": jct / 100,
                            "rho_fluid_max": jct / 50,
                            "rho_fluid_lt1_share": 50 / jct,
                            "starvation_max_s": 36 * jct,
                            "switches_to_faster_share": 0.5,
                            "type_switches": 10,
                        }
                    )
    return pd.DataFrame(rows)


def inputs(tmp_path) -> Inputs:
    folder = tmp_path / "paper_load"
    folder.mkdir()
    load_cells().to_parquet(folder / "results.parquet", index=False)
    return Inputs({"load": SweepData.load(folder)}, {})


def specs() -> list[dict]:
    return yaml.safe_load((ROOT / "experiments" / "paper.yaml").read_text())["headlines"]


def test_claim_verdicts_follow_each_slice(tmp_path):
    verdicts = fig_load.claim_verdicts(inputs(tmp_path).sweep("load"), specs())
    trace1 = verdicts.loc["avg JCT, Gavel / FFT, Trace 1"]
    assert trace1[("philly", 0.5)] == "no" and trace1[("philly", 2.0)] == "yes"
    assert trace1[("poisson", 0.5)] == "yes" and trace1[("poisson", 2.0)] == "yes"
    assert verdicts.loc["avg JCT vs PAL (testbed)"].eq("not measured").all()  # PAL did not run


def test_report_section_names_the_loads_where_a_claim_holds(tmp_path):
    lines = expand(fig_load.report_section(inputs(tmp_path), specs()), tmp_path / "out")
    row = next(line for line in lines if line.startswith("| avg JCT, Gavel / FFT, Trace 2 |"))
    assert row.endswith("| philly: 2; poisson: 0.5, 2 |")
    assert "| N | Y | Y | Y |" in row


@pytest.mark.slow
def test_fig_load_draws_and_redraws_byte_identical(tmp_path):
    data = inputs(tmp_path)
    first = fig_load.draw(data, tmp_path / "a")
    second = fig_load.draw(data, tmp_path / "b")
    assert [p.name for p in first] == ["fig_load.pdf", "fig_load.png", "fig_load.csv"]
    for a, b in zip(first, second):
        assert a.read_bytes() == b.read_bytes()
    table = pd.read_csv(first[2])
    gavel = table[(table["metric"] == "avg_jct_s") & (table["policy"] == "gavel")].set_index(["arrivals", "load"])[
        "value"
    ]
    for key, ratio in GAVEL_OVER_FFT.items():
        assert abs(gavel[key] - ratio) < 1e-9
