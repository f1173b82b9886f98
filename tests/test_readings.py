"""The own-clock reading (fairsim.paper.figures.own_clock) on hand-made cells whose verdicts are
known: on rounds Tiresias is 2x FFT's avg JCT (FFT better, "yes"); on the event clock 0.5x (FFT
worse, "no")."""

import pandas as pd
import yaml
from conftest import ROOT, sweep_inputs

from fairsim.paper.figures import own_clock
from fairsim.paper.report_table import expand

CLAIM = "avg JCT vs Tiresias (testbed) [least-service queue]"


def cells(tiresias_over_fft: float, policies=("ours", "tiresias")) -> pd.DataFrame:
    rows = []
    for workload in ("trace1", "trace2"):
        for seed in range(3):
            base = 100.0 + 10 * seed
            for policy in policies:
                jct = base * (tiresias_over_fft if policy != "ours" else 1.0)
                rows.append(
                    {
                        "cell": f"{workload}-{seed}-{policy}",
                        "policy": policy,
                        "workload": workload,
                        "cluster": "paper",
                        "seed": seed,
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


def specs() -> list[dict]:
    return yaml.safe_load((ROOT / "experiments" / "paper.yaml").read_text())["headlines"]


def test_the_event_clock_cells_stand_in_for_the_baselines_and_flip_their_verdicts(tmp_path):
    data = sweep_inputs(
        tmp_path,
        {
            "testbed": cells(2.0, policies=("ours", "tiresias", "gavel")),
            "own_clock": cells(0.5, policies=("tiresias",)),
        },
    )
    table = own_clock.clock_verdicts(data, specs())
    assert table.at[CLAIM, "default"] == "yes"
    assert table.at[CLAIM, "own clock"] == "no"
    assert table.at["avg JCT, Gavel / FFT, Trace 1", "own clock"] == "yes"  # Gavel keeps its rounds cells
    assert table.at["avg JCT vs PAL (testbed)", "own clock"] == "not measured"  # PAL never ran
    # the claims against Tiresias flip from yes to no; Gavel's and the makespan's (Gavel is 2x) stay
    flipped = table.index[table["default"] != table["own clock"]]
    assert set(flipped) == {c for c in table.index if "Tiresias" in c and "random" not in c}
    assert (
        len(flipped) == 5
        and (table.loc[flipped, "default"] == "yes").all()
        and (table.loc[flipped, "own clock"] == "no").all()
    )


def test_own_clock_section_names_the_verdicts_the_clock_changes(tmp_path):
    data = sweep_inputs(tmp_path, {"testbed": cells(2.0), "own_clock": cells(0.5, policies=("tiresias",))})
    lines = expand(own_clock.report_section(data, specs()), tmp_path / "out")
    assert lines[0] == "## Each policy on its own clock"
    assert f"| {CLAIM} | Y | N |" in lines
    summary = next(line for line in lines if line.startswith("Verdicts of these"))
    assert f"{CLAIM} (Y -> N)" in summary
    row = next(line for line in lines if line.startswith("| Tiresias | event clock |"))
    assert row.split(" | ")[2].startswith("0.")  # avg JCT in hours: 0.5 x (100-120 s)


def test_own_clock_section_is_empty_without_its_sweep(tmp_path):
    assert own_clock.report_section(sweep_inputs(tmp_path, {"testbed": cells(2.0)}), specs()) == []
