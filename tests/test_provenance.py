"""Provenance: every run records the code, inputs and environment that made it, and a sweep
recomputes exactly the cells whose record no longer matches what the current code would record."""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
import yaml
from conftest import ROOT

from fairsim.experiment import provenance
from fairsim.experiment.cli import config_folders
from fairsim.experiment.compose import CONF_DIR, compose_config, preset
from fairsim.experiment.run_folder import PROVENANCE, SUMMARY, identity_of_text, why_incomplete
from fairsim.experiment.single import build_cluster, build_jobs, run_config, write_results
from fairsim.experiment.sweep import config_text
from fairsim.workload.trace import write_trace

TINY = ["num_jobs=10", "policy=fifo"]
CONF = config_folders([], CONF_DIR)  # the config folders of a run without a user folder: conf/


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
    assert not any(
        f.startswith("fairsim/experiment/")
        and f not in ("fairsim/experiment/single.py", "fairsim/experiment/fluid_cache.py")
        for f in files
    )  # naming, printing and logging cannot change a number
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
    """A copy of the tree, first on sys.path: editing FIFO's module changes FIFO's digest and
    names the file; FFT's digest does not move; editing the engine moves both."""
    copy = tmp_path / "fairsim"
    shutil.copytree(ROOT / "fairsim", copy, ignore=shutil.ignore_patterns("__pycache__", "data"))
    monkeypatch.setattr(provenance, "BASE", tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    fifo, ours = {"policy": preset("policy", "fifo")}, {"policy": preset("policy", "ours")}
    before = {"fifo": provenance.code_digest(fifo), "ours": provenance.code_digest(ours)}
    saved = {"code_digest": before["fifo"], "code_files": provenance.code_files(fifo), "inputs": {}}
    with open(copy / "policies" / "fifo.py", "a") as f:
        f.write("\n# an edit\n")
    assert provenance.code_digest(ours) == before["ours"]
    assert provenance.code_digest(fifo) != before["fifo"]
    assert (
        provenance.why_stale(tmp_path, fifo, saved)
        == "the simulating code changed since this cell ran (fairsim/policies/fifo.py)"
    )
    with open(copy / "sim" / "engine.py", "a") as f:
        f.write("\n# an edit\n")
    assert provenance.code_digest(ours) != before["ours"]


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
    assert (
        provenance.why_stale(cell, {"policy": preset("policy", "fifo")})
        == f"its input file {provenance.input_name(trace)} changed since this cell ran"
    )
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
    assert (
        f"{CELLS[1]}: reusing it stale (reuse_stale=true): the simulating code changed since this cell ran"
        in kept.stdout
    )
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
    args = [
        "-m",
        f"results_dir={tmp_path}",
        "sweep_name=inputs",
        "policy=fifo",
        "workload=file",
        f"workload.path={paths[0]},{paths[1]}",
    ]
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
    assert sweep_stamp.write_stamp(sweep, overrides, ["a", "b"], CONF) is not None
    assert sweep_stamp.why_not_fresh(sweep, overrides) == (None, 2)
    assert sweep_stamp.why_not_fresh(sweep, ["results_dir=elsewhere", *overrides[:2], "policy=fifo"]) == (None, 2)
    assert sweep_stamp.why_not_fresh(sweep, overrides[:3] + ["policy=srtf"])[0] == "no freshness stamp"
    (sweep / "b" / SUMMARY).write_text((sweep / "b" / SUMMARY).read_text())  # rewritten: another mtime
    assert sweep_stamp.why_not_fresh(sweep, overrides)[0] == "cell b changed"
    sweep_stamp.write_stamp(sweep, overrides, ["a", "b"], CONF)
    path = sweep_stamp.stamp_path(sweep, overrides)
    stamp = json.loads(path.read_text())
    stamp["code_files"]["fairsim/policies/fifo.py"] = "0" * 64  # as if FIFO's module had changed since
    path.write_text(json.dumps(stamp))
    assert sweep_stamp.why_not_fresh(sweep, overrides)[0] == "fairsim/policies/fifo.py changed"
    (sweep / "a" / PROVENANCE).unlink()
    assert (
        sweep_stamp.write_stamp(sweep, overrides, ["a", "b"], CONF) is None and not path.exists()
    )  # no record, no stamp


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
    assert sweep_stamp.write_stamp(sweep, overrides, ["a", "b"], CONF) is None
    assert sweep_stamp.why_not_fresh(sweep, overrides) == ("no freshness stamp", 0)
    assert sweep_stamp.write_stamp(sweep, overrides, ["a"], CONF) is not None  # one version alone: stamped


def test_report_lists_stale_cells_by_sweep_and_reason(tmp_path):
    from conftest import sweep_inputs

    from fairsim.paper.report import stale_lines

    for sub in ("1", "2"):
        (tmp_path / sub).mkdir()
    fresh = pd.DataFrame({"cell": ["a", "b"], "stale": [False, False], "stale_why": [None, None]})
    assert stale_lines(sweep_inputs(tmp_path / "1", {"t": fresh})) == [
        "Every cell above is fresh: its provenance.json names the simulating code and input files of this tree."
    ]
    some = pd.DataFrame({"cell": ["a", "b", "c"], "stale": [True, False, True], "stale_why": ["code", None, "code"]})
    every = pd.DataFrame({"cell": ["x", "y"], "stale": [True, True], "stale_why": ["old", "old"]})
    lines = stale_lines(sweep_inputs(tmp_path / "2", {"s": some, "e": every}))
    assert lines[0].startswith("**4 stale cells**")
    assert "- s, 2 of 3 cells: code: `a`, `c`" in lines and "- e: every one of its 2 cells: old" in lines


# ---- code outside the repository ------------------------------------------------------------------

USER = ROOT / "tests" / "data" / "user_policy"
MINE = {"policy": {"name": "mine", "_target_": "mypol.MyPolicy"}}


@pytest.fixture
def user_code(tmp_path, monkeypatch) -> Path:
    """tests/data/user_policy/pkgs copied to a folder first on sys.path (as PYTHONPATH puts it)."""
    pkgs = tmp_path / "pkgs"
    shutil.copytree(USER / "pkgs", pkgs)
    monkeypatch.syspath_prepend(str(pkgs))
    return pkgs


def edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text, f"{old!r} not in {path}"
    path.write_text(text.replace(old, new))


def test_a_user_policy_its_helpers_and_the_fairsim_modules_they_reach_are_in_the_digest(user_code):
    code = provenance.run_code(MINE)
    assert {"mypol.py", "myhelp.py", "fairsim/policies/queues.py", "fairsim/policies/base.py"} <= set(code.files)
    assert code.folders == {str(user_code): ["myhelp.py", "mypol.py"]}  # named relative to their sys.path folder
    assert code.files["mypol.py"] == user_code / "mypol.py"
    assert not any("site-packages" in str(p) or p.is_relative_to(Path(os.__file__).parent) for p in code.files.values())
    fifo = provenance.code_files({"policy": preset("policy", "fifo")})
    assert set(code.files) - set(fifo) == {"mypol.py", "myhelp.py"}  # the builder's closure + the user's own


def test_imports_count_inside_functions_relative_and_by_literal_name(user_code):
    """A user package: a relative import, an import inside a function, importlib.import_module
    with a literal name; a module that only a string mentions does not count."""
    pkg = user_code / "mylib"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("from .rules import rule\n")
    (pkg / "rules.py").write_text("def rule():\n    from . import later\n    return later\n")
    (pkg / "later.py").write_text("import importlib\n\nLOADED = importlib.import_module('mylib.dynamic')\n")
    (pkg / "dynamic.py").write_text("'''import mylib.unused'''\n")
    (pkg / "unused.py").write_text("")
    edit(user_code / "mypol.py", "import myhelp\n", "import myhelp\nimport mylib\n")
    files = provenance.run_code(MINE).files
    assert {"mylib/__init__.py", "mylib/rules.py", "mylib/later.py", "mylib/dynamic.py"} <= set(files)
    assert "mylib/unused.py" not in files


def test_the_statement_walk_finds_every_import_a_full_walk_finds():
    """Imports are looked for in statement bodies only (cheaper than every node): the same
    imports as ast.walk over all of fairsim's files (anywhere: if/try/with/match, functions, classes)."""
    import ast

    def imports(nodes) -> list[str]:
        return sorted(ast.dump(n) for n in nodes if isinstance(n, (ast.Import, ast.ImportFrom)))

    for path in sorted((ROOT / "fairsim").rglob("*.py")):
        tree = ast.parse(path.read_bytes())
        assert imports(provenance._statements_in(tree)) == imports(ast.walk(tree)), path


def test_the_file_set_does_not_depend_on_what_the_process_imported(user_code):
    """A reused sweep worker has imported other cells' modules, or another module of the same
    name: the set comes from the files on disk and sys.path, never from sys.modules."""
    import importlib

    before = provenance.run_code(MINE)
    try:
        importlib.import_module("mypol")  # as a run does
        decoy = type(sys)("myhelp")
        decoy.__file__ = __file__
        sys.modules["myhelp"] = decoy  # another module of that name imported earlier
        after = provenance.run_code(MINE)
    finally:
        for name in ("mypol", "myhelp"):
            sys.modules.pop(name, None)
    assert after.files == before.files and after.folders == before.folders


def test_an_edited_user_module_makes_exactly_its_cells_stale_naming_the_file(user_code, tmp_path):
    saved = {
        "code_digest": provenance.code_digest(MINE),
        "code_files": provenance.code_files(MINE),
        "inputs": {},
        "code_folders": {str(user_code): {"files": ["myhelp.py", "mypol.py"], "git": None}},
    }
    fifo = {"policy": preset("policy", "fifo")}
    fifo_saved = {"code_digest": provenance.code_digest(fifo), "code_files": provenance.code_files(fifo), "inputs": {}}
    assert provenance.why_stale(tmp_path, MINE, saved) is None
    edit(user_code / "mypol.py", 'ORDER = "fifo"', 'ORDER = "lifo"')
    assert provenance.why_stale(tmp_path, MINE, saved) == "the simulating code changed since this cell ran (mypol.py)"
    assert provenance.why_stale(tmp_path, fifo, fifo_saved) is None
    shutil.copy(USER / "pkgs" / "mypol.py", user_code / "mypol.py")
    edit(user_code / "myhelp.py", "return np.flatnonzero(~running)", "return np.flatnonzero(~running)  # an edit")
    assert provenance.why_stale(tmp_path, MINE, saved) == "the simulating code changed since this cell ran (myhelp.py)"


def test_a_check_without_the_runs_pythonpath_finds_the_module_where_it_ran(user_code, tmp_path, monkeypatch):
    """A later process (collect, make verify) without the user's PYTHONPATH looks in the folder
    the record names; a module gone from there too makes the cell stale, saying so."""
    record = {**environment_free(provenance.record(MINE, [], "a", "b")), "inputs": {}}
    monkeypatch.syspath_prepend(str(tmp_path / "elsewhere"))
    monkeypatch.setattr(sys, "path", [p for p in sys.path if p != str(user_code)])
    assert provenance.why_stale(tmp_path, MINE, record) is None
    (user_code / "myhelp.py").rename(user_code / "myhelp_old.py")
    assert (
        provenance.why_stale(tmp_path, MINE, record)
        == "the simulating code changed since this cell ran (myhelp.py: no longer importable)"
    )
    (user_code / "mypol.py").unlink()
    assert (
        provenance.why_stale(tmp_path, MINE, record)
        == f"its module mypol can no longer be imported (not found on sys.path or in {user_code})"
    )


def environment_free(record: dict) -> dict:
    return {k: record[k] for k in ("code_digest", "code_files", "code_folders")}


def test_a_record_names_where_outside_code_came_from_and_its_checkout(user_code, tmp_path):
    record = provenance.record(MINE, [], "a", "b")
    assert record["code_folders"] == {str(user_code): {"files": ["myhelp.py", "mypol.py"], "git": None}}
    assert provenance.dirty(record) is True  # code that no commit holds
    assert provenance.dirty({**record, "code_folders": {}}) == (record["git"] or {}).get("dirty")
    assert record["config_files"] is None and record["config_search_path"] is None  # not composed by run.py


# ---- git ---------------------------------------------------------------------------------------------


def git(repo: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t", *args], check=True, capture_output=True
    )


def test_an_untracked_file_makes_a_checkout_dirty_an_ignored_one_does_not(tmp_path):
    repo = tmp_path / "repo"
    (repo / "policies").mkdir(parents=True)
    (repo / "policies" / "fifo.py").write_text("x = 1\n")
    (repo / ".gitignore").write_text("results/\n")
    git(repo, "init", "-q")
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "first")
    state = provenance.checkout_state(repo / "policies")
    assert state["dirty"] is False and (state["changed"], state["untracked"]) == (0, 0)
    assert state["root"] == str(repo.resolve()) and re.fullmatch(r"[0-9a-f]{40}", state["commit"])
    (repo / "results").mkdir()
    (repo / "results" / "out.json").write_text("{}")
    assert provenance.checkout_state(repo)["dirty"] is False
    (repo / "policies" / "mine.py").write_text("y = 2\n")  # a new policy, not yet added
    state = provenance.checkout_state(repo)
    assert state["dirty"] is True and (state["changed"], state["untracked"]) == (0, 1)
    (repo / "policies" / "fifo.py").write_text("x = 2\n")
    assert (provenance.checkout_state(repo)["changed"], provenance.checkout_state(repo)["untracked"]) == (1, 1)
    assert provenance.checkout_state(tmp_path) is None  # no checkout around it


def test_user_code_in_a_clean_checkout_is_not_dirty(user_code):
    git(user_code, "init", "-q")
    git(user_code, "add", ".")
    git(user_code, "commit", "-q", "-m", "mine")
    provenance.folder_git_state.cache_clear()
    record = {"git": {"commit": "c", "dirty": False}, "code_folders": {}}
    folders = provenance.record(MINE, [], "a", "b")["code_folders"]
    assert folders[str(user_code)]["git"]["dirty"] is False
    assert provenance.dirty({**record, "code_folders": folders}) is False
    provenance.folder_git_state.cache_clear()


# ---- config files -------------------------------------------------------------------------------------


def config_record_of(overrides: list[str]) -> tuple[dict, list[str]]:
    """``config_record`` inside a composition, as a run of ``python run.py`` sees Hydra."""
    from hydra import compose, initialize_config_dir
    from hydra.core.hydra_config import HydraConfig

    with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
        HydraConfig.instance().set_config(compose("config", overrides=overrides, return_hydra_config=True))
        try:
            return provenance.config_record()
        finally:
            HydraConfig.instance().cfg = None


def test_every_config_file_the_composition_read_is_recorded_by_folder(tmp_path, monkeypatch):
    files, search_path = config_record_of(["policy=gavel", "workload=trace4", "+experiment=smoke"])
    assert search_path == ["conf"]
    assert set(files) == {"conf"}
    conf = files["conf"]
    for name in (
        "config.yaml",
        "policy/gavel.yaml",
        "policy/mechanism/gavel.yaml",
        "workload/trace4.yaml",
        "workload/trace3.yaml",
        "workload/trace3_parts/head.yaml",
        "workload/trace3_parts/tail.yaml",
        "experiment/smoke.yaml",
        "cluster/paper.yaml",
        "sim/default.yaml",
        "hydra/fairsim.yaml",
        "hydra/launcher/local.yaml",
    ):
        assert conf[name] == sha256(CONF_DIR / name), name
    assert "policy/ours.yaml" not in conf and "workload/philly.yaml" not in conf  # not chosen, not read
    assert not any(
        name.startswith("hydra/") and not (CONF_DIR / name).is_file() for name in conf
    )  # Hydra's own left out

    user, first = tmp_path / "myconf", tmp_path / "first"
    shutil.copytree(USER / "myconf", user)
    first.mkdir()
    overrides = [f"hydra.searchpath=[file://{first},file://{user}]", "policy=mine"]
    files, search_path = config_record_of(overrides)
    assert search_path == ["conf", str(first), str(user)]
    assert files[str(user)] == {"policy/mine.yaml": sha256(user / "policy" / "mine.yaml")}
    assert "policy/mine.yaml" not in files["conf"]
    edit(user / "policy" / "mine.yaml", "backfill: true", "backfill: false")  # the same choices, another file
    assert config_record_of(overrides + ["seed=3"])[0][str(user)] == {
        "policy/mine.yaml": sha256(user / "policy" / "mine.yaml")
    }
    shutil.copytree(user / "policy", first / "policy")  # now found first in an earlier folder
    files, _ = config_record_of(overrides)
    assert files[str(first)] == {"policy/mine.yaml": sha256(first / "policy" / "mine.yaml")} and str(user) not in files

    package = tmp_path / "packages" / "provpresets"  # a folder given as pkg://
    shutil.copytree(USER / "myconf", package)
    (package / "__init__.py").write_text("")
    monkeypatch.syspath_prepend(str(tmp_path / "packages"))
    try:
        files, search_path = config_record_of(["hydra.searchpath=[pkg://provpresets]", "policy=mine"])
    finally:
        sys.modules.pop("provpresets", None)  # imported to find its files: no other test's package of that name
    assert search_path == ["conf", "pkg://provpresets"]
    assert files["pkg://provpresets"] == {"policy/mine.yaml": sha256(package / "policy" / "mine.yaml")}


def test_a_stamp_covers_every_config_folder_and_the_search_path(tiny_cell, tmp_path):
    from fairsim.experiment import sweep_stamp

    user = tmp_path / "myconf"
    shutil.copytree(USER / "myconf", user)
    sweep = tmp_path / "sweep"
    shutil.copytree(tiny_cell, sweep / "a")
    argv = ["-m", "--config-dir", str(user), "policy=fifo", f"results_dir={tmp_path}"]
    folders = config_folders(argv, CONF_DIR)
    assert sweep_stamp.write_stamp(sweep, ["policy=fifo"], ["a"], folders) is not None  # the callback's task overrides
    assert sweep_stamp.why_not_fresh(sweep, argv) == (None, 1)
    assert sweep_stamp.why_not_fresh(sweep, [*argv, "hydra/launcher=basic", "hydra.launcher.n_jobs=1"]) == (
        None,
        1,
    )  # Hydra's settings
    changed = ("the config folders or a config file in them changed", 0)
    assert sweep_stamp.why_not_fresh(sweep, ["policy=fifo"]) == changed  # another search path: conf/ alone
    edit(user / "policy" / "mine.yaml", "backfill: true", "backfill: false")  # a preset edit
    assert sweep_stamp.why_not_fresh(sweep, argv) == changed
    shutil.copy(USER / "myconf" / "policy" / "mine.yaml", user / "policy" / "mine.yaml")
    assert sweep_stamp.why_not_fresh(sweep, argv) == (None, 1)
    (user / "cluster").mkdir()
    (user / "cluster" / "paper.yaml").write_text("name: mine\n")  # a new preset, hidden by conf/'s here, but a change
    assert sweep_stamp.why_not_fresh(sweep, argv) == changed
    shutil.rmtree(user)
    assert sweep_stamp.why_not_fresh(sweep, argv)[0].startswith("a config folder is not there")


def test_a_stamp_holds_while_user_code_is_unchanged_and_still_what_import_finds(tiny_cell, tmp_path, user_code):
    from fairsim.experiment import sweep_stamp

    sweep = tmp_path / "sweep"
    shutil.copytree(tiny_cell, sweep / "mine")
    record = json.loads((sweep / "mine" / PROVENANCE).read_text())
    (sweep / "mine" / PROVENANCE).write_text(
        json.dumps({**record, **environment_free(provenance.record(MINE, [], "a", "b"))})
    )
    overrides = ["policy=mine"]
    assert sweep_stamp.write_stamp(sweep, overrides, ["mine"], CONF) is not None
    assert sweep_stamp.why_not_fresh(sweep, overrides) == (None, 1)
    edit(user_code / "myhelp.py", "in arrival order", "in arrival order (an edit)")
    assert sweep_stamp.why_not_fresh(sweep, overrides) == ("myhelp.py changed", 0)
    shutil.copy(USER / "pkgs" / "myhelp.py", user_code / "myhelp.py")
    assert sweep_stamp.why_not_fresh(sweep, overrides) == (None, 1)
    other = tmp_path / "other"
    other.mkdir()
    (other / "mypol.py").write_text("")
    sys.path.insert(0, str(other))  # the fixture's monkeypatch restores sys.path
    assert sweep_stamp.why_not_fresh(sweep, overrides) == (
        f"import mypol now finds {other / 'mypol.py'}, not mypol.py",
        0,
    )
