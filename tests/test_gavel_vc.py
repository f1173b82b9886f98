"""Gavel's per-VC Philly traces: every shipped file reads, the (vc, seed) resolver names what
exists, the 7-field layout parses like the 10-field one, and the job log recovers durations."""

import glob
import re
import tomllib
from pathlib import Path

import numpy as np
import pytest
from omegaconf import OmegaConf

from fairsim.cluster import ClusterSpec
from fairsim.errors import InputError
from fairsim.experiment.compose import preset as compose_preset
from fairsim.workload.gavel_trace import read_gavel_trace, shipped_trace
from fairsim.workload.gavel_vc import (
    msr_seeds,
    msr_trace,
    msr_vcs,
    read_msr_log,
    reference_throughputs,
    shipped_msr_root,
    vc_of,
)
from fairsim.workload.jobs import JobSet
from fairsim.workload.loader import load_workload
from fairsim.workload.table_catalog import gavel_catalog

ROOT = Path(__file__).resolve().parents[1]
GAVEL = ClusterSpec.from_config({"name": "gavel", "counts": {"v100": 36, "p100": 36, "k80": 36}})
SHIPPED = sorted(shipped_msr_root().glob("seed=*/*.trace"))
CMD = "cd %s/x && python3 main.py"


def msr_line(job_type, steps, arrival, gpus):
    return "\t".join([job_type, CMD, "--num_steps", "1", str(steps), f"{arrival:.6f}", str(gpus)])


def test_shipped_folder_has_seed_0_of_every_vc():
    assert msr_seeds() == [0]
    vcs = msr_vcs(0)
    assert len(vcs) == len(SHIPPED) and len(set(vcs)) == len(vcs)
    assert all(re.fullmatch(r"[0-9a-f]{6}", vc) for vc in vcs)  # Philly's hashed VC ids


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_every_shipped_file_reads(path):
    lines = [line for line in path.read_text().splitlines() if line.strip()]
    df = read_gavel_trace(path)
    assert len(df) == len(lines)
    # the file is in arrival order: sorting by arrival keeps the line order
    assert df["job_id"].tolist() == list(range(len(lines)))
    assert np.all(np.diff(df["arrival_s"].to_numpy()) >= 0)
    assert set(df["model"]) <= set(gavel_catalog().models)
    assert (df["weight"] == 1.0).all() and (df["workers"] >= 1).all()


def test_shipped_files_are_package_data():
    globs = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]["fairsim.data"]
    data = Path(str(shipped_msr_root())).parents[2]  # fairsim/data
    packaged = {Path(p) for g in globs for p in glob.glob(str(data / g)) if Path(p).is_file()}
    assert SHIPPED and set(SHIPPED) <= packaged
    assert data / "gavel" / "msr_v100_throughputs.csv" in packaged


def test_resolver_finds_each_shipped_vc_and_its_name_is_the_vc():
    for vc in msr_vcs():
        path = msr_trace(vc, 0)
        assert path.is_file() and vc_of(path) == vc
        assert shipped_trace(f"msr/seed=0/{vc}") == path


def test_resolver_refuses_an_unknown_vc_listing_the_known_ones():
    with pytest.raises(InputError) as err:
        msr_trace("philly", 0)
    assert err.value.field == "vc" and "'philly'" in err.value.problem
    assert all(vc in err.value.problem for vc in msr_vcs())


def test_resolver_refuses_an_unshipped_seed_and_points_to_a_gavel_folder():
    with pytest.raises(InputError) as err:
        msr_trace(msr_vcs()[0], 3)
    assert err.value.field == "trace_seed" and "one of 0" in err.value.problem and "root" in err.value.problem
    with pytest.raises(InputError) as err:
        msr_trace(msr_vcs()[0], True)  # a YAML true is not seed 1
    assert err.value.field == "trace_seed"


def test_resolver_reads_a_user_folder(tmp_path):
    for seed in (1, 4):
        (tmp_path / f"seed={seed}").mkdir()
        (tmp_path / f"seed={seed}" / "abc123.trace").write_text(msr_line("A3C", 100, 0, 1) + "\n")
    assert msr_seeds(tmp_path) == [1, 4] and msr_vcs(4, tmp_path) == ["abc123"]
    assert msr_trace("abc123", 4, root=tmp_path) == tmp_path / "seed=4" / "abc123.trace"
    with pytest.raises(InputError) as err:
        msr_trace("abc123", 0, root=tmp_path)
    assert err.value.field == "trace_seed" and "1, 4" in err.value.problem
    with pytest.raises(InputError) as err:
        msr_trace("abc123", 0, root=tmp_path / "seed=1")
    assert err.value.field == "root"


def test_shipped_names_do_not_leave_the_traces_folder():
    assert shipped_trace("msr/../small_test") is None
    assert shipped_trace(str(msr_trace(msr_vcs()[0]))) is None  # an absolute path is not a name
    assert shipped_trace("msr/seed=9/" + msr_vcs()[0]) is None


def test_seven_field_layout_maps_like_the_ten_field_one(tmp_path):
    path = tmp_path / "vc1.trace"
    path.write_text(msr_line("ResNet-18 (batch size 32)", 500, 30, 4) + "\n\n" + msr_line("A3C", 80, 10, 1) + "\n")
    df = read_gavel_trace(path)
    assert df["job_id"].tolist() == [1, 0]  # sorted by arrival
    first = df[df["job_id"] == 0].iloc[0]
    assert (first["model"], first["work"], first["workers"], first["weight"], first["arrival_s"]) == (
        "ResNet-18 (batch size 32)",
        500.0,
        4,
        1.0,
        30.0,
    )


@pytest.mark.parametrize(
    "second,field,where",
    [
        ("\t".join(["A3C", CMD, "--num_steps", "1", "80", "1", "1", "-1", "10", "1"]), "fields", "first line"),
        (msr_line("A3C", 80, 10, 0), "scale_factor", "integer >= 1"),
        (msr_line("A3C", 0, 10, 1), "total_steps", "integer > 0"),
        (msr_line("A3C", 80, -5, 1), "arrival_time", ">= 0"),
    ],
)
def test_bad_seven_field_line_names_file_line_and_field(tmp_path, second, field, where):
    path = tmp_path / "bad.trace"
    path.write_text(msr_line("A3C", 80, 0, 1) + "\n" + second + "\n")
    with pytest.raises(InputError) as err:
        read_gavel_trace(path)
    assert err.value.field == field and err.value.source == f"{path}:2" and where in err.value.problem


def test_job_log_recovers_the_duration_behind_the_steps(tmp_path):
    tput = reference_throughputs()
    assert set(tput.index) == set(gavel_catalog().models) and (tput > 0).all()
    fast, slow = tput.idxmax(), tput.idxmin()
    duration = 7200.0
    path = tmp_path / "ab12cd.trace"
    path.write_text(
        msr_line(fast, int(duration * tput[fast]), 0, 8)
        + "\n"
        + msr_line(slow, int(duration * tput[slow]), 60, 1)
        + "\n"
    )
    read = read_msr_log(path)
    log = read.log
    assert log["tenant"].tolist() == ["ab12cd", "ab12cd"] and log["gpus"].tolist() == [8, 1]
    assert log["model"].tolist() == [fast, slow] and (log["gpu_type"] == "V100").all()
    # whole steps: the shortfall is under one step's time
    assert np.all(log["duration_s"] <= duration) and np.all(
        duration - log["duration_s"] < 1.0 / tput[[fast, slow]].to_numpy()
    )
    assert read.meta["rows"] == 2 and read.meta["span_s"] == 60.0


def test_job_log_of_each_shipped_file_keeps_its_jobs():
    for path in SHIPPED:
        log = read_msr_log(path).log
        trace = read_gavel_trace(path)
        assert len(log) == len(trace) and (log["tenant"] == vc_of(path)).all()
        assert (log["duration_s"] > 0).all() and (log["gpus"].to_numpy() == trace["workers"].to_numpy()).all()


def test_job_log_refuses_a_type_without_a_reference_throughput(tmp_path):
    path = tmp_path / "x.trace"
    path.write_text(msr_line("GPT-9", 10, 0, 1) + "\n")
    with pytest.raises(InputError) as err:
        read_msr_log(path)
    assert err.value.field == "job_type" and "GPT-9" in err.value.problem


def preset_cfg(**over):
    cfg = OmegaConf.to_container(OmegaConf.create(compose_preset("workload", "gavel_philly")), resolve=True)
    return {**cfg, **over}


def test_preset_runs_each_job_for_its_philly_duration_on_a_v100():
    workload = load_workload(preset_cfg(), GAVEL, 0)
    log = read_msr_log(msr_trace("ed69ec")).log
    cat = workload.catalog
    slot = [cat.worker_counts.index(w) for w in workload.trace["workers"]]
    v100 = cat.packed[[cat.models.index(m) for m in workload.trace["model"]], cat.gpu_types.index("V100"), slot]
    # ed69ec's jobs all fit the catalog: every row kept, each job's work is its duration at the V100's speed
    assert workload.report["log_jobs"] == len(log) == len(workload.trace)
    order = np.argsort(log["submit_s"].to_numpy(), kind="stable")
    assert np.allclose(workload.trace["work"].to_numpy() / v100, log["duration_s"].to_numpy()[order], rtol=1e-12)
    assert (workload.trace["tenant"] == "ed69ec").all()
    assert JobSet.build(workload.trace, workload.catalog, GAVEL).feasible.any(axis=1).all()


def test_several_vcs_share_one_log_each_job_keeping_its_vc():
    workload = load_workload(preset_cfg(vc=["ed69ec", "795a4c", "925e2b"]), GAVEL, 0)
    rows = sum(len(read_msr_log(msr_trace(v)).log) for v in ("ed69ec", "795a4c", "925e2b"))
    assert workload.report["log_rows"] == rows
    assert set(workload.trace["tenant"]) <= {"ed69ec", "795a4c", "925e2b"} and workload.trace["tenant"].nunique() >= 2
    everyone = load_workload(preset_cfg(vc="all"), GAVEL, 0)
    assert everyone.report["log_rows"] == sum(len(read_gavel_trace(p)) for p in SHIPPED if "seed=0" in str(p))
    with pytest.raises(InputError, match="vc: names the trace like path: give one of them, not both"):
        load_workload(preset_cfg(path=str(SHIPPED[0])), GAVEL, 0)


def test_the_step_counts_as_gavel_wrote_them_still_read_as_a_gavel_trace():
    cfg = {"name": "steps", "kind": "gavel_trace", "catalog": "gavel", "path": "msr/seed=0/ed69ec"}
    workload = load_workload(cfg, GAVEL, 0)
    assert len(workload.trace) == len(read_gavel_trace(shipped_trace("msr/seed=0/ed69ec")))
