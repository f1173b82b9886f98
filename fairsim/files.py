"""Writing files so that a reader never sees a torn one."""

from __future__ import annotations

import os
import uuid
from pathlib import Path
from typing import Callable


def atomic_write(path: Path, write: Callable[[Path], object]) -> None:
    """``write(tmp)`` to a fresh temporary file beside ``path``, then rename it over ``path``: a
    reader sees the old file or the new one, never a torn one. The temporary name is unique, so
    two processes writing the same cell (an orphaned worker and a rerun) cannot clobber each
    other's half-written file; a failed write removes its temporary file."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{uuid.uuid4().hex[:8]}.tmp")  # created by write(): usual permissions
    try:
        write(tmp)
        tmp.replace(path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
