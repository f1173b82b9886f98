"""Presets in a folder of the user's own, and Hydra's config errors in one line.

A user folder (``hydra.searchpath=[file://DIR]``, ``--config-dir DIR``, ``pkg://package``, a
SearchPathPlugin's folder) holds presets laid out like conf/ (``DIR/cluster/mine.yaml``). The
preset check before Hydra looks in every folder Hydra looks in, and a mistyped key or group
ends in one line naming the closest valid ones, exit 2 (fairsim/experiment/cli.py). The
in-process tests check the folder list, the preset check and the error lines; the ``slow``
ones run ``python run.py``.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import sys

import pytest
import yaml
from conftest import ROOT
from hydra.errors import HydraException
from omegaconf.errors import OmegaConfBaseException

from fairsim.errors import InputError
from fairsim.experiment import provenance
from fairsim.experiment.cli import check_group_choices, config_folders, hydra_error_line
from fairsim.experiment.compose import CONF_DIR, compose_config
from fairsim.experiment.sweep_stamp import why_not_fresh

MINE = {
    "name": "mine",
    "gpus_per_host": 2,
    "inter_host_gbps": 10,
    "intra_host_gbps": 100,
    "counts": {"T4": 2, "V100": 6},
}
FAST = ["num_jobs=10", "track=false"]  # a run of seconds; error cases never get to run

BUILT_IN_CLUSTERS = sorted(p.stem for p in (CONF_DIR / "cluster").glob("*.yaml"))


def write(path, data) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(data if isinstance(data, str) else yaml.safe_dump(data))


@pytest.fixture
def user(tmp_path):
    """A user folder: a cluster, a policy with a mistyped option, and a sweep preset."""
    d = tmp_path / "myconf"
    write(d / "cluster" / "mine.yaml", MINE)
    write(
        d / "policy" / "sloppy.yaml",
        {"name": "sloppy", "_target_": "fairsim.policies.fifo.FifoPolicy", "backfil": True},
    )
    write(
        d / "experiment" / "mine.yaml",
        "# @package _global_\ndefaults:\n  - override /cluster: mine\nsweep_name: mine\n"
        "num_jobs: 10\nhydra:\n  sweeper:\n    params:\n      policy: fifo,srtf\n",
    )
    return d


def refused_with(argv, conf) -> str:
    with pytest.raises(InputError) as info:
        check_group_choices(argv, conf)
    message = str(info.value)
    assert "\n" not in message
    return message


def refused(argv) -> str:
    return refused_with(argv, CONF_DIR)


# ---- the folders and the preset check, in process --------------------------------------------------


def test_folders_in_hydras_order(user, tmp_path):
    other = tmp_path / "other"
    other.mkdir()
    folders = config_folders(["-cd", str(user), f"hydra.searchpath=[file://{other},{user}]", "cluster=mine"], CONF_DIR)
    assert [f.label for f in folders] == ["conf", str(user), str(other), str(user)]
    assert config_folders([f"--config-dir={user}"], CONF_DIR)[1].label == str(user)
    assert config_folders(["--config-d", str(user)], CONF_DIR)[1].label == str(user)  # argparse's abbreviation


def test_the_primary_configs_searchpath_unless_the_command_line_replaces_it(user, tmp_path):
    conf = tmp_path / "conf"
    write(conf / "config.yaml", {"hydra": {"searchpath": [f"file://{user}"]}})
    write(conf / "cluster" / "paper.yaml", {"name": "paper"})
    assert [f.label for f in config_folders([], conf)] == ["conf", str(user)]
    check_group_choices(["cluster=mine"], conf)
    assert [f.label for f in config_folders(["hydra.searchpath=[]"], conf)] == ["conf"]
    assert "allowed: paper)" in refused_with(["hydra.searchpath=[]", "cluster=mine"], conf)


@pytest.mark.parametrize("how", ["searchpath", "plain", "config_dir"])
def test_a_user_preset_passes_and_a_missing_one_names_every_folder(user, how):
    given = {
        "searchpath": [f"hydra.searchpath=[file://{user}]"],
        "plain": [f"hydra.searchpath=[{user}]"],
        "config_dir": ["-cd", str(user)],
    }[how]
    check_group_choices([*given, "cluster=mine"], CONF_DIR)
    check_group_choices([*given, "-m", "cluster=mine,paper", "policy=sloppy,fifo"], CONF_DIR)
    message = refused([*given, "-m", "cluster=mine,mnie"])
    assert f"no preset 'mnie' in conf/cluster/ or {user}/cluster/" in message
    assert f"allowed: {', '.join(sorted(BUILT_IN_CLUSTERS + ['mine']))})" in message
    assert f"{user}/experiment/" in refused([*given, "+experiment=nosuch"])


def test_without_the_user_folder_the_preset_is_refused(user):
    assert f"no preset 'mine' in conf/cluster/ (allowed: {', '.join(BUILT_IN_CLUSTERS)})" in refused(["cluster=mine"])


def test_a_package_on_the_searchpath(tmp_path, monkeypatch):
    write(tmp_path / "mypresets" / "__init__.py", "")
    write(tmp_path / "mypresets" / "cluster" / "mine.yaml", MINE)
    monkeypatch.syspath_prepend(str(tmp_path))
    check_group_choices(["hydra.searchpath=[pkg://mypresets]", "cluster=mine"], CONF_DIR)
    assert "pkg://mypresets/cluster/" in refused(["hydra.searchpath=[pkg://mypresets]", "cluster=mnie"])


@pytest.mark.parametrize(
    "argv, needles",
    [
        (["hydra.searchpath=[/no/such/folder]"], ("hydra.searchpath", "no folder '/no/such/folder'")),
        (["hydra.searchpath=[relative/not_here]"], ("hydra.searchpath", "no folder 'relative/not_here'")),
        (["hydra.searchpath=[s3://bucket/conf]"], ("hydra.searchpath", "s3:// is not supported", "file://", "pkg://")),
        (
            ["hydra.searchpath=[pkg://no_such_package_here]"],
            ("hydra.searchpath", "no importable package 'no_such_package_here'"),
        ),
        (["-cd", "/no/such/folder"], ("--config-dir", "no folder '/no/such/folder'")),
    ],
)
def test_bad_folders_are_refused(argv, needles):
    message = refused(argv)
    for needle in needles:
        assert needle in message, (needle, message)


def test_a_user_preset_hidden_by_a_builtin_of_the_same_name_is_refused(user):
    write(user / "cluster" / "paper.yaml", MINE)
    message = refused(["-cd", str(user), "cluster=paper"])
    assert f"conf/cluster/ and {user}/cluster/" in message and "conf/cluster/paper.yaml" in message
    (user / "cluster" / "paper.yaml").write_bytes((CONF_DIR / "cluster" / "paper.yaml").read_bytes())
    check_group_choices(["-cd", str(user), "cluster=paper"], CONF_DIR)  # the same file twice: no doubt which


def test_compose_config_reads_a_user_folder(user):
    cfg = compose_config([f"hydra.searchpath=[file://{user}]", "cluster=mine"])
    assert dict(cfg.cluster.counts) == MINE["counts"]


# ---- Hydra's errors as one line, in process ----------------------------------------------------------


def hydra_line(argv) -> str:
    with pytest.raises((HydraException, OmegaConfBaseException)) as info:
        compose_config([a for a in argv if a != "-m"])
    line = hydra_error_line(info.value, argv, CONF_DIR)
    assert "\n" not in line
    return line


@pytest.mark.parametrize(
    "argv, needles",
    [
        (["polcy=ours"], ("command line: polcy: no such key; closest: policy (",)),
        (["sim.round_len=60"], ("sim.round_len: no such key; closest: sim.round_len_s", "sim has: ")),
        (["sim.overheads.migratoin=false"], ("closest: sim.overheads.migration",)),
        (["lod=0.5"], ("lod: no such key; closest: load",)),
        (
            ["+sim.round_len_s=5"],
            ("+sim.round_len_s: already in the config", "sim.round_len_s=...", "++sim.round_len_s"),
        ),
        (["+policy=fifo"], ("+policy: policy is already in the defaults list", "policy=...")),
        (
            ["fft_variant=tau_from_now"],
            ("fft_variant: not in the defaults list; add it with +fft_variant=tau_from_now",),
        ),
        (["sim=[a"], ("'sim=[a': not a valid override",)),
    ],
)
def test_hydra_errors_become_one_line(argv, needles):
    line = hydra_line(argv)
    for needle in needles:
        assert needle in line, (needle, line)


def test_a_mapping_value_that_adds_keys_names_them_not_the_top_level():
    """It said "no such key (the config has: cluster, experiment, ...)", the top level's keys."""
    line = hydra_line(["cluster=pai2020", "cluster.gpu_map={X: K80}"])
    assert line == (
        "command line: cluster.gpu_map: the value adds the key 'X', which cluster.gpu_map does not have "
        "(it has: MISC, V100M32); +cluster.gpu_map.X=... adds one key"
    )


@pytest.mark.parametrize("choice, closest", [("ourss", "ours"), ("Paper", "paper"), ("themsi", "themis")])
def test_a_preset_typo_names_the_closest_presets(choice, closest):
    group = "cluster" if choice == "Paper" else "policy"
    message = refused([f"{group}={choice}"])
    assert f"no preset {choice!r} in conf/{group}/; closest: {closest}" in message and "(allowed: " in message


def test_fft_is_the_papers_name_for_ours_and_composes_its_config(user):
    assert check_group_choices(["policy=FFT", "load=0.5"], CONF_DIR) == ["policy=ours", "load=0.5"]
    assert check_group_choices(["-m", "policy=fft,themis", "seed=0,1"], CONF_DIR) == [
        "-m",
        "policy=ours,themis",
        "seed=0,1",
    ]
    assert compose_config(check_group_choices(["policy=Fft"], CONF_DIR)) == compose_config(["policy=ours"])
    write(user / "policy" / "fft.yaml", {"name": "fft", "_target_": "fairsim.policies.fifo.FifoPolicy"})
    mine = ["--config-dir", str(user), "policy=fft"]
    assert check_group_choices(mine, CONF_DIR) == mine  # a preset of the user's own by that name is theirs


def test_a_missing_preset_in_a_presets_defaults_names_every_folder(user):
    write(user / "experiment" / "broken.yaml", "# @package _global_\ndefaults:\n  - override /cluster: nosuch\n")
    line = hydra_line([f"hydra.searchpath=[file://{user}]", "+experiment=broken"])
    assert (
        f"cluster: no preset 'nosuch' in conf/cluster/ or {user}/cluster/ (allowed: {', '.join(sorted(BUILT_IN_CLUSTERS + ['mine']))})"
        in line
    )


# ---- through run.py ----------------------------------------------------------------------------------


def one_error_line(proc) -> str:
    assert proc.returncode == 2, proc.stdout + proc.stderr
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), proc.stderr
    assert "Traceback" not in proc.stderr and "HYDRA_FULL_ERROR" not in proc.stderr
    return lines[0]


def saved_cluster(results):
    (config,) = (results / "runs").glob("*/config.yaml")
    return yaml.safe_load(config.read_text())["cluster"]


@pytest.mark.slow
@pytest.mark.parametrize("how", ["searchpath", "config_dir"])
def test_a_run_on_a_user_cluster(user, tmp_path, run_py, how):
    given = [f"hydra.searchpath=[file://{user}]"] if how == "searchpath" else ["--config-dir", str(user)]
    proc = run_py(*given, "cluster=mine", "policy=fifo", *FAST, f"results_dir={tmp_path / 'r'}")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert saved_cluster(tmp_path / "r")["counts"] == MINE["counts"]


@pytest.mark.slow
def test_a_sweep_from_a_user_experiment_preset(user, tmp_path, run_py):
    results = tmp_path / "r"
    proc = run_py("-m", "-cd", str(user), "+experiment=mine", f"results_dir={results}", timeout=600)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    sweep = results / "sweeps" / "mine"
    assert sorted(p.parent.name for p in sweep.glob("*/summary.json")) == ["policy=fifo", "policy=srtf"]
    for cell in ("policy=fifo", "policy=srtf"):
        assert yaml.safe_load((sweep / cell / "config.yaml").read_text())["cluster"]["counts"] == MINE["counts"]
    assert why_not_fresh(sweep, ["-cd", str(user), "+experiment=mine", f"results_dir={results}"]) == (
        None,
        2,
    )  # stamped
    record = json.loads((sweep / "policy=fifo" / "provenance.json").read_text())
    assert set(record["config_files"][str(user)]) == {"experiment/mine.yaml", "cluster/mine.yaml"}
    assert record["config_search_path"] == ["conf", str(user)]


@pytest.mark.slow
@pytest.mark.parametrize(
    "args, needles",
    [
        (["cluster=mnie"], ("no preset 'mnie' in conf/cluster/ or {user}/cluster/", "mine")),
        (["-m", "cluster=mine,mnie"], ("no preset 'mnie' in conf/cluster/ or {user}/cluster/",)),
        (
            ["policy=sloppy"],
            ("policy sloppy: backfil: unknown option (allowed: backfill)",),
        ),  # checked like conf/policy/fifo.yaml
    ],
)
def test_user_presets_refused_in_one_line(user, tmp_path, run_py, args, needles):
    line = one_error_line(run_py(f"hydra.searchpath=[file://{user}]", *args, *FAST, f"results_dir={tmp_path}"))
    for needle in needles:
        assert needle.format(user=user) in line, line
    assert not list(tmp_path.rglob("summary.json"))


@pytest.mark.slow
@pytest.mark.parametrize(
    "args, needles",
    [
        (["polcy=ours"], ("polcy: no such key; closest: policy",)),
        (["sim.round_len=60"], ("sim.round_len: no such key; closest: sim.round_len_s",)),
        (["lod=0.5"], ("lod: no such key; closest: load",)),
        (["+sim.round_len_s=60"], ("+sim.round_len_s: already in the config",)),
        (["policy/mechansim=gavel"], ("policy/mechansim: no such config group; closest: policy/mechanism",)),
        (["-m", "polcy=ours,gavel"], ("polcy: no such key; closest: policy",)),
        (["-m", "policy=fifo,srtf", "sim.round_len=60,120"], ("sim.round_len: no such key; closest: sim.round_len_s",)),
        (["load=0,0.5"], ("Ambiguous value for argument 'load=0,0.5'", "--multirun")),
    ],
)
def test_mistyped_keys_refused_in_one_line(tmp_path, run_py, args, needles):
    line = one_error_line(run_py(*args, *FAST, f"results_dir={tmp_path}"))
    for needle in needles:
        assert needle in line, line
    assert not list(tmp_path.rglob("summary.json"))


@pytest.mark.slow
def test_a_searchpath_plugins_folder_is_searched(user, tmp_path, run_py):
    plugin = tmp_path / "plugins" / "hydra_plugins" / "my_presets"
    write(
        plugin / "__init__.py",
        "from hydra.plugins.search_path_plugin import SearchPathPlugin\n\n\n"
        "class MyPresets(SearchPathPlugin):\n    def manipulate_search_path(self, search_path):\n"
        f"        search_path.append(provider='my-presets', path='file://{user}')\n",
    )
    env = {"PYTHONPATH": os.pathsep.join(filter(None, [str(tmp_path / "plugins"), os.environ.get("PYTHONPATH")]))}
    line = one_error_line(run_py("cluster=mnie", f"results_dir={tmp_path}", env=env))
    assert f"conf/cluster/ or {user}/cluster/" in line
    shown = run_py("--cfg", "job", "cluster=mine", env=env)
    assert shown.returncode == 0, shown.stderr
    assert yaml.safe_load(shown.stdout)["cluster"]["counts"] == MINE["counts"]


# ---- a policy of the user's own, outside fairsim ---------------------------------------------------------

USER = ROOT / "tests" / "data" / "user_policy"  # mypol.py + myhelp.py (pkgs/), policy/mine.yaml (myconf/)


def edit(path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text, f"{old!r} not in {path}"
    path.write_text(text.replace(old, new))


def statuses(stdout: str) -> dict[str, str]:
    """cell -> what the sweep did with it (its progress line)."""
    return {
        cell: "ran" if shown.endswith(" s") else "skipped"
        for cell, shown in re.findall(r"\] (\S+): (\d+\.\d s|skipped \(complete\)) \|", stdout)
    }


@pytest.mark.slow
def test_a_user_policy_edit_recomputes_exactly_its_cells(tmp_path, run_py, monkeypatch):
    """A preset in a user folder whose ``_target_`` is a module on PYTHONPATH (it imports a helper
    of its own and fairsim.policies.queues), swept with a built-in policy: editing the module, its
    helper or the preset recomputes the user policy's cell alone, naming what changed; a sweep of
    a user folder is stamped like any other. Three sweeps of two 40-job cells."""
    pkgs, conf = tmp_path / "pkgs", tmp_path / "myconf"
    shutil.copytree(USER / "pkgs", pkgs)
    shutil.copytree(USER / "myconf", conf)
    monkeypatch.syspath_prepend(str(pkgs))  # this process checks the stamp and the cells as the sweep's would
    env = {"PYTHONPATH": os.pathsep.join(filter(None, [str(pkgs), os.environ.get("PYTHONPATH")]))}
    argv = [
        "-m",
        "--config-dir",
        str(conf),
        "policy=mine,fifo",
        "num_jobs=40",
        "load=2",
        f"results_dir={tmp_path / 'r'}",
        "sweep_name=u",
        "hydra/launcher=basic",
    ]  # the cells in the sweep's own process, one after another: no workers to start
    sweep = tmp_path / "r" / "sweeps" / "u"
    mine, fifo = "load=2,num_jobs=40,policy=mine", "load=2,num_jobs=40,policy=fifo"

    def sweep_again() -> str:
        proc = run_py(*argv, env=env, timeout=600)
        assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
        return proc.stdout

    def avg_jct(cell: str) -> float:
        return json.loads((sweep / cell / "summary.json").read_text())["avg_jct_s"]

    first = sweep_again()
    assert statuses(first) == {mine: "ran", fifo: "ran"}
    record = json.loads((sweep / mine / "provenance.json").read_text())
    assert {"mypol.py", "myhelp.py", "fairsim/policies/queues.py"} <= set(record["code_files"])
    assert record["code_folders"] == {str(pkgs): {"files": ["myhelp.py", "mypol.py"], "git": None}}
    preset_digest = hashlib.sha256((conf / "policy" / "mine.yaml").read_bytes()).hexdigest()
    assert record["config_files"][str(conf)] == {"policy/mine.yaml": preset_digest}
    assert "mypol.py" not in json.loads((sweep / fifo / "provenance.json").read_text())["code_files"]
    assert avg_jct(mine) == avg_jct(fifo)  # arrival order, fastest type first: FIFO's own rule
    assert why_not_fresh(sweep, argv[1:]) == (None, 2)

    edit(pkgs / "mypol.py", 'ORDER = "fifo"', 'ORDER = "lifo"')
    assert why_not_fresh(sweep, argv[1:]) == ("mypol.py changed", 0)
    second = sweep_again()
    assert statuses(second) == {mine: "ran", fifo: "skipped"}
    assert f"{mine}: recomputing: the simulating code changed since this cell ran (mypol.py)" in second
    assert avg_jct(mine) != avg_jct(fifo)

    edit(pkgs / "myhelp.py", "in arrival order", "in arrival order (an edit)")  # the check a rerun makes first
    assert provenance.why_folder_stale(sweep / mine) == "the simulating code changed since this cell ran (myhelp.py)"
    assert provenance.why_folder_stale(sweep / fifo) is None

    edit(conf / "policy" / "mine.yaml", "backfill: true", "backfill: false")  # a user preset edit
    assert why_not_fresh(sweep, argv[1:]) == ("the config folders or a config file in them changed", 0)
    third = sweep_again()
    assert statuses(third) == {mine: "ran", fifo: "skipped"}
    assert f"{mine}: recomputing: " in third
    assert why_not_fresh(sweep, argv[1:]) == (None, 2)  # stamped again: a rerun would not start


@pytest.mark.slow
def test_the_digest_covers_every_module_a_run_really_imports(tmp_path, monkeypatch):
    """In a fresh process, a run of the user's policy imports no simulating module that its
    record misses, and records the very set this long-lived process computes for its config.
    Not counted: what composing the config imported (Hydra's plugins, its launchers), and
    fairsim.data, a package imported only to find its data files (importlib.resources), empty."""
    import subprocess

    pkgs, conf = tmp_path / "pkgs", tmp_path / "myconf"
    shutil.copytree(USER / "pkgs", pkgs)
    shutil.copytree(USER / "myconf", conf)
    script = f"""
import json, os, pathlib, sys
from fairsim.experiment import provenance
from fairsim.experiment.compose import compose_config
cfg = compose_config(["hydra.searchpath=[file://{conf}]", "policy=mine", "num_jobs=10"])
before = set(sys.modules)
from fairsim.experiment.single import run_config
out = run_config(cfg)
imported = set()
for name in sorted(set(sys.modules) - before):
    spec = getattr(sys.modules[name], "__spec__", None)
    origin = os.path.realpath(spec.origin) if spec is not None and spec.has_location and spec.origin else None
    if origin and provenance._simulating(name) and provenance._covered(origin):
        imported.add(provenance.record_name(name, pathlib.Path(origin), spec.submodule_search_locations is not None)[0])
print(json.dumps({{"imported": sorted(imported), "recorded": sorted(out.provenance["code_files"])}}))
"""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(pkgs), os.environ.get("PYTHONPATH")]))}
    proc = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, env=env, cwd=tmp_path, timeout=300
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    fresh = json.loads(proc.stdout.strip().splitlines()[-1])
    assert {"mypol.py", "myhelp.py", "fairsim/policies/queues.py", "fairsim/sim/engine.py"} <= set(fresh["imported"])
    assert (ROOT / "fairsim" / "data" / "__init__.py").read_text().strip() == ""
    missed = set(fresh["imported"]) - set(fresh["recorded"]) - {"fairsim/data/__init__.py"}
    assert not missed
    monkeypatch.syspath_prepend(str(pkgs))
    assert sorted(provenance.code_files({"policy": {"_target_": "mypol.MyPolicy"}})) == fresh["recorded"]
