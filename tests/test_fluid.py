"""The fluid max-min fair schedule behind rho_fluid: hand-worked cases, invariants, policy independence."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fairsim.errors import InputError
from fairsim.fairness.fluid import fluid_finish_times, fluid_gpus
from fairsim.fairness.share import share_rate
from fairsim.metrics import add_job_metrics
from fairsim.policies.fifo import FifoPolicy
from fairsim.policies.srtf import SrtfPolicy
from fairsim.sim.config import SimConfig
from fairsim.sim.engine import simulate
from fairsim.testing import toy_cluster, toy_jobs


def test_one_gpu_two_equal_jobs_share_it_half_and_half():
    # each holds 0.5 GPU -> rate 0.5 -> both finish at 200 s
    assert fluid_finish_times([0, 0], [100.0, 100.0], [1, 1], [[1.0], [1.0]], [1]).tolist() == pytest.approx(
        [200.0, 200.0]
    )


def test_gang_capped_below_its_share_passes_the_rest_on():
    # 8 GPUs, three jobs: A (1 worker) can use 1 of its 8/3, B and C (4 workers) split the other 7: 3.5 each,
    # i.e. they run 3.5/4 of the time at 1 unit/s. A (10 units) ends at 10 s, B and C then hold 4 GPUs each
    # (rate 1): B has 14 - 8.75 = 5.25 left -> 15.25 s. Alone, C still uses only 4 of the 8 GPUs (rate 1):
    # it has 20 - 14 = 6 left at 15.25 s -> 21.25 s.
    finish = fluid_finish_times([0, 0, 0], [10.0, 14.0, 20.0], [1, 4, 4], [[1.0], [1.0], [1.0]], [8])
    assert finish.tolist() == pytest.approx([10.0, 15.25, 21.25])


def test_a_saturated_job_leaves_its_fast_share_to_a_gang_that_then_needs_less_of_the_slow_type():
    # fast F and slow S, 4 GPUs each. A: 4 workers (2 units/s on F, 1 on S); B: 1 worker, same speeds.
    # Equal shares would be 2 F + 2 S each; B can use only 1 F GPU, so A gets the other 3 F and then needs
    # only 1 S (fractions 3/4 + 1/4): A's rate 1.75, B's 2.
    gpus = fluid_gpus([4, 1], [[2.0, 1.0], [2.0, 1.0]], [4, 4])
    assert gpus == pytest.approx(np.array([[3.0, 1.0], [1.0, 0.0]]))
    # B (2 units) ends at 1 s; A has done 1.75 of 7, then alone runs all 4 F at 2 units/s: 5.25 / 2 more
    finish = fluid_finish_times([0, 0], [7.0, 2.0], [4, 1], [[2.0, 1.0], [2.0, 1.0]], [4, 4])
    assert finish.tolist() == pytest.approx([3.625, 1.0])


def test_job_that_fits_only_one_type_and_a_late_arrival():
    # F: 1 GPU, S: 2 GPUs. A runs only on F (S is memory-infeasible: throughput 0) at 2 units/s;
    # B and C run on F at 2 and on S at 1. All gangs are 1 worker.
    # [0, 2): A and B split F (0.5 each); B fills its other half on S: A's rate 1, B's 0.5 * 2 + 0.5 * 1 = 1.5.
    # [2, 4.25): C arrives; F split three ways (1/3), B and C take 2/3 of S each: A's rate 2/3, B's and C's
    #   (1/3) * 2 + (2/3) * 1 = 4/3. B had 3 of 6 done: 3 / (4/3) = 2.25 s more -> B ends at 4.25 s.
    # [4.25, 10.25): A (3.5 of 10 done) and C (3 of 12 done) split F: A's rate 1, C's 1.5 -> C ends at 10.25 s.
    # [10.25, ...): A alone on F at 2 units/s with 0.5 left -> 10.5 s.
    tput = [[2.0, 0.0], [2.0, 1.0], [2.0, 1.0]]
    gpus = fluid_gpus([1, 1], tput[:2], [1, 2])
    assert gpus == pytest.approx(np.array([[0.5, 0.0], [0.5, 0.5]]))
    finish = fluid_finish_times([0, 0, 2], [10.0, 6.0, 12.0], [1, 1, 1], tput, [1, 2])
    assert finish.tolist() == pytest.approx([10.5, 4.25, 10.25])


def test_shares_follow_share_rate_when_nothing_is_passed_on():
    # 10 one-worker jobs on 2 + 3 GPUs: each holds 0.2 + 0.3 GPUs (fractions 0.5 < 1), exactly a 1/N share
    tput = np.tile([3.0, 1.0], (10, 1))
    gpus = fluid_gpus(np.ones(10), tput, [2, 3])
    rate = (gpus * tput).sum(axis=1)
    assert rate == pytest.approx(share_rate(tput, np.ones(10), np.array([2.0, 3.0]), np.full(10, 10.0)))


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 6), st.integers(1, 3), st.data())
def test_fluid_share_invariants(n_jobs, n_types, data):
    """Capacity holds, a job's time fractions sum to <= 1, a type left unfilled is one that every job able to
    use it takes all it can of, and no job gets less than its isolated rate on a 1/N share."""
    counts = np.array(data.draw(st.lists(st.integers(1, 8), min_size=n_types, max_size=n_types)), dtype=float)
    workers = np.array(data.draw(st.lists(st.sampled_from([1, 2, 4]), min_size=n_jobs, max_size=n_jobs)), dtype=float)
    speeds = st.lists(st.sampled_from([0.0, 0.5, 1.0, 2.0, 3.0]), min_size=n_types, max_size=n_types)
    tput = np.array(data.draw(st.lists(speeds, min_size=n_jobs, max_size=n_jobs)))
    tput = np.where(workers[:, None] <= counts[None, :], tput, 0.0)
    keep = (tput > 0).any(axis=1)
    if not keep.any():
        return
    workers, tput = workers[keep], tput[keep]
    gpus = fluid_gpus(workers, tput, counts)
    fractions = gpus / workers[:, None]
    eps = 1e-9
    assert (gpus >= 0).all() and (gpus[tput == 0] == 0).all()
    assert (gpus.sum(axis=0) <= counts + eps).all()
    assert (fractions.sum(axis=1) <= 1 + eps).all()
    unfilled = gpus.sum(axis=0) < counts - eps
    for k in np.flatnonzero(unfilled):
        for j in np.flatnonzero(tput[:, k] > 0):
            faster = (tput[j] > tput[j, k]) | ((tput[j] == tput[j, k]) & (np.arange(n_types) < k))
            could = max(workers[j] - gpus[j, faster].sum(), 0.0)  # what is left of its gang after faster types
            assert gpus[j, k] == pytest.approx(could, abs=1e-9)
    rate = (fractions * tput).sum(axis=1)
    fair = share_rate(tput, workers, counts, np.full(len(workers), float(len(workers))))
    assert (rate >= fair - 1e-9).all()


def test_deterministic_and_independent_of_row_order():
    rng = np.random.default_rng(3)
    n = 300
    arrival = np.sort(rng.uniform(0, 5000, n))
    work = rng.uniform(50, 5000, n)
    workers = rng.choice([1, 2, 4, 8], n)
    tput = rng.choice([0.0, 0.5, 1.0, 2.0], size=(n, 3)) * rng.choice([1.0, 1.5], size=(n, 1))
    tput[:, 0] = np.where(tput.max(axis=1) == 0, 1.0, tput[:, 0])
    counts = np.array([8, 16, 8])
    first = fluid_finish_times(arrival, work, workers, tput, counts)
    assert np.array_equal(first, fluid_finish_times(arrival, work, workers, tput, counts))
    assert np.isfinite(first).all() and (first >= arrival + work / tput.max(axis=1) - 1e-6).all()
    perm = rng.permutation(n)
    shuffled = fluid_finish_times(arrival[perm], work[perm], workers[perm], tput[perm], counts)
    assert shuffled == pytest.approx(first[perm], rel=1e-9)


def test_event_loop_matches_a_plain_job_by_job_replay():
    """The class grouping and per-class progress bookkeeping against a direct replay: remaining work per job,
    rates from ``fluid_gpus`` over the active jobs, next event = next arrival or first finish."""
    rng = np.random.default_rng(11)
    n = 40
    arrival = np.sort(rng.choice([0.0, 30.0, 60.0, 500.0, 900.0, 1000.0], n))  # ties on purpose
    work = rng.choice([100.0, 250.0, 1000.0], n)
    workers = rng.choice([1, 2, 4], n)
    tput = rng.choice([0.0, 1.0, 2.0], size=(n, 2))
    tput[tput.max(axis=1) == 0, 1] = 1.0
    counts = np.array([4, 6])
    remaining, expected, t = work.copy(), np.full(n, np.nan), 0.0
    while np.isnan(expected).any():
        active = np.flatnonzero((arrival <= t) & np.isnan(expected))
        upcoming = arrival[arrival > t]
        if not active.size:
            t = upcoming.min()
            continue
        rate = (fluid_gpus(workers[active], tput[active], counts) / workers[active, None] * tput[active]).sum(axis=1)
        step = min((remaining[active] / rate).min(), (upcoming.min() - t) if upcoming.size else np.inf)
        remaining[active] -= rate * step
        t += step
        expected[active[remaining[active] <= 1e-9 * work[active]]] = t
    assert fluid_finish_times(arrival, work, workers, tput, counts) == pytest.approx(expected, rel=1e-9)


def test_reference_is_the_same_for_two_policies():
    cluster = toy_cluster({"T4": 2, "V100": 2})
    jobs = toy_jobs(
        [[1.0, 2.0], [1.0, 3.0], [0.5, 0.0], [1.0, 1.0], [2.0, 4.0]],
        work=[3000.0, 600.0, 900.0, 4000.0, 1200.0],
        arrival=[0.0, 0.0, 100.0, 400.0, 900.0],
        workers=[2, 1, 1, 2, 1],
    )
    tables = [
        add_job_metrics(res.jobs, jobs, cluster, res.rounds)
        for res in (
            simulate(jobs, cluster, policy, SimConfig(round_len_s=60)) for policy in (FifoPolicy(), SrtfPolicy())
        )
    ]
    assert not np.array_equal(tables[0]["jct_s"].to_numpy(), tables[1]["jct_s"].to_numpy())  # the policies differ
    assert np.array_equal(tables[0]["t_id_fluid_s"].to_numpy(), tables[1]["t_id_fluid_s"].to_numpy())
    for table in tables:
        assert table["rho_fluid"].to_numpy() == pytest.approx(
            table["jct_s"].to_numpy() / table["t_id_fluid_s"].to_numpy()
        )


def test_memory_infeasible_type_gets_no_share_in_the_metrics():
    # job 1 does not fit the V100's memory (throughput 0 there). Offered half of each type, job 1 can use
    # only its T4 half, so job 0 gets the whole V100 (rate 2, fraction 1: saturated) and passes its T4
    # half back to job 1 (rate 1): 50 s and 100 s, while job 1 never holds any V100.
    cluster = toy_cluster({"T4": 1, "V100": 1})
    jobs = toy_jobs([[1.0, 2.0], [1.0, 2.0]], work=[100.0, 100.0], feasible=[[True, True], [True, False]])
    assert fluid_gpus(jobs.workers, jobs.tput_packed, cluster.counts).tolist() == [[0.0, 1.0], [1.0, 0.0]]
    res = simulate(jobs, cluster, FifoPolicy(), SimConfig(round_len_s=50))
    table = add_job_metrics(res.jobs, jobs, cluster, res.rounds)
    assert table["t_id_fluid_s"].tolist() == pytest.approx([50.0, 100.0])


def test_bad_input_is_refused_in_one_line():
    with pytest.raises(InputError, match="fluid fair share: throughput: job at row 1 cannot run"):
        fluid_finish_times([0, 0], [1.0, 1.0], [1, 4], [[1.0], [1.0]], [2])  # 4 workers on a 2-GPU type
    with pytest.raises(InputError, match="throughput: must be"):
        fluid_finish_times([0, 0], [1.0, 1.0], [1, 1], [[1.0, 1.0]], [2])


def reference_gpus(workers, tput, counts, passes=10_000):
    """A plain restatement of the fluid share for the differential test below: per type a water
    level; each job, in its speed order (faster first, ties: lower type), takes min(level, what is
    left of its gang) of each type; a type whose jobs ask less than its GPUs has no level (all
    take what they can); levels iterated up from Y_k / (jobs able to use k) to the fixed point."""
    n, t = tput.shape
    order = [sorted(range(t), key=lambda k: (-tput[j, k], k)) for j in range(n)]
    able = tput > 0
    level = np.where(able.any(axis=0), counts / np.maximum(able.sum(axis=0), 1), np.inf)
    for _ in range(passes):
        room = np.zeros((n, t))  # what is left of each gang when it reaches type k
        gpus = np.zeros((n, t))
        for j in range(n):
            left = float(workers[j])
            for k in order[j]:
                if able[j, k]:
                    room[j, k] = left
                    gpus[j, k] = min(level[k], left)
                    left -= gpus[j, k]
        new = np.full(t, np.inf)
        for k in range(t):
            asks = np.sort(room[able[:, k], k])
            if asks.sum() <= counts[k]:
                continue
            below = 0.0
            for i, ask in enumerate(asks):  # the level is past every ask that fits under it
                rest = len(asks) - i
                if below + ask * rest >= counts[k]:
                    new[k] = (counts[k] - below) / rest
                    break
                below += ask
        if np.allclose(np.minimum(new, 1e6), np.minimum(level, 1e6), rtol=0, atol=1e-13):
            return gpus
        level = new
    raise AssertionError("the reference did not converge")


@pytest.mark.parametrize("seed", range(40))
def test_fluid_gpus_match_a_plain_reference(seed):
    # the optimized water-filling (kinds, grouped rooms, rounding-bounded sums) against the plain
    # restatement above, on random small clusters with mixed gang sizes and speed orders
    rng = np.random.default_rng(7000 + seed)
    n, t = int(rng.integers(1, 30)), int(rng.integers(1, 5))
    counts = rng.choice([1, 2, 4, 8, 16], t).astype(float)
    workers = rng.choice([1, 2, 4, 8], n).astype(float)
    tput = rng.choice([0.0, 0.5, 1.0, 1.0, 2.0, 3.0], size=(n, t)) * rng.choice([1.0, 1.3], size=(n, 1))
    tput = np.where(workers[:, None] <= counts[None, :], tput, 0.0)
    keep = (tput > 0).any(axis=1)
    if not keep.any():
        return
    workers, tput = workers[keep], tput[keep]
    assert fluid_gpus(workers, tput, counts) == pytest.approx(reference_gpus(workers, tput, counts), abs=1e-9)


def replayed_finish_times(arrival, work, workers, tput, counts):
    """A plain job-by-job replay of the fluid schedule: every active job's rate from ``reference_gpus`` (no
    classes, kinds or rounding bounds), the clock moved to the next arrival or first finish."""
    remaining, finish, t = work.copy(), np.full(len(work), np.nan), float(arrival.min())
    while np.isnan(finish).any():
        active = np.flatnonzero((arrival <= t) & np.isnan(finish))
        upcoming = arrival[arrival > t]
        if not active.size:
            t = float(upcoming.min())
            continue
        gpus = reference_gpus(workers[active], tput[active], counts)
        rate = (gpus / workers[active, None] * tput[active]).sum(axis=1)
        step = min((remaining[active] / rate).min(), (upcoming.min() - t) if upcoming.size else np.inf)
        remaining[active] -= rate * step
        t += step
        finish[active[remaining[active] <= 1e-9 * work[active]]] = t
    return finish


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 9), st.integers(1, 3), st.data())
def test_finish_times_match_a_plain_replay(n_jobs, n_types, data):
    """The event loop (classes sharing one progress clock, per-kind rooms, the fixed point's shortcuts) against
    the plain replay above, on random small traces with tied arrivals, mixed gangs and speed orders."""
    counts = np.array(data.draw(st.lists(st.integers(1, 8), min_size=n_types, max_size=n_types)), dtype=float)
    jobs = st.tuples(
        st.sampled_from([0.0, 0.0, 40.0, 100.0, 700.0]),  # arrival: ties on purpose
        st.sampled_from([30.0, 100.0, 250.0, 1000.0]),  # work
        st.sampled_from([1, 2, 4]),  # workers
        st.lists(st.sampled_from([0.0, 0.5, 1.0, 2.0, 3.0]), min_size=n_types, max_size=n_types),
    )
    rows = [r for r in data.draw(st.lists(jobs, min_size=n_jobs, max_size=n_jobs)) if any(r[3])]
    tput = np.array([r[3] for r in rows]).reshape(len(rows), n_types)
    workers = np.array([r[2] for r in rows], dtype=float)
    tput = np.where(workers[:, None] <= counts[None, :], tput, 0.0)
    runnable = (tput > 0).any(axis=1)
    if not runnable.any():
        return
    arrival = np.array([r[0] for r in rows])[runnable]
    work = np.array([r[1] for r in rows])[runnable]
    workers, tput = workers[runnable], tput[runnable]
    expected = replayed_finish_times(arrival, work, workers, tput, counts)
    assert fluid_finish_times(arrival, work, workers, tput, counts) == pytest.approx(expected, rel=1e-9)
