"""GPU types of the user's own: in a cluster preset (figures, or like a known type with a speed)
or in a gpu_specs file of theirs, with no package file edited; the rule a type falls back to is
said in the summary; a bad definition ends in one line."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import yaml

from fairsim.cluster import ClusterSpec, gpu_specs
from fairsim.errors import InputError
from fairsim.experiment import provenance
from fairsim.experiment.compose import compose_config
from fairsim.experiment.run_folder import PROVENANCE
from fairsim.experiment.single import run_config, write_results
from fairsim.workload.catalog import with_own_types
from fairsim.workload.formats.clusters import cluster_mapping
from fairsim.workload.loader import load_workload
from fairsim.workload.perf_model import paper_catalog
from fairsim.workload.table_catalog import gavel_catalog

H100 = {"memory_gb": 80, "fp32_tflops": 67, "fp16_tflops": 989, "mem_bw_gb_s": 3350}
SMALL = ["num_jobs=20", "policy=fifo", "track=false"]


def user_folder(tmp_path: Path, name: str, preset: dict) -> str:
    """A config folder of the user's own holding cluster/<name>.yaml; the override that adds it."""
    (tmp_path / "myconf" / "cluster").mkdir(parents=True, exist_ok=True)
    (tmp_path / "myconf" / "cluster" / f"{name}.yaml").write_text(yaml.safe_dump(preset))
    return f"hydra.searchpath=[file://{tmp_path / 'myconf'}]"


def test_a_type_defined_in_a_preset_of_ones_own_runs_and_says_the_rule_it_fell_back_to(tmp_path):
    folder = user_folder(
        tmp_path,
        "mine",
        {"name": "mine", "gpus_per_host": 8, "counts": {"A100-80GB": 16, "H100": 0}, "gpu_types": {"H100": H100}},
    )
    out = run_config(compose_config([folder, "cluster=mine", "cluster.counts.H100=8", *SMALL]))
    assert out.jobs["gpu_s_H100"].sum() > 0
    assert out.summary["warning_gpu_types"] == (
        "H100 has no per-model speed (like and speed) or efficiency: modelled from its "
        "figures at catalog paper's default efficiency (compute 0.35, memory 0.7)"
    )
    # no package file was read but the shipped ones, unchanged: the committed cells' inputs are as they were
    assert all(name.startswith("fairsim/data/") for name in out.provenance["inputs"])
    shipped = Path(provenance.input_path("fairsim/data/gpu_specs.csv"))
    assert out.provenance["inputs"]["fairsim/data/gpu_specs.csv"] == provenance.file_digest(shipped)
    own = run_config(
        compose_config(
            [
                folder,
                "cluster=mine",
                "cluster.counts.H100=8",
                *SMALL,
                "+cluster.gpu_types.H100.efficiency={compute: 0.4, memory: 0.8}",
            ]
        )
    )
    assert "warning_gpu_types" not in own.summary  # its own efficiency: no rule fell back


def test_a_known_types_throughputs_times_a_speed_in_the_paper_and_a_measured_catalog():
    cluster = ClusterSpec.from_config(
        {
            "counts": {"A40": 4, "L40S": 4, "fast": 4},
            "gpu_types": {
                "L40S": {"like": "A40", "speed": {"default": 1.5, "ResNet50": 2.0}},
                "fast": {"like": "L40S", "speed": 2},
            },
        }
    )  # like a type defined before it
    assert cluster.specs[1].memory_gb == gpu_specs()["a40"].memory_gb  # its like's figures, unless given
    cat = with_own_types(paper_catalog(cluster), cluster)
    a40, l40s, fast = (cat.gpu_types.index(t) for t in ("A40", "L40S", "fast"))
    resnet = cat.models.index("ResNet50")
    ratio = cat.packed[:, l40s] / cat.packed[:, a40]
    finite = np.isfinite(ratio)
    assert np.allclose(ratio[resnet][finite[resnet]], 2.0)
    assert np.allclose(np.delete(ratio, resnet, axis=0)[np.delete(finite, resnet, axis=0)], 1.5)
    assert np.allclose(np.nan_to_num(cat.packed[:, fast]), np.nan_to_num(2 * cat.packed[:, l40s])) and not cat.notes
    gavel = ClusterSpec.from_config(
        {
            "counts": {"v100": 4, "v100x": 4, "k80x": 4},
            "gpu_types": {"v100x": {"like": "V100", "speed": 3}, "k80x": {"like": "K80"}},
        }
    )
    cat = with_own_types(gavel_catalog(), gavel)
    v100, x, k80, k80x = (cat.gpu_types.index(t) for t in ("V100", "v100x", "K80", "k80x"))
    assert np.allclose(np.nan_to_num(cat.packed[:, x]), np.nan_to_num(3 * cat.packed[:, v100]))
    assert np.array_equal(np.nan_to_num(cat.packed[:, k80x]), np.nan_to_num(cat.packed[:, k80]))
    assert cat.notes == (
        "k80x: no per-model speed, and catalog gavel has no figures for it: the throughputs of K80 (its like) "
        "taken unchanged",
    )


def test_a_type_like_a_known_one_without_a_speed_is_modelled_at_its_likes_efficiency():
    cluster = ClusterSpec.from_config(
        {"counts": {"H100-NVL": 8}, "gpu_types": {"H100-NVL": {"like": "H100-SXM", "memory_gb": 94}}}
    )
    w = load_workload({"name": "w", "kind": "philly", "num_jobs": 20}, cluster, 0)
    assert w.report["warning_gpu_types"].endswith("at the efficiency of H100-SXM (its like)")
    assert cluster.memory_gb.tolist() == [94.0]


def test_a_gpu_specs_file_of_ones_own_is_an_input_of_exactly_the_runs_that_read_it(tmp_path):
    datasheet = (Path(provenance.input_path("fairsim/data/gpu_specs.csv"))).read_text().splitlines()
    specs = tmp_path / "my_gpus.csv"  # a copy of the shipped table with a row added
    specs.write_text("\n".join([*datasheet, "H20,96,44,148,4000,2024"]) + "\n")
    folder = user_folder(tmp_path, "h20", {"name": "h20", "counts": {"H20": 8, "V100": 8}, "gpu_specs": str(specs)})
    cells = {}
    for name, overrides in (("h20", [folder, "cluster=h20"]), ("paper", [])):
        cfg = compose_config([*overrides, *SMALL])
        cells[name] = write_results(run_config(cfg), tmp_path / name, cfg)
    assert str(specs) in json.loads((cells["h20"] / PROVENANCE).read_text())["inputs"]
    specs.write_text(specs.read_text().replace("H20,96,44,148,4000", "H20,96,44,148,4100"))
    assert provenance.why_folder_stale(cells["h20"]) == f"its input file {specs} changed since this cell ran"
    assert provenance.why_folder_stale(cells["paper"]) is None


def refused(cfg: dict) -> InputError:
    with pytest.raises(InputError) as err:
        ClusterSpec.from_config(cluster_mapping(cfg, "cluster mine"), "cluster mine")
    assert "\n" not in str(err.value)
    return err.value


@pytest.mark.parametrize(
    "types, field, said",
    [
        (
            {"v100": H100},
            "gpu_types.v100",
            "V100 is a known type already (fairsim/data/gpu_specs.csv): give yours another name",
        ),
        (
            {"H100": {"memory_gb": 80}},
            "gpu_types.H100.fp32_tflops",
            "is required (or like: <a known type> to take its figures)",
        ),
        ({"H100": {**H100, "speed": 2}}, "gpu_types.H100.speed", "needs like: <a known type>"),
        ({"H100": {"like": "H200"}}, "gpu_types.H100.like", "unknown GPU type 'H200'"),
        ({"H100": {**H100, "memory_gb": -80}}, "gpu_types.H100.memory_gb", "must be a number > 0, got -80"),
        (
            {"H100": {"like": "A40", "speed": {"default": 0}}},
            "gpu_types.H100.speed.default",
            "must be a throughput ratio > 0, got 0",
        ),
        ({"H100": {**H100, "efficency": {"compute": 0.4}}}, "gpu_types.H100.efficency", "unknown key of a GPU type"),
        (
            {"H100": {**H100, "efficiency": {"compute": 1.5, "memory": 0.8}}},
            "gpu_types.H100.efficiency.compute",
            "must be a number > 0 and <= 1",
        ),
    ],
)
def test_a_bad_type_is_refused_naming_its_key(types, field, said):
    err = refused({"counts": {"T4": 4}, "gpu_types": types})
    assert err.field == field and said in err.problem


def test_an_unknown_type_says_how_to_add_one_and_a_misspelt_key_is_refused():
    err = refused({"counts": {"H100": 8}})
    assert err.field == "counts.H100" and "closest: H100-SXM" in err.problem
    assert "gpu_types.<name>: {memory_gb, fp32_tflops, fp16_tflops, mem_bw_gb_s}" in err.problem
    assert "gpu_specs: <a CSV like fairsim/data/gpu_specs.csv>" in err.problem
    assert refused({"counts": {"T4": 4}, "gpu_type": {"H100": H100}}).field == "gpu_type"


def test_a_gpu_specs_row_is_checked_naming_its_line(tmp_path):
    changed = tmp_path / "changed.csv"
    changed.write_text("gpu,memory_gb,fp32_tflops,fp16_tensor_tflops_dense,mem_bw_gb_s\nV100,32,15.7,125,900\n")
    err = refused({"counts": {"V100": 4}, "gpu_specs": str(changed)})
    assert (
        err.source == f"cluster mine: {changed}:2"
        and "V100 is a datasheet type (fairsim/data/gpu_specs.csv) with other figures" in err.problem
    )
    bad = tmp_path / "bad.csv"
    bad.write_text("gpu,memory_gb,fp32_tflops,mem_bw_gb_s\nH20,96,lots,4000\n")
    err = refused({"counts": {"H20": 4}, "gpu_specs": str(bad)})
    assert (err.source, err.field) == (
        f"cluster mine: {bad}:2",
        "fp32_tflops",
    ) and err.problem == "must be a number > 0, got 'lots'"
    twice = tmp_path / "twice.csv"
    twice.write_text("gpu,memory_gb,fp32_tflops,mem_bw_gb_s\nH20,96,44,4000\n")
    err = refused({"counts": {"H20": 4}, "gpu_specs": str(twice), "gpu_types": {"h20": H100}})
    assert err.field == "gpu_types.h20" and "defined in" in err.problem


def test_a_catalog_without_figures_for_a_type_says_how_to_give_them():
    cluster = ClusterSpec.from_config({"counts": {"v100": 4, "H100": 4}, "gpu_types": {"H100": H100}})
    with pytest.raises(InputError, match=r"no throughputs for GPU type H100, .*give it like: <one of these> and speed"):
        with_own_types(gavel_catalog(), cluster).type_columns(cluster)
