"""Intervals that respect the quantity: never below 0 for non-negative values and ratios, over
random samples (property tests), and the values worked out by hand."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fairsim.figures.stats import (
    METHOD_NOTE,
    hours_name,
    nonneg_ci,
    nonneg_interval,
    positive_ci,
    ratio_interval,
)

# wide, skewed samples like per-seed starvation hours or PAL/FFT ratios (2 to 12 seeds)
nonneg = st.lists(st.floats(min_value=0.0, max_value=1e6, allow_nan=False), min_size=2, max_size=12)
positive = st.lists(st.floats(min_value=1e-6, max_value=1e6, allow_nan=False), min_size=2, max_size=12)
shares = st.lists(st.floats(min_value=0.0, max_value=1.0, allow_nan=False), min_size=2, max_size=12)


@settings(max_examples=300, deadline=None)
@given(nonneg)
def test_nonneg_interval_never_below_zero(values):
    mean, lo, hi = nonneg_interval(values)
    assert lo >= 0.0 and lo <= mean + 1e-9 * max(1.0, mean) and hi >= mean - 1e-9 * max(1.0, mean)


@settings(max_examples=300, deadline=None)
@given(shares)
def test_share_interval_stays_in_0_1(values):
    mean, lo, hi = nonneg_interval(values, upper=1.0)
    assert 0.0 <= lo and hi <= 1.0


@settings(max_examples=300, deadline=None)
@given(positive)
def test_ratio_interval_is_positive_and_holds_the_geometric_mean(ratios):
    gmean, lo, hi = ratio_interval(ratios)
    assert lo > 0.0
    assert lo <= gmean * (1 + 1e-9) and gmean <= hi * (1 + 1e-9)
    assert min(ratios) * (1 - 1e-9) <= gmean <= max(ratios) * (1 + 1e-9)


def test_symmetric_t_interval_would_cross_zero_but_ours_does_not():
    """A REPORT.md case: max starvation of Gavel over 3 seeds, whose symmetric t-interval [-5.3, 20.8] h crosses 0."""
    hours = [0.6, 1.3, 21.2]
    mean = float(np.mean(hours))
    assert mean - 4.303 * np.std(hours, ddof=1) / math.sqrt(3) < 0  # the plain t-interval goes negative
    m, lo, hi = nonneg_interval(hours)
    assert m == pytest.approx(mean) and lo == 0.0 and hi > mean


def test_ratio_interval_by_hand():
    # logs of 2 and 8: mean log 4 = geometric mean 4, sd of logs = ln(4)/sqrt(2)
    gmean, lo, hi = ratio_interval([2.0, 8.0])
    half = 12.706204736174698 * (math.log(4) / math.sqrt(2)) / math.sqrt(2)  # t_{0.975, 1} * s / sqrt(n)
    assert gmean == pytest.approx(4.0)
    assert lo == pytest.approx(4.0 * math.exp(-half)) and hi == pytest.approx(4.0 * math.exp(half))
    assert math.log(hi / gmean) == pytest.approx(math.log(gmean / lo))  # symmetric on the log scale


def test_one_value_has_no_interval_and_nonpositive_ratios_are_dropped():
    assert all(math.isnan(v) for v in ratio_interval([1.5])[1:])
    assert math.isnan(nonneg_interval([3.0])[1])
    ci = positive_ci([2.0, 0.0, -1.0, 8.0])
    assert ci.n == 2 and ci.mean == pytest.approx(4.0)
    assert nonneg_ci([]).n == 0


def test_method_note_is_one_sentence_naming_the_methods():
    assert METHOD_NOTE.count("geometric mean") == 1 and "cut at 0" in METHOD_NOTE and "95%" in METHOD_NOTE


def test_hours_names_carry_the_unit():
    assert hours_name("avg_jct_s") == "avg_jct_h"
    assert hours_name("overhead_s_total") == "overhead_h_total"
    assert hours_name("starvation_max_s") == "starvation_max_h"
