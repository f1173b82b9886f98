"""The paper's experiment list and the reproduce command: the plan is consistent with the configs
and figure modules, commands are built right, and a tiny end-to-end run (a real fifo/FFT sweep
of 30-job traces through Hydra) draws its figure and writes REPORT.md."""

import importlib
import sys

import pandas as pd
import pytest
import yaml
from conftest import ROOT

from fairsim.errors import InputError
from fairsim.experiment.compose import CONF_DIR
from fairsim.paper import reproduce
from fairsim.paper.headlines import EVALUATORS

PLAN = reproduce.load_plan()


def test_plan_names_real_presets_modules_and_evaluators():
    presets = {p.stem for p in (CONF_DIR / "experiment").glob("*.yaml")}
    for role, spec in PLAN["sweeps"].items():
        assert spec["preset"] in presets, role
        assert set(PLAN["scales"]) >= {"small", "full"}
    for name, fig in PLAN["figures"].items():
        assert callable(importlib.import_module(fig["module"]).draw), name
    for claim in PLAN["headlines"]:
        assert claim["kind"] in EVALUATORS and claim["sweep"] in PLAN["sweeps"], claim["claim"]
    # every headline of PAPER.md sec. 4 (12 rows) has at least one entry
    assert len(PLAN["headlines"]) >= 12


def test_presets_sweep_what_the_figures_compare():
    testbed = yaml.safe_load((CONF_DIR / "experiment" / "paper_testbed.yaml").read_text())
    params = testbed["hydra"]["sweeper"]["params"]
    assert {"ours", "gavel", "tiresias", "allox", "pal", "themis"} <= set(params["policy"].split(","))
    assert params["workload"] == "trace1,trace2" and params["seed"] == "0,1,2"
    simulated = yaml.safe_load((CONF_DIR / "experiment" / "paper_simulated.yaml").read_text())
    assert simulated["hydra"]["sweeper"]["params"]["workload"] == ",".join(f"trace{i}" for i in range(3, 10))


def test_sweep_command_adds_the_scale_overrides_and_suffix():
    cmd = reproduce.sweep_command(PLAN, "simulated", "full", "res", ["hydra.launcher.n_jobs=1"])
    assert cmd[1:] == [
        str(ROOT / "run.py"),
        "-m",
        "+experiment=paper_simulated",
        "sweep_name=paper_simulated_full",
        "results_dir=res",
        "cluster=scale8",
        "num_jobs=20000",
        "seed=0,1,2",
        "hydra.launcher.n_jobs=1",
    ]
    small = reproduce.sweep_command(PLAN, "testbed", "small", "results", [])
    assert small[3:] == [
        "+experiment=paper_testbed",
        "sweep_name=paper_testbed",
        "results_dir=results",
        "seed=0,1,2,3,4",
    ]


def test_a_sweep_that_does_not_change_with_the_scale_is_one_sweep():
    # the testbed traces are already the paper's size: full scale reads (and completes) the small sweep
    plan = {
        "scales": {"small": {"suffix": ""}, "full": {"suffix": "_full"}},
        "sweeps": {
            "same": {"preset": "p", "small": ["seed=0,1"], "full": ["seed=0,1"]},
            "bigger": {"preset": "q", "small": [], "full": ["num_jobs=20000"]},
        },
    }
    assert reproduce.sweep_name(plan, "same", "full") == reproduce.sweep_name(plan, "same", "small") == "p"
    assert (
        reproduce.sweep_name(plan, "bigger", "full") == "q_full"
        and reproduce.sweep_name(plan, "bigger", "small") == "q"
    )
    assert reproduce.sweep_name(PLAN, "testbed", "full") == "paper_testbed"
    assert PLAN["scales"]["full"]["out"] == "paper_figs/full"


def test_needed_collects_sweeps_and_benches_of_the_chosen_figures():
    assert reproduce.needed(PLAN, ["fig7"]) == (["testbed"], [])
    assert reproduce.needed(PLAN, ["fig10", "fig7"]) == (["testbed", "ablation"], [])
    roles, benches = reproduce.needed(PLAN, ["fig13"])
    assert benches == ["solver"] and "profile_error" in roles


def test_missing_option_detects_config_keys():
    assert reproduce.missing_option("sim.profile_error") is None
    assert reproduce.missing_option(None) is None
    assert "sim.no_such_knob" in reproduce.missing_option("sim.no_such_knob")


def test_parse_bench_table():
    text = (
        "cvxpy is not installed\nFFT decision on 1,000 GPUs\n  jobs   ours_s  frac  gap_vs_LP\n"
        "   250    0.709     1   +0.0015%\n  1000    0.571     4   -\ngaps: (ours - other) / |other|\n"
    )
    table = reproduce.parse_bench_table(text)
    assert list(table.columns) == ["jobs", "ours_s", "frac", "gap_vs_LP"]
    assert table["jobs"].tolist() == [250.0, 1000.0] and table["ours_s"].tolist() == [0.709, 0.571]
    assert table["gap_vs_LP"].iloc[0] == pytest.approx(0.0015) and pd.isna(table["gap_vs_LP"].iloc[1])
    assert reproduce.parse_bench_table("no table here").empty


def test_bad_plan_and_bad_arguments_are_one_line_errors(tmp_path):
    plan = yaml.safe_load(yaml.safe_dump(PLAN))
    plan["figures"]["fig7"]["sweeps"] = ["nowhere"]
    path = tmp_path / "plan.yaml"
    path.write_text(yaml.safe_dump(plan))
    with pytest.raises(InputError, match="unknown sweep 'nowhere'"):
        reproduce.load_plan(path)
    assert reproduce.main(["--only", "fig99", "--draw-only"]) == 2
    assert reproduce.main(["--scale", "huge", "--draw-only"]) == 2


@pytest.mark.slow
def test_tiny_reproduce_end_to_end(tmp_path):
    """One real sweep (FFT and FIFO on trace 1 cut to 30 jobs, two seeds, cells run in-process)
    -> fig7 + REPORT.md; drawing again from the same results gives the same bytes."""
    plan = {
        "scales": {"small": {"suffix": ""}},
        "sweeps": {
            "testbed": {
                "preset": "paper_testbed",
                "small": [
                    "policy=ours,fifo",
                    "workload=trace1",
                    "seed=0,1",
                    "workload.num_jobs=30",
                    "hydra.launcher.n_jobs=1",
                ],
            }
        },
        "figures": {"fig7": {"module": "fairsim.paper.figures.fig7", "sweeps": ["testbed"], "what": "JCT ratios"}},
        "headlines": [
            {
                "claim": "avg JCT, FIFO / FFT",
                "paper": "-",
                "kind": "ratio",
                "sweep": "testbed",
                "metric": "avg_jct_s",
                "baselines": ["fifo"],
                "reduce": "pool",
            }
        ],
    }
    plan_path = tmp_path / "plan.yaml"
    plan_path.write_text(yaml.safe_dump(plan))
    common = ["--plan", str(plan_path), "--results-dir", str(tmp_path / "res")]
    assert reproduce.main([*common, "--out", str(tmp_path / "figs")]) == 0  # the sweep itself is a run.py subprocess
    cells = pd.read_parquet(tmp_path / "res" / "sweeps" / "paper_testbed" / "results.parquet")
    assert sorted(cells["policy"].unique()) == ["fifo", "ours"] and len(cells) == 4
    report = (tmp_path / "figs" / "REPORT.md").read_text()
    assert "| avg JCT, FIFO / FFT | - | " in report and "(n=2)" in report
    assert (tmp_path / "figs" / "fig7.pdf").is_file() and (tmp_path / "figs" / "fig7.png").is_file()
    assert reproduce.main([*common, "--draw-only", "--out", str(tmp_path / "again")]) == 0
    for name in ("fig7.pdf", "fig7.png", "REPORT.md", "data/fig7.csv"):
        assert (tmp_path / "figs" / name).read_bytes() == (tmp_path / "again" / name).read_bytes(), name
    assert "Every cell above is fresh" in report


@pytest.mark.slow
def test_a_rerun_with_nothing_changed_starts_no_sweep_and_draws_nothing(tmp_path, capsys):
    plan = {
        "scales": {"small": {"suffix": ""}},
        "sweeps": {
            "testbed": {
                "preset": "paper_testbed",
                "small": ["policy=fifo", "workload=trace1", "seed=0,1", "workload.num_jobs=20"],
            }
        },
        "figures": {"fig7": {"module": "fairsim.paper.figures.fig7", "sweeps": ["testbed"], "what": "JCT ratios"}},
        "headlines": [],
    }
    plan_path = tmp_path / "plan.yaml"
    plan_path.write_text(yaml.safe_dump(plan))
    common = ["--plan", str(plan_path), "--results-dir", str(tmp_path / "res"), "--out", str(tmp_path / "figs")]
    assert reproduce.main(common) == 0
    first = capsys.readouterr().out
    assert "not started" not in first and "not redrawn" not in first
    assert reproduce.main(common) == 0
    again = capsys.readouterr().out
    assert "[reproduce] sweep testbed: all 2 cells fresh" in again and "not started" in again
    assert "not redrawn" in again
    (tmp_path / "figs" / "fig7.png").unlink()  # an output gone: draw again
    assert reproduce.main(common) == 0
    assert "not redrawn" not in capsys.readouterr().out and (tmp_path / "figs" / "fig7.png").is_file()
    cell = next(p for p in (tmp_path / "res" / "sweeps" / "paper_testbed").iterdir() if p.is_dir())
    (cell / "provenance.json").unlink()  # a cell made before provenance: the sweep runs and recomputes it
    assert reproduce.main(common) == 0
    out = capsys.readouterr().out
    assert "not started" not in out and "not redrawn" not in out


def test_sweep_progress_bar_passes_the_sweep_output_through(capfd):
    script = (
        "import sys\n"
        "for i in range(1, 4): print(f'[sweep s] cell{i}: 0.1 s | {i}/3 cells done, {3 - i} left, 0.1 s/cell')\n"
        "sys.exit(3)\n"
    )
    code = reproduce.run_sweep([sys.executable, "-c", script], "testbed", bar=True)
    out, err = capfd.readouterr()
    assert code == 3
    assert [line for line in out.splitlines() if line.startswith("[sweep s]")] == [
        f"[sweep s] cell{i}: 0.1 s | {i}/3 cells done, {3 - i} left, 0.1 s/cell" for i in (1, 2, 3)
    ]
    assert "sweep testbed" in err and "3/3" in err  # the bar, on stderr


def test_machine_dependent_timings_stay_out_of_the_committed_figures():
    from fairsim.paper.figures.fig13 import MACHINE_DIR

    ignored = (ROOT / ".gitignore").read_text().splitlines()
    assert f"paper_figs/{MACHINE_DIR}/" in ignored  # fig13 draws its timings there (tests/test_figures.py)


def test_left_out_names_the_optional_sections_not_drawn_and_their_commands():
    line = reproduce.left_out(PLAN, {}, "small")
    for name, spec in PLAN["figures"].items():
        if spec.get("optional"):
            assert f"'{spec['section']}' (needs make {spec['make']}" in line, name
    assert line.startswith(
        "[reproduce] REPORT.md lacks 'Which claims hold where' (needs make reproduce-load, about 20 min), "
    )
    assert line.count(" and ") == 1 and line.endswith(")")
    assert "SCALE=full" in reproduce.left_out(PLAN, {}, "full")
    assert reproduce.left_out(PLAN, {f: "" for f in PLAN["figures"]}, "small") is None


def test_reproduce_ends_naming_an_optional_section_whose_sweep_is_absent(tmp_path, capsys):
    plan = {
        "scales": {"small": {"suffix": ""}},
        "sweeps": {"load": {"preset": "paper_load", "small": []}},
        "figures": {
            "fig_load": {
                "module": "fairsim.paper.figures.fig_load",
                "sweeps": ["load"],
                "optional": True,
                "section": "Which claims hold where",
                "make": "reproduce-load",
                "time": {"small": "about 20 min"},
                "what": "load",
            }
        },
        "headlines": [],
    }
    plan_path = tmp_path / "plan.yaml"
    plan_path.write_text(yaml.safe_dump(plan))
    assert (
        reproduce.main(
            [
                "--plan",
                str(plan_path),
                "--results-dir",
                str(tmp_path / "res"),
                "--out",
                str(tmp_path / "figs"),
                "--draw-only",
            ]
        )
        == 0
    )
    last = capsys.readouterr().out.splitlines()[-1]
    assert last == "[reproduce] REPORT.md lacks 'Which claims hold where' (needs make reproduce-load, about 20 min)"
    assert "Which claims hold where" not in (tmp_path / "figs" / "REPORT.md").read_text()
