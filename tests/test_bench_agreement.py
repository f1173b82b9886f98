"""fairsim.bench._agreement: per-job agreement figures on hand-made jobs."""

import math

import pytest

from fairsim.bench._agreement import HEADER, agreement, format_row


def test_figures_by_hand():
    theirs = [100.0, 200.0, 300.0, 400.0]
    ours = [105.0, 180.0, 300.0, 480.0]  # +5%, -10% (on the edge: within), 0, +20%
    fig = agreement(
        theirs,
        ours,
        theirs_restarts=[0, 1, 2, 1],
        ours_restarts=[0, 1, 1, 1],
        theirs_finish=[100.0, 250.0, 400.0, 600.0],  # submissions 0, 50, 100, 200
        ours_finish=[105.0, 230.0, 400.0, 680.0],
    )
    assert fig["n"] == 4
    assert fig["theirs_avg"] == 250.0 and fig["ours_avg"] == 266.25
    assert fig["avg_dev_pct"] == pytest.approx(6.5)
    assert fig["within10_pct"] == 75.0
    assert fig["median_abs_dev_pct"] == pytest.approx(7.5)  # of 5, 10, 0, 20
    assert fig["theirs_p99"] == 400.0 and fig["ours_p99"] == 480.0  # index int(0.99 * 4) = 3
    assert fig["p99_dev_pct"] == pytest.approx(20.0)
    assert fig["theirs_restarts"] == 1.0 and fig["ours_restarts"] == 0.75
    assert fig["restarts_dev_pct"] == pytest.approx(-25.0)
    assert fig["theirs_makespan"] == 600.0 and fig["ours_makespan"] == 680.0
    assert fig["makespan_dev_pct"] == pytest.approx(100 * 80 / 600)
    r = fig["r"]
    assert 0.9 < r < 1.0
    line = format_row("sia", "saturn/workload-1", fig)
    assert len(line) == len(HEADER) and "+6.50" in line


def test_arrival_and_missing_sides():
    fig = agreement([10.0, 10.0], [10.0, 12.0], theirs_finish=[20.0, 30.0], arrival=[5.0, 20.0])
    assert math.isnan(fig["r"])  # their side is constant
    assert fig["theirs_makespan"] == 25.0  # 30 - 5: the given submissions, not finish - JCT
    assert math.isnan(fig["ours_makespan"]) and math.isnan(fig["makespan_dev_pct"])
    assert math.isnan(fig["theirs_restarts"]) and math.isnan(fig["restarts_dev_pct"])
    assert fig["within10_pct"] == 50.0


def test_zero_restarts_give_nan_deviation():
    fig = agreement([1.0, 2.0], [1.0, 2.0], theirs_restarts=[0, 0], ours_restarts=[1, 0])
    assert fig["ours_restarts"] == 0.5 and math.isnan(fig["restarts_dev_pct"])
    assert fig["r"] == pytest.approx(1.0) and fig["within10_pct"] == 100.0


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"theirs_jct": [1.0, 2.0], "ours_jct": [1.0]}, "ours_jct has 1 jobs, theirs_jct has 2"),
        ({"theirs_jct": [1.0, float("nan")], "ours_jct": [1.0, 2.0]}, "theirs_jct is not finite at job position 1"),
        ({"theirs_jct": [1.0], "ours_jct": [-1.0]}, "ours_jct is negative"),
        ({"theirs_jct": [], "ours_jct": []}, "no jobs"),
        ({"theirs_jct": [1.0], "ours_jct": [1.0], "ours_restarts": [1, 2]}, "ours_restarts has 2 jobs"),
    ],
)
def test_bad_input_names_the_argument(kwargs, message):
    with pytest.raises(ValueError, match=message):
        agreement(**kwargs)
