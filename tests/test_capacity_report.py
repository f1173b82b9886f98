"""The capacity reading (fairsim.paper.figures.capacity) on hand-made cells whose verdicts are
known: without outages and under failures Tiresias is 2x FFT's avg JCT (FFT better, "yes"); with
the spot pool 0.5x (FFT worse, "no")."""

import pandas as pd
from conftest import sweep_inputs
from test_readings import CLAIM, cells, specs

from fairsim.paper.figures import capacity
from fairsim.paper.report_table import expand


def reading(name: str, tiresias_over_fft: float) -> pd.DataFrame:
    part = cells(tiresias_over_fft)
    return part.assign(
        cell=part["cell"] + f"-{name}",
        **{"capacity.name": name, "availability": 0.9, "evictions": 3.0, "work_lost_gpu_h": 1.5},
    )


def inputs(tmp_path, with_capacity=True):
    sweeps = {"testbed": cells(2.0, policies=("ours", "tiresias", "gavel"))}
    if with_capacity:
        sweeps["capacity"] = pd.concat([reading("failures", 2.0), reading("spot", 0.5)], ignore_index=True)
    return sweep_inputs(tmp_path, sweeps)


def test_each_preset_is_a_reading_beside_the_testbed_cells(tmp_path):
    found = capacity.readings(inputs(tmp_path))
    assert list(found) == ["none", "failures", "spot"]
    assert set(found["none"]["policy"]) == {"ours", "tiresias"}  # the policies the capacity sweep ran
    assert (found["spot"]["capacity.name"] == "spot").all()


def test_the_section_names_the_verdicts_the_outages_change(tmp_path):
    lines = expand(capacity.report_section(inputs(tmp_path), specs()), tmp_path / "out")
    assert lines[0] == "## Which claims survive a cluster that changes"
    assert f"| {CLAIM} | Y | Y | N |" in lines
    summary = next(line for line in lines if line.startswith("Verdicts of these"))
    assert f"{CLAIM} (spot pool: Y -> N)" in summary
    row = next(line for line in lines if line.startswith("| spot pool | Tiresias |"))
    assert row.split(" | ")[3].startswith("0.900")  # availability


def test_the_figure_draws_the_ratios_per_reading(tmp_path):
    paths = capacity.draw(inputs(tmp_path), tmp_path / "out")
    data = pd.read_csv(next(p for p in paths if p.suffix == ".csv"))
    jct = data[(data["metric"] == "avg_jct_ratio") & (data["policy"] == "tiresias")].set_index("reading")["mean"]
    assert jct.to_dict() == {"none": 2.0, "failures": 2.0, "spot": 0.5}


def test_the_section_is_empty_without_its_sweep(tmp_path):
    assert capacity.report_section(inputs(tmp_path, with_capacity=False), specs()) == []
