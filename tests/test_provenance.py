"""Provenance: every run records the code, inputs and environment that made it, and a sweep
recomputes exactly the cells whose record no longer matches what the current code would record."""

from __future__ import annotations

import hashlib
import json
import re
import shutil
from pathlib import Path

import pandas as pd
import pytest
import yaml

from fairsim.experiment import provenance
from fairsim.experiment.compose import compose_config, preset
from fairsim.experiment.run_folder import PROVENANCE, SUMMARY, identity_of_text, why_incomplete
from fairsim.experiment.single import build_cluster, build_jobs, run_config, write_results
from fairsim.experiment.sweep import config_text
from fairsim.workload.trace import write_trace

from conftest import ROOT

TINY = ["num_jobs=10", "policy=fifo"]


@pytest.fixture(scope="module")
def tiny_cell(tmp_path_factory) -> Path:
    cfg = compose_config(TINY)
    return write_results(run_config(cfg), tmp_path_factory.mktemp("cell") / "cell", cfg)


def tiny_trace(path: Path, seed: int) -> Path:
    """A 10-job trace file in fairsim's schema (the default Philly generator's)."""
    cfg = compose_config(["num_jobs=10", f"seed={seed}"])
    workload, _ = build_jobs(cfg, build_cluster(cfg))
    return write_trace(workload.trace, path)


def sha256(path: Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def test_a_run_records_its_code_inputs_and_environment(tiny_cell):
    record = json.loads((tiny_cell / PROVENANCE).read_text())
    assert record["code_digest"] == provenance.code_digest({"policy": preset("policy", "fifo")})
    files = record["code_files"]
    assert "fairsim/policies/fifo.py" in files and "fairsim/sim/engine.py" in files and "fairsim/metrics.py" in files
    assert "fairsim/policies/fft.py" not in files  # FIFO does not import FFT's module
    assert not any(f.startswith("fairsim/experiment/") and f not in ("fairsim/experiment/single.py", "fairsim/experiment/fluid_cache.py")
                   for f in files)  # naming, printing and logging cannot change a number
    assert files["fairsim/policies/fifo.py"] == sha256(ROOT / "fairsim/policies/fifo.py")
    specs = ROOT / "fairsim/data/gpu_specs.csv"
    assert record["inputs"]["fairsim/data/gpu_specs.csv"] == sha256(specs)
    assert "fairsim/data/philly/philly_job_durations.csv" in record["inputs"]  # the default Philly generator's table
    assert record["packages"]["numpy"] == __import__("numpy").__version__
    assert record["python"].count(".") == 2 and record["platform"]
    assert record["started_at"] <= record["finished_at"]
    if record["git"] is not None:
        assert re.fullmatch(r"[0-9a-f]{40}", record["git"]["commit"]) and isinstance(record["git"]["dirty"], bool)
    assert provenance.why_stale(tiny_cell, {"policy": preset("policy", "fifo")}) is None


def test_a_policy_digest_covers_its_own_module_and_not_the_others(tmp_path, monkeypatch):
    """A copy of the tree: editing FIFO's module changes FIFO's digest and names the file; FFT's
    digest does not move; editing the engine moves both."""
    copy = tmp_path / "fairsim"
    shutil.copytree(ROOT / "fairsim", copy, ignore=shutil.ignore_patterns("__pycache__", "data"))
    monkeypatch.setattr(provenance, "BASE", tmp_path)
    provenance._closure.cache_clear()
    fifo, ours = {"policy": preset("policy", "fifo")}, {"policy": preset("policy", "ours")}
    before = {"fifo": provenance.code_digest(fifo), "ours": provenance.code_digest(ours)}
    saved = {"code_digest": before["fifo"], "code_files": provenance.code_files(fifo), "inputs": {}}
    with open(copy / "policies" / "fifo.py", "a") as f:
        f.write("\n# an edit\n")
    assert provenance.code_digest(ours) == before["ours"]
    assert provenance.code_digest(fifo) != before["fifo"]
    assert provenance.why_stale(tmp_path, fifo, saved) == "the simulating code changed since this cell ran (fairsim/policies/fifo.py)"
    with open(copy / "sim" / "engine.py", "a") as f:
        f.write("\n# an edit\n")
    assert provenance.code_digest(ours) != before["ours"]
    provenance._closure.cache_clear()


def test_a_cell_without_provenance_or_with_other_code_is_stale(tiny_cell, tmp_path):
    cell = tmp_path / "cell"
    shutil.copytree(tiny_cell, cell)
    fifo = {"policy": preset("policy", "fifo")}
    record = json.loads((cell / PROVENANCE).read_text())
    (cell / PROVENANCE).write_text(json.dumps({**record, "code_digest": "0" * 64}))
    assert provenance.why_stale(cell, fifo).startswith("the simulating code changed since this cell ran")
    (cell / PROVENANCE).unlink()
    assert why_incomplete(cell) is None  # complete, but
    assert "made before runs recorded their provenance" in provenance.why_stale(cell, fifo)


def test_a_changed_input_file_makes_the_cell_stale(tmp_path):
    trace = tiny_trace(tmp_path / "t.csv", seed=0)
    cfg = compose_config(["policy=fifo", "workload=file", f"workload.path={trace}"])
    cell = write_results(run_config(cfg), tmp_path / "cell", cfg)
    record = json.loads((cell / PROVENANCE).read_text())
    assert record["inputs"][provenance.input_name(trace)] == sha256(trace)
    assert provenance.why_stale(cell, {"policy": preset("policy", "fifo")}) is None
    trace.write_text(trace.read_text().replace("\n", "\n", 1) + "\n")  # same rows, other bytes
    assert provenance.why_stale(cell, {"policy": preset("policy", "fifo")}) == f"its input file {provenance.input_name(trace)} changed since this cell ran"
    trace.unlink()
    assert "is gone" in provenance.why_stale(cell, {"policy": preset("policy", "fifo")})


def test_identity_is_the_config_without_bookkeeping(tiny_cell, tmp_path):
    """Where results go and how a sweep treats them leave the cell complete, and so does a whole
    float for its integer; any other key (a new one, a sim option) does not."""
    cell = tmp_path / "cell"
    shutil.copytree(tiny_cell, cell)
    current = identity_of_text(config_text(compose_config(TINY)))
    assert why_incomplete(cell, current) is None
    saved = yaml.safe_load((cell / "config.yaml").read_text())
    assert isinstance(saved["load"], float)
    bookkeeping = {"track": False, "sweep_name": "elsewhere", "results_dir": "/elsewhere", "reuse_stale": True}
    (cell / "config.yaml").write_text(yaml.safe_dump({**saved, **bookkeeping, "load": int(saved["load"])}))
    assert why_incomplete(cell, current) is None
    (cell / "config.yaml").write_text(yaml.safe_dump({**saved, "a_new_key": 1}))
    assert why_incomplete(cell, current) == "the config changed since it ran (a_new_key in config.yaml differ)"
    other = identity_of_text(config_text(compose_config(TINY + ["sim.round_len_s=60"])))
    (cell / "config.yaml").write_text(yaml.safe_dump(saved))
    assert why_incomplete(cell, other) == "the config changed since it ran (sim.round_len_s in config.yaml differ)"


def test_results_parquet_marks_stale_cells(tiny_cell, tmp_path):
    from fairsim.experiment.collect import collect

    sweep = tmp_path / "sweep"
    for name in ("a", "b"):
        shutil.copytree(tiny_cell, sweep / name)
        saved = yaml.safe_load((sweep / name / "config.yaml").read_text())  # two cells: two configs (+tag=a, +tag=b)
        (sweep / name / "config.yaml").write_text(yaml.safe_dump({**saved, "tag": name}))
    record = json.loads((sweep / "b" / PROVENANCE).read_text())
    (sweep / "b" / PROVENANCE).write_text(json.dumps({**record, "code_digest": "0" * 64}))
    table, _ = collect(sweep)
    rows = table.set_index("cell")
    assert not rows.loc["a", "stale"] and pd.isna(rows.loc["a", "stale_why"])
    assert rows.loc["b", "stale"] and "simulating code changed" in rows.loc["b", "stale_why"]
    assert rows.loc["a", "code_digest"] == record["code_digest"]
    assert rows.loc["b", "code_digest"] == "0" * 64
    assert pd.read_parquet(sweep / "results.parquet")["stale"].tolist() == [False, True]


# ---- through the command line -------------------------------------------------------------------

GRID = ["policy=fifo,srtf", "num_jobs=10"]
CELLS = ["num_jobs=10,policy=fifo", "num_jobs=10,policy=srtf"]


def statuses(stdout: str) -> dict[str, str]:
    """cell -> what the sweep did with it (its progress line)."""
    out = {}
    for cell, shown in re.findall(r"\] (\S+): (\d+\.\d s|skipped \(complete\)|reused \(stale\)) \|", stdout):
        out[cell] = "ran" if shown.endswith(" s") else shown.split()[0]
    return out


@pytest.mark.slow
def test_a_rerun_recomputes_exactly_the_stale_cells_and_reuse_stale_keeps_them(tmp_path, run_py):
    args = ["-m", f"results_dir={tmp_path}", "sweep_name=prov", *GRID]
    first = run_py(*args)
    assert first.returncode == 0, first.stderr
    assert statuses(first.stdout) == dict.fromkeys(CELLS, "ran")
    sweep = tmp_path / "sweeps" / "prov"
    stale = sweep / CELLS[1]
    record = json.loads((stale / PROVENANCE).read_text())
    (stale / PROVENANCE).write_text(json.dumps({**record, "code_digest": "f" * 64}))  # as if made by other code

    kept = run_py(*args, "reuse_stale=true")
    assert kept.returncode == 0, kept.stderr
    assert statuses(kept.stdout) == {CELLS[0]: "skipped", CELLS[1]: "reused"}
    assert f"{CELLS[1]}: reusing it stale (reuse_stale=true): the simulating code changed since this cell ran" in kept.stdout
    table = pd.read_parquet(sweep / "results.parquet").set_index("cell")
    assert table["stale"].to_dict() == {CELLS[0]: False, CELLS[1]: True}
    from fairsim.experiment.sweep_stamp import why_not_fresh

    assert why_not_fresh(sweep, [*args[1:], "reuse_stale=true"])[0] == "no freshness stamp"  # a grid with a stale cell
    assert why_not_fresh(sweep, args[1:])[0] is not None  # the first run's stamp no longer holds

    again = run_py(*args)
    assert again.returncode == 0, again.stderr
    assert statuses(again.stdout) == {CELLS[0]: "skipped", CELLS[1]: "ran"}
    assert f"{CELLS[1]}: recomputing: the simulating code changed since this cell ran" in again.stdout
    assert not pd.read_parquet(sweep / "results.parquet")["stale"].any()
    assert why_not_fresh(sweep, args[1:]) == (None, 2)  # every cell fresh: the grid is stamped

    (stale / PROVENANCE).unlink()  # a cell from before provenance
    old = run_py(*args)
    assert statuses(old.stdout) == {CELLS[0]: "skipped", CELLS[1]: "ran"}
    assert "made before runs recorded their provenance" in old.stdout
    assert json.loads((stale / SUMMARY).read_text())["policy"] == "srtf" and (stale / PROVENANCE).is_file()


@pytest.mark.slow
def test_a_changed_input_recomputes_the_cells_that_read_it(tmp_path, run_py):
    paths = [tiny_trace(tmp_path / f"t{seed}.csv", seed) for seed in (0, 1)]
    args = ["-m", f"results_dir={tmp_path}", "sweep_name=inputs", "policy=fifo", "workload=file",
            f"workload.path={paths[0]},{paths[1]}"]
    first = run_py(*args)
    assert first.returncode == 0, first.stderr
    cells = sorted(statuses(first.stdout))
    assert len(cells) == 2 and set(statuses(first.stdout).values()) == {"ran"}
    paths[1].write_text(paths[1].read_text() + "\n")
    again = run_py(*args)
    assert again.returncode == 0, again.stderr
    changed = next(c for c in cells if "t1.csv" in c)
    assert statuses(again.stdout) == {c: ("ran" if c == changed else "skipped") for c in cells}
    assert f"recomputing: its input file {paths[1]} changed since this cell ran" in again.stdout


def test_a_freshness_stamp_holds_until_anything_it_covers_changes(tiny_cell, tmp_path):
    from fairsim.experiment import sweep_stamp

    sweep = tmp_path / "sweep"
    for name in ("a", "b"):
        shutil.copytree(tiny_cell, sweep / name)
    overrides = ["+experiment=smoke", "sweep_name=sweep", f"results_dir={tmp_path}", "policy=fifo"]
    assert sweep_stamp.why_not_fresh(sweep, overrides) == ("no freshness stamp", 0)
    assert sweep_stamp.write_stamp(sweep, overrides, ["a", "b"]) is not None
    assert sweep_stamp.why_not_fresh(sweep, overrides) == (None, 2)
    assert sweep_stamp.why_not_fresh(sweep, ["results_dir=elsewhere", *overrides[:2], "policy=fifo"]) == (None, 2)
    assert sweep_stamp.why_not_fresh(sweep, overrides[:3] + ["policy=srtf"])[0] == "no freshness stamp"
    (sweep / "b" / SUMMARY).write_text((sweep / "b" / SUMMARY).read_text())  # rewritten: another mtime
    assert sweep_stamp.why_not_fresh(sweep, overrides)[0] == "cell b changed"
    sweep_stamp.write_stamp(sweep, overrides, ["a", "b"])
    path = sweep_stamp.stamp_path(sweep, overrides)
    stamp = json.loads(path.read_text())
    stamp["code_files"]["fairsim/policies/fifo.py"] = "0" * 64  # as if FIFO's module had changed since
    path.write_text(json.dumps(stamp))
    assert sweep_stamp.why_not_fresh(sweep, overrides)[0] == "fairsim/policies/fifo.py changed"
    (sweep / "a" / PROVENANCE).unlink()
    assert sweep_stamp.write_stamp(sweep, overrides, ["a", "b"]) is None and not path.exists()  # no record, no stamp


@pytest.mark.parametrize("section", ["code_files", "inputs"])
def test_no_stamp_when_cells_disagree_on_a_file(tiny_cell, tmp_path, section):
    """A file edited while a sweep ran leaves cells made from two versions of it: the sweep is
    not fresh, whichever version the tree now holds."""
    from fairsim.experiment import sweep_stamp

    sweep = tmp_path / "sweep"
    for name in ("a", "b"):
        shutil.copytree(tiny_cell, sweep / name)
        saved = yaml.safe_load((sweep / name / "config.yaml").read_text())  # two cells: two configs (+tag=a, +tag=b)
        (sweep / name / "config.yaml").write_text(yaml.safe_dump({**saved, "tag": name}))
    record = json.loads((sweep / "b" / PROVENANCE).read_text())
    assert record[section], f"the tiny cell records no {section}"
    first = sorted(record[section])[0]
    record[section][first] = "0" * 64  # cell b made from another version of that file
    (sweep / "b" / PROVENANCE).write_text(json.dumps(record))
    overrides = ["+experiment=smoke", "sweep_name=sweep", f"results_dir={tmp_path}", "policy=fifo"]
    assert sweep_stamp.write_stamp(sweep, overrides, ["a", "b"]) is None
    assert sweep_stamp.why_not_fresh(sweep, overrides) == ("no freshness stamp", 0)
    assert sweep_stamp.write_stamp(sweep, overrides, ["a"]) is not None  # one version alone: stamped


def test_report_lists_stale_cells_by_sweep_and_reason(tmp_path):
    from conftest import sweep_inputs
    from fairsim.paper.report import stale_lines

    for sub in ("1", "2"):
        (tmp_path / sub).mkdir()
    fresh = pd.DataFrame({"cell": ["a", "b"], "stale": [False, False], "stale_why": [None, None]})
    assert stale_lines(sweep_inputs(tmp_path / "1", {"t": fresh})) == [
        "Every cell above is fresh: its provenance.json names the simulating code and input files of this tree."]
    some = pd.DataFrame({"cell": ["a", "b", "c"], "stale": [True, False, True], "stale_why": ["code", None, "code"]})
    every = pd.DataFrame({"cell": ["x", "y"], "stale": [True, True], "stale_why": ["old", "old"]})
    lines = stale_lines(sweep_inputs(tmp_path / "2", {"s": some, "e": every}))
    assert lines[0].startswith("**4 stale cells**")
    assert "- s, 2 of 3 cells: code: `a`, `c`" in lines and "- e: every one of its 2 cells: old" in lines
