"""The warm-started max-min LP (WarmMaxMin) against cold linprog solves on random replays."""

import numpy as np
import pytest

from fairsim.solve.maxmin import WarmMaxMin, solve_max_min


def min_rate(a, y, on):
    return (a[on] * y[on]).sum(axis=1).min()


def random_replay(seed, classes=12, steps=40, t=3):
    """Classes registered over time and a count vector per step (a few classes change per step)."""
    rng = np.random.default_rng(seed)
    a = rng.uniform(0.1, 3.0, (classes, t)) * (rng.random((classes, t)) > 0.15)
    a[:, 0] = np.maximum(a[:, 0], 0.1)  # every class can run somewhere
    gang = rng.choice([1, 2, 4], classes).astype(float)
    capacity = rng.integers(2, 9, t).astype(float)
    count = np.zeros(classes, dtype=np.int64)
    seq = []
    for step in range(steps):
        known = min(classes, 2 + step // 3)
        flip = rng.choice(known, min(known, rng.integers(1, 4)), replace=False)
        count[flip] = rng.integers(0, 4, len(flip))
        if not count[:known].any():
            count[0] = 1
        seq.append((known, count[:known].copy()))
    return a, gang, capacity, seq


def run_warm(a, gang, capacity, seq):
    lp = WarmMaxMin(capacity)
    out = []
    for known, count in seq:
        while lp.num_classes < known:
            lp.add_class(a[lp.num_classes], gang[lp.num_classes])
        out.append(lp.solve(count))
    return lp, out


@pytest.mark.parametrize("seed", range(6))
def test_warm_replay_reaches_the_cold_optimum_and_respects_the_constraints(seed):
    a, gang, capacity, seq = random_replay(seed)
    lp, ys = run_warm(a, gang, capacity, seq)
    assert lp.h is not None  # never fell back to the cold path
    for (known, count), y in zip(seq, ys):
        on = count > 0
        g = count * gang[:known]
        cold = solve_max_min(a[:known][on], g[on], capacity)
        z_cold = (a[:known][on] * cold).sum(axis=1).min()
        assert min_rate(a[:known], y, on) == pytest.approx(z_cold, rel=1e-9)
        assert (y[~on] == 0).all()  # switched-off classes get zero rows
        assert (y[a[:known] == 0] == 0).all()  # no time on a type the class cannot use
        assert (y.sum(axis=1) <= 1 + 1e-9).all()
        assert (g @ y <= capacity + 1e-7).all()


def test_replay_is_deterministic():
    a, gang, capacity, seq = random_replay(7)
    ys1 = run_warm(a, gang, capacity, seq)[1]
    ys2 = run_warm(a, gang, capacity, seq)[1]
    assert all(np.array_equal(y1, y2) for y1, y2 in zip(ys1, ys2))


def test_no_class_on_returns_zeros_and_keeps_the_warm_model():
    # with every class at 0 jobs z is unbounded: the solve must not reach HiGHS (which would
    # report unbounded and send every later solve down the slow cold path)
    lp = WarmMaxMin(np.array([2.0, 2.0]))
    lp.add_class([1.0, 2.0], 1)
    lp.add_class([2.0, 1.0], 1)
    assert lp.solve(np.array([1, 1])).sum() > 0
    assert (lp.solve(np.array([0, 0])) == 0).all()
    assert lp.h is not None
    # two 1-GPU jobs on 2+2 GPUs: each can have a whole GPU of its faster type, rate 2 each
    y = lp.solve(np.array([1, 1]))
    assert (np.array([[1.0, 2.0], [2.0, 1.0]]) * y).sum(axis=1).min() == pytest.approx(2.0, rel=1e-9)
