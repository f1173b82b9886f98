"""What a run shows the user: a progress bar while it runs, and the lines it prints, kept in the
run folder's run.log as printed.

The bar (tqdm) writes to stderr only when stderr is a terminal; in CI, in a pipe or under a sweep
it stays silent, so logs and captured output hold only the result lines.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TextIO

from fairsim.experiment.run_folder import RUN_LOG


def interactive(stream: TextIO | None = None) -> bool:
    stream = stream or sys.stderr
    return bool(getattr(stream, "isatty", lambda: False)())


@contextlib.contextmanager
def progress_bar(
    total: int, desc: str, unit: str = "job", enabled: bool | None = None
) -> Iterator[Callable[[int], None] | None]:
    """A tqdm bar of ``total`` steps on stderr, yielded as ``advance(n)``; None (no bar at all)
    when disabled or when stderr is not a terminal (``enabled=None``)."""
    if enabled is None:
        enabled = interactive()
    if not enabled or total <= 0:
        yield None
        return
    from tqdm import tqdm

    with tqdm(total=total, desc=desc, unit=unit, file=sys.stderr, dynamic_ncols=True, leave=False) as bar:
        yield bar.update


def emit(text: str, folder: Path | None = None, stream: TextIO | None = None) -> None:
    """Print ``text`` and append it to <folder>/run.log, so run.log holds what the run printed."""
    print(text, file=stream or sys.stdout, flush=True)
    if folder is not None and Path(folder).is_dir():
        with open(Path(folder) / RUN_LOG, "a", encoding="utf-8") as log:
            log.write(text + "\n")
