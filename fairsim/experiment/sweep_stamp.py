"""A sweep's freshness stamp: lets a rerun of an unchanged, fully fresh sweep skip starting it.

When a multirun ends with every cell of its grid complete and fresh and logged to MLflow, the
sweep callback writes ``<sweep>/.fresh.<key>.json`` (``key``: a digest of the grid's
overrides). It records the union of the cells' simulating source files (with the folders those
outside the repository came from) and input files with their digests, the config search path
(``conf/``, a ``--config-dir``, ``hydra.searchpath`` entries, a SearchPathPlugin's folders)
with a digest of each folder's config files, and the size and modification time of every cell's
result files. A later caller (``python -m fairsim.paper.reproduce``) asks ``why_not_fresh``
with the same command line: while all of these are unchanged (and each source file is still
what ``import`` of its module finds), each cell would be found complete and fresh again (its
code digest covers only recorded files, its config comes from the same config files and
overrides), so starting Hydra, its workers and the per-cell checks would only confirm it.
Every config file of every folder counts, not only those the cells read: a new preset could
hide one they read or join a ``glob(*)`` sweep. Anything changed, or no stamp, and the sweep
runs as usual; its own per-cell checks decide what to recompute.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Iterator, Sequence
from importlib.resources.abc import Traversable
from pathlib import Path

from fairsim.errors import InputError
from fairsim.experiment import provenance
from fairsim.experiment.cli import Folder, config_folders, split_command_line
from fairsim.experiment.compose import CONF_DIR
from fairsim.experiment.run_folder import CONFIG, JOBS, PROVENANCE, RESULTS, SUMMARY
from fairsim.files import atomic_write, file_digest

WATCHED = (SUMMARY, PROVENANCE, CONFIG, JOBS)  # a cell's files whose change must void the stamp


def grid_overrides(overrides: Iterable[str]) -> list[str]:
    """The overrides that define a grid: the command line's (its flags aside), without where
    results go or Hydra's settings (the config folders are checked on their own)."""
    return sorted(
        o
        for o in split_command_line(list(map(str, overrides))).overrides
        if not o.lstrip("+~").startswith(("results_dir=", "hydra.", "hydra/"))
    )


def stamp_path(sweep_dir: Path, overrides: Iterable[str]) -> Path:
    key = hashlib.sha256("\n".join(grid_overrides(overrides)).encode()).hexdigest()[:16]
    return Path(sweep_dir) / f".fresh.{key}.json"


def tree_digest(base: Path, paths: Iterable[Path]) -> str:
    """One SHA-256 over (path relative to ``base``, file digest) pairs in path order."""
    digest = hashlib.sha256()
    for path in sorted(paths):
        digest.update(path.relative_to(base).as_posix().encode() + b"\0" + file_digest(path).encode() + b"\n")
    return digest.hexdigest()


def config_digests(folders: Sequence[Folder]) -> list[list[str]]:
    """[folder name, digest of its config files' names and bytes] for each config folder, in
    search order."""
    out = []
    for folder in folders:
        digest = hashlib.sha256()
        for name, file in sorted(_config_files(folder.root)):
            digest.update(f"{name}\0{provenance.config_file_digest(file)}\n".encode())
        out.append([provenance.folder_name(folder), digest.hexdigest()])
    return out


def _config_files(root: Traversable, prefix: str = "") -> Iterator[tuple[str, Traversable]]:
    """(name relative to ``root``, file) for every .yaml file below ``root`` (hidden folders aside)."""
    for child in root.iterdir():
        if child.name.startswith(".") or child.name == "__pycache__":
            continue
        if child.is_dir():
            yield from _config_files(child, f"{prefix}{child.name}/")
        elif child.name.endswith(".yaml"):
            yield f"{prefix}{child.name}", child


def signature(path: Path) -> list[int] | None:
    """A file's [size, mtime_ns], or None when it is not there: enough to see it was rewritten."""
    try:
        stat = path.stat()
    except OSError:
        return None
    return [stat.st_size, stat.st_mtime_ns]


def write_stamp(
    sweep_dir: Path, overrides: Iterable[str], cells: Iterable[str], folders: Sequence[Folder]
) -> Path | None:
    """Stamp the grid whose cells (folder names) are all complete, fresh and logged, composed
    from the config ``folders`` (the search path, in order). None (and no stamp) when a cell has
    no provenance record, or when two cells disagree on a file's digest or place: a file changed
    while the sweep ran, so one of them is stale whatever the tree holds."""
    sweep_dir = Path(sweep_dir)
    path = stamp_path(sweep_dir, overrides)
    code: dict[str, str] = {}
    places: dict[str, str] = {}  # code file outside the repository -> its folder
    inputs: dict[str, str] = {}
    files = {}
    for name in sorted(cells):
        record = provenance.read(sweep_dir / name)
        if (
            record is None
            or not isinstance(record.get("code_files"), dict)
            or not _merged(code, record["code_files"])
            or not _merged(inputs, record.get("inputs") or {})
            or not _merged(
                places, {f: folder for folder, names in provenance.recorded_folders(record).items() for f in names}
            )
        ):
            path.unlink(missing_ok=True)
            return None
        files[name] = {f: signature(sweep_dir / name / f) for f in WATCHED}
    code_folders: dict[str, list[str]] = {}
    for file, folder in sorted(places.items()):
        code_folders.setdefault(folder, []).append(file)
    stamp = {
        "overrides": grid_overrides(overrides),
        "config": config_digests(folders),
        "code_files": code,
        "code_folders": code_folders,
        "inputs": inputs,
        "cells": files,
        RESULTS: signature(sweep_dir / RESULTS),
    }
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


def why_not_fresh(sweep_dir: Path, argv: Sequence[str], conf_dir: Path = CONF_DIR) -> tuple[str | None, int]:
    """(None, cells) if the grid of ``python run.py -m *argv`` (its overrides and config-folder
    flags) is as its stamp says, else (why not, 0)."""
    sweep_dir = Path(sweep_dir)
    path = stamp_path(sweep_dir, argv)
    try:
        stamp = json.loads(path.read_text())
    except (OSError, ValueError):
        return "no freshness stamp", 0
    if stamp.get("overrides") != grid_overrides(argv):
        return "its stamp is for other overrides", 0
    try:
        folders = config_folders(list(argv), conf_dir)
    except InputError as exc:
        return f"a config folder is not there ({exc.problem})", 0
    if stamp.get("config") != config_digests(folders):
        return "the config folders or a config file in them changed", 0
    moved = provenance.why_code_moved(stamp.get("code_files") or {}, stamp.get("code_folders") or {})
    if moved:
        return moved, 0
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
