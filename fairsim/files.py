"""Files: writing them so that a reader never sees a torn one, and knowing which inputs a run read."""

from __future__ import annotations

import contextlib
import contextvars
import functools
import hashlib
import os
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path


def atomic_write(path: Path, write: Callable[[Path], object]) -> None:
    """``write(tmp)`` to a fresh temporary file beside ``path``, then rename it over ``path``: a
    reader sees the old file or the new one, never a torn one. The temporary name is unique, so
    two processes writing the same cell (an orphaned worker and a rerun) cannot clobber each
    other's half-written file; a failed write removes its temporary file."""
    tmp = path.with_name(
        f".{path.name}.{os.getpid()}.{uuid.uuid4().hex[:8]}.tmp"
    )  # created by write(): usual permissions
    try:
        write(tmp)
        tmp.replace(path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


# ---- where a config's paths point --------------------------------------------------------------
REPOSITORY = Path(__file__).resolve().parent.parent  # the folder holding fairsim/: the repository, in a clone


def input_path(raw: str | Path) -> Path:
    """The file or folder a config's path names: ``~`` expanded; a relative path is looked up in
    the working folder, then in the repository, so that a shipped preset's
    ``experiments/logs/team_cluster.csv`` is found from any folder (a path that is in neither is
    returned as written, for the reader's error to name)."""
    path = Path(raw).expanduser()
    if path.is_absolute() or path.exists():
        return path
    shipped = REPOSITORY / path
    return shipped if shipped.exists() else path


# ---- the input files a run reads ---------------------------------------------------------------
# Loaders call ``note_input`` for every data file they read (outside their caches, so a cached
# table still counts for the run that uses it); ``recording_inputs`` collects them for one run.
_INPUTS: contextvars.ContextVar[set[Path] | None] = contextvars.ContextVar("fairsim_inputs", default=None)


def note_input(path: str | Path) -> None:
    """Record that the running simulation read ``path`` (a no-op outside ``recording_inputs``)."""
    seen = _INPUTS.get()
    if seen is not None:
        seen.add(Path(path).resolve())


@contextlib.contextmanager
def recording_inputs() -> Iterator[set[Path]]:
    """Yield the set of (resolved) input paths noted while the block runs."""
    seen: set[Path] = set()
    token = _INPUTS.set(seen)
    try:
        yield seen
    finally:
        _INPUTS.reset(token)


def sha256_of(path: str | Path) -> str:
    """SHA-256 of a file's bytes (hex), read now."""
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


@functools.lru_cache(maxsize=4096)
def _digest_of(path: str, size: int, mtime_ns: int) -> str:
    return sha256_of(path)


def file_digest(path: str | Path) -> str:
    """SHA-256 of a file's bytes (hex); memoized per (path, size, mtime) within a process."""
    stat = os.stat(path)
    return _digest_of(str(Path(path).resolve()), stat.st_size, stat.st_mtime_ns)
