"""Gavel's round mechanism on tiny hand-made views."""

import numpy as np
import pytest

from fairsim.errors import InputError
from fairsim.policies.mechanism import GavelMechanism
from fairsim.testing import toy_cluster, toy_view

ROUND = 360.0


def fixed(x):
    x = np.asarray(x, dtype=float)
    return lambda view: x[view.job_id]


class Driver:
    """Feeds the mechanism consecutive views of the same jobs; jobs that ran get a full round."""

    def __init__(self, mech, tput, capacity, workers=None, work=None, cluster=None, **kw):
        self.mech, self.tput, self.capacity = mech, np.asarray(tput, float), capacity
        n = len(self.tput)
        self.workers = workers
        self.work = np.full(n, 1e12) if work is None else np.asarray(work, float)
        self.run_s = np.zeros(n)
        self.done = np.zeros(n)
        self.now = 0.0
        self.kw = kw
        mech.reset(cluster or toy_view(self.tput, capacity).cluster, n)

    def step(self, fractions, changed=False):
        view = toy_view(
            self.tput,
            self.capacity,
            workers=self.workers,
            work=self.work,
            done=self.done,
            now=self.now,
            round_len=ROUND,
            changed=changed,
            **self.kw,
        )
        object.__setattr__(view, "run_s", self.run_s.copy())
        a = self.mech.assign(view, fractions)
        ran = a >= 0
        self.run_s[ran] += ROUND
        self.now += ROUND
        return a


def test_priority_is_target_over_received_share():
    # three 1-GPU jobs, one GPU, targets 0.5 / 0.3 / 0.2: over many rounds each job gets its share
    d = Driver(GavelMechanism(), [[1.0]] * 3, [1])
    x = fixed([[0.5], [0.3], [0.2]])
    runs = np.zeros(3)
    first = d.step(x, changed=True)
    assert list(first) == [0, -1, -1]  # equal received shares: highest target first
    runs += first >= 0
    for _ in range(99):
        runs += d.step(x) >= 0
    assert runs.tolist() == pytest.approx([50, 30, 20], abs=2)


def test_priority_values_match_gavel_formula():
    mech = GavelMechanism()
    d = Driver(mech, [[1.0, 1.0]] * 2, [1, 1])
    d.step(fixed([[0.75, 0.25], [0.25, 0.75]]), changed=True)
    # after the reset every job has 180 s on each type, each type 360 s in total; job 0 then ran
    # 360 s on type 0 and job 1 360 s on type 1
    view = toy_view([[1.0, 1.0]] * 2, [1, 1], now=ROUND, round_len=ROUND, changed=False)
    object.__setattr__(view, "run_s", d.run_s.copy())
    mech.row_of[view.job_id] = np.arange(2)
    mech._account_previous_round(view)
    prio = mech.priorities(view)
    share = np.array([[540 / 720, 180 / 720], [180 / 720, 540 / 720]])
    assert prio == pytest.approx(np.array([[0.75, 0.25], [0.25, 0.75]]) / share)


def test_equal_priorities_broken_by_deficit_then_arrival():
    x = fixed([[0.3], [0.3], [0.3]])
    for deficit, expect in ((0.0, [-1, 0, -1]), (5.0, [-1, -1, 0])):
        mech = GavelMechanism()
        d = Driver(mech, [[1.0]] * 3, [1])
        assert list(d.step(x, changed=True)) == [0, -1, -1]  # all equal: arrival order
        mech.deficit[2, 0] = deficit  # jobs 1 and 2 now tie on priority; a deficit breaks the tie
        assert list(d.step(x)) == expect


def test_types_visited_in_cluster_order_and_a_job_placed_once():
    # both jobs prefer type 1 by target, but type 0 is filled first from its own queue
    d = Driver(GavelMechanism(), [[1.0, 1.0], [1.0, 1.0]], [1, 1])
    a = d.step(fixed([[0.2, 0.8], [0.1, 0.9]]), changed=True)
    assert list(a) == [0, 1]


def test_type_order_option():
    cluster = toy_cluster({"V100": 1, "K80": 1})
    d = Driver(GavelMechanism(type_order=["k80", "v100"]), [[1.0, 1.0], [1.0, 1.0]], [1, 1], cluster=cluster)
    assert list(d.step(fixed([[0.8, 0.2], [0.9, 0.1]]), changed=True)) == [1, 0]
    with pytest.raises(InputError, match="type_order"):
        GavelMechanism(type_order=["v100"]).reset(cluster, 1)


def test_fastest_type_visited_first_whatever_the_cluster_order():
    # the cluster lists the slow type first (as conf/cluster/paper.yaml lists T4 before V100);
    # job 0 tops both types' queues, so the type visited first gets it. Gavel's fixed list
    # (v100, p100, k80) serves its fastest type first: so does the default order
    cluster = toy_cluster({"K80": 1, "V100": 1})
    tput = [[1.0, 3.0], [2.0, 4.0]]  # every job faster on V100 (type 1)
    x = fixed([[0.5, 0.5], [0.1, 0.2]])
    fastest = Driver(GavelMechanism(), tput, [1, 1], cluster=cluster)
    assert list(fastest.step(x, changed=True)) == [1, 0]
    as_listed = Driver(GavelMechanism(type_order="cluster"), tput, [1, 1], cluster=cluster)
    assert list(as_listed.step(x, changed=True)) == [0, 1]


def test_fastest_order_ranks_by_mean_relative_throughput():
    from fairsim.policies.mechanism import fastest_first

    # job 0 is fastest on type 2, job 1 on type 0; type 1 is second for both and wins on the mean
    view = toy_view([[1.0, 3.0, 4.0], [4.0, 3.0, 1.0]], [1, 1, 1])
    assert fastest_first(view).tolist() == [1, 0, 2]  # means 0.75, 0.625, 0.625: tie kept in cluster order
    with pytest.raises(InputError, match="type_order"):
        GavelMechanism(type_order="slowest")


def test_gang_on_one_type_never_split():
    # a 2-GPU job with 1 GPU of each type cannot run; the 1-GPU job behind it still starts
    d = Driver(GavelMechanism(), [[1.0, 1.0], [1.0, 1.0]], [1, 1], workers=[2, 1])
    a = d.step(fixed([[0.9, 0.0], [0.1, 0.0]]), changed=True)
    assert list(a) == [-1, 0]


def test_wide_job_skipped_when_it_does_not_fit_and_narrow_ones_fill():
    # queue by target: widths 1, 4, 2, 1 on 3 GPUs -> the 1 fits, the 4 is skipped, the 2 fits,
    # then the type is full and the last job waits
    d = Driver(GavelMechanism(), [[1.0]] * 4, [3], workers=[1, 4, 2, 1])
    assert list(d.step(fixed([[0.4], [0.3], [0.2], [0.1]]), changed=True)) == [0, -1, 0, -1]


def test_capacity_never_exceeded_on_random_views():
    rng = np.random.default_rng(3)
    for trial in range(30):
        n, t = rng.integers(1, 25), rng.integers(1, 4)
        cap = rng.integers(1, 9, size=t)
        workers = rng.choice([1, 2, 4, 8], size=n)
        tput = rng.uniform(0, 2, size=(n, t)) * (rng.random((n, t)) > 0.2)
        x = rng.random((n, t))
        x /= np.maximum(x.sum(axis=1, keepdims=True), 1)
        d = Driver(GavelMechanism(unallocated=["reserve", "skip"][trial % 2]), tput, cap, workers=workers)
        for r in range(5):
            a = d.step(fixed(x), changed=(r == 0))
            used = np.bincount(a[a >= 0], weights=workers[a >= 0], minlength=t)
            assert (used <= cap).all()
            view = toy_view(tput, cap, workers=workers)
            assert view.feasible[np.flatnonzero(a >= 0), a[a >= 0]].all()


def test_lease_extension_share_counts_jobs_kept_on_their_type():
    d = Driver(GavelMechanism(), [[1.0, 1.0]], [1, 1])
    for r in range(5):
        d.step(fixed([[1.0, 0.0]]), changed=(r == 0))
    assert d.mech.stats()["lease_extension_pct"] == 100.0


def test_recompute_only_on_change_and_at_most_every_interval():
    calls = []

    def counting(view):
        calls.append(view.now)
        return np.full((view.num_jobs, 1), 0.5)

    d = Driver(GavelMechanism(recompute_min_interval_s=1920), [[1.0]] * 2, [1])
    d.step(counting, changed=True)  # t=0: first reset (leaves last_reset at 0, as Gavel's does)
    d.step(counting, changed=True)  # t=360: allowed once more, Gavel reads last_reset == 0 as "never"
    for _ in range(10):
        d.step(counting, changed=True)
    assert calls[:2] == [0.0, 360.0]
    assert np.diff(calls[1:]).min() >= 1920
    assert calls[2] == 360.0 + 6 * ROUND  # first round boundary at least 1920 s after 360
    n_calls = len(calls)
    for _ in range(10):
        d.step(counting, changed=False)
    assert len(calls) == n_calls + 1  # the change left pending at 3960 s is served once, at 4680 s
    assert calls[-1] == 2520.0 + 6 * ROUND


def test_new_job_waits_for_x_and_reserves_gpus_in_gavel_mode():
    x = fixed([[1.0], [1.0]])
    for mode, expect in (("reserve", [-1, -1]), ("skip", [0, -1])):
        mech = GavelMechanism(unallocated=mode)
        mech.reset(toy_view([[1.0]] * 2, [1]).cluster, 2)
        first = toy_view([[1.0]], [1], now=0.0, round_len=ROUND)
        assert list(mech.assign(first, x)) == [0]
        # job 1 arrives; the interval blocks a recompute, so job 1 has no X yet
        v = toy_view([[1.0]] * 2, [1], now=ROUND, round_len=ROUND, changed=True)
        object.__setattr__(v, "job_id", np.array([0, 1]))
        mech.last_reset = 100.0  # a recent reset
        mech.deficit[0, 0] = -50.0
        mech.target[0] = 0.0  # job 0's X is now zero and it is owed less: job 1 (not in X) sorts first
        a = mech.assign(v, x)
        assert list(a) == expect, mode


def test_bad_options_raise_input_error():
    with pytest.raises(InputError, match="unallocated"):
        GavelMechanism(unallocated="drop")
    with pytest.raises(InputError, match="recompute_min_interval_s"):
        GavelMechanism(recompute_min_interval_s=-1)


def test_mechanism_options_come_as_a_mapping_from_the_policy_yaml():
    from omegaconf import OmegaConf

    from fairsim.experiment.compose import preset
    from fairsim.experiment.single import build_policy
    from fairsim.policies.mechanism import as_mechanism

    for name in ("gavel", "gavel_mmf", "gavel_ftf"):  # the mechanism comes from conf/policy/mechanism/gavel.yaml
        policy = build_policy(OmegaConf.create(preset("policy", name)))
        assert isinstance(policy.mechanism, GavelMechanism)
        assert policy.mechanism.recompute_min_interval_s == 1920.0
        assert policy.mechanism.unallocated == "reserve"
    assert as_mechanism({"recompute_min_interval_s": 0}).recompute_min_interval_s == 0.0
    with pytest.raises(InputError, match="mechanism.every"):
        as_mechanism({"every": 3})
    with pytest.raises(InputError, match="recompute_min_interval_s"):
        as_mechanism({"recompute_min_interval_s": "soon"})


def _reference_assignment(mech, view):
    """Gavel's round written out plainly: per type, sort by (priority, deficit, X) descending,
    ties by arrival; greedy whole-gang placement, types in the mechanism's order, a job placed once."""
    prio, ids = mech.priorities(view), view.job_id
    x, deficit = mech.target[ids], mech.deficit[ids]
    n, t = prio.shape
    assignment, placed = [-1] * n, [False] * n
    for k in mech.order_list:
        free = int(view.capacity[k])
        for j in sorted(range(n), key=lambda j: (-prio[j, k], -deficit[j, k], -x[j, k], j)):
            if not placed[j] and view.feasible[j, k] and view.workers[j] <= free:
                free -= int(view.workers[j])
                placed[j] = True
                assignment[j] = k
    return assignment


@pytest.mark.parametrize("frozen", [False, True])
def test_assignment_matches_plain_sort_with_many_ties(frozen):
    # X, deficits and gang sizes from small sets so priorities tie often; ``frozen`` feeds the
    # same read-only job-id array every round, as the engine does, which turns on the
    # mechanism's per-active-set caches
    rng = np.random.default_rng(11)
    for trial in range(25):
        n, t = int(rng.integers(2, 30)), int(rng.integers(1, 4))
        cap = rng.integers(1, 9, size=t)
        workers = rng.choice([1, 2, 4], size=n)
        tput = rng.choice([0.0, 1.0, 2.0], size=(n, t), p=[0.2, 0.4, 0.4])
        x = rng.choice([0.0, 0.25, 0.5], size=(n, t)) / t
        mech = GavelMechanism()
        d = Driver(mech, tput, cap, workers=workers)
        ids = np.arange(n)
        ids.setflags(write=False)
        checked = 0
        for r in range(8):
            if r == 1:
                mech.deficit[:n] = rng.choice([-360.0, 0.0, 360.0], size=(n, t))
                mech.epoch += 1  # deficits only change at a recompute in a real run
            view = toy_view(d.tput, d.capacity, workers=workers, now=d.now, round_len=ROUND, changed=(r == 0))
            object.__setattr__(view, "run_s", d.run_s.copy())
            if frozen:
                object.__setattr__(view, "job_id", ids)
            a = mech.assign(view, fixed(x))
            if r > 0:  # from the second round on every job has an X (no reserved GPUs)
                assert a.tolist() == _reference_assignment(mech, view), (trial, r)
                checked += 1
            d.run_s[a >= 0] += ROUND
            d.now += ROUND
        assert checked == 7


def test_global_queue_takes_the_best_entry_over_every_type():
    # per type, type 0's queue goes first and job 0 leads it; in one queue over every (job,
    # type) entry, job 0's larger target on type 1 comes first, and job 1 then falls to type 0
    x = fixed([[0.4, 0.6], [0.0, 0.5]])
    per_type = Driver(GavelMechanism(), [[1.0, 1.0], [1.0, 1.0]], [1, 1])
    assert list(per_type.step(x, changed=True)) == [0, 1]
    one_queue = Driver(GavelMechanism(queue="global"), [[1.0, 1.0], [1.0, 1.0]], [1, 1])
    assert list(one_queue.step(x, changed=True)) == [1, 0]
    with pytest.raises(InputError, match="mechanism.queue"):
        GavelMechanism(queue="both")


def test_counters_kept_across_recomputes_share_by_target():
    # two 1-GPU jobs, X = 0.75 / 0.25, a recompute every round (min interval 0, a change each round)
    x = fixed([[0.75], [0.25]])
    for reset, expect in ((True, [12, 0]), (False, [9, 3])):
        d = Driver(GavelMechanism(recompute_min_interval_s=0, reset_counters=reset), [[1.0]] * 2, [1])
        runs = np.zeros(2)
        for _ in range(12):
            runs += d.step(x, changed=True) >= 0
        # a reset makes the shares equal every round, so the larger target always wins; counted
        # since arrival, the shares follow the targets
        assert runs.tolist() == pytest.approx(expect, abs=1)


def test_counters_without_reset_start_at_half_a_round_per_arrival():
    mech = GavelMechanism(reset_counters=False)
    d = Driver(mech, [[1.0]] * 2, [1])
    d.step(fixed([[0.5], [0.5]]), changed=True)
    # each arrival adds its half round to the type's total; the round run by job 0 is counted
    # at the next decision
    assert mech.worker_time.tolist() == [2 * ROUND / 2]
    d.step(fixed([[0.5], [0.5]]))
    assert mech.job_time[:, 0].tolist() == [ROUND / 2 + ROUND, ROUND / 2]
    assert mech.worker_time.tolist() == [ROUND + ROUND]


def test_time_counted_by_round_or_by_time_held():
    for counted, expect in (("held", 100.0), ("round", ROUND)):
        mech = GavelMechanism(time_counted=counted)
        d = Driver(mech, [[1.0]], [1])
        d.step(fixed([[1.0]]), changed=True)
        d.run_s[0] = 100.0  # the job held its GPU 100 s of the round (it finished early)
        d.step(fixed([[1.0]]))
        assert mech.job_time[0, 0] - ROUND / 2 == pytest.approx(expect)
    with pytest.raises(InputError, match="mechanism.time_counted"):
        GavelMechanism(time_counted="steps")
