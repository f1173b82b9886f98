"""Engine tests with hand-computed expectations (toy clusters, scripted policies)."""

import numpy as np
import pytest

from fairsim.metrics import add_job_metrics
from fairsim.policies.base import Policy
from fairsim.policies.fifo import FifoPolicy
from fairsim.sim.config import Overheads, SimConfig
from fairsim.sim.engine import PolicyContractError, simulate
from fairsim.testing import toy_cluster, toy_jobs

GB_PER_S_AT_10GBPS = 1.25e9  # bytes per second on the default 10 Gbit/s LAN
NO_COSTS = Overheads(migration=False, preemption=False)


class Scripted(Policy):
    """Round r: job_id -> type from script[r]; jobs not named do not run; after the script, repeat the last entry."""

    def __init__(self, script):
        self.script = script
        self.calls = 0

    def decide(self, view):
        plan = self.script[min(self.calls, len(self.script) - 1)]
        self.calls += 1
        return np.array([plan.get(int(j), -1) for j in view.job_id], dtype=np.int64)


def test_two_jobs_fifo_known_jcts():
    # Table 1 shape: a fast type (8 units/min) and a slow one (1 unit/min), one GPU each, 16 units per job.
    cluster = toy_cluster({"T4": 1, "A10": 1})
    jobs = toy_jobs([[1 / 60, 8 / 60], [1 / 60, 8 / 60]], work=[16, 16])
    res = simulate(jobs, cluster, FifoPolicy(), SimConfig(round_len_s=60, check=True))
    # job 0 takes the fast A10: 16 / 8 = 2 min; job 1 gets the T4: 16 min
    assert res.jobs["jct_s"].tolist() == pytest.approx([120.0, 960.0])
    assert res.jobs["migrations"].sum() == 0
    # FIFO decides only on arrivals and completions; the rounds table says which rounds decided
    assert int(res.rounds["decided"].sum()) == res.stats["policy_calls"] == 2
    assert (res.rounds.loc[~res.rounds["decided"], "policy_s"] == 0).all()


def test_migration_overhead_accounting():
    cluster = toy_cluster({"T4": 1, "A10": 1})
    jobs = toy_jobs([[1.0, 2.0]], work=[200.0], state_bytes=[GB_PER_S_AT_10GBPS])  # 1 s transfer
    policy = Scripted([{0: 0}, {0: 1}])
    res = simulate(jobs, cluster, policy, SimConfig(round_len_s=60, check=True, overheads=Overheads(restart_s=30)))
    row = res.jobs.iloc[0]
    # round 0 on T4: 60 units. round 1 on A10: pays 30 + 1 s, then 29 s * 2 = 58 -> 118.
    # round 2: 82 left at 2/s = 41 s -> finish at 120 + 41.
    assert row["finish_s"] == pytest.approx(161.0)
    assert row["overhead_s"] == pytest.approx(31.0)
    assert (row["migrations"], row["type_switches"], row["switches_to_faster"]) == (1, 1, 1)


def test_migration_overhead_switched_off():
    cluster = toy_cluster({"T4": 1, "A10": 1})
    jobs = toy_jobs([[1.0, 2.0]], work=[200.0], state_bytes=[GB_PER_S_AT_10GBPS])
    res = simulate(
        jobs, cluster, Scripted([{0: 0}, {0: 1}]), SimConfig(round_len_s=60, overheads=Overheads(migration=False))
    )
    # 60 on T4, then 140 at 2/s = 70 s -> finish 130; still counted as a migration, with no cost
    assert res.jobs["finish_s"].iloc[0] == pytest.approx(130.0)
    assert res.jobs["overhead_s"].iloc[0] == 0.0
    assert res.jobs["migrations"].iloc[0] == 1


def test_preemption_restart_and_resume_elsewhere():
    cluster = toy_cluster({"T4": 1, "A10": 1})
    jobs = toy_jobs([[1.0, 1.0]], work=[100.0], state_bytes=[2 * GB_PER_S_AT_10GBPS])  # 2 s transfer
    res = simulate(jobs, cluster, Scripted([{0: 0}, {}, {0: 0}]), SimConfig(round_len_s=60, check=True))
    row = res.jobs.iloc[0]
    # 60 units, a paused round, then restart 30 + 2 s before the last 40 units -> 120 + 32 + 40
    assert row["finish_s"] == pytest.approx(192.0)
    assert (row["preemptions"], row["migrations"], row["overhead_s"]) == (1, 0, 32.0)
    res = simulate(jobs, cluster, Scripted([{0: 0}, {}, {0: 1}]), SimConfig(round_len_s=60))
    row = res.jobs.iloc[0]
    assert row["finish_s"] == pytest.approx(192.0)
    assert (row["preemptions"], row["migrations"], row["type_switches"], row["switches_to_faster"]) == (1, 1, 1, 0)


def test_penalty_longer_than_a_round_carries_over():
    cluster = toy_cluster({"T4": 1, "A10": 1})
    jobs = toy_jobs([[1.0, 1.0]], work=[100.0], state_bytes=[100 * GB_PER_S_AT_10GBPS])  # 100 s transfer
    res = simulate(
        jobs, cluster, Scripted([{0: 0}, {0: 1}]), SimConfig(round_len_s=60, overheads=Overheads(restart_s=0))
    )
    # round 0: 60 units. rounds 1-2 pay 100 s of transfer: round 2 keeps 20 s -> 80 units;
    # the last 20 units take 20 s of round 3 -> finish 180 + 20
    assert res.jobs["finish_s"].iloc[0] == pytest.approx(200.0)
    assert res.jobs["overhead_s"].iloc[0] == pytest.approx(100.0)


def test_profiling_charged_once_on_first_run():
    cluster = toy_cluster({"T4": 1, "A10": 1})
    jobs = toy_jobs([[1.0, 1.0]], work=[100.0])
    res = simulate(
        jobs,
        cluster,
        FifoPolicy(),
        SimConfig(round_len_s=60, overheads=Overheads(profiling=True, profiling_s_per_type=10)),
    )
    # 2 types x 10 s, then 100 units at 1/s
    assert res.jobs["finish_s"].iloc[0] == pytest.approx(120.0)


@pytest.mark.parametrize("clock", ["rounds", "events"])
def test_restore_on_first_start_charges_a_restart_at_the_first_start(clock):
    # restart 5 s + 2.5e9 bytes over the 10 Gbit/s link (2 s), with profiling 2 x 10 s on top:
    # 27 s before the first unit; then 100 units at 1/s. The second job (on the other type) pays
    # its own: 20 + 5 + 1 s (1.25e9 bytes), then 50 units
    cluster = toy_cluster({"T4": 1, "A10": 1})
    jobs = toy_jobs(
        [[1.0, 1.0], [1.0, 1.0]], work=[100.0, 50.0], state_bytes=[2 * GB_PER_S_AT_10GBPS, GB_PER_S_AT_10GBPS]
    )
    ov = Overheads(restart_s=5, profiling=True, profiling_s_per_type=10, restore_on_first_start=True)
    res = simulate(jobs, cluster, FifoPolicy(), SimConfig(clock=clock, round_len_s=60, overheads=ov, check=True))
    assert res.jobs["finish_s"].tolist() == pytest.approx([127.0, 76.0])
    assert res.jobs["overhead_s"].tolist() == pytest.approx([27.0, 26.0])
    off = simulate(
        jobs, cluster, FifoPolicy(), SimConfig(clock=clock, round_len_s=60, overheads=Overheads(restart_s=5))
    )
    assert off.jobs["finish_s"].tolist() == pytest.approx([100.0, 50.0])  # a new job has no checkpoint to load


def test_round_origin_zero_puts_rounds_on_multiples_of_the_round_length():
    # 60 s rounds; job 0 arrives at 100 s, job 1 at 1000 s when the cluster is idle again; 30 units
    # at 1/s each. From the first arrival: 100 -> 130 and 1000 -> 1030. On the grid: the first
    # rounds that see them are at 120 and 1020 -> finishes 150 and 1050 (JCT still from arrival)
    cluster = toy_cluster({"T4": 1})
    jobs = toy_jobs([[1.0], [1.0]], work=[30.0, 30.0], arrival=[100.0, 1000.0])
    cfg = dict(round_len_s=60, overheads=NO_COSTS, check=True)
    res = simulate(jobs, cluster, FifoPolicy(), SimConfig(**cfg))
    assert res.jobs["finish_s"].tolist() == pytest.approx([130.0, 1030.0])
    res = simulate(jobs, cluster, FifoPolicy(), SimConfig(round_origin="zero", **cfg))
    assert res.jobs["finish_s"].tolist() == pytest.approx([150.0, 1050.0])
    assert res.jobs["jct_s"].tolist() == pytest.approx([50.0, 50.0])
    # a job at 0 s is first seen at the end of the first interval, 60 s
    early = toy_jobs([[1.0]], work=[30.0], arrival=[0.0])
    assert (
        simulate(early, cluster, FifoPolicy(), SimConfig(round_origin="zero", **cfg)).jobs["finish_s"].iloc[0] == 90.0
    )


def test_gang_is_packed_on_one_host_when_it_can_be():
    cluster = toy_cluster({"V100": 8}, gpus_per_host=4)
    jobs = toy_jobs([[1.0], [1.0], [1.0]], work=[60.0, 6000.0, 600.0], workers=[1, 1, 4], spread=[[1.0], [1.0], [0.5]])
    # biggest gang first: job 2 takes a whole host, the two 1-GPU jobs share the other
    res = simulate(jobs, cluster, Scripted([{0: 0, 1: 0, 2: 0}]), SimConfig(round_len_s=60, check=True))
    assert res.jobs["spread_rounds"].tolist() == [0, 0, 0]
    assert res.jobs["finish_s"].iloc[2] == pytest.approx(600.0)


def test_consolidation_moves_spread_job_smallest_state_first():
    cluster = toy_cluster({"V100": 8}, gpus_per_host=4)
    # round 0: job 0 (3 workers) and job 1 (3 workers) take one host each (best fit);
    # round 1: job 2 (2 workers) must spread over the 1 + 1 free GPUs;
    # job 0 finishes in round 1, so in round 2 job 2 consolidates onto the freed host.
    jobs = toy_jobs(
        [[1.0], [1.0], [1.0]],
        work=[100.0, 10_000.0, 300.0],
        workers=[3, 3, 2],
        spread=[[1.0], [1.0], [0.5]],
        state_bytes=[0, 0, GB_PER_S_AT_10GBPS],
        arrival=[0, 0, 60],
    )
    res = simulate(
        jobs,
        cluster,
        Scripted([{0: 0, 1: 0}, {0: 0, 1: 0, 2: 0}, {1: 0, 2: 0}]),
        SimConfig(round_len_s=60, check=True, overheads=Overheads(restart_s=0)),
    )
    row = res.jobs.iloc[2]
    # round 1 (t=60): spread, 60 s * 0.5 = 30 units. round 2 (t=120): moved (1 s transfer), then
    # packed: 59 units -> 89; remaining 211 at 1/s -> finish at 180 + 211
    assert row["spread_rounds"] == 1
    assert row["migrations"] == 1 and row["type_switches"] == 0
    assert row["finish_s"] == pytest.approx(180.0 + 211.0)


def test_policy_oversubscribing_is_refused():
    cluster = toy_cluster({"T4": 1, "A10": 1})
    jobs = toy_jobs([[1.0, 1.0], [1.0, 1.0]], work=[10.0, 10.0])
    with pytest.raises(PolicyContractError, match="oversubscribed T4"):
        simulate(jobs, cluster, Scripted([{0: 0, 1: 0}]), SimConfig(round_len_s=60))
    with pytest.raises(PolicyContractError, match="cannot run on"):
        simulate(toy_jobs([[1.0, 0.0]], work=[10.0]), cluster, Scripted([{0: 1}]), SimConfig(round_len_s=60))
    for bad in (2, -2):  # past the last type, or below "not run"
        with pytest.raises(PolicyContractError, match="outside -1..1"):
            simulate(toy_jobs([[1.0, 1.0]], work=[10.0]), cluster, Scripted([{0: bad}]), SimConfig(round_len_s=60))


def test_rho_on_one_gpu_two_jobs():
    cluster = toy_cluster({"T4": 1})
    jobs = toy_jobs([[1.0], [1.0]], work=[100.0, 100.0])
    res = simulate(jobs, cluster, FifoPolicy(), SimConfig(round_len_s=50))
    table = add_job_metrics(res.jobs, jobs, cluster, res.rounds)
    # static N = 2 for both: isolated time 200 s. JCTs 100 and 200.
    assert table["rho_static"].tolist() == pytest.approx([0.5, 1.0])
    # dynamic: job 0 meets 2 jobs all its life -> 0.5; job 1 meets 2 for 100 s then 1 -> N = 1.5
    assert table["rho"].tolist() == pytest.approx([0.5, 200.0 / 150.0])


def test_idle_gap_jumps_to_next_arrival_and_exact_finish():
    cluster = toy_cluster({"T4": 1})
    jobs = toy_jobs([[1.0], [1.0]], work=[30.0, 45.0], arrival=[0.0, 1000.0])
    res = simulate(jobs, cluster, FifoPolicy(), SimConfig(round_len_s=60))
    assert res.jobs["finish_s"].tolist() == pytest.approx([30.0, 1045.0])
    assert res.jobs["starvation_s"].tolist() == [0.0, 0.0]


def test_arrival_waits_for_the_next_round_boundary():
    cluster = toy_cluster({"T4": 1})
    jobs = toy_jobs([[1.0], [1.0]], work=[600.0, 10.0], arrival=[0.0, 10.0])
    res = simulate(jobs, cluster, FifoPolicy(), SimConfig(round_len_s=60))
    # job 1 is admitted at t=60 but the GPU is busy until 600
    assert res.jobs["first_start_s"].tolist() == [0.0, 600.0]
    assert res.jobs["finish_s"].iloc[1] == pytest.approx(610.0)


def _random_instance(seed, n=60):
    rng = np.random.default_rng(seed)
    tput = rng.uniform(0.2, 2.0, size=(n, 3)) * (rng.random((n, 3)) > 0.1)
    tput[:, 0] = np.maximum(tput[:, 0], 0.1)
    return toy_jobs(
        tput,
        work=rng.uniform(100, 5000, n),
        arrival=np.sort(rng.uniform(0, 20_000, n)),
        workers=rng.choice([1, 2, 4], n),
        state_bytes=rng.uniform(0, 5e9, n),
        spread=tput * 0.7,
    )


def test_fast_forward_matches_round_by_round():
    cluster = toy_cluster({"T4": 4, "A10": 4, "V100": 8})
    jobs = _random_instance(1)
    fast = simulate(jobs, cluster, FifoPolicy(), SimConfig(round_len_s=300, fast_forward=True)).jobs
    slow = simulate(jobs, cluster, FifoPolicy(), SimConfig(round_len_s=300, fast_forward=False, check=True)).jobs
    np.testing.assert_allclose(fast["finish_s"], slow["finish_s"], rtol=1e-9)
    np.testing.assert_allclose(fast["attained_gpu_s"], slow["attained_gpu_s"], rtol=1e-9)
    assert (fast["migrations"] == slow["migrations"]).all()


def test_same_inputs_same_bits():
    cluster = toy_cluster({"T4": 4, "A10": 4, "V100": 8})
    jobs = _random_instance(2)
    a = simulate(jobs, cluster, FifoPolicy(), SimConfig()).jobs
    b = simulate(jobs, cluster, FifoPolicy(), SimConfig()).jobs
    assert a.equals(b)


def test_every_job_finishes_and_capacity_holds_in_check_mode():
    cluster = toy_cluster({"T4": 4, "A10": 4, "V100": 8})
    res = simulate(_random_instance(3, n=120), cluster, FifoPolicy(backfill=False), SimConfig(check=True))
    assert np.isfinite(res.jobs["finish_s"]).all()
    assert (res.rounds["busy_gpus"] <= cluster.total_gpus).all()


class RecordsWork(Policy):
    event_driven = True

    def __init__(self):
        self.seen = {}

    def decide(self, view):
        for j, w in zip(view.job_id, view.work):
            self.seen.setdefault(int(j), float(w))
        return np.where(np.arange(view.num_jobs) == 0, 0, -1)


def test_profile_error_changes_what_policies_see_not_the_truth():
    cluster = toy_cluster({"T4": 1})
    jobs = toy_jobs([[1.0]] * 3, work=[100.0, 100.0, 100.0])
    exact, noisy = RecordsWork(), RecordsWork()
    a = simulate(jobs, cluster, exact, SimConfig(round_len_s=60))
    b = simulate(jobs, cluster, noisy, SimConfig(round_len_s=60, profile_error=0.3), seed=4)
    assert list(exact.seen.values()) == [100.0] * 3
    seen = np.array(list(noisy.seen.values()))
    assert ((seen >= 70.0) & (seen <= 130.0)).all() and len(set(seen)) == 3
    # the engine still runs the true work: same finish times as without error
    assert a.jobs["finish_s"].tolist() == b.jobs["finish_s"].tolist()


def test_run_ends_when_the_awaited_jobs_finish():
    # one GPU, FIFO, three 60 s jobs arriving at 0, 10, 500 s; awaiting only job 0 ends the run
    # after its round (Gavel's generated-jobs mode stops once the measured window is done)
    cluster = toy_cluster({"T4": 1})
    jobs = toy_jobs([[1.0]] * 3, work=[60.0, 60.0, 60.0], arrival=[0.0, 10.0, 500.0])
    res = simulate(jobs, cluster, FifoPolicy(), SimConfig(round_len_s=60), until=np.array([0]))
    assert res.jobs["finish_s"].iloc[0] == pytest.approx(60.0)
    assert res.jobs["finish_s"].iloc[1:].isna().all()  # job 1 was waiting, job 2 never arrived
    assert res.stats["unarrived_jobs_at_end"] == 1
    everything = simulate(jobs, cluster, FifoPolicy(), SimConfig(round_len_s=60))
    assert everything.jobs["finish_s"].tolist() == pytest.approx([60.0, 120.0, 560.0])
    assert everything.stats["unarrived_jobs_at_end"] == 0


def test_engine_views_carry_every_field_read_only():
    # the engine assembles views without the dataclass __init__: check nothing is missing or extra
    import dataclasses

    from fairsim.policies.base import PolicyView

    seen = []

    class Recorder(FifoPolicy):
        def decide(self, view):
            seen.append(view)
            return super().decide(view)

    cluster = toy_cluster({"T4": 1, "A10": 1})
    simulate(toy_jobs([[1.0, 2.0], [1.0, 2.0]], work=[100.0, 300.0]), cluster, Recorder(), SimConfig(round_len_s=60))
    names = {f.name for f in dataclasses.fields(PolicyView)}
    for view in seen:
        assert set(vars(view)) == names
        with pytest.raises(dataclasses.FrozenInstanceError):
            view.now = 0.0
        arrays = [v for v in vars(view).values() if isinstance(v, np.ndarray)]
        assert arrays and not any(a.flags.writeable for a in arrays)


def test_a_spread_job_on_a_full_type_stays_where_it_is():
    # 8 V100s on 2 hosts, all held: jobs 0 and 1 (3 workers) one host each, job 2 (2 workers)
    # spread 1 + 1. Job 3 on the T4 finishes after round 0, a churn that asks for consolidation,
    # but with no free V100 no placement spans fewer hosts: job 2 is never moved.
    cluster = toy_cluster({"V100": 8, "T4": 1}, gpus_per_host=4)
    jobs = toy_jobs(
        [[1.0, 0.0], [1.0, 0.0], [1.0, 0.0], [0.0, 1.0]],
        work=[10_000.0, 10_000.0, 300.0, 30.0],
        workers=[3, 3, 2, 1],
        spread=[[1.0, 1.0], [1.0, 1.0], [0.5, 1.0], [1.0, 1.0]],
    )
    step = {0: 0, 1: 0, 2: 0, 3: 1}
    res = simulate(jobs, cluster, Scripted([step] + [{0: 0, 1: 0, 2: 0}] * 12), SimConfig(round_len_s=60, check=True))
    row = res.jobs.iloc[2]
    assert row["migrations"] == 0 and row["spread_rounds"] == 10  # 300 units at 0.5/s: 10 rounds, all spread
