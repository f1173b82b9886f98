"""Trace files: our schema round-trips bit-identically; Gavel's .trace files parse; bad lines
and bad columns raise InputError naming the place."""

import numpy as np
import pandas as pd
import pytest

from fairsim.cluster import ClusterSpec
from fairsim.errors import InputError
from fairsim.workload.gavel_trace import (
    read_gavel_trace,
    shipped_trace,
    shipped_trace_names,
)
from fairsim.workload.jobs import JobSet
from fairsim.workload.table_catalog import gavel_catalog
from fairsim.workload.trace import read_trace, write_trace

GAVEL_CLUSTER = ClusterSpec.from_config({"name": "gavel", "counts": {"v100": 4, "p100": 4, "k80": 4}})


def random_trace(n=50, seed=3):
    rng = np.random.Generator(np.random.PCG64(seed))
    return pd.DataFrame(
        {
            "job_id": np.arange(n),
            "arrival_s": np.sort(rng.random(n) * 1e5) / 3.0,
            "model": rng.choice(["VGG16", "ResNet50", "OPT-6.7B"], n),
            "workers": rng.choice([1, 2, 4], n),
            "work": rng.lognormal(0, 2, n),
            "weight": rng.random(n) + 0.1,
            "tenant": rng.choice(["vc-a", "vc b", ""], n),
            "gpu_types": rng.choice(["", "V100", "T4|A10"], n),
        }
    )


@pytest.mark.parametrize("suffix", [".csv", ".parquet"])
def test_round_trip_is_bit_identical(tmp_path, suffix):
    df = random_trace()
    path = write_trace(df, tmp_path / f"t{suffix}")
    back = read_trace(path)
    pd.testing.assert_frame_equal(
        back, df.sort_values(["arrival_s", "job_id"]).reset_index(drop=True), check_exact=True
    )
    for col in ("arrival_s", "work", "weight"):
        assert back[col].to_numpy().tobytes() == df[col].to_numpy().tobytes()
    path2 = write_trace(back, tmp_path / f"u{suffix}")
    assert read_trace(path2).equals(back)


@pytest.mark.parametrize(
    "edit, field",
    [
        (lambda d: d.drop(columns=["work"]), "columns"),
        (lambda d: d.assign(work=-1.0), "work"),
        (lambda d: d.assign(workers=0), "workers"),
        (lambda d: d.assign(arrival_s="soon"), "arrival_s"),
        (lambda d: d.assign(job_id=0), "job_id"),
    ],
)
def test_bad_trace_columns_name_the_field(tmp_path, edit, field):
    path = tmp_path / "bad.csv"
    edit(random_trace(5)).to_csv(path, index=False)
    with pytest.raises(InputError) as err:
        read_trace(path)
    assert err.value.field == field and str(path) in str(err.value)


def test_all_shipped_gavel_traces_load_and_build():
    assert shipped_trace_names() == ["max_min_fairness", "minimize_makespan", "small_test"]
    expected = {"max_min_fairness": (96, 36), "minimize_makespan": (100, 100), "small_test": (20, 20)}
    cat = gavel_catalog()
    for name, (jobs, at_zero) in expected.items():
        df = read_gavel_trace(shipped_trace(name))
        assert len(df) == jobs and int((df["arrival_s"] == 0).sum()) == at_zero
        assert sorted(df["job_id"]) == list(range(jobs))
        built = JobSet.build(df, cat, GAVEL_CLUSTER)
        assert built.feasible.any(axis=1).all()


def test_gavel_field_mapping():
    df = read_gavel_trace(shipped_trace("small_test"))
    first = df[df["job_id"] == 0].iloc[0]
    # line 1: Transformer (batch size 128) ... total_steps 346, scale_factor 2, weight 1, arrival 0
    assert first["model"] == "Transformer (batch size 128)"
    assert (first["work"], first["workers"], first["weight"], first["arrival_s"]) == (346.0, 2, 1.0, 0.0)
    mmf = read_gavel_trace(shipped_trace("max_min_fairness"))
    assert mmf["workers"].value_counts().to_dict() == {1: 59, 2: 19, 4: 18}
    assert mmf["arrival_s"].is_monotonic_increasing


GOOD_LINE = "ResNet-18 (batch size 32)\tpython3 main.py\timage_classification/cifar10\t--num_steps\t1\t3948\t2\t1\t-1.000000\t120"


@pytest.mark.parametrize(
    "line, field",
    [
        ("\t".join(GOOD_LINE.split("\t")[:9]), "fields"),
        (GOOD_LINE.replace("\t3948\t", "\tmany\t"), "total_steps"),
        (GOOD_LINE.replace("\t3948\t", "\t0\t"), "total_steps"),
        (GOOD_LINE.replace("\t3948\t2\t", "\t3948\t0\t"), "scale_factor"),
        (GOOD_LINE.replace("\t-1.000000\t120", "\t-1.000000\t-5"), "arrival_time"),
        (GOOD_LINE.replace("\t1\t-1.000000", "\t0\t-1.000000"), "priority_weight"),
        (GOOD_LINE.replace("\t--num_steps\t1\t", "\t--num_steps\tyes\t"), "needs_data_dir"),
    ],
)
def test_malformed_gavel_line_names_file_line_and_field(tmp_path, line, field):
    path = tmp_path / "bad.trace"
    path.write_text(GOOD_LINE + "\n" + line + "\n")
    with pytest.raises(InputError) as err:
        read_gavel_trace(path)
    assert err.value.field == field and err.value.source == f"{path}:2"


def test_gavel_trace_with_blank_lines_and_missing_file(tmp_path):
    path = tmp_path / "ok.trace"
    path.write_text(GOOD_LINE + "\n\n" + GOOD_LINE.replace("\t120", "\t60") + "\n")
    df = read_gavel_trace(path)
    assert df["job_id"].tolist() == [1, 0]  # sorted by arrival: job 1 arrives at 60 s
    with pytest.raises(InputError, match="no such file"):
        read_gavel_trace(tmp_path / "nope.trace")
