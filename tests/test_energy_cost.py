"""Energy and cost per job, per tenant and per run (fairsim.metrics, fairsim.gpu_costs), worked by hand
on a toy cluster, then through a real run."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from fairsim.cluster import ClusterSpec
from fairsim.errors import InputError
from fairsim.experiment.compose import compose_config
from fairsim.experiment.single import run_config
from fairsim.gpu_costs import IDLE_FRACTION, GpuCosts, shipped_costs
from fairsim.metrics import add_energy_cost, energy_cost_summary, tenant_table

TOY = {"name": "toy", "counts": {"T4": 2, "V100": 2}}
RATES = {
    "power": {"T4": {"busy_w": 100, "idle_fraction": 0.2}, "V100": {"busy_w": 300, "idle_fraction": 0.1}},
    "price": {"T4": {"on_demand": 1.0, "spot": 0.5}, "V100": {"on_demand": 3.0, "spot": 1.2}},
}


def toy_run(pricing: str = "on_demand"):
    """Two jobs over a 2-hour run: job 0 held 2 T4 for 1 h, job 1 held 1 V100 for 1 h."""
    cluster = ClusterSpec.from_config(TOY)
    costs = GpuCosts.for_cluster(cluster, {**RATES, "pricing": pricing})
    jobs = pd.DataFrame(
        {
            "job_id": [0, 1],
            "finish_s": [3600.0, 5400.0],
            "gpu_s_T4": [7200.0, 0.0],
            "gpu_s_V100": [0.0, 3600.0],
            "tenant": ["a", "b"],
            "jct_s": [3600.0, 5400.0],
            "rho_fluid": [1.0, 1.0],
            "rho": [1.0, 1.0],
            "starvation_s": [0.0, 0.0],
            "attained_gpu_s": [7200.0, 3600.0],
        }
    )
    rounds = pd.DataFrame({"t_s": [0.0, 3600.0], "duration_s": [3600.0, 3600.0]})
    return cluster, costs, add_energy_cost(jobs, costs), rounds


def test_each_job_costs_its_gpu_hours_and_draws_its_busy_watts():
    _, _, jobs, _ = toy_run()
    # job 0: 7,200 T4 GPU-s x 100 W = 0.2 kWh, 2 GPU-h x 1 USD; job 1: 3,600 V100 GPU-s x 300 W = 0.3 kWh, 1 GPU-h x 3 USD
    assert jobs["energy_kwh"].tolist() == pytest.approx([0.2, 0.3])
    assert jobs["cost_usd"].tolist() == pytest.approx([2.0, 3.0])


def test_the_run_adds_the_idle_gpus_and_prices_every_provisioned_gpu():
    cluster, costs, jobs, rounds = toy_run()
    got = energy_cost_summary(jobs, rounds, cluster, costs, window=None)
    # idle: T4 2 x 7,200 - 7,200 = 7,200 GPU-s at 20 W = 0.04 kWh; V100 14,400 - 3,600 = 10,800 GPU-s at 30 W = 0.09 kWh
    assert got["energy_busy_kwh"] == pytest.approx(0.5)
    assert got["energy_idle_kwh"] == pytest.approx(0.13)
    assert got["energy_kwh"] == pytest.approx(0.63)
    assert got["cluster_cost_per_h_usd"] == pytest.approx(2 * 1.0 + 2 * 3.0)
    assert got["cluster_cost_usd"] == pytest.approx(16.0)  # 8 USD/h for the 2-hour span
    assert got["jobs_cost_usd"] == pytest.approx(5.0)
    assert got["finished_jobs_per_kusd"] == pytest.approx(2 * 1000 / 16.0)
    assert got["pricing"] == "on_demand"
    assert energy_cost_summary(jobs, rounds, cluster, costs, window=(1, 2))["jobs_cost_usd"] == pytest.approx(3.0)


def test_spot_prices_the_same_hours_lower():
    cluster, costs, jobs, rounds = toy_run("spot")
    assert jobs["cost_usd"].tolist() == pytest.approx([1.0, 1.2])
    assert energy_cost_summary(jobs, rounds, cluster, costs, None)["cluster_cost_per_h_usd"] == pytest.approx(3.4)


def test_tenants_get_their_jobs_sums():
    _, _, jobs, _ = toy_run()
    tenants = tenant_table(jobs).set_index("tenant")
    assert tenants.loc["a", "energy_kwh"] == pytest.approx(0.2) and tenants.loc["b", "cost_usd"] == pytest.approx(3.0)
    assert tenants.loc["a", "finished_jobs_per_kusd"] == pytest.approx(1000 / 2.0)


def test_an_unpriced_type_makes_only_what_used_it_null():
    cluster = ClusterSpec.from_config({"counts": {"K80": 2, "T4": 2}})
    costs = GpuCosts.for_cluster(cluster, {})
    assert np.isnan(costs.usd_per_gpu_h[0]) and costs.usd_per_gpu_h[1] == shipped_costs()["t4"].on_demand
    jobs = add_energy_cost(pd.DataFrame({"gpu_s_K80": [0.0, 10.0], "gpu_s_T4": [3600.0, 0.0]}), costs)
    assert jobs["cost_usd"].iloc[0] == pytest.approx(shipped_costs()["t4"].on_demand)
    assert np.isnan(jobs["cost_usd"].iloc[1]) and np.isnan(costs.per_h_usd(cluster.counts))


@pytest.mark.parametrize(
    "cfg, field",
    [
        ({"pricing": "cheap"}, "pricing"),
        ({"power": {"T4": {"idle_fraction": 2}}}, "power.T4.idle_fraction"),
        ({"power": {"T4": {"watts": 70}}}, "power.T4.watts"),
        ({"price": {"T4": {"on_demand": -1}}}, "price.T4.on_demand"),
        ({"price": {"X100": {"spot": 1}}}, "price.X100"),
        ({"price": {"T4": 3}}, "price.T4"),
    ],
)
def test_bad_rates_are_refused_naming_the_field(cfg, field):
    with pytest.raises(InputError) as err:
        GpuCosts.for_cluster(ClusterSpec.from_config(TOY), cfg)
    assert err.value.field == field and "\n" not in str(err.value)


@pytest.mark.slow
def test_a_run_writes_them_from_its_own_tables():
    out = run_config(
        compose_config(
            ["policy=fifo", "num_jobs=20", "track=false", "+cluster.pricing=spot", "+cluster.power.T4.busy_w=50"]
        )
    )
    jobs, rounds = out.jobs, out.rounds
    t4 = shipped_costs()["t4"]
    watts = {"T4": 50.0, "A10": shipped_costs()["a10"].busy_w, "V100": shipped_costs()["v100"].busy_w}
    energy = sum(jobs[f"gpu_s_{t}"] * w for t, w in watts.items()) / 3.6e6
    assert np.allclose(jobs["energy_kwh"], energy)
    assert out.summary["energy_busy_kwh"] == pytest.approx(energy.sum())
    assert out.summary["pricing"] == "spot"
    span_h = (rounds["t_s"].iloc[-1] + rounds["duration_s"].iloc[-1] - rounds["t_s"].iloc[0]) / 3600
    per_h = 12 * (t4.spot + shipped_costs()["a10"].spot + shipped_costs()["v100"].spot)
    assert out.summary["cluster_cost_usd"] == pytest.approx(per_h * span_h)


def test_a_type_of_the_clusters_own_takes_the_tables_idle_fraction():
    """docs/clusters.md: idle_fraction defaults to 0.15 for every type, the cluster's own too;
    its busy watts and prices stay unknown until the config sets them."""
    rows = {row.idle_fraction for row in shipped_costs().values()}
    assert rows == {IDLE_FRACTION}  # the constant is the shipped table's one fraction
    cluster = ClusterSpec.from_config({"gpu_types": {"MyGPU": {"like": "T4", "speed": 1.5}}, "counts": {"MyGPU": 2}})
    costs = GpuCosts.for_cluster(cluster, {"power": {"MyGPU": {"busy_w": 200}}})
    assert costs.busy_w[0] == 200 and costs.idle_w[0] == pytest.approx(200 * IDLE_FRACTION)
    jobs = add_energy_cost(pd.DataFrame({"job_id": [0], "finish_s": [3600.0], "gpu_s_MyGPU": [3600.0]}), costs)
    rounds = pd.DataFrame({"t_s": [0.0], "duration_s": [3600.0]})
    got = energy_cost_summary(jobs, rounds, cluster, costs, window=None)
    # busy 3,600 GPU-s x 200 W = 0.2 kWh; idle 3,600 GPU-s x 30 W = 0.03 kWh
    assert got["energy_kwh"] == pytest.approx(0.23) and np.isnan(got["cluster_cost_usd"])
    assert costs.missing(cluster.counts) == ("price.MyGPU.on_demand",)
    bare = GpuCosts.for_cluster(cluster, {"pricing": "spot"})
    assert bare.missing(cluster.counts) == ("power.MyGPU.busy_w", "price.MyGPU.spot")
    assert GpuCosts.for_cluster(ClusterSpec.from_config(TOY), RATES).missing(np.array([2, 2])) == ()


def test_an_na_energy_names_the_missing_figure():
    from fairsim.experiment.single import format_summary

    out = run_config(
        compose_config(
            [
                "policy=fifo",
                "num_jobs=8",
                "track=false",
                "+cluster.gpu_types.MyGPU.like=T4",
                "+cluster.gpu_types.MyGPU.speed=1.5",
                "+cluster.counts.MyGPU=4",
            ]
        )
    )
    assert np.isnan(out.summary["energy_kwh"])
    assert "power.MyGPU.busy_w" in out.missing_costs
    line = next(x for x in format_summary(out.summary, out.missing_costs).splitlines() if "n/a because" in x)
    assert "cluster.power.MyGPU.busy_w" in line and "\n" not in line
    assert not any("n/a because" in x for x in format_summary(out.summary).splitlines())
