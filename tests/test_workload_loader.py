"""load_workload: dispatch on kind and catalog, presets with top-level interpolation, bad configs."""

import pandas as pd
import pytest
from omegaconf import OmegaConf

from fairsim.cluster import ClusterSpec
from fairsim.errors import InputError
from fairsim.experiment.compose import preset as compose_preset
from fairsim.workload.jobs import JobSet
from fairsim.workload.loader import CATALOGS, KINDS, load_workload
from fairsim.workload.table_catalog import gavel_files
from fairsim.workload.trace import write_trace

PAPER = ClusterSpec.from_config({"name": "paper", "counts": {"T4": 12, "A10": 12, "V100": 12}})
GAVEL = ClusterSpec.from_config({"name": "gavel", "counts": {"v100": 36, "p100": 36, "k80": 36}})


def preset(name, **top):
    root = OmegaConf.create(
        {"load": 0.8, "num_jobs": 300, "seed": 0, **top, "workload": compose_preset("workload", name)}
    )
    return OmegaConf.to_container(root.workload, resolve=True)


@pytest.mark.parametrize(
    "name",
    [
        "philly",
        "trace1",
        "trace2",
        "trace3",
        "trace4",
        "trace5",
        "trace6",
        "trace7",
        "trace8",
        "trace9",
        "file",
        "gavel_trace",
        "gavel_generated",
    ],
)
def test_every_preset_has_the_common_keys(name):
    cfg = OmegaConf.create(compose_preset("workload", name))  # defaults list applied (trace4: trace3)
    assert cfg.name == name and cfg.kind in KINDS and cfg.catalog in CATALOGS


@pytest.mark.parametrize(
    "name", ["philly", "trace1", "trace2", "trace3", "trace4", "trace5", "trace6", "trace7", "trace8", "trace9"]
)
def test_philly_presets_load_and_build_on_the_paper_cluster(name):
    cfg = preset(name, load=0.5, num_jobs=120)
    w = load_workload(cfg, PAPER, seed=1)
    expected = 800 if name in ("trace1", "trace2") else 120
    assert len(w.trace) == expected and w.catalog.name == "paper" and w.window is None
    assert w.meta["offered_load"] == pytest.approx(0.75 if name == "trace7" else 0.5)
    JobSet.build(w.trace, w.catalog, PAPER, source=w.source)


def test_trace_presets_differ_as_documented():
    t1 = load_workload(preset("trace1"), PAPER, 0)
    assert (t1.trace["workers"] == 4).all()
    t6 = load_workload(preset("trace6", num_jobs=2000), PAPER, 0)
    assert t6.meta["large_fraction"] == pytest.approx(0.5, abs=0.04)
    t3 = load_workload(preset("trace3", num_jobs=2000), PAPER, 0)
    assert t3.meta["large_fraction"] < 0.25
    t7 = load_workload(preset("trace7", num_jobs=2000), PAPER, 0)
    assert t7.meta["rate_per_hour"] == pytest.approx(1.5 * t3.meta["rate_per_hour"])
    t9 = load_workload(preset("trace9", num_jobs=2000), PAPER, 0)
    assert t9.meta["max_duration_s"] / t9.meta["min_duration_s"] == pytest.approx(3.0)


def test_trace1_spans_two_days():
    w = load_workload(preset("trace1"), PAPER, 0)
    assert w.meta["arrival_span_h"] == pytest.approx(48.0) and w.meta["arrivals"] == "philly"


def test_gavel_presets():
    g = load_workload(preset("gavel_generated"), GAVEL, 0)
    assert len(g.trace) == 6000 and g.window == (4000, 5000) and g.meta["work_unit"] == "steps"
    t = load_workload(preset("gavel_trace"), GAVEL, 0)
    assert len(t.trace) == 96 and t.window is None
    small = load_workload({**preset("gavel_trace"), "path": "small_test.trace", "window": [0, 10]}, GAVEL, 0)
    assert len(small.trace) == 20 and small.window == (0, 10)


def test_file_kind_round_trip(tmp_path):
    gen = load_workload(preset("philly", num_jobs=50), PAPER, 3)
    path = write_trace(gen.trace, tmp_path / "t.parquet")
    back = load_workload({**preset("file"), "path": str(path)}, PAPER, 0)
    pd.testing.assert_frame_equal(back.trace, gen.trace, check_exact=True)


def test_table_catalog_through_the_loader():
    tput, models = gavel_files()
    cfg = {
        **preset("gavel_trace"),
        "catalog": "table",
        "throughputs_path": str(tput),
        "models_path": str(models),
        "work_unit": "steps",
    }
    w = load_workload(cfg, GAVEL, 0)
    assert w.catalog.name == "table" and len(w.catalog.models) == 26


@pytest.mark.parametrize(
    "cfg, field, allowed",
    [
        ({"name": "x", "kind": "poisson"}, "kind", "philly, gavel_generated, file, gavel_trace"),
        ({"name": "x", "kind": "philly", "catalog": "mine"}, "catalog", "paper, gavel, table"),
        ({"name": "x", "kind": "philly", "lod": 0.5}, "lod", "load"),
        ({"name": "x", "kind": "philly", "load": -1}, "load", "> 0"),
        ({"name": "x", "kind": "philly", "workers": {3: 1.0}}, "workers", "allowed"),
        ({"name": "x", "kind": "philly", "workers": {1: 0.5, 4: 0.4}}, "workers", "sum to 1"),
        ({"name": "x", "kind": "philly", "num_jobs": 2.5}, "num_jobs", "integer"),
        ({"name": "x", "kind": "philly", "max_duration_s": 10}, "max_duration_s", "min_duration_s"),
        ({"name": "x", "kind": "file", "path": None}, "path", "workload.path"),
        ({"name": "x", "kind": "file", "path": "/no/such/trace.csv"}, "path", "no such file"),
        ({"name": "x", "kind": "gavel_trace", "path": "nope"}, "path", "max_min_fairness"),
        ({"name": "x", "kind": "gavel_trace", "catalog": "table"}, "throughputs_path", "required"),
        ({"name": "x", "kind": "gavel_generated", "window": [5, 1]}, "window", "first"),
    ],
)
def test_bad_configs_name_the_field_and_allowed_values(cfg, field, allowed):
    with pytest.raises(InputError) as err:
        load_workload(cfg, PAPER if cfg["kind"] in ("philly", "file") else GAVEL, 0)
    assert err.value.field == field and allowed in str(err.value)


def test_unknown_model_in_a_file_trace_is_named(tmp_path):
    path = tmp_path / "t.csv"
    pd.DataFrame({"job_id": [0], "arrival_s": [0.0], "model": ["AlexNet"], "workers": [1], "work": [1.0]}).to_csv(
        path, index=False
    )
    w = load_workload({"name": "f", "kind": "file", "path": str(path)}, PAPER, 0)
    with pytest.raises(InputError) as err:
        JobSet.build(w.trace, w.catalog, PAPER, source=w.source)
    assert err.value.field == "model" and "AlexNet" in str(err.value)
