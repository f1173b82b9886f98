"""The paper catalog's performance model: shapes, the A10/T4 band, memory, hand-computed values."""

import time
from pathlib import Path

import numpy as np
import pytest
import yaml

from fairsim.cluster import ClusterSpec, gpu_specs
from fairsim.errors import InputError
from fairsim.workload.jobs import JobSet
from fairsim.workload.perf_model import Links, default_constants_path, paper_catalog
from fairsim.workload.trace import validate_trace

PAPER = ClusterSpec.from_config({"name": "paper", "counts": {"T4": 12, "A10": 12, "V100": 12}})
ALL_GPUS = tuple(s.name for s in gpu_specs().values())


@pytest.fixture(scope="module")
def cat():
    return paper_catalog(PAPER, gpu_types=ALL_GPUS)


def allowed(cat, model):
    m = cat.models.index(model)
    return [w for w, ok in zip(cat.worker_counts, cat.allowed_workers[m]) if ok]


def test_shapes_and_table2_worker_counts(cat):
    assert len(cat.models) == 16 and cat.work_unit == "epochs"
    assert cat.worker_counts == (1, 2, 4, 8)
    assert cat.packed.shape == (16, len(ALL_GPUS), 4)
    for name in ("VGG16", "VGG19", "ResNet50", "ResNet152", "DenseNet121", "DenseNet201"):
        assert allowed(cat, name) == [1, 2, 4]
    for name in ("Bark", "Bark-small", "BERT-base", "BERT-large"):
        assert allowed(cat, name) == [1]
    for name in ("GPT-neo-1.3B", "GPT-neo-2.7B"):
        assert allowed(cat, name) == [4]
    for name in ("GPT2-medium", "GPT2-large", "OPT-2.7B", "OPT-6.7B"):
        assert allowed(cat, name) == [4, 8]
    large = {m for m, big in zip(cat.models, cat.large) if big}
    assert large == {"GPT-neo-1.3B", "GPT-neo-2.7B", "GPT2-medium", "GPT2-large", "OPT-2.7B", "OPT-6.7B"}


def test_every_datasheet_gpu_has_positive_throughput_where_allowed(cat):
    ok = cat.allowed_workers[:, None, :]
    assert np.all(np.isfinite(cat.packed) == np.broadcast_to(ok, cat.packed.shape))
    assert np.all(cat.packed[np.isfinite(cat.packed)] > 0)


def test_a10_over_t4_within_paper_band_for_every_model_and_worker_count(cat):
    t4, a10 = cat.gpu_types.index("T4"), cat.gpu_types.index("A10")
    for table in (cat.packed, cat.spread):
        ratio = table[:, a10, :] / table[:, t4, :]
        ratio = ratio[np.isfinite(ratio)]
        assert ratio.size == cat.allowed_workers.sum()
        assert ratio.min() >= 1.6 and ratio.max() <= 2.71, (ratio.min(), ratio.max())


def test_state_is_16_bytes_per_param(cat):
    m = cat.models.index("OPT-6.7B")
    assert cat.param_count[m] == 6.7e9
    assert cat.state_bytes[m] == pytest.approx(107.2e9)  # the paper's "about 107 GB"
    r = cat.models.index("ResNet50")
    assert cat.state_bytes[r] == pytest.approx(0.4096e9)


def test_memory_sharded_large_models_and_infeasibility(cat):
    m = cat.models.index("OPT-6.7B")
    w4, w8 = cat.worker_counts.index(4), cat.worker_counts.index(8)
    # state / workers + micro-batch x activations + overhead, from the YAML: 1.49 GB, 1.5 GB
    assert cat.mem_per_worker_gb[m, w4] == pytest.approx(107.2 / 4 + 1.49 + 1.5)
    assert cat.mem_per_worker_gb[m, w8] == pytest.approx(107.2 / 8 + 1.49 + 1.5)
    assert cat.mem_per_worker_gb[m, w4] > 24 and cat.mem_per_worker_gb[m, w8] > 16
    v = cat.models.index("VGG16")  # data parallel: the full state on every worker
    assert cat.mem_per_worker_gb[v, 0] == cat.mem_per_worker_gb[v, 2]


def test_jobset_rejects_opt67b_with_four_workers_on_16_and_24gb_gpus():
    cat = paper_catalog(PAPER)
    trace = validate_trace(_trace([("OPT-6.7B", 4)]))
    with pytest.raises(InputError, match="fits no GPU type"):
        JobSet.build(trace, cat, PAPER)
    jobs = JobSet.build(validate_trace(_trace([("OPT-6.7B", 8)])), cat, PAPER)
    assert jobs.feasible[0].tolist() == [False, True, False]  # only the 24 GB A10


def test_hand_computed_bert_base_on_v100():
    cat = paper_catalog(PAPER)
    m, v = cat.models.index("BERT-base"), cat.gpu_types.index("V100")
    # YAML: params 110M, 84.5 GFLOP/sample, act 0.052 GB, eff 0.9, b 32, A 8, 805000 samples/epoch;
    # V100: 125 TFLOP/s x 0.45, 900 GB/s x 0.75; traffic 8, 3 weight reads, optimizer 28 B/param.
    t_compute = 32 * 84.5e9 / (125e12 * 0.45 * 0.9)
    t_memory = (32 * 0.052e9 * 8 + 3 * 2 * 110e6) / (900e9 * 0.75)
    t_opt = 28 * 110e6 / (900e9 * 0.75)
    step = 8 * max(t_compute, t_memory) + t_opt
    assert cat.packed[m, v, 0] == pytest.approx(32 * 8 / step / 805000, rel=1e-12)


def test_hand_computed_allreduce_for_vgg16_spread():
    cat = paper_catalog(PAPER)
    m, t4, w4 = cat.models.index("VGG16"), cat.gpu_types.index("T4"), cat.worker_counts.index(4)
    t_compute = 32 * 93.0e9 / (65e12 * 0.30 * 0.60)
    t_memory = (32 * 0.060e9 * 8 + 3 * 2 * 138.4e6) / (320e9 * 0.70)
    t_opt = 28 * 138.4e6 / (320e9 * 0.70)
    ring = 2 * 3 / 4 * 2 * 138.4e6 / (10e9 / 8)  # 10 Gbps LAN
    step = 4 * max(t_compute, t_memory) + t_opt + ring
    assert cat.spread[m, t4, w4] == pytest.approx(4 * 32 * 4 / step / 81444, rel=1e-12)


def test_placement_effects(cat):
    w1, w4, w8 = (cat.worker_counts.index(w) for w in (1, 4, 8))
    np.testing.assert_array_equal(cat.spread[:, :, w1], cat.packed[:, :, w1])
    both8 = np.isfinite(cat.packed[:, :, w8])
    np.testing.assert_array_equal(
        cat.spread[:, :, w8][both8], cat.packed[:, :, w8][both8]
    )  # 8 > 4 per host: LAN either way
    vgg, gpt2 = cat.models.index("VGG16"), cat.models.index("GPT2-medium")
    t4 = cat.gpu_types.index("T4")
    vgg_keep = cat.spread[vgg, t4, w4] / cat.packed[vgg, t4, w4]
    gpt2_keep = cat.spread[gpt2, t4, w4] / cat.packed[gpt2, t4, w4]
    assert vgg_keep < 0.9 and gpt2_keep > 0.97  # pipeline jobs are less sensitive to spreading


def test_bandwidth_comes_from_the_cluster():
    slow = paper_catalog(PAPER)
    fast = paper_catalog(ClusterSpec.from_config({"counts": {"T4": 12, "A10": 12, "V100": 12}, "inter_host_gbps": 40}))
    m, w4 = slow.models.index("VGG16"), slow.worker_counts.index(4)
    assert np.all(fast.spread[m, :, w4] > slow.spread[m, :, w4])
    np.testing.assert_array_equal(fast.packed[m, :, w4], slow.packed[m, :, w4])
    links = paper_catalog(
        Links(4, PAPER.intra_host_bytes_per_s, PAPER.inter_host_bytes_per_s), gpu_types=("T4", "A10", "V100")
    )
    np.testing.assert_array_equal(links.packed, slow.packed)


def test_builds_quickly():
    tick = time.perf_counter()
    paper_catalog(PAPER, gpu_types=ALL_GPUS)
    assert time.perf_counter() - tick < 0.5


def test_user_constants_file(tmp_path):
    raw = yaml.safe_load(default_constants_path().read_text())
    raw["name"] = "mine"
    raw["models"] = [raw["models"][0] | {"name": "TinyNet"}]
    path = tmp_path / "mine.yaml"
    path.write_text(yaml.safe_dump(raw))
    cat = paper_catalog(PAPER, path=path)
    assert cat.name == "mine" and cat.models == ("TinyNet",) and cat.worker_counts == (1, 2, 4)


@pytest.mark.parametrize(
    "edit, field",
    [
        (lambda r: r["models"][0].pop("train_gflop"), "models.VGG16.train_gflop"),
        (lambda r: r["models"][0].update(parallelism="tensor"), "models.VGG16.parallelism"),
        (lambda r: r["models"][0].update(workers=[0]), "models.VGG16.workers"),
        (lambda r: r["models"][12].pop("boundary_gb"), "models.GPT2-medium.boundary_gb"),
        (lambda r: r["gpus"].update(T4={"compute": 1.5, "memory": 0.7}), "gpus.T4.compute"),
        (lambda r: r["gpus"].update(Z80={"compute": 0.5, "memory": 0.7}), "gpus.Z80"),
        (lambda r: r.pop("state_bytes_per_param"), "state_bytes_per_param"),
    ],
)
def test_bad_constants_name_the_field(tmp_path, edit, field):
    raw = yaml.safe_load(default_constants_path().read_text())
    edit(raw)
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(raw))
    with pytest.raises(InputError) as err:
        paper_catalog(PAPER, path=path)
    assert err.value.field == field and str(path) in str(err.value)


def test_missing_constants_file():
    with pytest.raises(InputError, match="no such file"):
        paper_catalog(PAPER, path=Path("/nonexistent/catalog.yaml"))


def _trace(rows):
    import pandas as pd

    return pd.DataFrame(
        {
            "job_id": range(len(rows)),
            "arrival_s": 0.0,
            "model": [r[0] for r in rows],
            "workers": [r[1] for r in rows],
            "work": 1.0,
        }
    )
