"""Figures and headline numbers on tiny hand-made results tables: the statistics, the verdicts,
and byte-identical PDF/PNG output on a rerun."""

import math
from pathlib import Path

import pandas as pd
import pytest

from fairsim.figures.data import Inputs, MissingInput, SweepData
from fairsim.figures.stats import Interval, mean_ci, paired_differences, paired_ratios
from fairsim.paper.figures import fig7, fig8, fig9, fig10, fig11, fig12, fig13
from fairsim.paper.headlines import evaluate, verdict
from fairsim.paper.report import write_report

# avg JCT per (policy, workload, seed): gavel is 2x ours on trace1, 1.5x on trace2 (seed 0, 1)
JCT = {
    ("ours", "trace1"): [100.0, 200.0],
    ("gavel", "trace1"): [200.0, 400.0],
    ("ours", "trace2"): [100.0, 100.0],
    ("gavel", "trace2"): [150.0, 160.0],
    ("tiresias", "trace1"): [90.0, 210.0],
    ("tiresias", "trace2"): [95.0, 90.0],
}


def cells_table() -> pd.DataFrame:
    rows = []
    for (policy, workload), values in JCT.items():
        for seed, jct in enumerate(values):
            rows.append(
                {
                    "cell": f"policy={policy},seed={seed},workload={workload}",
                    "policy": policy,
                    "workload": workload,
                    "cluster": "paper",
                    "seed": seed,
                    "num_jobs": 3,
                    "finished_jobs": 3,
                    "avg_jct_s": jct,
                    "makespan_s": 10 * jct,
                    "rho_mean": jct / 100,
                    "rho_max": jct / 50,
                    "rho_lt1_share": 100 / jct / 2,
                    "rho_fluid_mean": jct / 100,
                    "rho_fluid_max": jct / 50,
                    "rho_fluid_lt1_share": 100 / jct / 2,
                    "starvation_max_s": jct * 36,
                    "starvation_mean_s": jct * 3,
                    "migrations": int(jct) // 10,
                    "switches_to_faster_share": 0.5,
                    "overhead_s_total": jct,
                    "type_switches": int(jct) // 20,
                }
            )
    return pd.DataFrame(rows)


def write_sweep(folder, cells: pd.DataFrame) -> SweepData:
    """A collected sweep on disk: results.parquet, jobs.parquet and each cell's rounds.parquet."""
    folder.mkdir(parents=True)
    cells.assign(sweep=folder.name).to_parquet(folder / "results.parquet", index=False)
    jobs = []
    for i, row in enumerate(cells.itertuples()):
        jobs.append(
            pd.DataFrame(
                {
                    "cell": row.cell,
                    "job_id": [0, 1, 2],
                    "rho": [0.5, 1.0 + i / 10, 2.0],
                    "rho_fluid": [0.5, 1.0 + i / 10, 2.0],
                    "starvation_s": [0.0, 60.0 * i, 3600.0],
                }
            )
        )
        (folder / row.cell).mkdir()
        pd.DataFrame(
            {
                "t_s": [0.0, 300.0],
                "duration_s": [300.0, 300.0],
                "rounds": [1, 1],
                "active_jobs": [2, 3],
                "policy_s": [0.01, 0.02],
            }
        ).to_parquet(folder / row.cell / "rounds.parquet", index=False)
    pd.concat(jobs, ignore_index=True).to_parquet(folder / "jobs.parquet", index=False)
    return SweepData.load(folder)


def test_mean_ci_matches_the_t_interval_by_hand():
    ci = mean_ci([1.0, 2.0, 3.0])
    half = 4.302652729911275 / math.sqrt(3)  # t_{0.975, 2} * s / sqrt(n), s = 1
    assert (ci.mean, ci.n) == (2.0, 3)
    assert ci.lo == pytest.approx(2 - half) and ci.hi == pytest.approx(2 + half)


def test_mean_ci_drops_nan_and_has_no_interval_for_one_value():
    ci = mean_ci([4.0, float("nan")])
    assert ci.mean == 4.0 and ci.n == 1 and math.isnan(ci.lo) and math.isnan(ci.hi)
    assert mean_ci([]).n == 0


def test_paired_ratios_pair_by_trace_and_seed():
    cells = cells_table()
    cells = cells[~((cells["policy"] == "gavel") & (cells["workload"] == "trace2") & (cells["seed"] == 1))]
    ratios = paired_ratios(cells, "avg_jct_s", "gavel")
    assert list(ratios.index) == [("trace1", 0), ("trace1", 1), ("trace2", 0)]  # the unpaired seed is left out
    assert list(ratios) == [2.0, 2.0, 1.5]
    diffs = paired_differences(cells, "avg_jct_s", "tiresias")
    assert list(diffs) == [10.0, -10.0, 5.0, 10.0]  # ours - tiresias
    assert paired_ratios(cells, "avg_jct_s", "nobody").empty


def test_verdict_needs_the_whole_interval_on_the_paper_side():
    assert verdict(Interval(1.5, 1.1, 1.9, 3), 1.0, expect_above=True) == "yes"
    assert verdict(Interval(1.5, 0.9, 2.1, 3), 1.0, expect_above=True) == "weak"
    assert verdict(Interval(0.8, 0.7, 0.9, 3), 1.0, expect_above=True) == "no"
    assert verdict(Interval(-2.0, -3.0, -1.0, 3), 0.0, expect_above=False) == "yes"
    assert verdict(Interval(1.5, math.nan, math.nan, 1), 1.0, expect_above=True) == "weak"


def test_headlines_pool_max_compare_and_missing(tmp_path):
    inputs = Inputs({"testbed": write_sweep(tmp_path / "tb", cells_table())}, {})
    specs = [
        {
            "claim": "pool",
            "paper": "1.4x",
            "kind": "ratio",
            "sweep": "testbed",
            "metric": "avg_jct_s",
            "baselines": ["gavel"],
            "reduce": "pool",
        },
        {
            "claim": "max",
            "paper": "up to 3x",
            "kind": "ratio",
            "sweep": "testbed",
            "metric": "avg_jct_s",
            "baselines": ["gavel", "tiresias"],
            "workloads": ["trace1", "trace2"],
            "reduce": "max",
        },
        {
            "claim": "cmp",
            "paper": "-",
            "kind": "compare",
            "sweep": "testbed",
            "metric": "starvation_max_s",
            "policies": ["ours", "gavel"],
            "better": "lower",
            "scale": 1 / 3600,
            "unit": " h",
        },
        {
            "claim": "absent",
            "paper": "2x",
            "kind": "ratio",
            "sweep": "testbed",
            "metric": "avg_jct_s",
            "baselines": ["pal"],
            "reduce": "pool",
        },
        {
            "claim": "no sweep",
            "paper": "2x",
            "kind": "ratio",
            "sweep": "simulated",
            "metric": "avg_jct_s",
            "baselines": ["gavel"],
            "reduce": "max",
        },
    ]
    rows = evaluate(specs, inputs)
    # pooled gavel/ours ratios: 2, 2, 1.5, 1.6 -> geometric mean (2 * 2 * 1.5 * 1.6) ** (1/4) = 1.760, all > 1
    assert rows[0].ours.startswith("1.76x [")
    assert rows[0].verdict == "yes"
    # largest per-trace mean: gavel on trace1 (2.0, both seeds); tiresias stays below 1.2
    assert rows[1].ours.startswith("up to 2.00x") and "Gavel, Trace 1" in rows[1].ours and "> 1 in 2/4" in rows[1].ours
    assert (
        rows[2].claim == "cmp [FFT vs Gavel]" and rows[2].verdict == "weak"
    )  # diffs -1, -2, -0.5, -0.6 h: CI reaches 0
    assert rows[3].verdict == "not measured" and "pal" in rows[3].ours
    assert rows[4].verdict == "not measured" and "simulated" in rows[4].ours
    gapped = evaluate(specs[:1], inputs, gaps={"testbed": "needs option x"})
    assert gapped[0].verdict == "not reproduced" and "needs option x" in gapped[0].ours


def draw(modules, inputs: Inputs, out) -> dict:
    for module in modules:
        module.draw(inputs, out)
    return {p.relative_to(out): p.read_bytes() for p in sorted(out.rglob("*")) if p.is_file()}


@pytest.mark.slow
def test_every_figure_draws_pdf_png_and_data_byte_identical_on_rerun(tmp_path):
    cells = cells_table()
    testbed = write_sweep(tmp_path / "tb", cells)
    ablation = write_sweep(
        tmp_path / "ab",
        cells[cells["policy"] != "tiresias"].assign(
            policy=lambda c: c["policy"].replace({"gavel": "ours_noswitch", "ours": "srtf_agnostic"}),
            cell=lambda c: c["cell"] + "_ab",
        ),
    )
    simulated = write_sweep(
        tmp_path / "sim",
        cells.assign(
            workload=cells["workload"].map({"trace1": "trace3", "trace2": "trace9"}), cell=cells["cell"] + "_sim"
        ),
    )
    bench = pd.DataFrame({"jobs": [250.0, 500.0], "ours_s": [0.05, 0.09]})
    inputs = Inputs({"testbed": testbed, "ablation": ablation, "simulated": simulated}, {"solver": bench})
    first = draw((fig7, fig8, fig9, fig10, fig11, fig12, fig13), inputs, tmp_path / "a")
    for fig in ("fig7", "fig8", "fig9", "fig10", "fig11", "fig12", "fig13"):
        assert first[Path(f"{fig}.pdf")].startswith(b"%PDF") and first[Path(f"{fig}.png")].startswith(b"\x89PNG")
        assert Path(f"data/{fig}.csv") in first
    # a rerun in a fresh folder gives the same bytes (two figures keep the test fast)
    second = draw((fig7, fig13), inputs, tmp_path / "b")
    assert second == {k: v for k, v in first.items() if k.stem in ("fig7", "fig13", "fig13a_timing")}
    fig7_data = pd.read_csv(tmp_path / "a" / "data" / "fig7.csv")
    rows = fig7_data[
        (fig7_data["metric"] == "avg_jct_ratio")
        & (fig7_data["policy"] == "gavel")
        & (fig7_data["workload"] == "trace1")
    ]
    ours, paper = rows[rows["source"] == "ours"], rows[rows["source"] == "paper"]
    assert ours["mean"].item() == pytest.approx(2.0) and ours["n"].item() == 2
    assert paper["paper"].item() == pytest.approx(1.46)  # PAPER.md sec. 4, drawn beside ours
    fig10_data = pd.read_csv(tmp_path / "a" / "data" / "fig10.csv")
    assert set(fig10_data["policy"]) >= {"ours", "ours_noswitch", "srtf_agnostic", "gavel"}  # testbed + ablation


def test_fig13_without_the_profile_error_sweep_says_so(tmp_path):
    inputs = Inputs({}, {})
    paths = fig13.draw(inputs, tmp_path)
    assert (tmp_path / "fig13.pdf") in paths
    data = pd.read_csv(tmp_path / "data" / "fig13.csv")
    assert set(data["source"]) == {"paper"}  # nothing of ours was drawn, only the paper's bound
    timing = pd.read_csv(tmp_path / "machine" / "data" / "fig13a_timing.csv")
    assert set(timing["source"]) == {"paper"}  # no benchmark, no sweeps: only the paper's two cvxpy points
    with pytest.raises(MissingInput):
        fig7.draw(inputs, tmp_path)


def test_report_lists_rows_gaps_and_sweeps(tmp_path):
    inputs = Inputs({"testbed": write_sweep(tmp_path / "tb", cells_table())}, {})
    rows = evaluate(
        [
            {
                "claim": "pool",
                "paper": "1.4x",
                "kind": "ratio",
                "sweep": "testbed",
                "metric": "avg_jct_s",
                "baselines": ["gavel"],
                "reduce": "pool",
            }
        ],
        inputs,
    )
    path = write_report(
        tmp_path / "REPORT.md",
        "small",
        rows,
        inputs,
        {"fig7": "JCT"},
        {"profile_error": "needs option x"},
        "python -m fairsim.paper.reproduce",
    )
    text = path.read_text()
    assert "| pool | 1.4x | 1.7" in text and "| yes |" in text
    assert "1 yes, 0 weak, 0 no, of 1 numbers" in text
    assert "- profile_error: not reproduced: needs option x" in text
    assert "| testbed | tb | 12 | FFT, Gavel, Tiresias | trace1, trace2 | paper | 0, 1 | 3 |" in text


def test_every_policy_has_its_own_colour_and_unknown_names_a_stable_one():
    from fairsim.figures import style

    named = [
        "ours",
        "gavel",
        "gavel_mmf",
        "gavel_ftf",
        "themis",
        "tiresias",
        "tiresias_las",
        "allox",
        "pal",
        "fifo",
        "srtf",
        "srtf_agnostic",
        "ours_nofair",
        "ours_constmu",
        "ours_noswitch",
    ]
    colours = [style.color(p) for p in named]
    assert len(set(c.lower() for c in colours)) == len(named)
    assert style.color("gavel") != style.color("gavel_mmf")
    assert style.color("my_new_policy") == style.color("my_new_policy") and style.color("my_new_policy").startswith("#")
    assert style.color("my_new_policy") not in colours[:9]  # fallbacks never repeat a main baseline's colour


@pytest.mark.slow
def test_figure_tables_name_units_and_keep_non_negative_intervals(tmp_path):
    cells = cells_table()
    # seeds far apart: a plain t-interval of the starvation hours and of the ratios would cross 0
    cells.loc[cells["seed"] == 1, "starvation_max_s"] *= 40
    cells.loc[(cells["seed"] == 1) & (cells["policy"] == "gavel"), "avg_jct_s"] *= 30
    testbed = write_sweep(tmp_path / "tb", cells)
    inputs = Inputs({"testbed": testbed, "ablation": testbed}, {})
    for module in (fig7, fig9, fig10):
        module.draw(inputs, tmp_path / "out")
    fig9_data = pd.read_csv(tmp_path / "out" / "data" / "fig9.csv")
    bars = fig9_data[fig9_data["panel"] == "bars"]
    assert set(bars["metric"]) == {"starvation_max_h", "starvation_mean_h"}  # hours, named so
    assert (bars["lo"].dropna() >= 0).all()
    fig7_data = pd.read_csv(tmp_path / "out" / "data" / "fig7.csv")
    assert (fig7_data["lo"].dropna() > 0).all()  # ratios: geometric intervals stay positive
    fig10_data = pd.read_csv(tmp_path / "out" / "data" / "fig10.csv")
    assert "overhead_h_total" in set(fig10_data["metric"]) and "overhead_s_total" not in set(fig10_data["metric"])


def test_sweep_summary_names_hours_as_hours(tmp_path):
    from fairsim.figures import sweep_summary

    cells = cells_table().assign(load=0.5)
    (tmp_path / "sw").mkdir()
    cells.to_parquet(tmp_path / "sw" / "results.parquet", index=False)
    sweep_summary.draw(tmp_path / "sw")
    data = pd.read_csv(tmp_path / "sw" / "figures" / "data" / "summary.csv")
    assert set(data["metric"]) == {"avg_jct_h", "rho_fluid_mean"}
    jct = data[(data["metric"] == "avg_jct_h") & (data["policy"] == "gavel")].set_index("workload")
    # the two traces are distinct settings, each its own series over its own seeds, never pooled
    assert jct.loc["trace1", "mean"] == pytest.approx((200 + 400) / 2 / 3600, rel=1e-5) and jct.loc["trace1", "n"] == 2
    assert jct.loc["trace2", "mean"] == pytest.approx((150 + 160) / 2 / 3600, rel=1e-5)
