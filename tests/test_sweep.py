"""The harness: every preset composes and builds; a smoke sweep lands in results.parquet and
MLflow exactly once per cell; a resumed sweep runs only the missing cells."""

import json

import pandas as pd
import pytest
from omegaconf import OmegaConf

from fairsim.experiment.compose import CONF_DIR, compose_config
from fairsim.experiment.single import build_cluster, build_policy
from fairsim.experiment.tracking import logged_cells
from fairsim.figures.sweep_summary import draw
from fairsim.sim.config import SimConfig


def presets(group):
    return sorted(p.stem for p in (CONF_DIR / group).glob("*.yaml"))


@pytest.mark.parametrize("name", presets("policy"))
def test_every_policy_preset_composes_and_builds(name):
    cfg = compose_config([f"policy={name}"])
    assert cfg.policy.name == name
    build_policy(cfg.policy)


# presets whose cluster a trace's node list defines: built from the sample written in its format
NODE_LISTS = {
    "openb": [
        "cluster.node_list=tests/data/openb_sample/openb_node_list_sample.csv",
        "cluster.gpu_map.G2=A100-80GB",
        "cluster.gpu_map.G3=H100-SXM",
    ],
    "pai2020": ["cluster.gpu_map.MISC=K80"],
}  # the shipped machine spec


@pytest.mark.parametrize("name", presets("cluster"))
def test_every_cluster_preset_builds(name):
    cluster = build_cluster(compose_config([f"cluster={name}", *NODE_LISTS.get(name, [])]))
    assert cluster.total_gpus > 0


@pytest.mark.parametrize("name", presets("sim"))
def test_every_sim_preset_builds(name):
    SimConfig.from_config(OmegaConf.to_container(compose_config([f"sim={name}"]).sim, resolve=True))


@pytest.mark.parametrize("name", presets("workload"))
def test_every_workload_preset_composes(name):
    cfg = compose_config([f"workload={name}"])
    assert cfg.workload.name == name and "kind" in cfg.workload


@pytest.mark.parametrize("name", presets("experiment"))
def test_every_experiment_preset_composes(name):
    cfg = compose_config([f"+experiment={name}"])
    assert cfg.sweep_name


def sweep(run_py, results, *extra):
    proc = run_py("-m", "+experiment=smoke", f"results_dir={results}", "num_jobs=20", *extra, timeout=600)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    return proc.stdout


@pytest.mark.slow
def test_smoke_sweep_then_resume_runs_only_missing_cells(tmp_path, run_py):
    out = sweep(run_py, tmp_path)
    sweep_dir = tmp_path / "sweeps" / "smoke"
    cells = sorted(p.parent.name for p in sweep_dir.glob("*/summary.json"))
    # cells are named by their overrides, sorted by key (num_jobs=20 is an override here too)
    assert cells == sorted(f"load={x},num_jobs=20,policy={p}" for p in ("fifo", "srtf", "ours") for x in (0.5, 0.8))
    table = pd.read_parquet(sweep_dir / "results.parquet")
    assert sorted(table["cell"]) == cells
    assert set(table["policy"]) == {"fifo", "srtf", "ours"}
    # the fluid fair-share T_id is the trace's, not the policy's: one value per job and load for all policies
    assert table["rho_fluid_mean"].notna().all()
    jobs = pd.read_parquet(sweep_dir / "jobs.parquet")  # each job carries its cell's identity: no join needed
    assert (jobs.groupby(["load", "job_id"])["t_id_fluid_s"].nunique() == 1).all()
    assert sorted(jobs.groupby(["policy", "load"], observed=True).size().index) == sorted(
        zip(table["policy"], table["load"])
    )
    assert logged_cells(tmp_path, "smoke") == cells
    assert out.count("cells done") == 6
    # one cell lost its summary (as if its worker was killed): only it runs again
    victim = sweep_dir / "load=0.8,num_jobs=20,policy=ours"
    before = json.loads((victim / "summary.json").read_text())
    (victim / "summary.json").unlink()
    out = sweep(run_py, tmp_path)
    assert out.count("skipped (complete)") == 5
    assert f"{victim.name}: " in out and f"{victim.name}: skipped" not in out
    after = json.loads((victim / "summary.json").read_text())
    assert after["avg_jct_s"] == before["avg_jct_s"]
    assert logged_cells(tmp_path, "smoke") == cells  # still exactly once each
    assert sorted(pd.read_parquet(sweep_dir / "results.parquet")["cell"]) == cells
    # ... and ends in a figure, byte-identical when redrawn
    pdf, png, csv = draw(sweep_dir)
    first = [p.read_bytes() for p in (pdf, png, csv)]
    assert [p.read_bytes() for p in draw(sweep_dir)] == first
    assert set(pd.read_csv(csv)["policy"]) == {"fifo", "srtf", "ours"}


def test_a_cell_the_grid_lists_twice_counts_once():
    """``seed=0,0`` and ``load=1.0,1.00`` (one value to Hydra) name one folder each: the sweep's
    count of cells, which its end compares with the cells that finished, has each once."""
    from omegaconf import OmegaConf

    from fairsim.experiment.sweep import count_cells, grid_cells

    def multirun(*task):
        return OmegaConf.create({"hydra": {"overrides": {"task": list(task)}, "sweeper": {"params": {}}}})

    assert grid_cells(multirun("seed=0,0", "load=1.0,1.00")) == ["load=1.0,seed=0"]
    assert count_cells(multirun("seed=0,1,0", "load=0.5,1.0")) == 4


def test_a_repeated_cell_this_run_computed_stays_computed(tmp_path):
    from fairsim.experiment.sweep import read_progress

    path = tmp_path / "progress"
    path.write_text(
        "seed=0\t1.500\tran\nseed=0\t0.000\tskipped\nseed=1\t0.000\tskipped\nseed=2\t2.0\tfailed\nseed=2\t3.0\tran\n"
    )
    assert read_progress(path) == {"seed=0": (1.5, "ran"), "seed=1": (0.0, "skipped"), "seed=2": (3.0, "ran")}
