"""The per-round schedule record (sim.record_schedule) against the per-job table."""

import numpy as np
import pandas as pd
import pytest

from fairsim.errors import InputError
from fairsim.policies.fft import FFTPolicy
from fairsim.policies.fifo import FifoPolicy
from fairsim.policies.srtf_agnostic import OverheadAgnosticSRTF
from fairsim.sim.config import SimConfig
from fairsim.sim.engine import simulate
from fairsim.sim.schedule import migrations, preemptions, type_switches
from fairsim.testing import toy_cluster, toy_jobs


def random_trace(seed, n=30):
    rng = np.random.default_rng(seed)
    tput = rng.uniform(0.5, 3.0, (n, 3))
    feasible = rng.random((n, 3)) > 0.2
    feasible[np.arange(n), rng.integers(0, 3, n)] = True
    workers = rng.choice([1, 2, 4], size=n, p=[0.6, 0.25, 0.15])
    jobs = toy_jobs(
        tput,
        work=rng.uniform(300, 6000, n),
        arrival=np.sort(rng.uniform(0, 6000, n)),
        workers=workers,
        feasible=feasible,
        state_bytes=rng.uniform(1e9, 20e9, n),
        spread=tput * 0.8,
    )
    return jobs, toy_cluster({"T4": 4, "A10": 6, "V100": 5}, gpus_per_host=2)


def per_job(series: pd.Series, jobs: pd.DataFrame) -> np.ndarray:
    return series.reindex(jobs["job_id"], fill_value=0).to_numpy()


@pytest.mark.parametrize("policy", [FFTPolicy, FifoPolicy, OverheadAgnosticSRTF])
@pytest.mark.parametrize("seed", [1, 2])
def test_record_agrees_with_the_job_table(policy, seed):
    jobs, cluster = random_trace(seed)
    res = simulate(jobs, cluster, policy(), SimConfig(round_len_s=300, record_schedule=True), seed=seed)
    table, sc = res.jobs, res.schedule
    assert res.jobs["finish_s"].notna().all()
    grouped = sc.groupby("job_id")
    assert per_job(grouped["busy_s"].sum(), table) == pytest.approx(table["run_s"].to_numpy(), rel=1e-9, abs=1e-6)
    assert per_job(grouped["overhead_s"].sum(), table) == pytest.approx(
        table["overhead_s"].to_numpy(), rel=1e-9, abs=1e-6
    )
    assert (per_job(type_switches(sc), table) == table["type_switches"].to_numpy()).all()
    assert (per_job(preemptions(sc), table) == table["preemptions"].to_numpy()).all()
    assert (per_job(migrations(sc), table) == table["migrations"].to_numpy()).all()
    # GPU-seconds per type: busy seconds times the gang, on the type the row names
    gpu_s = (
        (sc["busy_s"] * sc["job_id"].map(table.set_index("job_id")["workers"]))
        .groupby([sc["job_id"], sc["gpu_type"]])
        .sum()
    )
    for name in cluster.gpu_types:
        got = gpu_s.xs(name, level="gpu_type") if name in gpu_s.index.get_level_values(1) else pd.Series(dtype=float)
        assert per_job(got, table) == pytest.approx(table[f"gpu_s_{name}"].to_numpy(), rel=1e-9, abs=1e-6)
    # every active job appears in every round from its arrival to its finish; a running job's
    # hosts are its gang, on hosts of the type it runs on
    first = grouped["t_s"].min()
    last_end = (sc["t_s"] + sc["duration_s"]).groupby(sc["job_id"]).max()
    arrival = table.set_index("job_id")["arrival_s"]
    finish = table.set_index("job_id")["finish_s"]
    assert ((first - arrival.loc[first.index]) < 300 + 1e-9).all() and (first >= arrival.loc[first.index]).all()
    assert (last_end >= finish.loc[last_end.index] - 1e-9).all()
    host_type = np.repeat(np.arange(cluster.num_types), cluster.hosts_per_type)
    running = sc[sc["type"] >= 0]
    workers = running["job_id"].map(table.set_index("job_id")["workers"])
    assert (running["hosts"].map(len) == workers).all()
    assert all((host_type[h] == t).all() for h, t in zip(running["hosts"], running["type"]))
    assert (sc.loc[sc["type"] < 0, "busy_s"] == 0).all()
    if policy is FifoPolicy:
        assert (sc["rounds"] > 1).any()  # fast-forwarded stretches are in the record too


def test_rho_comes_from_the_policy():
    jobs, cluster = random_trace(3)
    cfg = SimConfig(round_len_s=300, record_schedule=True)
    policy = FFTPolicy()
    sc = simulate(jobs, cluster, policy, cfg).schedule
    assert "rho" in sc and (sc["rho"] >= 0).all() and (sc["rho"] > 0).any()
    ordered = sc.sort_values("t_s", kind="stable").groupby("job_id")["rho"]
    assert (ordered.first() == 0).all()  # rho_j(a_j) = 0 (eq. 5)
    # a job's rho only changes while the policy sees it: its last recorded value is the policy's
    assert ordered.last().to_numpy() == pytest.approx(policy.rho_of(ordered.last().index.to_numpy()))
    assert "rho" not in simulate(jobs, cluster, FifoPolicy(), cfg).schedule


def test_record_off_changes_nothing():
    jobs, cluster = random_trace(4)
    for policy in (FFTPolicy, FifoPolicy):
        on = simulate(jobs, cluster, policy(), SimConfig(record_schedule=True))
        off = simulate(jobs, cluster, policy(), SimConfig())
        assert off.schedule is None
        pd.testing.assert_frame_equal(on.jobs, off.jobs, check_exact=True)
        pd.testing.assert_frame_equal(
            on.rounds.drop(columns="policy_s"), off.rounds.drop(columns="policy_s"), check_exact=True
        )


def test_record_schedule_must_be_a_bool():
    with pytest.raises(InputError, match="record_schedule"):
        SimConfig.from_config({"record_schedule": "yes"})


def test_run_writes_the_record_and_gantt_draws_it(tmp_path, capsys):
    from omegaconf import OmegaConf

    from fairsim.experiment.compose import compose_config
    from fairsim.experiment.single import run_config, write_results
    from fairsim.figures import gantt

    cfg = compose_config(["num_jobs=25", "sim.record_schedule=true", "policy=ours"])
    out = run_config(cfg)
    folder = write_results(out, tmp_path / "run", cfg)
    sc = pd.read_parquet(folder / "schedule.parquet")
    jobs = pd.read_parquet(folder / "jobs.parquet")
    assert per_job(sc.groupby("job_id")["busy_s"].sum(), jobs) == pytest.approx(jobs["run_s"].to_numpy())
    assert "rho" in sc and sc["hosts"].map(len).max() >= 1
    for by in ("job", "host"):
        assert gantt.main([str(folder), "--by", by, "--out", str(tmp_path / f"g_{by}")]) == 0
        assert (tmp_path / f"g_{by}.png").is_file() and (tmp_path / f"g_{by}.pdf").is_file()
    # bad input: one line naming the field, non-zero exit, nothing written
    assert gantt.main([str(folder), "--by", "gpu"]) == 2
    assert "--by" in capsys.readouterr().err
    off = write_results(run_config(compose_config(["num_jobs=25"])), tmp_path / "off", OmegaConf.create({}))
    assert not (off / "schedule.parquet").exists()
    assert gantt.main([str(off)]) == 2
    assert "sim.record_schedule=true" in capsys.readouterr().err
