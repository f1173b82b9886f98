"""Trace generators: determinism, the load definition, options, Gavel's distributions."""

import time

import numpy as np
import pandas as pd
import pytest

from fairsim.cluster import ClusterSpec
from fairsim.errors import InputError
from fairsim.workload.gavel_gen import GavelGenOptions, generate_gavel
from fairsim.workload.jobs import JobSet
from fairsim.workload.perf_model import paper_catalog
from fairsim.workload.philly import PhillyOptions, generate_philly
from fairsim.workload.sampling import nearest_slot, pick_uniform, reference_throughput
from fairsim.workload.table_catalog import gavel_catalog

PAPER = ClusterSpec.from_config({"name": "paper", "counts": {"T4": 12, "A10": 12, "V100": 12}})
GAVEL = ClusterSpec.from_config({"name": "gavel", "counts": {"v100": 36, "p100": 36, "k80": 36}})


@pytest.fixture(scope="module")
def paper_cat():
    return paper_catalog(PAPER)


@pytest.fixture(scope="module")
def gavel_cat():
    return gavel_catalog()


def durations(trace, cat, cluster):
    """Each job's run time at the reference speed, recovered from its work."""
    m = cat.model_indices(trace["model"].to_numpy())
    s = cat.worker_slots(trace["workers"].to_numpy())
    return trace["work"].to_numpy() / reference_throughput(cat, cluster)[m, s]


def test_same_seed_same_frame_other_seed_differs(paper_cat):
    o = PhillyOptions(num_jobs=500, load=0.7, duration_scale=0.05, max_duration_s=7200, large_share=0.3)
    a, _ = generate_philly(paper_cat, PAPER, 7, o)
    b, _ = generate_philly(paper_cat, PAPER, 7, o)
    pd.testing.assert_frame_equal(a, b, check_exact=True)
    assert a["work"].to_numpy().tobytes() == b["work"].to_numpy().tobytes()
    c, _ = generate_philly(paper_cat, PAPER, 8, o)
    assert not a.equals(c)


def test_achieved_load_matches_request_on_a_large_sample(paper_cat):
    o = PhillyOptions(num_jobs=20000, load=0.6, duration_scale=0.05, max_duration_s=7200)
    trace, stats = generate_philly(paper_cat, PAPER, 0, o)
    gpu_s = (durations(trace, paper_cat, PAPER) * trace["workers"]).sum()
    achieved = gpu_s / (PAPER.total_gpus * trace["arrival_s"].max())
    assert achieved == pytest.approx(0.6, rel=0.03)
    assert stats["offered_load"] == pytest.approx(0.6)
    assert trace["arrival_s"].min() == 0.0
    gaps = np.diff(np.sort(trace["arrival_s"].to_numpy()))
    assert gaps.mean() * stats["rate_per_hour"] / 3600 == pytest.approx(1.0, rel=0.03)
    assert np.std(gaps) / np.mean(gaps) == pytest.approx(1.0, rel=0.05)  # exponential gaps


def test_load_scale_multiplies_the_arrival_rate(paper_cat):
    base = PhillyOptions(num_jobs=300, load=0.5)
    _, s1 = generate_philly(paper_cat, PAPER, 1, base)
    _, s2 = generate_philly(paper_cat, PAPER, 1, PhillyOptions(num_jobs=300, load=0.5, load_scale=1.5))
    assert s2["rate_per_hour"] == pytest.approx(1.5 * s1["rate_per_hour"])


def test_jobs_are_runnable_and_models_allow_their_worker_counts(paper_cat):
    trace, _ = generate_philly(paper_cat, PAPER, 2, PhillyOptions(num_jobs=3000))
    jobs = JobSet.build(trace, paper_cat, PAPER)  # raises if any job fits no type
    assert jobs.feasible.any(axis=1).all()
    assert set(trace["workers"]) <= {1, 2, 4, 8}
    opt67 = trace[trace["model"] == "OPT-6.7B"]
    assert len(opt67) > 0 and (opt67["workers"] == 8).all()  # 4 workers fits no paper GPU
    assert (trace[trace["model"].str.startswith("BERT")]["workers"] == 1).all()


def test_worker_override_and_mix(paper_cat):
    four, stats = generate_philly(paper_cat, PAPER, 0, PhillyOptions(num_jobs=400, workers=4))
    assert (four["workers"] == 4).all() and stats["mean_workers"] == 4.0
    mix, _ = generate_philly(paper_cat, PAPER, 0, PhillyOptions(num_jobs=8000, workers={1: 0.5, 8: 0.5}))
    assert set(mix["workers"]) == {1, 8}
    assert (mix["workers"] == 8).mean() == pytest.approx(0.5, abs=0.02)
    with pytest.raises(InputError) as err:
        generate_philly(paper_cat, PAPER, 0, PhillyOptions(num_jobs=10, workers=3))
    assert err.value.field == "workers"


def test_large_share(paper_cat):
    trace, stats = generate_philly(paper_cat, PAPER, 0, PhillyOptions(num_jobs=6000, large_share=0.5))
    large = paper_cat.large[paper_cat.model_indices(trace["model"])]
    assert large.mean() == pytest.approx(0.5, abs=0.02) and stats["large_fraction"] == large.mean()
    assert (trace["workers"][large] >= 4).all()
    none, _ = generate_philly(paper_cat, PAPER, 0, PhillyOptions(num_jobs=500, large_share=0.0))
    assert not paper_cat.large[paper_cat.model_indices(none["model"])].any()


def test_duration_clip_scale_and_spread_limit(paper_cat):
    o = PhillyOptions(num_jobs=5000, duration_scale=0.1, min_duration_s=600, max_duration_s=3600)
    trace, stats = generate_philly(paper_cat, PAPER, 0, o)
    d = durations(trace, paper_cat, PAPER)
    assert d.min() == pytest.approx(600) and d.max() == pytest.approx(3600)
    assert stats["median_duration_s"] == pytest.approx(0.1 * 14398, rel=0.05)  # Philly median 4.0 h
    narrow, _ = generate_philly(paper_cat, PAPER, 0, PhillyOptions(num_jobs=5000, duration_scale=0.05, spread_limit=3))
    d = durations(narrow, paper_cat, PAPER)
    assert d.max() / d.min() == pytest.approx(3.0, rel=1e-9)


def test_generates_20000_jobs_quickly(paper_cat):
    tick = time.perf_counter()
    generate_philly(paper_cat, PAPER, 0, PhillyOptions(num_jobs=20000))
    assert time.perf_counter() - tick < 1.0


def test_nearest_slot_and_uniform_pick():
    counts = (1, 2, 4, 8)
    # allowed 4 and 8 only: 1 -> 4, 2 -> 4, 8 -> 8, 3 -> 4
    got = nearest_slot(np.array([1, 2, 8, 3]), counts, np.array([False, False, True, True]))
    assert [counts[s] for s in got] == [4, 4, 8, 4]
    # 2 is as far from 1 as from 4 on log2: the tie goes to the smaller count
    got = nearest_slot(np.array([2]), counts, np.array([True, False, True, False]))
    assert counts[got[0]] == 1
    mask = np.array([[True, False, True, True]] * 4)
    assert pick_uniform(np.array([0.0, 0.34, 0.67, 0.999]), mask).tolist() == [0, 2, 3, 3]


def test_gavel_generator_distributions(gavel_cat):
    o = GavelGenOptions(num_jobs=20000, rate_per_hour=3.2, multi_gpu=True)
    trace, stats = generate_gavel(gavel_cat, GAVEL, 0, o)
    share = trace["workers"].value_counts(normalize=True)
    for w, p in ((1, 0.70), (2, 0.10), (4, 0.15), (8, 0.05)):
        assert share[w] == pytest.approx(p, abs=0.015)
    m = gavel_cat.model_indices(trace["model"])
    s = gavel_cat.worker_slots(trace["workers"])
    minutes = trace["work"].to_numpy() / gavel_cat.packed[m, gavel_cat.gpu_types.index("V100"), s] / 60
    assert minutes.min() >= 10**1.5 * (1 - 1e-9) and minutes.max() <= 1e4 * (1 + 1e-9)
    assert (minutes > 1e3).mean() == pytest.approx(0.2, abs=0.015)
    multi = trace[trace["workers"] > 1]["model"]
    assert not multi.str.startswith(("A3C", "CycleGAN", "Recommendation")).any()
    assert trace["model"].nunique() == 26
    assert stats["expected_span_h"] == pytest.approx(20000 / 3.2)
    again, _ = generate_gavel(gavel_cat, GAVEL, 0, o)
    pd.testing.assert_frame_equal(trace, again, check_exact=True)


def test_gavel_generator_options(gavel_cat):
    single, _ = generate_gavel(gavel_cat, GAVEL, 0, GavelGenOptions(num_jobs=200))
    assert (single["workers"] == 1).all()  # Gavel's default: single-GPU jobs
    small = ClusterSpec.from_config({"counts": {"v100": 4, "p100": 4, "k80": 4}})
    mapped, _ = generate_gavel(gavel_cat, small, 0, GavelGenOptions(num_jobs=2000, multi_gpu=True))
    assert mapped["workers"].max() == 4  # 8-worker jobs cannot run on 4 GPUs a type: mapped to 4
    with pytest.raises(InputError) as err:
        generate_gavel(gavel_cat, GAVEL, 0, GavelGenOptions(num_jobs=10, reference_gpu="A10"))
    assert err.value.field == "reference_gpu"
    with pytest.raises(InputError) as err:
        GavelGenOptions.from_config({"num_jobs": 100, "window": [4000, 5000]}, "w")
    assert err.value.field == "window"


# ---- real Philly arrivals and fixed spans ------------------------------------------------------
from fairsim.workload.philly_window import philly_jobs, window  # noqa: E402


def test_philly_window_is_deterministic_per_seed_with_the_asked_count_and_span(paper_cat):
    o = PhillyOptions(num_jobs=800, load=1.5, arrivals="philly", span_h=48, min_duration_s=60, max_duration_s=172800)
    a, sa = generate_philly(paper_cat, PAPER, 3, o)
    b, sb = generate_philly(paper_cat, PAPER, 3, o)
    pd.testing.assert_frame_equal(a, b, check_exact=True)
    assert sa == sb
    c, sc = generate_philly(paper_cat, PAPER, 4, o)
    assert sc["philly_window_first_job"] != sa["philly_window_first_job"]
    assert len(a) == 800 and a["job_id"].tolist() == list(range(800))
    arr = a["arrival_s"].to_numpy()
    assert arr[0] == 0.0 and arr[-1] == pytest.approx(48 * 3600, rel=1e-12) and np.all(np.diff(arr) >= 0)
    # the offered load over the span is the asked one: n jobs, mean gap span / (n - 1)
    gpu_s = (durations(a, paper_cat, PAPER) * a["workers"]).sum()
    assert gpu_s / (PAPER.total_gpus * 48 * 3600 * 800 / 799) == pytest.approx(1.5, rel=1e-9)


def test_philly_window_keeps_the_real_gaps_and_each_jobs_own_duration(paper_cat):
    o = PhillyOptions(num_jobs=300, load=1.0, arrivals="philly", span_h=10, min_duration_s=1e-3)
    trace, stats = generate_philly(paper_cat, PAPER, 11, o)
    offsets, raw_dur, _ = window(stats["philly_window_first_job"], 300)
    arr = trace["arrival_s"].to_numpy()
    np.testing.assert_allclose(arr, offsets * (10 * 3600 / offsets[-1]), rtol=1e-12)
    dur = durations(trace, paper_cat, PAPER)
    np.testing.assert_allclose(dur / raw_dur, stats["duration_factor"], rtol=1e-9)  # one factor for every job
    gaps = np.diff(offsets)
    assert stats["interarrival_cv"] == pytest.approx(gaps.std() / gaps.mean(), rel=1e-9)  # a stretch keeps the CV


def test_philly_window_in_load_mode_has_the_poisson_mean_gap(paper_cat):
    o = PhillyOptions(num_jobs=500, load=0.8, arrivals="philly", duration_scale=0.05, max_duration_s=7200)
    trace, stats = generate_philly(paper_cat, PAPER, 0, o)
    assert trace["arrival_s"].iloc[-1] == pytest.approx(499 * 3600 / stats["rate_per_hour"], rel=1e-12)
    submit, _, gpus = philly_jobs()
    assert len(submit) == 82247 and np.all(np.diff(submit) >= 0) and submit[0] == 0.0
    assert "duration_factor" not in stats


def test_span_mode_clips_after_scaling_and_refuses_an_unreachable_load(paper_cat):
    o = PhillyOptions(num_jobs=400, load=2.0, span_h=48, min_duration_s=120, max_duration_s=36000)
    trace, stats = generate_philly(paper_cat, PAPER, 0, o)
    dur = durations(trace, paper_cat, PAPER)
    assert dur.min() >= 120 - 1e-6 and dur.max() <= 36000 + 1e-6
    assert trace["arrival_s"].iloc[-1] == pytest.approx(48 * 3600, rel=1e-12)
    with pytest.raises(InputError, match="load"):
        generate_philly(paper_cat, PAPER, 0, PhillyOptions(num_jobs=400, load=50.0, span_h=48, max_duration_s=600))
