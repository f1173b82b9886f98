"""Elastic jobs in the engine, with hand-computed expectations: a policy sizes jobs through an
``Allocation``, the engine charges a restart on every change of allocation, and an elastic job
progresses at its goodput model's rate, re-read at every step (both clocks)."""

import math

import numpy as np
import pytest

from fairsim.policies.base import Allocation, Policy
from fairsim.policies.fifo import FifoPolicy
from fairsim.sim.config import Overheads, SimConfig
from fairsim.sim.engine import PolicyContractError, simulate
from fairsim.testing import toy_cluster, toy_elastic, toy_jobs

NO_OVERHEADS = Overheads(migration=False, preemption=False, profiling=False)
RESTART_30 = Overheads(migration=True, preemption=True, profiling=False, restart_s=30.0)
CLOCKS = ("rounds", "events")


class LinearGoodput:
    """rate = speed[type] x gpus x (slowdown once done passes ``knee``) / (1 + spread_cost x (hosts - 1)).
    Records every call, so tests can see what the engine asked."""

    def __init__(self, speed, knee=math.inf, slowdown=1.0, spread_cost=0.0):
        self.speed, self.knee, self.slowdown, self.spread_cost = np.asarray(speed, float), knee, slowdown, spread_cost
        self.calls = []

    def rate(self, jobs, types, gpus, hosts, done):
        self.calls.append((jobs.copy(), types.copy(), gpus.copy(), hosts.copy(), done.copy()))
        efficiency = np.where(done >= self.knee, self.slowdown, 1.0)
        return self.speed[types] * gpus * efficiency / (1 + self.spread_cost * (hosts - 1))


def elastic_jobs(model, n=1, work=4000.0, workers=1, lo=1, hi=8, elastic=True, arrival=None, **kw):
    spec = toy_elastic(model, n, lo, hi, elastic)
    speed = model.speed[None, :] * workers
    return toy_jobs(
        np.repeat(speed, n, axis=0),
        work=np.full(n, work),
        workers=np.full(n, workers),
        arrival=arrival,
        elastic=spec,
        **kw,
    )


class Sized(Policy):
    """Every active job on type 0 with ``plan(now)`` GPUs (an int, or a list per view row)."""

    def __init__(self, plan, wake=None):
        self.plan, self.wake = plan, wake

    def decide(self, view):
        gpus = np.broadcast_to(np.asarray(self.plan(view.now), dtype=np.int64), (view.num_jobs,)).copy()
        return Allocation(types=np.zeros(view.num_jobs, dtype=np.int64), gpus=gpus)

    def next_decision_s(self, view, assignment):
        return self.wake(view.now) if self.wake else super().next_decision_s(view, assignment)


def run(jobs, policy, clock="rounds", overheads=NO_OVERHEADS, counts=None, gph=8, **kw):
    cluster = toy_cluster(counts or {"V100": 8}, gpus_per_host=gph)
    cfg = SimConfig(clock=clock, round_len_s=60.0, overheads=overheads, check=True, **kw)
    return simulate(jobs, cluster, policy, cfg)


@pytest.mark.parametrize("clock", CLOCKS)
def test_an_elastic_job_runs_at_the_count_its_policy_gives(clock):
    # 4 GPUs at 1 unit/s each: 4000 units take 1000 s
    res = run(elastic_jobs(LinearGoodput([1.0])), Sized(lambda now: 4), clock)
    job = res.jobs.iloc[0]
    assert job.finish_s == pytest.approx(1000.0)
    assert job.attained_gpu_s == pytest.approx(4000.0)
    assert job.resizes == 0


@pytest.mark.parametrize("clock", CLOCKS)
def test_a_resize_pays_a_restart_and_is_counted(clock):
    # 2 GPUs to t=600 (1200 units), then 4: a 30 s restart, then 2800 units at 4/s = 700 s
    policy = Sized(lambda now: 2 if now < 600 else 4, wake=lambda now: 600.0 if now < 600 else math.inf)
    res = run(elastic_jobs(LinearGoodput([1.0])), policy, clock, overheads=RESTART_30)
    job = res.jobs.iloc[0]
    assert job.finish_s == pytest.approx(600 + 30 + 700)
    assert job.resizes == 1
    assert job.overhead_s == pytest.approx(30.0)
    assert job.type_switches == 0
    # GPUs held: 2 x 600 s, then 4 x 730 s (the restart holds them)
    assert job.attained_gpu_s == pytest.approx(2 * 600 + 4 * 730)


@pytest.mark.parametrize("clock", CLOCKS)
def test_goodput_follows_progress_step_by_step(clock):
    # 4 GPUs; efficiency halves once 2000 units are done. The rate is re-read at the start of
    # every step (steps of at most a 60 s round under both clocks): done reaches 1920 at 480 s
    # and 2160 at 540 s, where the rate drops to 2/s; the last 1840 units take 920 s.
    res = run(elastic_jobs(LinearGoodput([1.0], knee=2000.0, slowdown=0.5)), Sized(lambda now: 4), clock)
    assert res.jobs.iloc[0].finish_s == pytest.approx(540 + 1840 / 2)


@pytest.mark.parametrize("clock", CLOCKS)
def test_a_policy_without_allocations_runs_elastic_jobs_on_their_requested_count(clock):
    model = LinearGoodput([1.0])
    res = run(elastic_jobs(model, workers=2), FifoPolicy(), clock)
    assert res.jobs.iloc[0].finish_s == pytest.approx(2000.0)
    assert all((gpus == 2).all() for _, _, gpus, _, _ in model.calls)


def test_the_model_sees_the_hosts_a_job_spans():
    # 6 GPUs on hosts of 4 span two hosts: the model's rate is 6 / (1 + 0.5) = 4 units/s
    model = LinearGoodput([1.0], spread_cost=0.5)
    res = run(elastic_jobs(model), Sized(lambda now: 6), gph=4)
    assert res.jobs.iloc[0].finish_s == pytest.approx(1000.0)
    assert {int(h) for *_, hosts, _ in model.calls for h in hosts} == {2}


def test_the_view_shows_elastic_ranges_and_goodput():
    seen = {}

    class Peek(Sized):
        def decide(self, view):
            seen.setdefault("view", view)
            return super().decide(view)

    model = LinearGoodput([2.0])
    run(elastic_jobs(model, n=2, lo=2, hi=6, workers=4, arrival=[0.0, 0.0]), Peek(lambda now: 2))
    view = seen["view"]
    assert view.elastic.tolist() == [True, True]
    assert view.min_gpus.tolist() == [2, 2] and view.max_gpus.tolist() == [6, 6]
    assert view.gpus.tolist() == [0, 0]  # nothing runs before the first decision
    assert view.goodput(np.array([0, 1]), np.array([0, 0]), np.array([3, 5])).tolist() == [6.0, 10.0]


def test_rigid_jobs_goodput_is_their_throughput_at_their_gang_only():
    seen = {}

    class Peek(FifoPolicy):
        def decide(self, view):
            seen.setdefault("view", view)
            return super().decide(view)

    run(toy_jobs([[3.0]], work=[300.0], workers=[2]), Peek())
    view = seen["view"]
    assert view.elastic.tolist() == [False]
    assert view.goodput(np.array([0, 0]), np.array([0, 0]), np.array([2, 4])).tolist() == [3.0, 0.0]


@pytest.mark.parametrize(
    ("gpus", "needle"),
    [(9, "gave elastic job 0 9 GPUs; it runs on 1..8"), (0, "gave elastic job 0 0 GPUs; it runs on 1..8")],
)
def test_a_count_outside_the_range_is_refused(gpus, needle):
    with pytest.raises(PolicyContractError, match=needle):
        run(elastic_jobs(LinearGoodput([1.0])), Sized(lambda now: gpus), counts={"V100": 16})


def test_a_rigid_job_sized_otherwise_is_refused():
    with pytest.raises(PolicyContractError, match="gave rigid job 0 3 GPUs; it runs on 2..2"):
        run(toy_jobs([[1.0]], work=[100.0], workers=[2]), Sized(lambda now: 3))


def test_allocations_beyond_a_type_are_refused():
    jobs = elastic_jobs(LinearGoodput([1.0]), n=2, arrival=[0.0, 0.0])
    with pytest.raises(
        PolicyContractError, match=r"oversubscribed V100: 10 GPUs of 8 \(jobs and their gangs: 0 \(5\), 1 \(5\)\)"
    ):
        run(jobs, Sized(lambda now: 5))


def test_no_progress_at_an_allocation_is_refused():
    class UpToFour(LinearGoodput):  # e.g. a batch that no longer fits beyond 4 GPUs
        def rate(self, jobs, types, gpus, hosts, done):
            return np.where(gpus <= 4, super().rate(jobs, types, gpus, hosts, done), 0.0)

    with pytest.raises(
        PolicyContractError, match="runs elastic job 0 on 6 GPUs of V100, where its goodput model gives no progress"
    ):
        run(elastic_jobs(UpToFour([1.0])), Sized(lambda now: 6))


@pytest.mark.parametrize(("clock", "second"), [("rounds", 300 + 30 + 1800 / 8), ("events", 250 + 30 + 2000 / 8)])
def test_the_survivor_grows_when_a_job_finishes(clock, second):
    # 1000 and 3000 units, 4 GPUs each of 8 at 1/s per GPU: the first finishes at 250 s with the
    # second at 1000. Events: the second grows to 8 GPUs at once (30 s restart, 2000 units at 8/s);
    # rounds: at the next round, 300 s (1200 done; 1800 left)
    class Share(Policy):
        def decide(self, view):
            n = view.num_jobs
            return Allocation(np.zeros(n, dtype=np.int64), np.full(n, 8 // n, dtype=np.int64))

    spec = toy_elastic(LinearGoodput([1.0]), 2)
    jobs = toy_jobs([[1.0], [1.0]], work=[1000.0, 3000.0], arrival=[0.0, 0.0], elastic=spec)
    res = run(jobs, Share(), clock, overheads=RESTART_30)
    assert res.jobs.finish_s.tolist() == pytest.approx([250.0, second])
    assert res.jobs.resizes.tolist() == [0, 1]
