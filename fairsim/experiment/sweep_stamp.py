"""A sweep's freshness stamp: lets a rerun of an unchanged, fully fresh sweep skip starting it.

When a multirun ends with every cell of its grid complete and fresh and logged to MLflow, the
sweep callback writes ``<sweep>/.fresh.<key>.json`` (``key``: a digest of the grid's
overrides). It records the union of the cells' simulating source files and input files with
their digests, a digest of conf/, and the size and modification time of every cell's result
files. A later caller (``python -m fairsim.paper.reproduce``) asks ``why_not_fresh``: while all
of these are unchanged, each cell would be found complete and fresh again (its code digest
covers only recorded files, its config comes from the same conf/ and overrides), so starting
Hydra, its workers and the per-cell checks would only confirm it. Anything changed, or no
stamp, and the sweep runs as usual; its own per-cell checks decide what to recompute.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Iterable

from fairsim.experiment import provenance
from fairsim.experiment.compose import CONF_DIR
from fairsim.experiment.run_folder import CONFIG, JOBS, PROVENANCE, RESULTS, SUMMARY
from fairsim.files import atomic_write, file_digest

WATCHED = (SUMMARY, PROVENANCE, CONFIG, JOBS)  # a cell's files whose change must void the stamp


def grid_overrides(overrides: Iterable[str]) -> list[str]:
    """The overrides that define a grid: the command line's, without where results go."""
    return sorted(o for o in map(str, overrides) if not o.startswith(("results_dir=", "hydra.", "-")))


def stamp_path(sweep_dir: Path, overrides: Iterable[str]) -> Path:
    key = hashlib.sha256("\n".join(grid_overrides(overrides)).encode()).hexdigest()[:16]
    return Path(sweep_dir) / f".fresh.{key}.json"


def tree_digest(base: Path, paths: Iterable[Path]) -> str:
    """One SHA-256 over (path relative to ``base``, file digest) pairs in path order."""
    digest = hashlib.sha256()
    for path in sorted(paths):
        digest.update(path.relative_to(base).as_posix().encode() + b"\0" + file_digest(path).encode() + b"\n")
    return digest.hexdigest()


def conf_digest() -> str:
    return tree_digest(CONF_DIR, (p for p in CONF_DIR.rglob("*") if p.is_file() and "__pycache__" not in p.parts))


def signature(path: Path) -> list[int] | None:
    """A file's [size, mtime_ns], or None when it is not there: enough to see it was rewritten."""
    try:
        stat = path.stat()
    except OSError:
        return None
    return [stat.st_size, stat.st_mtime_ns]


def write_stamp(sweep_dir: Path, overrides: Iterable[str], cells: Iterable[str]) -> Path | None:
    """Stamp the grid whose cells (folder names) are all complete, fresh and logged. None (and
    no stamp) when a cell has no provenance record, or when two cells disagree on a file's
    digest: a file changed while the sweep ran, so one of them is stale whatever the tree holds."""
    sweep_dir = Path(sweep_dir)
    path = stamp_path(sweep_dir, overrides)
    code: dict[str, str] = {}
    inputs: dict[str, str] = {}
    files = {}
    for name in sorted(cells):
        record = provenance.read(sweep_dir / name)
        if (record is None or not isinstance(record.get("code_files"), dict)
                or not _merged(code, record["code_files"]) or not _merged(inputs, record.get("inputs") or {})):
            path.unlink(missing_ok=True)
            return None
        files[name] = {f: signature(sweep_dir / name / f) for f in WATCHED}
    stamp = {"overrides": grid_overrides(overrides), "conf": conf_digest(), "code_files": code, "inputs": inputs,
             "cells": files, RESULTS: signature(sweep_dir / RESULTS)}
    atomic_write(path, lambda p: p.write_text(json.dumps(stamp, sort_keys=True) + "\n"))
    return path


def _merged(union: dict[str, str], digests: dict[str, str]) -> bool:
    """Add ``digests`` to ``union``; False if a file already there has another digest."""
    if any(union.get(name, digest) != digest for name, digest in digests.items()):
        return False
    union.update(digests)
    return True


def void_stamps(sweep_dir: Path) -> None:
    """Remove every stamp of the sweep (a cell is about to change)."""
    for path in Path(sweep_dir).glob(".fresh.*.json"):
        path.unlink(missing_ok=True)


def why_not_fresh(sweep_dir: Path, overrides: Iterable[str]) -> tuple[str | None, int]:
    """(None, cells) if the grid is as its stamp says, else (why not, 0)."""
    sweep_dir = Path(sweep_dir)
    path = stamp_path(sweep_dir, overrides)
    try:
        stamp = json.loads(path.read_text())
    except (OSError, ValueError):
        return "no freshness stamp", 0
    if stamp.get("overrides") != grid_overrides(overrides):
        return "its stamp is for other overrides", 0
    if stamp.get("conf") != conf_digest():
        return "conf/ changed", 0
    for name, digest in sorted((stamp.get("code_files") or {}).items()):
        file = provenance.BASE / name
        if not file.is_file() or file_digest(file) != digest:
            return f"{name} changed", 0
    for name, digest in sorted((stamp.get("inputs") or {}).items()):
        file = provenance.input_path(name)
        if not file.is_file() or file_digest(file) != digest:
            return f"input {name} changed", 0
    if signature(sweep_dir / RESULTS) != stamp.get(RESULTS):
        return f"{RESULTS} changed", 0
    for name, files in (stamp.get("cells") or {}).items():
        for file, saved in files.items():
            if signature(sweep_dir / name / file) != saved:
                return f"cell {name} changed", 0
    return None, len(stamp.get("cells") or {})
