"""The paper's worked-example figures and tables (Figs. 1, 2, 3, 5, 6; Tables 1, 2): the numbers
come out of the same functions that draw them (fairsim.figures.*, fairsim.paper.examples)."""

import numpy as np
import pandas as pd
import pytest

from fairsim.paper import reproduce
from fairsim.paper.figures import fig1, fig2, fig3, fig5, fig6, table1, table2

LAN_BYTES_PER_S = 1.25e9


def test_table1_numbers_are_the_drawn_table(tmp_path):
    t = table1.table().set_index("allocation")
    lp, engine, optimal = t["total JCT (min)"]
    assert lp == pytest.approx(2 * 16 / 4.5)  # 50/50 split: both jobs at 4.5 epochs/min
    assert t.iloc[0][["A: fast-GPU share", "B: fast-GPU share"]].tolist() == pytest.approx([0.5, 0.5])
    assert engine == pytest.approx(lp, rel=0.01)  # Gavel's round mechanism realizes the split
    assert optimal == pytest.approx(2 + 3.75)  # A alone on the fast GPU, B follows: 5.75 min
    assert engine >= 1.2 * optimal
    checks = table1.draw(None, tmp_path)
    md = (tmp_path / "table1.md").read_text()
    assert "7.111" in md and "| 5.75 |" in md
    assert pd.read_csv(tmp_path / "data" / "table1.csv")["total JCT (min)"].tolist() == pytest.approx(
        [lp, engine, optimal], rel=1e-5
    )
    assert any(c.paper == "5.75 min" and c.ours == "5.75 min (FFT)" for c in checks)


def test_fig3_shows_gavels_migrations(tmp_path):
    _, runs = fig3.results()
    assert runs["gavel"].jobs["type_switches"].sum() >= 30  # the split swaps the jobs round after round
    assert runs["ours"].jobs["type_switches"].sum() == 1  # B moves to the fast GPU once A is done
    fig3.draw(None, tmp_path)
    rows = pd.read_csv(tmp_path / "data" / "fig3.csv")
    gavel = rows[rows["policy"] == "gavel"]
    # every plotted bar is a round a job ran; its busy seconds add up to the job's run time
    assert gavel.groupby("job")["busy_s"].sum().to_numpy() == pytest.approx(runs["gavel"].jobs["run_s"].to_numpy())


def test_fig2_timings_are_the_drawn_ones(tmp_path):
    _, runs = fig2.results()
    fft, agnostic = runs["ours"].jobs.iloc[1], runs["srtf_agnostic"].jobs.iloc[1]  # J4
    assert fft["finish_s"] == pytest.approx(14.4 * 60) and fft["migrations"] == 0
    # to the A10 at 5 min (pays 2 min), back to the T4 when J2 arrives at 10, to the A10 again at 15
    assert agnostic["finish_s"] == pytest.approx(900 + 120 + 181.5 / 1.125)
    assert (agnostic["type_switches"], agnostic["overhead_s"]) == (3, pytest.approx(360.0))
    checks = fig2.draw(None, tmp_path)
    assert (tmp_path / "fig2.pdf").is_file() and (tmp_path / "fig2.png").is_file()
    rows = pd.read_csv(tmp_path / "data" / "fig2.csv")
    j4 = rows[(rows["job"] == "J4") & (rows["policy"] == "srtf_agnostic")]
    assert (j4["t_s"] + j4["busy_s"]).max() == pytest.approx(agnostic["finish_s"])
    assert j4["overhead_s"].sum() == pytest.approx(360.0)
    assert any("14.40 min, 0" in c.ours for c in checks) and any("19.69 min, 3" in c.ours for c in checks)


def test_fig5_rho_rises_while_starved_and_falls_once_run():
    result, big = fig5.trace()
    first_round = int(result.jobs["first_start_s"].iloc[0] // 300)
    assert first_round == 33  # docs/ours.md: the big job first becomes cheaper at round 33
    rounds = (big["t_s"] // 300).astype(int).to_numpy()
    rho = big["rho"].to_numpy()
    # N = 3 at every decision: mu(r) = r / 12, fair work 1/3 per round, so rho(r) = r (r - 1) / 72
    assert rho[rounds <= 33] == pytest.approx([r * (r - 1) / 72 for r in range(34)])
    assert rho[rounds == 34][0] < rho[rounds == 33][0]
    assert big.loc[rounds < 33, "type"].eq(-1).all() and big.loc[rounds == 33, "type"].eq(0).all()


def test_fig6_packs_spreads_and_consolidates(tmp_path):
    checks = fig6.draw(None, tmp_path)
    rows = pd.read_csv(tmp_path / "data" / "fig6.csv")
    hosts = rows.groupby(["job", "t_s"])["host"].nunique()
    assert (hosts.loc[["J1", "J2", "J3", "J4", "J5", "J6"]] == 1).all()  # gangs that fit a host are packed
    assert (hosts.loc["J7"] == 2).all()  # 20 GB of state: spread until it finishes
    j8 = hosts.loc["J8"]
    assert (j8.iloc[:3] == 2).all() and (j8.iloc[3:] == 1).all()  # 4 GB: consolidated when J5 ends at 15 min
    assert set(rows.loc[(rows["job"] == "J8") & (rows["t_s"] >= 900), "host"]) == {4}  # onto J5's host
    moved = rows[rows["overhead_s"] > 0]
    assert moved["job"].unique().tolist() == ["J8"] and moved["t_s"].unique().tolist() == [900.0]
    assert moved["overhead_s"].iloc[0] == pytest.approx(30 + 4e9 / LAN_BYTES_PER_S)
    assert (
        "J8 (4 GB): spread 3 rounds, then consolidated" in checks[0].ours
        and "J7 (20 GB): spread 8 rounds, never moved" in checks[0].ours
    )


def test_fig1_and_table2_come_from_the_catalog(tmp_path):
    every = fig1.speedups("paper", "T4", "A10").set_index("model")
    assert every.loc["OPT-6.7B", "state_gb"] == pytest.approx(16 * 6.7e9 / 1e9)  # 16 bytes per parameter
    assert ((every["speedup"] > 1) & (every["speedup"] < 4)).all()
    checks = fig1.draw(None, tmp_path)
    shown = pd.read_csv(tmp_path / "data" / "fig1.csv")
    assert shown["model"].tolist() == ["ResNet50", "VGG16", "GPT2-medium", "OPT-6.7B"]
    assert any(c.ours == "107.2 GB" for c in checks)
    t = table2.catalog_table("paper")
    assert len(t) == 16 and t["state (GB)"].to_numpy() == pytest.approx(every.loc[t["model"], "state_gb"].to_numpy())
    table2.draw(None, tmp_path)
    assert (tmp_path / "table2.md").read_text().count("\n|") == 18  # header, rule, 16 models


def test_reproduce_writes_the_examples_into_the_report(tmp_path):
    args = [
        "--draw-only",
        "--only",
        "table1",
        "fig2",
        "--out",
        str(tmp_path / "figs"),
        "--results-dir",
        str(tmp_path / "results"),
    ]
    assert reproduce.main(args) == 0
    report = (tmp_path / "figs" / "REPORT.md").read_text()
    assert "| Table 1 | total JCT, optimal order | 5.75 min | 5.75 min (FFT) |" in report
    assert "`table1.md`" in report and "`fig2.pdf`" in report
    first = (tmp_path / "figs" / "fig2.png").read_bytes()
    assert reproduce.main(args) == 0
    assert (tmp_path / "figs" / "fig2.png").read_bytes() == first  # same code, same bytes
    assert np.isfinite(pd.read_csv(tmp_path / "figs" / "data" / "table1.csv")["total JCT (min)"]).all()


def test_a_bad_example_entry_is_a_one_line_error():
    from fairsim.errors import InputError
    from fairsim.paper.examples import build, load_spec

    spec = load_spec("fig2")
    spec["jobs"]["throughput"] = [[1.0], [1.0], [1.0]]  # one number per job, the cluster has two types
    with pytest.raises(InputError, match="jobs.throughput"):
        build("fig2", spec)
    spec = load_spec("fig2")
    spec["sim"]["round_end"] = "sometimes"
    with pytest.raises(InputError, match="round_end"):
        build("fig2", spec)
    with pytest.raises(InputError, match="no policy 'gavel'"):
        build("fig2").policy("gavel")
