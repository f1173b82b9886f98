"""``python -m fairsim.bench scale``: which cells run, how they are judged, and its refusals."""

import math

import pytest

from fairsim.bench import scale


def test_only_picks_cells_by_pattern_and_sizes_run_smallest_first():
    cells = scale.plan(["philly/fifo/*", "synthetic/tiresias/*"], [5000, 1000], 300)
    assert [(c.name, c.jobs) for c in cells] == [
        ("philly/fifo/rounds", 1000),
        ("philly/fifo/events", 1000),
        ("philly/fifo/rounds", 5000),
        ("philly/fifo/events", 5000),
        ("synthetic/tiresias/events", 300),
    ]
    everything = scale.plan(None, [scale.PHILLY_SIZE], scale.SYNTHETIC_SIZE)
    assert len(everything) == len(scale.PHILLY_POLICIES) * 2 + len(scale.SYNTHETIC_POLICIES)


def test_only_a_cells_own_clock_is_judged_and_a_timeout_misses():
    def row(policy, clock, trace="philly", **kw):
        return {"trace": trace, "policy": policy, "clock": clock, "status": "ok", **kw}

    assert scale.judge(row("fifo", "events", run_s=59.0))["met"] == "met"
    assert scale.judge(row("fifo", "rounds", run_s=10.0))["met"] == ""  # not FIFO's own clock
    assert scale.judge(row("ours", "rounds", run_s=61.0))["met"] == "missed"
    assert scale.judge(row("ours", "rounds", status="timeout", run_s=5.0))["met"] == "missed"
    big = row("tiresias", "events", trace="synthetic", run_s=100.0, peak_rss_mb=5000.0)
    assert scale.judge(big)["met"] == "missed"  # over 4 GiB
    assert scale.judge(big | {"peak_rss_mb": 900.0})["met"] == "met"


def test_growth_exponent_between_the_smallest_and_largest_size():
    rows = [
        {"trace": "philly", "policy": "fifo", "clock": "events", "jobs": n, "status": "ok", "sim_s": s}
        for n, s in ((20_000, 2.0), (80_000, 16.0))
    ] + [{"trace": "philly", "policy": "ours", "clock": "events", "jobs": 80_000, "status": "timeout"}]
    out = scale.growth_exponents(rows)
    assert out[1]["growth_exponent"] == pytest.approx(1.5) and out[1]["exponent_met"] == "missed"
    assert "growth_exponent" not in out[0] and "growth_exponent" not in out[2]  # one size only
    rows[0]["sim_s"] = 8.0
    assert scale.growth_exponents(rows)[1]["exponent_met"] == "met"
    rows[0]["status"] = "timeout"
    assert math.isnan(scale.growth_exponents(rows)[1]["growth_exponent"])


@pytest.mark.parametrize(
    "argv, problem",
    [
        (["--num-jobs", "90000"], "--num-jobs"),
        (["--num-jobs", "0"], "--num-jobs"),
        (["--timeout", "0"], "--timeout"),
        (["--synthetic-jobs", "0"], "--synthetic-jobs"),
        (["--only", "nothing/*"], "no cell matches"),
        (["--bogus"], "unrecognized"),
    ],
)
def test_bad_arguments_are_refused_with_exit_2_before_any_cell(argv, problem, capsys, tmp_path):
    with pytest.raises(SystemExit) as e:
        scale.main([*argv, "--out", str(tmp_path / "x.csv")])
    err = capsys.readouterr().err
    assert e.value.code == 2 and "error:" in err and problem in err
    assert not (tmp_path / "x.csv").exists()


@pytest.mark.slow
def test_a_cell_past_its_timeout_is_stopped_and_missed():
    row = scale.judge(scale.run_cell(scale.Cell("philly", "fifo", "events", 500), seed=0, timeout=0.3))
    assert row["status"] == "timeout" and row["met"] == "missed" and row["run_s"] < 5
