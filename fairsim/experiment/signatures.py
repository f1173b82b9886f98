"""File digests and import statements kept on disk by file signature, so that a run does not read
and parse every source file it records (provenance.py) again.

An entry is a file's (resolved path) signature -- size, mtime_ns, ctime_ns, inode and device --
with its SHA-256 and, for a source file, its import statements. A lookup hits only when the
file's signature now is the recorded one. A changed file always misses: any write sets the
file's ctime to the time of the change, and no program can set a ctime back (``os.utime`` sets
mtime and atime only); a file replaced by a rename has another inode. The one way a change
could keep a signature is a second write in the same tick of the file system's clock as the
first, with the same size; so an entry is kept only for a file whose ctime lies more than
``SETTLED_S`` before the moment it was read (git's "racily clean" rule), and a file is read
whole between two equal stats. A file changed recently is simply digested again each time.

The cache is ``<results_dir>/cache/signatures-<python>.json`` (``cache_file``), one per Python
version (the import statements come from its parser), written whole (temporary file, then
rename) at the end of the block that used it, and only when it learnt something. An unreadable
cache is an empty one; a folder that cannot be written only costs the saving. Workers of a sweep
may write it at once: the last writer wins, and a lost entry only costs a miss.
"""

from __future__ import annotations

import contextlib
import contextvars
import json
import os
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from fairsim import files
from fairsim.files import atomic_write

SETTLED_S = 2.0  # covers coarse file-system clocks (FAT's 2 s) and a few ms of kernel clock ticks
MAX_ENTRIES = 20_000  # a cache this size is about 4 MB; the oldest entries go first
VERSION = 1


def cache_file(results_dir: Path | str) -> Path:
    tag = f"{sys.implementation.name}{sys.version_info[0]}{sys.version_info[1]}"
    return Path(results_dir) / "cache" / f"signatures-{tag}.json"


def signature(stat: os.stat_result) -> list[int]:
    return [stat.st_size, stat.st_mtime_ns, stat.st_ctime_ns, stat.st_ino, stat.st_dev]


class Signatures:
    """The entries of one cache file, read once; ``save`` writes them back when any was added."""

    def __init__(self, path: Path | None) -> None:
        self.path = path
        self.entries: dict[str, dict[str, Any]] = self._read(path) if path is not None else {}
        self.added = 0
        self.hits = 0

    @staticmethod
    def _read(path: Path) -> dict[str, dict[str, Any]]:
        try:
            data = json.loads(path.read_text())
        except (OSError, ValueError):
            return {}
        ok = isinstance(data, dict) and data.get("version") == VERSION and isinstance(data.get("files"), dict)
        return data["files"] if ok else {}

    def lookup(self, path: str, stat: os.stat_result, key: str) -> Any:
        entry = self.entries.get(path)
        if entry is None or entry.get("signature") != signature(stat) or key not in entry:
            return None
        self.hits += 1
        return entry[key]

    def keep(self, path: str, stat: os.stat_result, key: str, value: Any, read_at_ns: int) -> None:
        """Keep ``value`` for the file as it was at ``stat``, unless it changed too recently."""
        if stat.st_ctime_ns > read_at_ns - SETTLED_S * 1e9:
            return  # racily clean: a change in the same clock tick could keep this signature
        entry = self.entries.get(path)
        if entry is None or entry.get("signature") != signature(stat):
            entry = self.entries[path] = {"signature": signature(stat)}
        entry[key] = value
        self.added += 1

    def save(self) -> None:
        if self.path is None or not self.added:
            return
        entries = {**self._read(self.path), **self.entries}  # another process's entries meanwhile
        names = list(entries)[-MAX_ENTRIES:]
        text = json.dumps({"version": VERSION, "files": {n: entries[n] for n in names}}, separators=(",", ":"))
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            atomic_write(self.path, lambda p: p.write_text(text))
        except OSError:
            pass  # a cache that cannot be written costs its time next run, nothing else


_ACTIVE: contextvars.ContextVar[Signatures | None] = contextvars.ContextVar("fairsim_signatures", default=None)


@contextlib.contextmanager
def kept_in(results_dir: Path | str | None) -> Iterator[Signatures]:
    """Use (and at the end save) the cache of ``results_dir`` for the digests and import
    statements looked up in this block; None: an in-memory cache only."""
    cache = Signatures(None if results_dir is None else cache_file(results_dir))
    token = _ACTIVE.set(cache)
    try:
        yield cache
    finally:
        _ACTIVE.reset(token)
        cache.save()


def remembered(path: str | Path, key: str, compute: Callable[[Path], Any]) -> Any:
    """``compute(path)`` for the file as it is now, from the active cache when it knows the file's
    present signature (outside ``kept_in``: computed). A value is kept only when the file did not
    change while it was computed (two stats, equal, around it)."""
    path = Path(os.path.realpath(path))
    cache = _ACTIVE.get()
    if cache is None:
        return compute(path)
    before = os.stat(path)
    value = cache.lookup(str(path), before, key)
    if value is not None:
        return value
    read_at = time.time_ns()
    value = compute(path)
    if signature(os.stat(path)) == signature(before):
        cache.keep(str(path), before, key, value, read_at)
    return value


def file_digest(path: str | Path) -> str:
    """SHA-256 of a file's bytes (hex), from the active cache when the file is unchanged (outside
    ``kept_in``: ``fairsim.files.file_digest``, memoized for the process)."""
    if _ACTIVE.get() is None:
        return files.file_digest(path)
    return remembered(path, "sha256", files.sha256_of)
