"""A run's folder: the names of its files, what makes a sweep cell complete, and what a cell is
-- the one definition the runner (skip or recompute), the collector (row in results.parquet or
not) and ``make verify`` share, so they never disagree about a cell.

A cell folder is complete when
- ``summary.json`` parses as a JSON object,
- ``config.yaml`` parses and names the same policy, cluster, workload and seed as the summary
  (and, for the runner, has the identity of the config the cell would run with now),
- ``jobs.parquet`` is readable whole and holds at least the jobs the summary counts.
Anything else is incomplete, with a one-line reason; the runner recomputes such a cell. A
complete cell may still be stale (made by other code or inputs: fairsim/experiment/provenance.py).

A cell's identity is its composed, resolved config without the bookkeeping keys
(``BOOKKEEPING``: where results go and how a sweep treats them), in a canonical form: keys
sorted, and a whole float equal to the integer (``load=1``, ``load=1.0`` and the default
``load: 1.0`` are one cell; they run alike). Two spellings of one config (reordered overrides,
an override that repeats a default) are one cell: a sweep keeps one folder per identity,
found through its index ``<sweep>/.cells/<identity digest>`` (the folder's name), which also
holds the identity's lock.

A cell folder is named by its overrides (Hydra's ``override_dirname``) through ``cell_name``:
``/`` escaped, a name longer than a file name may be (255 bytes) cut at an override boundary
and ended with a digest of the whole; the overrides stay in ``.hydra/overrides.yaml`` and the
values in config.yaml.
"""

from __future__ import annotations

import contextlib
import copy
import functools
import hashlib
import json
import math
import weakref
from pathlib import Path
from typing import Any

import yaml

from fairsim.files import atomic_write

SUMMARY = "summary.json"  # written last: its presence marks a complete run
CONFIG = "config.yaml"  # the resolved config the run used
JOBS = (
    "jobs.parquet"  # one row per job (a sweep's folder: every cell's jobs, with the cell's name and identity columns)
)
ROUNDS = "rounds.parquet"  # one row per round
TENANTS = "tenants.parquet"  # one row per tenant, when the jobs name tenants
SCHEDULE = "schedule.parquet"  # one row per (round, active job), with sim.record_schedule=true only
PROVENANCE = "provenance.json"  # the code, inputs and environment that made it (written before the summary)
RUN_LOG = "run.log"  # what the run printed
FAILED = "error.txt"  # a sweep cell's error, kept beside it (it has no summary)
HYDRA_DIR = ".hydra"  # Hydra's copy of the job's config and overrides, written before the run starts
RESULTS = "results.parquet"  # a sweep's folder: one row per complete cell
INDEX = ".cells"  # a sweep's folder: identity digest -> cell folder name, and the identities' locks
# a folder holding any of these is a cell (a sweep's figures/ or any other folder is not)
CELL_MARKS = (SUMMARY, CONFIG, JOBS, PROVENANCE, RUN_LOG, FAILED, HYDRA_DIR)
# summary key -> (config group, key) it must agree with, and the label the run gives a nameless entry
SUMMARY_LABELS = {"policy": ("policy", ""), "cluster": ("cluster", "custom"), "workload": ("workload", "")}
# where results go and how a sweep treats them: not part of what a cell computes
BOOKKEEPING = ("hydra", "results_dir", "sweep_name", "track", "reuse_stale")
RUNS = "runs"  # a results_dir's single runs, one folder each (conf/hydra/fairsim.yaml's run.dir)
REFUSED = "failed"  # a results_dir's single runs refused before they simulated: set aside, out of runs/
MAX_NAME_BYTES = 255  # the longest file name common file systems take (NAME_MAX)
NAME_DIGEST = 16  # hex digits of the digest that ends a shortened cell name


def canonical(value: Any) -> Any:
    """``value`` with mappings' keys sorted and whole floats as integers, recursively: equal
    for configs that differ only in spelling (1 and 1.0)."""
    if isinstance(value, dict):
        return {str(k): canonical(value[k]) for k in sorted(value, key=str)}
    if isinstance(value, (list, tuple)):
        return [canonical(v) for v in value]
    if isinstance(value, float) and math.isfinite(value) and value.is_integer():
        return int(value)
    return value


def identity(config: dict) -> dict:
    """The identity of a resolved config (as loaded from its YAML): everything but the bookkeeping keys, canonical."""
    return canonical({k: v for k, v in config.items() if k not in BOOKKEEPING})


def identity_of_text(config_yaml: str) -> dict:
    """The identity of a config given as the YAML a run saves (the same round trip as the saved one's)."""
    return identity(yaml.safe_load(config_yaml) or {})


def identity_digest(ident: dict) -> str:
    """A SHA-256 of an identity: names it in a sweep's index and in paper_figs/MANIFEST.json."""
    return hashlib.sha256(yaml.safe_dump(ident, sort_keys=True).encode()).hexdigest()


def saved_config(folder: Path) -> Any:
    """The parsed config.yaml of ``folder`` (a fresh copy; raises as reading and parsing it
    would). Parsed once per version of the file: the runner and the collector read each cell's
    several times."""
    path = Path(folder) / CONFIG
    stat = path.stat()
    return copy.deepcopy(_parsed(str(path), stat.st_ino, stat.st_size, stat.st_mtime_ns))


@functools.lru_cache(maxsize=4096)
def _parsed(path: str, inode: int, size: int, mtime_ns: int) -> Any:
    return yaml.safe_load(Path(path).read_text())


def folder_identity(folder: Path) -> dict | None:
    """The identity of the config saved in ``folder``, or None when it has no readable one."""
    try:
        saved = saved_config(folder)
    except (OSError, ValueError, yaml.YAMLError):
        return None
    return identity(saved) if isinstance(saved, dict) else None


def flatten(config: dict, prefix: str = "") -> dict[str, Any]:
    """Dotted key -> leaf value of a nested config (lists are leaves, empty mappings have none):
    ``policy.starve_h``, ``cluster.counts.T4``."""
    out: dict[str, Any] = {}
    for key, value in (config or {}).items():
        if isinstance(value, dict):
            out.update(flatten(value, f"{prefix}{key}."))
        else:
            out[f"{prefix}{key}"] = value
    return out


def differing_keys(a: dict, b: dict) -> list[str]:
    """The dotted keys whose values differ between two identities, sorted."""
    fa, fb = flatten(a), flatten(b)
    return sorted(k for k in fa.keys() | fb.keys() if fa.get(k, _MISSING) != fb.get(k, _MISSING))


_MISSING = object()


def why_incomplete(folder: Path, expected_identity: dict | None = None) -> str | None:
    """None if the cell in ``folder`` is complete, else why not (one line). ``expected_identity``
    (``identity`` of the config the cell would run with now) is compared with the saved one's when given."""
    folder = Path(folder)
    summary_file = folder / SUMMARY
    if not summary_file.is_file():
        return f"no {SUMMARY} (never finished)"
    try:
        summary = json.loads(summary_file.read_text())
    except (OSError, ValueError) as exc:
        return f"{SUMMARY} is damaged ({_short(exc)})"
    if not isinstance(summary, dict):
        return f"{SUMMARY} is damaged (not a JSON object)"
    try:
        saved = saved_config(folder)
    except FileNotFoundError:
        return f"no {CONFIG}"
    except (OSError, ValueError, yaml.YAMLError) as exc:
        return f"{CONFIG} is damaged ({_short(exc)})"
    if not isinstance(saved, dict):
        return f"{CONFIG} is damaged (not a mapping)"
    if expected_identity is not None and identity(saved) != expected_identity:
        changed = differing_keys(identity(saved), expected_identity)
        shown = ", ".join(changed[:5]) + (f" and {len(changed) - 5} more" if len(changed) > 5 else "")
        return f"the config changed since it ran ({shown} in {CONFIG} differ)"
    for key, (group, unnamed) in SUMMARY_LABELS.items():
        configured = str((saved.get(group) or {}).get("name", unnamed))
        if str(summary.get(key)) != configured:
            return f"{SUMMARY} says {key}={summary.get(key)!r} but {CONFIG} says {configured!r}"
    if summary.get("seed") != saved.get("seed"):
        return f"{SUMMARY} says seed={summary.get('seed')!r} but {CONFIG} says {saved.get('seed')!r}"
    return _jobs_problem(folder / JOBS, summary.get("num_jobs"))


def _jobs_problem(path: Path, num_jobs) -> str | None:
    import pyarrow.parquet as pq

    if not path.is_file():
        return f"no {JOBS}"
    try:
        rows = pq.read_table(path).num_rows  # whole: a damaged page fails here, not only a torn footer
    except Exception as exc:  # pyarrow raises its own ArrowInvalid / OSError subclasses
        return f"{JOBS} is unreadable ({_short(exc)})"
    if not isinstance(num_jobs, int) or rows < num_jobs:
        return f"{JOBS} has {rows} rows but {SUMMARY} counts {num_jobs!r} jobs"
    return None


# ---- a sweep's cells ----------------------------------------------------------------------------


def is_cell_folder(path: Path) -> bool:
    """A visible folder holding a run's files or Hydra's record of a job (a sweep's figures/ is not a cell)."""
    path = Path(path)
    return path.is_dir() and not path.name.startswith(".") and any((path / mark).exists() for mark in CELL_MARKS)


def cell_folders(sweep_dir: Path) -> list[Path]:
    """Every cell folder of a sweep, sorted by name."""
    return sorted(p for p in Path(sweep_dir).iterdir() if is_cell_folder(p))


def cell_name(overrides: str) -> str:
    """The folder name of a sweep cell from its overrides (Hydra's ``override_dirname``): as
    written (``default`` when there are none), ``/`` escaped as ``%2F`` so that a path value stays
    one folder, and a name over ``MAX_NAME_BYTES`` cut after the last whole override that fits,
    then ``...`` and a digest of the whole name."""
    name = (overrides or "default").replace("/", "%2F")
    raw = name.encode()
    if len(raw) <= MAX_NAME_BYTES:
        return name
    tail = "..." + hashlib.sha256(raw).hexdigest()[:NAME_DIGEST]
    head = raw[: MAX_NAME_BYTES - len(tail)].decode(errors="ignore")
    if "," in head:
        head = head[: head.rindex(",")]  # keep whole overrides readable
    return head + tail


def index_entry(sweep_dir: Path, digest: str) -> Path:
    return Path(sweep_dir) / INDEX / digest


def identity_lock(sweep_dir: Path, digest: str) -> Path:
    """The lock file of one identity: whoever holds it decides and computes that cell."""
    return Path(sweep_dir) / INDEX / f"{digest}.lock"


def folder_lock(sweep_dir: Path, name: str) -> Path:
    """The lock file of one cell folder (two identities may meet in one folder when conf/ changed between two sweeps)."""
    return Path(sweep_dir) / INDEX / f"folder-{hashlib.sha256(name.encode()).hexdigest()[:NAME_DIGEST]}.lock"


def indexed_folder(sweep_dir: Path, digest: str) -> Path | None:
    """The folder the sweep's index names for an identity, if it names one that exists."""
    try:
        name = index_entry(sweep_dir, digest).read_text().strip()
    except OSError:
        return None
    folder = Path(sweep_dir) / name
    return folder if name and is_cell_folder(folder) else None


def record_in_index(sweep_dir: Path, digest: str, folder: Path) -> None:
    """Name ``folder`` as the identity's cell (atomically; nothing written when it is already named)."""
    entry = index_entry(sweep_dir, digest)
    if indexed_folder(sweep_dir, digest) == Path(folder):
        return
    entry.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(entry, lambda p: p.write_text(Path(folder).name + "\n"))


def index_sweep(sweep_dir: Path) -> int:
    """Enter in the index every cell folder with a saved config that no entry names yet (folders
    made before the index existed), the first by name for an identity no entry names. Returns
    how many were entered."""
    sweep_dir = Path(sweep_dir)
    named = set()
    if (sweep_dir / INDEX).is_dir():
        for entry in (sweep_dir / INDEX).iterdir():
            if not entry.name.endswith(".lock") and not entry.name.startswith("."):
                named.add(entry.read_text().strip())
    count = 0
    for folder in cell_folders(sweep_dir):
        if folder.name in named:
            continue
        ident = folder_identity(folder)
        if ident is None:
            continue
        digest = identity_digest(ident)
        home = indexed_folder(sweep_dir, digest)
        if home is None or folder_identity(home) != ident:
            record_in_index(sweep_dir, digest, folder)
            count += 1
    return count


def _short(exc: BaseException) -> str:
    text = " ".join(str(exc).split()) or type(exc).__name__
    return text if len(text) <= 120 else text[:117] + "..."


def set_aside(folder: Path, results_dir: Path) -> Path:
    """Move a single run's folder that was refused before it simulated (holding only Hydra's
    record and its run.log) from ``<results_dir>/runs/`` to ``<results_dir>/failed/``, so that
    runs/ holds runs; return where it is. A folder the user named (``hydra.run.dir``) stays."""
    folder, results_dir = Path(folder), Path(results_dir)
    if folder.parent.resolve() != (results_dir / RUNS).resolve():
        return folder
    target = new_folder(results_dir / REFUSED / folder.name, first_suffix=1)  # two refusals in one second: -1
    if target is None:  # the refusal is what the user needs to see; a folder left in place costs nothing else
        return folder
    try:
        return folder.rename(target)  # onto the empty folder just made for it
    except OSError:
        with contextlib.suppress(OSError):
            target.rmdir()
        return folder


def new_folder(folder: Path, first_suffix: int = 2) -> Path | None:
    """Make ``folder``, or when it exists ``<folder>-<first_suffix>``, the next number, ...: a
    folder no one else has. ``mkdir`` is atomic, so of two processes asking for one name exactly
    one gets it. None when the folder cannot be made (a read-only or full disk)."""
    for n in range(first_suffix - 1, first_suffix + 998):
        candidate = folder if n == first_suffix - 1 else folder.with_name(f"{folder.name}-{n}")
        try:
            candidate.mkdir(parents=True)
        except FileExistsError:
            continue
        except OSError:
            return None
        return candidate
    return None


_CLAIMS: dict[int, tuple[weakref.ref, dict[str, str]]] = {}  # id of a composed config -> its ref, {asked: claimed}


def claimed(path: str, _root_: Any) -> str:
    """A single run's folder (conf/hydra/fairsim.yaml's run.dir): ``path``, made here, or
    ``path-2``, ``-3``, ... when another run holds it. Names are timed to the second, so two runs
    started in one second (two processes, or two ``fairsim.run`` calls) would otherwise write into
    one folder; ``mkdir`` is atomic, so of two runs exactly one gets each name. The same config
    resolving it again gets the same folder."""
    key = id(_root_)
    entry = _CLAIMS.get(key)
    if entry is None or entry[0]() is not _root_:
        entry = (weakref.ref(_root_, lambda _ref, key=key: _CLAIMS.pop(key, None)), {})
        _CLAIMS[key] = entry
    claims = entry[1]
    if path not in claims:  # unmade (a read-only results_dir): Hydra's own mkdir reports it in one line
        claims[path] = str(new_folder(Path(path)) or path)
    return claims[path]


def unless_default(value: Any, default: Any, prefix: str = "") -> str:
    """A part of a single run's folder name (conf/hydra/fairsim.yaml): ``<prefix><value>``, or
    nothing when the value is the default (``load=1`` and ``1.0`` alike) or null."""
    if value is None or canonical(value) == canonical(default):
        return ""
    return f"{prefix}{value}"
