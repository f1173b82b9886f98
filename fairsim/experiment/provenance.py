"""Where a run's numbers came from: the code, the input files and the environment that made them.

Every run folder holds ``provenance.json`` (written before ``summary.json``):
    fairsim_version, git {commit, dirty} (null outside a checkout),
    code_digest + code_files  the simulating source files and one SHA-256 over them,
    inputs                    every data file the run read -> its SHA-256,
    python, packages, platform, host, user, started_at, finished_at (UTC, ISO 8601).

The code digest covers what can change a run's numbers: the source files of every fairsim module
that the run's builder (``fairsim.experiment.single``) imports, and the modules its config names
(its policy's ``_target_`` classes, its job-log format's reader, its node-list format), followed
through the import statements anywhere in each file (so imports inside functions count). It
stops at the rest of ``fairsim.experiment`` (naming files, printing, sweeps, MLflow), which
cannot change a number. A policy's digest therefore covers the engine, workload, cluster,
metrics, fairness reference and solvers, plus its own module and what it imports: changing
FFT's module leaves Gavel's cells fresh, and changing openb's reader leaves every cell fresh
but openb's. The file bytes are digested as they are, comments
included: the same rule as joblib.Memory's, simple to check by hand.

A complete cell is *stale* when the code digest its config would get now, or the digest of any
input file it read, differs from its record; a cell without a record predates provenance and is
stale too. The runner recomputes stale cells (``reuse_stale=true`` keeps them, marked).
"""

from __future__ import annotations

import ast
import datetime as dt
import functools
import getpass
import hashlib
import json
import platform
import socket
import subprocess
import sys
from importlib import metadata
from pathlib import Path
from typing import Any, Iterable, Mapping

from fairsim.experiment.run_folder import CONFIG, PROVENANCE
from fairsim.files import file_digest

PACKAGE_DIR = Path(__file__).resolve().parents[1]  # .../fairsim
BASE = PACKAGE_DIR.parent  # names are relative to this: fairsim/policies/fft.py, fairsim/data/gpu_specs.csv
BUILDER = "fairsim.experiment.single"
# the experiment modules that build a run's parts; the rest of fairsim.experiment only names,
# prints, collects and logs, and a change there cannot move a number
BUILDING = {"fairsim.experiment.single", "fairsim.experiment.fluid_cache"}
PACKAGES = ("numpy", "scipy", "highspy", "pandas", "pyarrow", "hydra-core", "omegaconf", "joblib", "matplotlib", "mlflow")


# ---- code --------------------------------------------------------------------------------------

def _module_file(name: str) -> Path | None:
    rel = Path(*name.split("."))
    for path in (BASE / rel.with_suffix(".py"), BASE / rel / "__init__.py"):
        if path.is_file():
            return path
    return None


def _followed(name: str) -> bool:
    return name.startswith("fairsim") and (not name.startswith("fairsim.experiment") or name in BUILDING)


def _imports(path: Path) -> set[str]:
    """The fairsim modules a file imports anywhere (``from a import b`` counts a.b when b is a module)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_bytes(), filename=str(path))):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.add(node.module)
            found.update(f"{node.module}.{a.name}" for a in node.names if _module_file(f"{node.module}.{a.name}"))
    return {n for n in found if n.split(".")[0] == "fairsim"}


@functools.lru_cache(maxsize=64)
def _closure(roots: tuple[str, ...]) -> tuple[Path, ...]:
    files: set[Path] = set()
    todo = list(roots)
    seen: set[str] = set()
    while todo:
        name = todo.pop()
        if name in seen or not _followed(name):
            continue
        seen.add(name)
        parts = name.split(".")
        todo += [".".join(parts[:i]) for i in range(1, len(parts))]  # importing a.b.c runs a and a.b too
        path = _module_file(name)
        if path is not None:
            files.add(path)
            todo += sorted(_imports(path))
    return tuple(sorted(files))


def policy_targets(policy_cfg: Mapping[str, Any] | None) -> tuple[str, ...]:
    """The modules of every ``_target_`` class in a policy's config (its own, its mechanism's)."""
    out: set[str] = set()

    def walk(node: Any) -> None:
        if isinstance(node, Mapping):
            target = node.get("_target_")
            if isinstance(target, str) and "." in target:
                out.add(target.rsplit(".", 1)[0])
            for value in node.values():
                walk(value)
        elif isinstance(node, (list, tuple)):
            for value in node:
                walk(value)

    walk(policy_cfg)
    return tuple(sorted(out))


SECTIONS = ("policy", "workload", "cluster")  # the config sections that name simulating modules


def sections(cfg: Mapping[str, Any]) -> dict:
    """The parts of a composed config the code digest depends on, resolved to plain data."""
    from omegaconf import DictConfig, OmegaConf

    pick = {k: cfg[k] for k in SECTIONS if k in cfg}
    return {k: OmegaConf.to_container(v, resolve=True) if isinstance(v, DictConfig) else v for k, v in pick.items()}


def run_targets(run_cfg: Mapping[str, Any] | None) -> tuple[str, ...]:
    """The modules a run's config names: its policy's ``_target_`` classes, and the format
    modules its workload and cluster are read with (loaded by name, so no import names them)."""
    from fairsim.workload.formats.clusters import node_module
    from fairsim.workload.jobs_log import reader_module

    run_cfg = run_cfg or {}
    named = [reader_module(run_cfg.get("workload") or {}), node_module(run_cfg.get("cluster") or {})]
    return tuple(sorted({*policy_targets(run_cfg.get("policy")), *(m for m in named if m)}))


def code_files(run_cfg: Mapping[str, Any] | None) -> dict[str, str]:
    """The simulating source files of a run with this config (its ``policy``, ``workload`` and
    ``cluster`` sections; named relative to the package's parent) -> their SHA-256."""
    return {p.relative_to(BASE).as_posix(): file_digest(p) for p in _closure((BUILDER, *run_targets(run_cfg)))}


def code_digest(run_cfg: Mapping[str, Any] | None) -> str:
    return digest_of_files(code_files(run_cfg))


def digest_of_files(files: Mapping[str, str]) -> str:
    """One SHA-256 over (name, file digest) pairs in name order."""
    digest = hashlib.sha256()
    for name in sorted(files):
        digest.update(f"{name}\0{files[name]}\n".encode())
    return digest.hexdigest()


# ---- inputs ------------------------------------------------------------------------------------

def input_name(path: Path) -> str:
    """How a record names an input: relative to the package's parent (shipped data: fairsim/data/...),
    else to the working directory, else absolute."""
    path = Path(path).resolve()
    for base in (BASE, Path.cwd().resolve()):
        if path.is_relative_to(base):
            return path.relative_to(base).as_posix()
    return path.as_posix()


def input_path(name: str) -> Path:
    """The file a recorded input name points at now (the inverse of ``input_name``)."""
    path = Path(name)
    if path.is_absolute():
        return path
    return BASE / path if name.split("/")[0] == PACKAGE_DIR.name else Path.cwd() / path


def input_digests(paths: Iterable[Path]) -> dict[str, str]:
    return {input_name(p): file_digest(p) for p in sorted(set(map(Path, paths)), key=input_name)}


# ---- environment -------------------------------------------------------------------------------

@functools.lru_cache(maxsize=1)
def git_state() -> dict | None:
    """{commit, dirty} of the checkout fairsim runs from; None when it is not a git checkout."""
    def git(*args: str) -> str:
        return subprocess.run(["git", "-C", str(BASE), *args], capture_output=True, text=True, check=True, timeout=30).stdout.strip()

    try:
        if Path(git("rev-parse", "--show-toplevel")).resolve() != BASE:
            return None  # fairsim is installed inside some other repository
        return {"commit": git("rev-parse", "HEAD"), "dirty": bool(git("status", "--porcelain", "--untracked-files=no"))}
    except (OSError, subprocess.SubprocessError):
        return None


@functools.lru_cache(maxsize=1)
def environment() -> dict:
    import fairsim

    def version(name: str) -> str | None:
        try:
            return metadata.version(name)
        except metadata.PackageNotFoundError:
            return None

    try:
        user = getpass.getuser()
    except (KeyError, OSError):
        user = None
    return {"fairsim_version": fairsim.__version__, "git": git_state(), "python": platform.python_version(),
            "python_implementation": platform.python_implementation(), "packages": {p: version(p) for p in PACKAGES},
            "platform": platform.platform(), "host": socket.gethostname(), "user": user}


def now() -> str:
    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="milliseconds")


def record(run_cfg: Mapping[str, Any] | None, inputs: Iterable[Path], started_at: str, finished_at: str) -> dict:
    """A run's provenance record."""
    files = code_files(run_cfg)
    return {**environment(), "code_digest": digest_of_files(files), "code_files": files,
            "inputs": input_digests(inputs), "started_at": started_at, "finished_at": finished_at,
            "argv": [Path(sys.argv[0]).name, *sys.argv[1:]] if sys.argv and sys.argv[0] else []}


# ---- staleness ---------------------------------------------------------------------------------

def read(folder: Path) -> dict | None:
    """The folder's record, or None when it has none (or an unreadable one)."""
    try:
        data = json.loads((Path(folder) / PROVENANCE).read_text())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def why_stale(folder: Path, run_cfg: Mapping[str, Any] | None, saved: dict | None = None) -> str | None:
    """None if the run in ``folder`` came from the code and inputs a run with this config would
    use now, else why not (one line)."""
    saved = read(folder) if saved is None else saved
    if saved is None:
        return f"it has no {PROVENANCE} (made before runs recorded their provenance)"
    if saved.get("code_digest") != code_digest(run_cfg):
        changed = _changed_files(saved, run_cfg)
        return "the simulating code changed since this cell ran" + (f" ({changed})" if changed else "")
    for name, digest in sorted((saved.get("inputs") or {}).items()):
        path = input_path(name)
        if not path.is_file():
            return f"its input file {name} is gone"
        if file_digest(path) != digest:
            return f"its input file {name} changed since this cell ran"
    return None


def why_folder_stale(folder: Path) -> str | None:
    """``why_stale`` for a run folder, with the config its saved config.yaml holds."""
    import yaml

    try:
        cfg = yaml.safe_load((Path(folder) / CONFIG).read_text()) or {}
    except (OSError, yaml.YAMLError):
        cfg = {}
    return why_stale(folder, cfg if isinstance(cfg, dict) else {})


def _changed_files(saved: dict, run_cfg: Mapping[str, Any] | None) -> str:
    """Which files differ, briefly: 'fairsim/policies/fft.py' or 'fairsim/sim/engine.py and 3 more'."""
    before, current = saved.get("code_files") or {}, code_files(run_cfg)
    if not isinstance(before, dict):
        return ""
    changed = sorted(n for n in set(before) | set(current) if before.get(n) != current.get(n))
    return changed[0] + (f" and {len(changed) - 1} more" if len(changed) > 1 else "") if changed else ""
