"""What a sweep cell is: its identity (the composed config, spelled any way), its folder name,
which folders are cells, one row per identity, the columns that tell cells apart, and a summary
figure that never pools distinct settings as seeds. In process, on tiny runs (about 10 s)."""

from __future__ import annotations

import shutil

import pandas as pd
import pytest

from fairsim.errors import InputError
from fairsim.experiment.collect import IDENTITY_COLUMNS, collect, distinct_settings, survey
from fairsim.experiment.compose import compose_config
from fairsim.experiment.run_folder import (
    MAX_NAME_BYTES,
    cell_folders,
    cell_name,
    identity_digest,
    identity_of_text,
    index_sweep,
)
from fairsim.experiment.single import run_config, write_results
from fairsim.experiment.sweep import config_text
from fairsim.figures import sweep_summary

TINY = ["policy=fifo", "num_jobs=10"]


def digest(overrides: list[str]) -> str:
    return identity_digest(identity_of_text(config_text(compose_config(overrides))))


def write_cell(folder, overrides: list[str]):
    cfg = compose_config(overrides)
    return write_results(run_config(cfg), folder, cfg)


# ---- identity -----------------------------------------------------------------------------------


def test_spellings_of_one_config_are_one_identity():
    default = digest(TINY)
    assert digest([*TINY, "load=1"]) == digest([*TINY, "load=1.0"]) == default  # the default is load: 1.0
    assert digest(["num_jobs=10", "policy=fifo"]) == default  # order
    assert digest([*TINY, "policy.backfill=true"]) == default  # fifo's default, spelled out
    assert digest([*TINY, "sweep_name=x", "results_dir=/elsewhere", "track=false", "reuse_stale=true"]) == default
    assert digest([*TINY, "load=0.5"]) != default
    assert digest([*TINY, "policy.backfill=false"]) != default
    assert digest([*TINY, "+tag=a"]) != default  # a key of the config, even one no code reads


def test_spellings_of_one_config_give_the_same_run():
    """What makes them one cell: load=1 (an int) runs exactly as the default float 1.0."""
    tables = [run_config(compose_config(o)).jobs for o in (TINY, [*TINY, "load=1"])]
    pd.testing.assert_frame_equal(*tables)


# ---- folder names -------------------------------------------------------------------------------


def test_cell_names_keep_the_overrides_as_written_and_fit_the_file_system():
    for name in (
        "policy=allox,seed=0,workload=trace1",
        "cluster=scale8,num_jobs=20000,policy=ours,seed=0,workload=trace3",
        "+fft_variant=tau_from_now,policy=ours,seed=0,workload=trace1",
    ):
        assert cell_name(name) == name  # the committed cells' names do not move
    assert cell_name("") == "default"
    assert cell_name("workload.path=data/t.csv") == "workload.path=data%2Ft.csv"  # one folder, not three
    long = ",".join(f"+setting_with_a_long_name_{i}=value_{i:03d}" for i in range(20))
    short = cell_name(long)
    assert len(short.encode()) <= MAX_NAME_BYTES and short.startswith("+setting_with_a_long_name_0=value_000,")
    assert cell_name(long) == short and cell_name(long.replace("019", "020")) != short  # a digest of the whole
    wide = "workload.name=" + "\u00e9" * 200  # cut on a character, never inside one
    assert len(cell_name(wide).encode()) <= MAX_NAME_BYTES and cell_name(wide).startswith("workload.name=\u00e9")


def test_a_sweeps_figures_and_other_folders_are_not_cells(tmp_path):
    write_cell(tmp_path / "policy=fifo", TINY)
    (tmp_path / "figures" / "data").mkdir(parents=True)
    (tmp_path / "figures" / "summary.png").write_bytes(b"png")
    (tmp_path / "notes").mkdir()
    (tmp_path / "cut_off" / ".hydra").mkdir(parents=True)  # a cell Hydra started, killed before it wrote anything
    assert [p.name for p in cell_folders(tmp_path)] == ["cut_off", "policy=fifo"]
    complete, incomplete, duplicates = survey(tmp_path)
    assert [p.name for p in complete] == ["policy=fifo"] and set(incomplete) == {"cut_off"} and not duplicates


# ---- one row per identity -----------------------------------------------------------------------


def test_folders_made_before_with_one_config_collect_once_and_say_which(tmp_path):
    first = write_cell(tmp_path / "load=1,num_jobs=10,policy=fifo", [*TINY, "load=1"])
    shutil.copytree(first, tmp_path / "load=1.0,num_jobs=10,policy=fifo")
    shutil.copytree(first, tmp_path / "num_jobs=10,policy=fifo")
    write_cell(tmp_path / "load=0.5,num_jobs=10,policy=fifo", [*TINY, "load=0.5"])
    complete, _, duplicates = survey(tmp_path)
    assert [p.name for p in complete] == ["load=0.5,num_jobs=10,policy=fifo", "load=1,num_jobs=10,policy=fifo"]
    assert duplicates == {
        name: "the same config as load=1,num_jobs=10,policy=fifo (one row per config; this folder is not collected)"
        for name in ("load=1.0,num_jobs=10,policy=fifo", "num_jobs=10,policy=fifo")
    }
    index_sweep(tmp_path)  # the sweep's index (its runner's choice) decides which one stays
    (tmp_path / ".cells" / digest(TINY)).write_text("num_jobs=10,policy=fifo\n")
    assert sorted(survey(tmp_path)[2]) == ["load=1,num_jobs=10,policy=fifo", "load=1.0,num_jobs=10,policy=fifo"]
    table, _ = collect(tmp_path)
    assert sorted(table["cell"]) == ["load=0.5,num_jobs=10,policy=fifo", "num_jobs=10,policy=fifo"]


# ---- columns that tell cells apart --------------------------------------------------------------


@pytest.fixture(scope="module")
def option_sweep(tmp_path_factory):
    """A sweep over a policy option, and over policies: fifo backfill=true/false and tiresias_las
    (which has no such option), seeds 0-1."""
    sweep = tmp_path_factory.mktemp("option")
    for seed in (0, 1):
        for backfill in ("true", "false"):
            write_cell(
                sweep / f"policy.backfill={backfill},policy=fifo,seed={seed}",
                [*TINY, f"policy.backfill={backfill}", f"seed={seed}"],
            )
        write_cell(sweep / f"policy=tiresias_las,seed={seed}", ["policy=tiresias_las", "num_jobs=10", f"seed={seed}"])
    collect(sweep)
    return sweep


def test_results_have_a_column_per_varying_key_and_jobs_their_cells_identity(option_sweep):
    table = pd.read_parquet(option_sweep / "results.parquet")
    assert table.set_index("cell")["policy.backfill"].to_dict() == {
        "policy.backfill=true,policy=fifo,seed=0": True,
        "policy.backfill=false,policy=fifo,seed=0": False,
        "policy.backfill=true,policy=fifo,seed=1": True,
        "policy.backfill=false,policy=fifo,seed=1": False,
        "policy=tiresias_las,seed=0": None,
        "policy=tiresias_las,seed=1": None,
    }
    assert (
        "policy._target_" in table and "policy.name" not in table and "config.num_jobs" not in table
    )  # num_jobs is fixed
    jobs = pd.read_parquet(option_sweep / "jobs.parquet")
    assert list(jobs.columns[: len(IDENTITY_COLUMNS) - 1]) == [c for c in IDENTITY_COLUMNS if c != "variant"]
    assert "policy.backfill" in jobs and "policy._target_" not in jobs  # the policy column tells that one already
    assert isinstance(jobs["cell"].dtype, pd.CategoricalDtype) and isinstance(jobs["policy"].dtype, pd.CategoricalDtype)
    counts = jobs.groupby(["policy", "policy.backfill", "seed"], observed=True, dropna=False).size()
    assert len(counts) == 6 and set(counts) == {10}  # every cell's ten jobs, told apart without a join
    for row in table.itertuples():
        own = pd.read_parquet(option_sweep / row.cell / "jobs.parquet")
        mine = jobs[jobs["cell"] == row.cell].drop(columns=[c for c in jobs if c not in own]).reset_index(drop=True)
        pd.testing.assert_frame_equal(mine, own)
    tenants = pd.read_parquet(option_sweep / "tenants.parquet")
    assert {"cell", "policy", "seed", "policy.backfill"} <= set(tenants.columns)


def test_a_per_job_column_named_like_an_identity_column_is_refused(tmp_path):
    """The sweep's tables put the cell's labels beside each job's own columns: a job column of the
    same name (a metric someone adds) must fail the collection, not be overwritten."""
    cell = write_cell(tmp_path / "policy=fifo", TINY)
    jobs = pd.read_parquet(cell / "jobs.parquet")
    jobs.assign(seed=7).to_parquet(cell / "jobs.parquet", index=False)
    with pytest.raises(ValueError, match="jobs.parquet of .* has columns named like a cell's identity: seed"):
        collect(tmp_path)


def test_distinct_settings_are_the_keys_that_split_cells_of_one_preset():
    base = {
        "policy": ["fifo", "fifo", "srtf", "srtf"],
        "load": [1.0] * 4,
        "seed": [0, 1, 0, 1],
        "policy.backfill": [True, True, None, None],
        "workload": ["philly"] * 4,
    }
    assert distinct_settings(pd.DataFrame(base)) == []  # an option that varies only with the policy
    tied = {**base, "workload.seed": [0, 1, 0, 1]}  # a workload key interpolating ${seed}
    assert distinct_settings(pd.DataFrame(tied)) == []
    split = {**base, "policy": ["fifo"] * 4, "policy.backfill": [True, False, True, False], "seed": [0, 0, 1, 1]}
    assert distinct_settings(pd.DataFrame(split)) == ["policy.backfill"]
    both = pd.concat(
        [pd.DataFrame(split).assign(workload=w, **{"workload.span_h": h}) for w, h in (("trace1", 48), ("trace2", 24))]
    )
    assert distinct_settings(both) == [
        "workload",
        "policy.backfill",
    ]  # the preset first; a key that follows it adds nothing
    assert distinct_settings(both, ("policy", "workload", "seed")) == ["policy.backfill"]


# ---- the summary figure -------------------------------------------------------------------------


def test_the_summary_draws_a_series_per_setting_with_n_per_point(option_sweep):
    sweep_summary.draw(option_sweep)
    data = pd.read_csv(option_sweep / "figures" / "data" / "summary.csv")
    jct = data[data["metric"] == "avg_jct_h"]
    assert sorted(zip(jct["policy"], jct["policy.backfill"].astype(str))) == [
        ("fifo", "False"),
        ("fifo", "True"),
        ("tiresias_las", "none"),
    ]
    assert set(jct["n"]) == {2}  # the two seeds of each, never the four of fifo pooled


def test_the_summary_refuses_more_series_than_a_figure_shows(tmp_path, capsys):
    n = sweep_summary.MAX_SERIES + 1
    cells = pd.DataFrame(
        {
            "cell": [f"c{i}" for i in range(n)],
            "policy": ["fifo"] * n,
            "load": [1.0] * n,
            "seed": [0] * n,
            "policy.starve_h": [float(i) for i in range(n)],
            "avg_jct_s": [1.0] * n,
            "rho_fluid_mean": [1.0] * n,
        }
    )
    cells.to_parquet(tmp_path / "results.parquet", index=False)
    with pytest.raises(InputError, match=r"settings: policy.starve_h vary beyond policy, load and seed: 13 series"):
        sweep_summary.draw(tmp_path)
    assert sweep_summary.main([str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(f"error: {tmp_path / 'results.parquet'}: settings: ")
    assert not (tmp_path / "figures").exists()
