"""Pollux's goodput model (fairsim/workload/goodput.py) and elastic workloads over a catalog
(fairsim/workload/elastic_catalog.py): hand-computed step times, efficiencies and batch choices
on made-up parameters, the fit recovering known parameters, the shipped Pollux catalog, and the
workload option that makes jobs elastic while leaving the rigid default alone."""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd
import pytest

from fairsim.cluster import ClusterSpec
from fairsim.errors import InputError
from fairsim.workload.goodput import (
    BatchLimits,
    PerfParams,
    PolluxCatalog,
    PolluxGoodput,
    best_batch,
    efficiency,
    fit_perf_params,
    load_profiles,
    network_time,
    perf_params_table,
    pollux_dir,
    step_time,
    throughput,
)
from fairsim.workload.jobs import JobSet
from fairsim.workload.loader import bind_jobs, load_workload

P = PerfParams(alpha_c=0.1, beta_c=0.01, alpha_n=0.2, beta_n=0.05, alpha_r=0.05, beta_r=0.01, gamma=2.0)
LIMITS = BatchLimits(init_batch=10, max_batch=40, min_local=5, max_local=20)
PAPER = ClusterSpec.from_config({"name": "paper", "counts": {"T4": 12, "A10": 12, "V100": 12}})


# --- the performance model, by hand -------------------------------------------------------


def test_network_time_picks_the_slowest_link_and_grows_past_two_replicas():
    got = network_time(P, np.array([1, 1, 1, 2, 3]), np.array([1, 2, 4, 4, 3]))
    # one replica: none; one host: alpha_r + beta_r * (r - 2); several hosts: alpha_n + beta_n * (r - 2)
    assert got == pytest.approx([0.0, 0.05, 0.05 + 0.01 * 2, 0.2 + 0.05 * 2, 0.2 + 0.05 * 1])


def test_step_time_is_the_gamma_norm_of_compute_and_network_plus_accumulated_passes():
    # 2 hosts, 4 GPUs, 10 examples a pass: compute 0.1 + 0.01 * 10 = 0.2, network 0.2 + 0.05 * 2 = 0.3
    assert step_time(P, 2, 4, 10, 0) == pytest.approx(np.sqrt(0.2**2 + 0.3**2))
    assert step_time(P, 2, 4, 10, 2) == pytest.approx(2 * 0.2 + np.sqrt(0.13))
    assert throughput(P, 2, 4, 10, 2) == pytest.approx(4 * 10 * 3 / (0.4 + np.sqrt(0.13)))
    no_overlap = dataclasses.replace(P, gamma=1.0)
    assert step_time(no_overlap, 2, 4, 10, 0) == pytest.approx(0.5)
    # one GPU: no all-reduce, the step is the pass
    assert step_time(P, 1, 1, 10, 0) == pytest.approx(0.2)


def test_efficiency_is_gain_over_scale():
    # sqr 1, var 3 at the initial batch 10; batch 40 = scale 4: gain = (3 + 1) / (3 / 4 + 1)
    assert efficiency(1.0, 3.0, 40, 10) == pytest.approx((4 / 1.75) / 4)
    # the same as the noise-scale form: (B_noise + B0) / (B_noise + B) with B_noise = 10 * 3 / 1
    assert efficiency(1.0, 3.0, 40, 10) == pytest.approx(40 / 70)
    assert efficiency(1.0, 3.0, 10, 10) == pytest.approx(1.0)
    assert efficiency(0.0, 0.0, 40, 10) == pytest.approx(0.25)  # no signal left: gain 1


def test_batch_choice_without_noise_takes_the_initial_batch():
    # var 0: efficiency = 1 / scale, so goodput = init_batch / step time: the shortest step wins,
    # the smallest batch (10 over 2 GPUs: 5 a pass)
    c = best_batch(P, LIMITS, [1], [2], 1.0, 0.0)
    assert (c.batch[0], c.atomic[0], c.accum[0]) == (10, 5, 0)
    assert c.goodput[0] == pytest.approx(10 / np.sqrt(0.15**2 + 0.05**2))


def test_batch_choice_with_pure_noise_takes_the_largest_batch_and_accumulates_on_one_gpu():
    # sqr 0: efficiency 1, goodput = throughput: the largest batch
    two = best_batch(P, LIMITS, [1], [2], 0.0, 1.0)
    assert (two.batch[0], two.atomic[0], two.accum[0]) == (40, 20, 0)
    assert two.goodput[0] == pytest.approx(40 / np.sqrt(0.3**2 + 0.05**2))
    # one GPU: 40 is two passes of 20 (max_local), 0.3 s each
    one = best_batch(P, LIMITS, [1], [1], 0.0, 1.0)
    assert (one.batch[0], one.atomic[0], one.accum[0]) == (40, 20, 1)
    assert one.goodput[0] == pytest.approx(40 / 0.6)


def test_batch_choice_respects_the_per_gpu_minimum_and_the_largest_batch():
    # 16 GPUs x min_local 5 = 80 > max_batch 40: no valid configuration
    c = best_batch(P, LIMITS, [4], [16], 1.0, 1.0)
    assert c.goodput[0] == 0.0 and c.throughput[0] == 0.0
    # 4 GPUs: at least 5 each, so the batch starts at 20 > init 10
    c = best_batch(P, LIMITS, [1], [4], 1.0, 0.0)
    assert c.batch[0] == 20 and c.atomic[0] == 5


def test_batch_choice_is_the_best_of_a_dense_search():
    rng = np.random.default_rng(3)
    for _ in range(20):
        sqr, var = rng.uniform(0.1, 2), rng.uniform(0.1, 20)
        replicas = int(rng.integers(1, 5))
        c = best_batch(P, LIMITS, [1], [replicas], sqr, var)
        best = 0.0
        for atomic in range(LIMITS.min_local, LIMITS.max_local + 1):
            for accum in range(4):
                batch = replicas * atomic * (accum + 1)
                if LIMITS.init_batch <= batch <= LIMITS.max_batch and not (replicas == 1 and accum == 0 and batch > 10):
                    best = max(best, throughput(P, 1, replicas, atomic, accum) * efficiency(sqr, var, batch, 10))
        # 50 geometric candidates come within a few percent of every configuration
        assert c.goodput[0] <= best * (1 + 1e-12)
        assert c.goodput[0] >= 0.95 * best


# --- the fit ------------------------------------------------------------------------------


def synthetic_profile(p: PerfParams):
    rows = [
        (n, r, b) for n, r in ((1, 1), (1, 2), (1, 3), (1, 4), (2, 2), (2, 4), (3, 6), (4, 8)) for b in (4, 8, 16, 32)
    ]
    nodes, replicas, atomic = (np.array(x) for x in zip(*rows))
    compute = p.alpha_c + p.beta_c * atomic
    step = step_time(p, nodes, replicas, atomic, 0)
    return nodes, replicas, atomic, compute, step


def test_fit_recovers_known_parameters_from_exact_step_times():
    truth = PerfParams(alpha_c=0.05, beta_c=0.004, alpha_n=0.3, beta_n=0.02, alpha_r=0.08, beta_r=0.005, gamma=2.5)
    fit = fit_perf_params(*synthetic_profile(truth), gamma_weight=0.0, retrogression_weight=0.0)
    assert fit.params.as_array() == pytest.approx(truth.as_array(), rel=2e-3)
    assert fit.rmsle_step < 1e-4 and fit.median_abs_rel_error < 1e-4
    # Pollux's small penalties pull gamma and the retrogression terms a little, the times hardly
    default = fit_perf_params(*synthetic_profile(truth))
    assert default.params.alpha_c == pytest.approx(truth.alpha_c, rel=0.05)
    assert default.params.beta_c == pytest.approx(truth.beta_c, rel=0.05)
    assert default.median_abs_rel_error < 0.02


def test_fit_is_deterministic_and_pins_what_the_rows_cannot_show():
    truth = PerfParams(alpha_c=0.05, beta_c=0.004, alpha_n=0.3, beta_n=0.02, alpha_r=0.08, beta_r=0.005, gamma=2.5)
    nodes, replicas, atomic, compute, step = synthetic_profile(truth)
    one_host = nodes == 1
    a = fit_perf_params(nodes[one_host], replicas[one_host], atomic[one_host], compute[one_host], step[one_host])
    b = fit_perf_params(nodes[one_host], replicas[one_host], atomic[one_host], compute[one_host], step[one_host])
    assert a == b
    assert a.params.alpha_n == 1e-8 and a.params.beta_n == 1e-8  # no multi-host rows
    with pytest.raises(InputError, match="times"):
        fit_perf_params([1], [1], [4], [0.0], [0.1])


# --- Pollux's catalog ---------------------------------------------------------------------


@pytest.fixture(scope="module")
def pollux():
    return PolluxCatalog.load()


def test_the_shipped_pollux_catalog_loads(pollux):
    assert pollux.models == ("bert", "cifar10", "deepspeech2", "imagenet", "ncf", "yolov3")
    cifar = pollux.index("cifar10")
    assert pollux.limits[cifar] == BatchLimits(init_batch=128, max_batch=4096, min_local=32, max_local=1024)
    assert pollux.limits[pollux.index("yolov3")].max_local == 8
    val = pd.read_csv(pollux_dir() / "validation.csv")
    last = val[(val.model == "cifar10") & (val.epoch == 99)].progress.min()
    assert pollux.target_examples[cifar] == pytest.approx(last * 128)
    # epochs end where the slowest batch size's run ends them; statistics linear in the batch
    assert pollux.epoch(cifar, 0)[()] == 0 and pollux.epoch(cifar, pollux.epoch_ends[cifar][0])[()] == 1
    rows = val[(val.model == "cifar10") & (val.epoch == 3)].set_index("batch_size")
    sqr, var = pollux.grad_stats(cifar, 3, 192)
    assert sqr == pytest.approx((rows.grad_sqr[128] + rows.grad_sqr[256]) / 2)
    assert var == pytest.approx((rows.grad_var[128] + rows.grad_var[256]) / 2)


@pytest.mark.slow
def test_the_shipped_parameters_are_the_fit_of_the_shipped_profiles():
    shipped = pd.read_csv(pollux_dir() / "perf_params.csv")
    profiles = load_profiles()
    refit = perf_params_table(profiles)
    assert list(refit.model) == list(shipped.model)
    fields = ["alpha_c", "beta_c", "alpha_n", "beta_n", "alpha_r", "beta_r", "gamma"]
    for (_, a), (_, b) in zip(shipped.iterrows(), refit.iterrows()):
        rows = profiles[profiles.model == a.model]
        args = (rows.num_nodes, rows.num_replicas, rows.local_bsz, 0)
        # compared by the step times they predict: a flat direction of the fit may drift in its last digits
        pa, pb = PerfParams.of(a[fields].to_numpy(float)), PerfParams.of(b[fields].to_numpy(float))
        assert step_time(pa, *args) == pytest.approx(step_time(pb, *args), rel=1e-4)
    assert refit.rmsle_step.to_numpy() == pytest.approx(shipped.rmsle_step.to_numpy(), rel=1e-4)
    assert (shipped.median_abs_rel_error < 0.1).all()  # every model's step times within 10% at the median


def test_pollux_goodput_rates_t4_only_and_grows_with_progress(pollux):
    model = PolluxGoodput(pollux, ["cifar10", "imagenet"], ["T4", "V100"])
    jobs, gpus, hosts = np.array([0, 0, 1, 1]), np.array([4, 4, 4, 4]), np.array([1, 1, 1, 1])
    early = model.rate(jobs, np.array([0, 1, 0, 1]), gpus, hosts, np.zeros(4))
    assert early[1] == 0.0 and early[3] == 0.0 and early[0] > 0 and early[2] > 0
    late = model.rate(jobs, np.zeros(4, int), gpus, hosts, 0.9 * pollux.target_examples[[1, 1, 3, 3]])
    assert late[0] > early[0] and late[2] > early[2]  # the gradient noise grows: larger batches pay off
    # one GPU at the start runs the initial batch at efficiency 1: the throughput of one pass of it
    one = model.rate(np.array([0]), np.array([0]), np.array([1]), np.array([1]), np.array([0.0]))
    assert one[0] == pytest.approx(128 / (pollux.perf[1].alpha_c + pollux.perf[1].beta_c * 128))
    assert model.rate(np.array([0]), np.array([0]), np.array([2]), np.array([3]), np.array([0.0]))[0] == 0.0


# --- elastic workloads over a catalog -----------------------------------------------------


def philly_cfg(**extra):
    return {"name": "philly", "kind": "philly", "catalog": "paper", "num_jobs": 60, "load": 1.0, **extra}


def test_the_rigid_default_is_untouched():
    wl = load_workload(philly_cfg(), PAPER, 0)
    jobs = bind_jobs(wl, PAPER)
    built = JobSet.build(wl.trace, wl.catalog, PAPER, source=wl.source)
    assert jobs.elastic is None and wl.elastic is None and "elastic_jobs" not in wl.report
    for f in dataclasses.fields(JobSet):
        a, b = getattr(jobs, f.name), getattr(built, f.name)
        assert (a == b).all() if isinstance(a, np.ndarray) else a == b


def test_the_elastic_option_makes_jobs_elastic_and_a_requested_count_runs_as_rigid():
    wl = load_workload(philly_cfg(elastic={"fraction": 1.0, "min_gpus": 1, "max_gpus": None}), PAPER, 0)
    jobs = bind_jobs(wl, PAPER)
    e = jobs.elastic
    assert e is not None and e.elastic.all() and wl.report["elastic_jobs"] == len(jobs)
    assert (e.min_gpus <= jobs.workers).all() and (jobs.workers <= e.max_gpus).all()
    cat = wl.catalog
    most = np.array([max(w for w, ok in zip(cat.worker_counts, row) if ok) for row in cat.allowed_workers])
    assert (e.max_gpus == np.maximum(most[jobs.model], jobs.workers)).all()
    rigid = load_workload(philly_cfg(), PAPER, 0)
    assert rigid.trace.equals(wl.trace)  # the option draws nothing from the trace's stream
    j = np.arange(len(jobs))
    hosts = -(-jobs.workers // PAPER.gpus_per_host)
    for t in range(PAPER.num_types):
        r = e.model.rate(j, np.full(len(j), t), jobs.workers, hosts, 0.5 * jobs.work)
        ok = jobs.feasible[:, t]
        assert r[ok] == pytest.approx(jobs.tput_packed[ok, t], rel=1e-12)
        wide = ok & (jobs.workers > 1)  # one GPU a host: the spread figures
        r = e.model.rate(j[wide], np.full(wide.sum(), t), jobs.workers[wide], jobs.workers[wide], np.zeros(wide.sum()))
        assert r == pytest.approx(jobs.tput_spread[wide, t], rel=1e-12)
    # more GPUs than requested: more throughput, less than linear goodput
    one = np.flatnonzero((jobs.workers == 1) & (e.max_gpus >= 4))
    assert len(one)
    r1 = e.model.rate(one, np.zeros(len(one), int), np.ones(len(one), int), np.ones(len(one), int), np.zeros(len(one)))
    r4 = e.model.rate(one, np.zeros(len(one), int), np.full(len(one), 4), np.ones(len(one), int), np.zeros(len(one)))
    assert (r4 > r1).all() and (r4 < 4 * r1).all()
    # beyond the counts the catalog rates: cannot run
    assert e.model.rate(one[:1], np.array([0]), np.array([16]), np.array([4]), np.array([0.0]))[0] == 0.0


def test_a_fraction_of_jobs_is_drawn_with_the_seed():
    half = load_workload(philly_cfg(elastic={"fraction": 0.5, "max_gpus": 2}), PAPER, 0)
    jobs = bind_jobs(half, PAPER)
    e = jobs.elastic
    assert 0 < e.elastic.sum() < len(jobs)
    assert (e.min_gpus[~e.elastic] == jobs.workers[~e.elastic]).all()
    assert (e.max_gpus[~e.elastic] == jobs.workers[~e.elastic]).all()
    assert (e.max_gpus[e.elastic] <= np.maximum(2, jobs.workers[e.elastic])).all()
    again = load_workload(philly_cfg(elastic={"fraction": 0.5, "max_gpus": 2}), PAPER, 0)
    assert (again.elastic_chosen == half.elastic_chosen).all()
    other = load_workload(philly_cfg(elastic={"fraction": 0.5, "max_gpus": 2}), PAPER, 1)
    assert not (other.elastic_chosen == half.elastic_chosen).all()


@pytest.mark.parametrize(
    ("elastic", "field"),
    [
        ({"fraction": 1.5}, "elastic.fraction"),
        ({"min_gpus": 0}, "elastic.min_gpus"),
        ({"min_gpus": 4, "max_gpus": 2}, "elastic.max_gpus"),
        ({"max_gpus": "many"}, "elastic.max_gpus"),
        ({"spread": True}, "elastic.spread"),
        ("yes", "elastic"),
        ({"like": {"NoSuchModel": "bert"}}, "elastic.like.NoSuchModel"),
        ({"like": {"ResNet50": "gpt"}}, "elastic.like.ResNet50"),
    ],
)
def test_bad_elastic_options_are_one_line_errors(elastic, field):
    with pytest.raises(InputError) as err:
        bind_jobs(load_workload(philly_cfg(elastic=elastic), PAPER, 0), PAPER)
    assert err.value.field == field and "\n" not in str(err.value)


def test_a_catalog_model_without_a_mapping_must_be_given_one(tmp_path):
    (tmp_path / "t.csv").write_text(
        "model,gpu,workers,placement,throughput\nnetA,T4,1,packed,0.01\nnetA,T4,2,packed,0.018\n"
    )
    (tmp_path / "m.csv").write_text("model,param_count,mem_gb\nnetA,1000000,1\n")
    trace = tmp_path / "trace.csv"
    trace.write_text("job_id,arrival_s,model,workers,work\n0,0,netA,1,100\n")
    cluster = ClusterSpec.from_config({"name": "t4", "counts": {"T4": 4}})
    cfg = {"name": "mine", "kind": "file", "path": str(trace), "catalog": "table"}
    cfg |= {"throughputs_path": str(tmp_path / "t.csv"), "models_path": str(tmp_path / "m.csv")}
    with pytest.raises(InputError, match=r"workload.elastic.like.netA=<one of bert"):
        bind_jobs(load_workload({**cfg, "elastic": {}}, cluster, 0), cluster)
    jobs = bind_jobs(load_workload({**cfg, "elastic": {"like": {"netA": "cifar10"}}}, cluster, 0), cluster)
    assert jobs.elastic.max_gpus[0] == 2
    # between and beyond rated counts
    rate = jobs.elastic.model.rate(
        np.zeros(3, int), np.zeros(3, int), np.array([1, 2, 3]), np.ones(3, int), np.zeros(3)
    )
    assert rate[0] == pytest.approx(0.01) and 0 < rate[1] < 0.018 and rate[2] == 0.0


# --- Pollux's workloads as a fairsim workload ---------------------------------------------

POLLUX_CLUSTER = ClusterSpec.from_config({"name": "pollux", "counts": {"T4": 64}, "gpus_per_host": 4})


def pollux_cfg(**extra):
    return {"name": "pollux_trace", "kind": "pollux_trace", "catalog": "pollux", "path": "workload-6", **extra}


def test_a_pollux_workload_loads_with_whole_trainings_as_work(pollux):
    wl = load_workload(pollux_cfg(), POLLUX_CLUSTER, 0)
    jobs = bind_jobs(wl, POLLUX_CLUSTER)
    raw = pd.read_csv(pollux_dir() / "traces" / "workload-6.csv")
    assert len(jobs) == len(raw) == 160 and jobs.elastic is None
    assert wl.catalog.work_unit == "examples" and wl.catalog.gpu_types == ("T4",)
    first = raw.sort_values("time", kind="stable").iloc[0]
    assert jobs.model_name[0] == first.application and jobs.workers[0] == first.num_replicas
    assert jobs.work[0] == pytest.approx(pollux.target_examples[pollux.index(first.application)])
    # a rigid job's rate is its average goodput over the training at its allocation
    m, w = pollux.index(first.application), int(first.num_replicas)
    assert jobs.tput_packed[0, 0] == pytest.approx(pollux.mean_rate(m, -(-w // 4), w))
    with pytest.raises(InputError, match="catalog=pollux"):
        load_workload(pollux_cfg(catalog="paper"), POLLUX_CLUSTER, 0)


def test_held_at_one_allocation_an_elastic_pollux_job_finishes_when_the_rigid_one_does(pollux):
    wl = load_workload(pollux_cfg(elastic={"fraction": 1.0}), POLLUX_CLUSTER, 0)
    jobs = bind_jobs(wl, POLLUX_CLUSTER)
    e = jobs.elastic
    assert isinstance(e.model, PolluxGoodput) and e.elastic.all()
    for j in (0, 1, 2, 5):
        m, w = pollux.index(jobs.model_name[j]), int(jobs.workers[j])
        assert e.min_gpus[j] == 1 and e.max_gpus[j] >= w
        ends = pollux.epoch_ends[m]
        starts = np.concatenate([[0.0], ends[:-1]])
        n = len(ends)
        rates = e.model.rate(np.full(n, j), np.zeros(n, int), np.full(n, w), np.full(n, -(-w // 4)), starts)
        elastic_s = ((ends - starts) / rates).sum()
        assert elastic_s == pytest.approx(jobs.work[j] / jobs.tput_packed[j, 0], rel=1e-9)
    with pytest.raises(InputError, match="elastic.like"):
        bind_jobs(load_workload(pollux_cfg(elastic={"like": {"bert": "ncf"}}), POLLUX_CLUSTER, 0), POLLUX_CLUSTER)
