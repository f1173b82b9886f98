"""Where a run's numbers came from: the code, the config files, the input files and the
environment that made them.

Every run folder holds ``provenance.json`` (written before ``summary.json``):
    fairsim_version, git      the repository's {commit, dirty, changed, untracked} (null outside
                              a checkout): dirty when a tracked file changed or a file is
                              untracked (ignored files aside), with how many of each,
    code_digest + code_files  the simulating source files and one SHA-256 over them,
    code_folders              the folders (sys.path entries) outside the repository that
                              simulating files came from: their files and that folder's own git
                              state (null outside a checkout),
    config_files              every config file the composition read, by search-path folder
                              (``conf``, a user folder, ``pkg://package``) -> its SHA-256, and
    config_search_path        the folders Hydra searched, in its order (both null when the
                              config was not composed by ``python run.py``),
    inputs                    every data file the run read -> its SHA-256,
    python, packages, platform, host, user, started_at, finished_at (UTC, ISO 8601),
    argv                      the command line: a sweep's cell records the sweep's (``ARGV_ENV``),
                              wherever it ran (a Dask or Slurm worker has a command of its own).

The code digest covers every module a run imports that is neither in the standard library nor
in an installed distribution, wherever it lives: fairsim's own, a policy of the user's on
PYTHONPATH, its helpers, and every fairsim module they import. They are found from the run's
roots -- its builder (``fairsim.experiment.single``) and the modules its config names (its
policy's ``_target_`` classes, its job-log format's reader, its node-list format) -- through the
import statements anywhere in each file (inside functions too; ``from a import b`` counts a.b
when it is a module; relative imports and ``importlib.import_module("a.literal")`` too), each
name resolved as ``import`` would resolve it now: the import system's own finders over
sys.path, without importing anything. The file set therefore follows from the config and the
files on disk alone, never from what a process happened to import before (a sweep reuses its
worker processes). A module imported by a name computed while the run runs
(``import_module(name)`` of a variable) is not seen: an import statement makes it count. It
stops at the rest of ``fairsim.experiment`` (naming files, printing, sweeps, MLflow), which
cannot change a number. A policy's digest so covers the engine,
workload, cluster, metrics, fairness reference and solvers, plus its own module and what it
imports: changing FFT's module leaves Gavel's cells fresh, and changing openb's reader leaves
every cell fresh but openb's. The file bytes are digested as they are, comments included: the
same rule as joblib.Memory's, simple to check by hand. Files in the repository are named
relative to it (``fairsim/policies/fft.py``); others relative to the sys.path folder they were
found in (``mypol.py``, ``mylib/order.py``), so a record reads the same wherever that folder is,
and ``code_folders`` says where it was.

A complete cell is *stale* when the code digest its config would get now, or the digest of any
input file it read, differs from its record; a cell without a record predates provenance and is
stale too, and so is a cell whose policy module can no longer be imported. The check needs no
run: the saved config names the roots, and a module is looked for on sys.path, then in the
folders the record names (a later process without the run's PYTHONPATH still finds it). The
runner recomputes stale cells (``reuse_stale=true`` keeps them, marked). A changed config file
shows in the cell's composed config, which the cell's identity check compares
(fairsim/experiment/run_folder.py); ``config_files`` says which files those were.
"""

from __future__ import annotations

import ast
import datetime as dt
import functools
import getpass
import hashlib
import importlib.util
import json
import os
import platform
import site
import socket
import subprocess
import sys
import sysconfig
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from importlib import metadata
from importlib.machinery import ModuleSpec, PathFinder
from pathlib import Path
from typing import TYPE_CHECKING, Any

from fairsim import files
from fairsim.experiment.run_folder import CONFIG, PROVENANCE
from fairsim.files import file_digest

if TYPE_CHECKING:
    from fairsim.experiment.cli import Folder

ARGV_ENV = "FAIRSIM_SWEEP_ARGV"  # a sweep's command line, JSON (set in each cell's process by SweepCallback)
PACKAGE_DIR = Path(__file__).resolve().parents[1]  # .../fairsim
BASE = (
    files.REPOSITORY
)  # the repository: names are relative to it (fairsim/policies/fft.py, fairsim/data/gpu_specs.csv)
BUILDER = "fairsim.experiment.single"
# the experiment modules that build a run's parts; the rest of fairsim.experiment only names,
# prints, collects and logs, and a change there cannot move a number
BUILDING = {"fairsim.experiment.single", "fairsim.experiment.fluid_cache"}
PACKAGES = (
    "numpy",
    "scipy",
    "highspy",
    "pandas",
    "pyarrow",
    "hydra-core",
    "omegaconf",
    "joblib",
    "matplotlib",
    "mlflow",
)


# ---- code --------------------------------------------------------------------------------------


@dataclass
class Code:
    """The simulating source files of a run: ``files`` (record name -> path), ``folders`` (a
    sys.path folder outside the repository -> the names of its files) and ``missing`` (modules
    an import statement or the config names that resolve to nothing)."""

    files: dict[str, Path] = field(default_factory=dict)
    folders: dict[str, list[str]] = field(default_factory=dict)
    missing: set[str] = field(default_factory=set)

    def digests(self) -> dict[str, str]:
        return {name: file_digest(path) for name, path in sorted(self.files.items())}


def _simulating(module: str) -> bool:
    return not (module == "fairsim.experiment" or module.startswith("fairsim.experiment.")) or module in BUILDING


@functools.lru_cache(maxsize=1)
def _installed_folders() -> tuple[str, ...]:
    """The standard library's and the installed distributions' folders, this interpreter's (a
    virtual environment's) and its base installation's."""
    bases = {
        "base": sys.base_prefix,
        "platbase": sys.base_exec_prefix,
        "installed_base": sys.base_prefix,
        "installed_platbase": sys.base_exec_prefix,
    }
    folders = {
        paths[key]
        for paths in (sysconfig.get_paths(), sysconfig.get_paths(vars=bases))
        for key in ("stdlib", "platstdlib", "purelib", "platlib")
    }
    folders.update(site.getsitepackages() if hasattr(site, "getsitepackages") else [])
    folders.add(site.getusersitepackages())
    return tuple(sorted({os.path.realpath(f) for f in folders}))


def _covered(path: str) -> bool:
    """A file (resolved) the code digest covers: fairsim's own wherever it is installed, and
    anything outside the standard library and the installed distributions."""
    return _inside(path, str(PACKAGE_DIR)) or not any(_inside(path, f) for f in _installed_folders())


def _inside(path: str, folder: str) -> bool:
    return path.startswith(folder) and path[len(folder) : len(folder) + 1] in ("", os.sep)


def _find_spec(name: str, path: list[str] | None) -> ModuleSpec | None:
    """The spec ``import`` would find for ``name`` (a top-level name when ``path`` is None, else
    a submodule in its parent's ``path``): the finders of sys.meta_path in order, an editable
    install's included. Finding executes no module code."""
    for finder in sys.meta_path:
        find = getattr(finder, "find_spec", None)
        if find is None:
            continue
        try:
            spec = find(name, path)
        except (ImportError, ValueError, OSError):
            continue
        if spec is not None:
            return spec
    return None


@functools.lru_cache(maxsize=8192)
def _realpath(path: str) -> str:
    """A module file's real path, once per process (links are resolved so a file is named by
    where it is; resolving every module's path every run costs more than the rest of the search)."""
    return os.path.realpath(path)


class _Finder:
    """Module names -> specs and source files for one closure, memoized: a top-level name
    through the import system's finders over sys.path, else in ``extra`` folders; a submodule in
    its parent's locations (the parent is found, not imported, so a package that rewrites its
    own ``__path__`` on import is not followed there)."""

    def __init__(self, extra: Iterable[str] = ()) -> None:
        self.extra = list(extra)
        self.specs: dict[str, ModuleSpec | None] = {}
        self.origins: dict[str, str | None] = {}
        self.outside: dict[str, bool] = {}

    def find(self, name: str) -> ModuleSpec | None:
        if name not in self.specs:
            parent = name.rpartition(".")[0]
            if parent:
                above = self.find(parent)
                where = list(above.submodule_search_locations or []) if above is not None else []
                self.specs[name] = _find_spec(name, where) if where else None
            else:
                self.specs[name] = _find_spec(name, None) or (
                    PathFinder.find_spec(name, self.extra) if self.extra else None
                )
        return self.specs[name]

    def origin(self, name: str) -> str | None:
        """The module's file (resolved); None when it has none (a namespace or built-in module) or is not found."""
        if name not in self.origins:
            spec = self.find(name)
            has_file = spec is not None and spec.has_location and spec.origin
            self.origins[name] = _realpath(spec.origin) if has_file else None
        return self.origins[name]

    def installed(self, name: str) -> bool:
        """Whether ``name`` or a package above it is a file of the standard library or of an
        installed distribution (then it is no simulating code, and neither is anything below it)."""
        if name not in self.outside:
            parent, origin = name.rpartition(".")[0], self.origin(name)
            self.outside[name] = (bool(parent) and self.installed(parent)) or (
                origin is not None and not _covered(origin)
            )
        return self.outside[name]


def record_name(module: str, path: Path, package: bool) -> tuple[str, str | None]:
    """(how a record names a module's file, the sys.path folder it came from): relative to the
    repository inside it (None: no folder), else relative to the folder it was found in,
    where its dotted name starts (mylib/order.py). A file whose place does not match its name
    (a custom finder) is named by its absolute path."""
    if path.is_relative_to(BASE):
        return path.relative_to(BASE).as_posix(), None
    parts = module.split(".")
    depth = len(parts) if package else len(parts) - 1
    folder = path.parents[depth] if depth < len(path.parents) else path.parent
    rel = path.relative_to(folder)
    stem = [] if package else [path.name.split(".")[0]]  # mod.py, mod.cpython-311-x86_64-linux-gnu.so
    if list(rel.parts[:depth]) + stem != parts[:depth] + ([] if package else parts[-1:]):
        return path.as_posix(), str(path.parent)
    return rel.as_posix(), str(folder)


@functools.lru_cache(maxsize=4096)
def _statements(path: str, size: int, mtime_ns: int) -> tuple[tuple[int, str | None, tuple[str, ...]], ...]:
    """A file's imports as (level, module, names): ``import a.b`` -> (0, 'a.b', ()), ``from .x
    import y`` -> (1, 'x', ('y',)), ``importlib.import_module('a.b')`` with a literal name ->
    (0, 'a.b', ()). Anywhere in the file; memoized per (path, size, mtime). A file that does
    not parse gives none (its digest still counts)."""
    try:
        source = Path(path).read_bytes()
        tree = ast.parse(source, filename=path)
    except (SyntaxError, ValueError, OSError):
        return ()
    found = []
    # import statements sit in statement bodies only; expressions are walked only in a file that
    # names import_module or __import__ (walking every node of every file would double the cost)
    by_name = b"import_module" in source or b"__import__" in source
    for node in ast.walk(tree) if by_name else _statements_in(tree):
        if isinstance(node, ast.Import):
            found += [(0, a.name, ()) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            found.append((node.level, node.module, tuple(a.name for a in node.names)))
        elif (
            isinstance(node, ast.Call)
            and _names_import_module(node.func)
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
            and not node.args[0].value.startswith(".")
        ):
            found.append((0, node.args[0].value, ()))
    return tuple(found)


def _statements_in(tree: ast.AST) -> Iterator[ast.AST]:
    """Every statement of a module, however deeply nested in blocks, functions and classes."""
    todo = [tree]
    while todo:
        node = todo.pop()
        yield node
        for block in ("body", "orelse", "finalbody", "handlers", "cases"):
            todo += getattr(node, block, None) or []


def _names_import_module(func: ast.expr) -> bool:
    return (isinstance(func, ast.Attribute) and func.attr == "import_module") or (
        isinstance(func, ast.Name) and func.id in ("import_module", "__import__")
    )


def _imports(module: str, package: bool, path: Path) -> list[tuple[str, bool]]:
    """(module name, required) for each import of ``module``'s file: required for what an
    import statement names, not for ``b`` of ``from a import b`` (a module or just a name in a)."""
    stat = path.stat()
    here = module if package else module.rpartition(".")[0]
    out = []
    for level, name, names in _statements(str(path), stat.st_size, stat.st_mtime_ns):
        if level:
            try:
                name = importlib.util.resolve_name("." * level + (name or ""), here)
            except (ImportError, ValueError):
                continue
        out.append((name, True))
        out += [(f"{name}.{n}", False) for n in names if n != "*"]
    return out


def closure(roots: Iterable[str], extra: Iterable[str] = ()) -> Code:
    """The simulating source files of ``roots`` and of every module they import, transitively
    (see the module's docstring); modules are looked for on sys.path, then in ``extra`` folders."""
    finder, code, seen = _Finder(extra), Code(), set()
    todo = [(name, True) for name in sorted(set(roots), reverse=True)]
    while todo:
        name, required = todo.pop()
        parent = name.rpartition(".")[0]
        if name in seen or not _simulating(name) or (parent and finder.installed(parent)):
            continue
        spec = finder.find(name)
        if spec is None:
            if required:
                code.missing.add(name)
            continue
        seen.add(name)
        parts = name.split(".")
        todo += [(".".join(parts[:i]), True) for i in range(1, len(parts))]  # importing a.b.c runs a and a.b too
        origin = finder.origin(name)
        if origin is None or finder.installed(name):
            continue
        path = Path(origin)
        package = spec.submodule_search_locations is not None
        shown, folder = record_name(name, path, package)
        code.files[shown] = path
        if folder is not None:
            code.folders.setdefault(folder, []).append(shown)
        if path.suffix == ".py":
            todo += _imports(name, package, path)
    for names in code.folders.values():
        names.sort()
    return code


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


def run_code(run_cfg: Mapping[str, Any] | None, extra: Iterable[str] = ()) -> Code:
    """The simulating source files of a run with this config (its ``policy``, ``workload`` and
    ``cluster`` sections)."""
    return closure((BUILDER, *run_targets(run_cfg)), extra)


def code_files(run_cfg: Mapping[str, Any] | None) -> dict[str, str]:
    """The simulating source files of a run with this config -> their SHA-256."""
    return run_code(run_cfg).digests()


def code_digest(run_cfg: Mapping[str, Any] | None) -> str:
    return digest_of_files(code_files(run_cfg))


def digest_of_files(files: Mapping[str, str]) -> str:
    """One SHA-256 over (name, file digest) pairs in name order."""
    digest = hashlib.sha256()
    for name in sorted(files):
        digest.update(f"{name}\0{files[name]}\n".encode())
    return digest.hexdigest()


def module_of(name: str) -> str:
    """The module a recorded file name stands for (fairsim/policies/fft.py -> fairsim.policies.fft,
    mylib/__init__.py -> mylib)."""
    parts = name[: -len(".py")].split("/") if name.endswith(".py") else name.split("/")
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def why_code_moved(files: Mapping[str, str], folders: Mapping[str, Iterable[str]]) -> str | None:
    """None if every recorded code file (name -> digest; ``folders``: where those outside the
    repository were found) is still there with that digest and is still what ``import`` of its
    module finds first, else what changed (a few words)."""
    where = {name: Path(folder) / name for folder, names in folders.items() for name in names}
    finder = _Finder()
    for name, digest in sorted(files.items()):
        path = where.get(name, BASE / name)
        if not path.is_file():
            return f"{name} is gone"
        if file_digest(path) != digest:
            return f"{name} changed"
        found = finder.origin(module_of(name))
        if found != os.path.realpath(path):
            return f"import {module_of(name)} now finds {found or 'nothing'}, not {name}"
    return None


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
    return BASE / path if name.split("/")[0] == PACKAGE_DIR.name else files.input_path(path).absolute()


def input_digests(paths: Iterable[Path]) -> dict[str, str]:
    return {input_name(p): file_digest(p) for p in sorted(set(map(Path, paths)), key=input_name)}


# ---- config files -------------------------------------------------------------------------------


def folder_name(folder: Folder) -> str:
    """How records name a config folder: relative to the repository inside it (``conf``), else
    its absolute path, or ``pkg://package``."""
    if folder.label.startswith("pkg://") or not isinstance(folder.root, Path):
        return folder.label
    return folder.root.relative_to(BASE).as_posix() if folder.root.is_relative_to(BASE) else folder.root.as_posix()


def config_record() -> tuple[dict | None, list[str] | None]:
    """(config_files, config_search_path) of the Hydra run this process is in (see the module's
    docstring); (None, None) outside one. The files are those of Hydra's defaults list for the
    run's config name and overrides (the primary config, each chosen preset, the configs their
    defaults lists pull in, an experiment preset), each found in the first search-path folder
    that has it, as Hydra finds it; Hydra's own and structured configs are not files of the run's."""
    from hydra.core.global_hydra import GlobalHydra
    from hydra.core.hydra_config import HydraConfig
    from hydra.errors import HydraException
    from hydra.types import RunMode
    from omegaconf.errors import OmegaConfBaseException

    from fairsim.experiment.cli import HYDRAS_OWN, searched_folders

    if not HydraConfig.initialized() or not GlobalHydra.instance().is_initialized():
        return None, None
    hydra = HydraConfig.get()
    folders = searched_folders(hydra.runtime.config_sources, hydras_own=True)
    overrides = [*hydra.overrides.hydra, *hydra.overrides.task]
    key = (hydra.job.config_name, tuple(o for o in overrides if _chooses(o, folders)), tuple(f.label for f in folders))
    read = _READ.get(key)
    if read is None or not read.unchanged(folders):
        try:
            defaults = (
                GlobalHydra.instance()
                .config_loader()
                .compute_defaults_list(hydra.job.config_name, overrides, RunMode.RUN)
                .defaults
            )
        except (HydraException, OmegaConfBaseException):  # a config file edited into an error while the run ran
            return None, None
        read = _READ[key] = _ConfigsRead.of(
            sorted({f"{d.config_path}.yaml" for d in defaults if d.config_path}), folders
        )
        while len(_READ) > 64:
            _READ.pop(next(iter(_READ)))
    files: dict[str, dict[str, str]] = {}
    for where, name, _, digest in read.entries:
        if folders[where].label != HYDRAS_OWN:
            files.setdefault(folder_name(folders[where]), {})[name] = digest
    return files, [folder_name(f) for f in folders if f.label != HYDRAS_OWN]


def _chooses(override: str, folders: list[Folder]) -> bool:
    """Whether an override can change the defaults list: one naming a config group
    (``policy=fifo``, ``+experiment=x``, ``hydra/launcher=local``) or Hydra's settings
    (``hydra.searchpath``); a value (``seed=1``, ``policy.backfill=false``) cannot (the defaults
    list interpolates group choices only)."""
    key = override.split("=", 1)[0].lstrip("+~")
    return key.startswith("hydra") or "/" in key or ("." not in key and any((f.root / key).is_dir() for f in folders))


@dataclass
class _ConfigsRead:
    """The config files of one defaults list: (index of the folder holding it, name, its
    signature, its digest) each. Hydra composes a sweep's cells from the same files whenever
    they choose the same presets, so a process computes the list once for them (Hydra reads
    every file of it again, a fifth of a second), and only checks the files are as they were."""

    entries: list[tuple[int, str, list[int] | None, str]]

    @classmethod
    def of(cls, names: list[str], folders: list[Folder]) -> _ConfigsRead:
        entries = []
        for name in names:
            where = next((i for i, f in enumerate(folders) if (f.root / name).is_file()), None)
            if where is not None:  # else a structured config (ConfigStore): no file
                file = folders[where].root / name
                entries.append((where, name, _signature(file), config_file_digest(file)))
        return cls(entries)

    def unchanged(self, folders: list[Folder]) -> bool:
        """Each file is still where it was, unchanged, and no earlier folder now holds its name."""
        for where, name, signature, digest in self.entries:
            file = folders[where].root / name
            if any((f.root / name).is_file() for f in folders[:where]) or not file.is_file():
                return False
            if (_signature(file) if signature is not None else config_file_digest(file)) != (signature or digest):
                return False
        return True


def _signature(file: Any) -> list[int] | None:
    """A file's [size, mtime_ns]; None for a package's resource that is no plain file."""
    if not isinstance(file, Path):
        return None
    stat = file.stat()
    return [stat.st_size, stat.st_mtime_ns]


_READ: dict[tuple, _ConfigsRead] = {}  # the defaults lists this process computed, by what decides them


def config_file_digest(file: Any) -> str:
    """SHA-256 of a config file: a path, or a package's resource."""
    return file_digest(file) if isinstance(file, Path) else hashlib.sha256(file.read_bytes()).hexdigest()


# ---- environment -------------------------------------------------------------------------------


def checkout_state(folder: Path) -> dict | None:
    """{root, commit, dirty, changed, untracked} of the git checkout holding ``folder``: dirty
    when a tracked file changed (``changed`` of them) or a file is untracked (``untracked``;
    ignored files aside); None outside a checkout (or without git)."""

    def git(*args: str) -> str:
        return subprocess.run(
            ["git", "-C", str(folder), *args], capture_output=True, text=True, check=True, timeout=30
        ).stdout

    try:
        root = git("rev-parse", "--show-toplevel").strip()
        commit = git("rev-parse", "HEAD").strip()
        status = git("status", "--porcelain", "--untracked-files=all").splitlines()
    except (OSError, subprocess.SubprocessError):
        return None
    untracked = sum(line.startswith("??") for line in status)
    return {
        "root": root,
        "commit": commit,
        "dirty": bool(status),
        "changed": len(status) - untracked,
        "untracked": untracked,
    }


@functools.lru_cache(maxsize=1)
def git_state() -> dict | None:
    """``checkout_state`` of the repository fairsim runs from (without its root: a record names
    no folder of this machine there); None when it is not a git checkout of its own. Looked at
    once per process, like the rest of the environment."""
    state = checkout_state(BASE)
    if state is None or Path(state.pop("root")).resolve() != BASE:
        return None  # fairsim is installed inside some other repository
    return state


@functools.lru_cache(maxsize=64)
def folder_git_state(folder: str) -> dict | None:
    """``checkout_state`` of a folder user code came from, once per process."""
    return checkout_state(Path(folder))


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
    return {
        "fairsim_version": fairsim.__version__,
        "git": git_state(),
        "python": platform.python_version(),
        "python_implementation": platform.python_implementation(),
        "packages": {p: version(p) for p in PACKAGES},
        "platform": platform.platform(),
        "host": socket.gethostname(),
        "user": user,
    }


def dirty(record: Mapping[str, Any] | None) -> bool | None:
    """Whether a run's code was more than a commit holds: the repository dirty, or code from a
    folder outside it that no clean checkout holds. None when unknown (no record, no checkout)."""
    record = record or {}
    outside = [f.get("git") if isinstance(f, Mapping) else None for f in (record.get("code_folders") or {}).values()]
    if any(not isinstance(g, Mapping) or g.get("dirty") is not False for g in outside):
        return True
    git = record.get("git")
    return git.get("dirty") if isinstance(git, Mapping) and isinstance(git.get("dirty"), bool) else None


def now() -> str:
    return dt.datetime.now(dt.UTC).isoformat(timespec="milliseconds")


def record(run_cfg: Mapping[str, Any] | None, inputs: Iterable[Path], started_at: str, finished_at: str) -> dict:
    """A run's provenance record."""
    code = run_code(run_cfg)
    files = code.digests()
    config_files, search_path = config_record()
    return {
        **environment(),
        "code_digest": digest_of_files(files),
        "code_files": files,
        "code_folders": {
            folder: {"files": names, "git": folder_git_state(folder)} for folder, names in sorted(code.folders.items())
        },
        "config_files": config_files,
        "config_search_path": search_path,
        "inputs": input_digests(inputs),
        "started_at": started_at,
        "finished_at": finished_at,
        "argv": command_line(),
    }


def command_line() -> list[str]:
    """The command that made the run: this process's, or in a sweep's cell the sweep's."""
    sweep = os.environ.get(ARGV_ENV)
    if sweep:
        return json.loads(sweep)
    return [Path(sys.argv[0]).name, *sys.argv[1:]] if sys.argv and sys.argv[0] else []


# ---- staleness ---------------------------------------------------------------------------------


def read(folder: Path) -> dict | None:
    """The folder's record, or None when it has none (or an unreadable one)."""
    try:
        data = json.loads((Path(folder) / PROVENANCE).read_text())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def recorded_folders(saved: Mapping[str, Any]) -> dict[str, list[str]]:
    """The record's code folders -> the names of their files ({} for a record without them)."""
    folders = saved.get("code_folders")
    if not isinstance(folders, Mapping):
        return {}
    return {
        str(f): [str(n) for n in entry.get("files") or []] for f, entry in folders.items() if isinstance(entry, Mapping)
    }


def why_stale(folder: Path, run_cfg: Mapping[str, Any] | None, saved: dict | None = None) -> str | None:
    """None if the run in ``folder`` came from the code and inputs a run with this config would
    use now, else why not (one line)."""
    saved = read(folder) if saved is None else saved
    if saved is None:
        return f"it has no {PROVENANCE} (made before runs recorded their provenance)"
    folders = recorded_folders(saved)
    code = run_code(run_cfg, extra=folders)
    gone = [m for m in run_targets(run_cfg) if m in code.missing]
    if gone:
        where = f" or in {', '.join(sorted(folders))}" if folders else ""
        return f"its module {gone[0]} can no longer be imported (not found on sys.path{where})"
    current = code.digests()
    if saved.get("code_digest") != digest_of_files(current):
        changed = _changed_files(saved, current, code.missing)
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


def _changed_files(saved: dict, current: Mapping[str, str], missing: set[str]) -> str:
    """Which files differ, briefly: 'fairsim/policies/fft.py', 'fairsim/sim/engine.py and 3 more',
    'myhelpers.py: no longer importable'."""
    before = saved.get("code_files") or {}
    if not isinstance(before, dict):
        return ""
    changed = sorted(n for n in set(before) | set(current) if before.get(n) != current.get(n))
    if not changed:
        return ""
    first = changed[0] + (
        ": no longer importable" if changed[0] not in current and module_of(changed[0]) in missing else ""
    )
    return first + (f" and {len(changed) - 1} more" if len(changed) > 1 else "")
