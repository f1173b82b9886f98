"""Ctrl-C (SIGINT) as an ordinary end of ``python run.py``: one line on stderr saying what was
kept, exit status 130, no traceback.

Whatever this process runs registers up front how an interruption ends it (``on_ctrl_c``): a
single run names its folder (``RunCallback``, a Hydra callback), a sweep's parent its sweep
(``SweepCallback.on_multirun_start``: on Ctrl-C it collects the complete cells and logs them to
MLflow, as at a normal end). ``ends_in_one_line`` (around ``main()`` in run.py) catches the
KeyboardInterrupt, runs that ending and prints its line. A second Ctrl-C while the ending runs
stops it at once, with a line of its own. ``FAIRSIM_DEBUG=1`` prints the traceback first.
While Hydra composes configs (before a run or sweep starts, and each cell's before the local
launcher starts the workers) a first Ctrl-C is held until the composition is done.

A run's ``summary.json`` is written last, so an interrupted run or cell never looks complete.
"""

from __future__ import annotations

import os
import signal
import sys
import traceback
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from hydra.experimental.callback import Callback
from omegaconf import DictConfig

from fairsim.experiment.run_folder import SUMMARY, why_incomplete

INTERRUPTED = 130  # the shell's status for a command ended by SIGINT (128 + 2)
NOTHING_RAN = "interrupted: nothing had run yet; nothing was written"

# what ends this process on Ctrl-C: a function doing what must still be done and returning the
# line(s) to print, and the line if that function is cut short, given why (a second Ctrl-C, an error)
_ending: tuple[Callable[[], str], Callable[[str], str]] = (lambda: NOTHING_RAN, lambda why: NOTHING_RAN)


def on_ctrl_c(end: Callable[[], str], cut_short: Callable[[str], str]) -> None:
    """From now on Ctrl-C runs ``end()`` and prints what it returns; ``cut_short(why)`` if a
    second Ctrl-C or an error stops ``end``."""
    global _ending
    _ending = (end, cut_short)


# Ctrl-C while Hydra composes configs waits until it is done: a KeyboardInterrupt inside
# OmegaConf can surface as a config error (a cleanup in a ``finally`` fails on the half-built
# node). A second Ctrl-C meanwhile is not held.
_holding = False
_held = False
# a Ctrl-C came: its KeyboardInterrupt can be swallowed where Python ignores exceptions (a
# ``__del__`` or weakref callback that the signal check happened to run in), so the run also
# checks this flag before it writes anything as complete (``raise_if_interrupted``)
_received = False


def _on_sigint(signum, frame) -> None:
    global _held, _received
    _received = True
    if _holding and not _held:
        _held = True
        return
    raise KeyboardInterrupt


def hold_ctrl_c() -> None:
    """Until ``release_ctrl_c``, a first Ctrl-C is held back (see above)."""
    global _holding
    _holding = True


def release_ctrl_c() -> None:
    """Stop holding Ctrl-C back; a Ctrl-C held meanwhile is raised here."""
    global _holding, _held
    _holding = False
    if _held:
        _held = False
        raise KeyboardInterrupt


def raise_if_interrupted() -> None:
    """Raise KeyboardInterrupt if a Ctrl-C came and its own KeyboardInterrupt was lost (see
    ``_received``), or is still held; called before a run writes its results."""
    if _received:
        raise KeyboardInterrupt


@contextmanager
def ends_in_one_line() -> Iterator[None]:
    """Turn a KeyboardInterrupt into the registered ending, its line on stderr and exit 130.
    Hydra's first composition runs with Ctrl-C held (``hold_ctrl_c``); the callbacks release
    it once their run or sweep has started."""
    global _holding, _held, _received
    previous = signal.signal(signal.SIGINT, _on_sigint)
    _received = False
    hold_ctrl_c()
    try:
        yield
        raise_if_interrupted()  # a Ctrl-C whose KeyboardInterrupt was lost still ends as one
    except KeyboardInterrupt:
        if os.environ.get("FAIRSIM_DEBUG"):
            traceback.print_exc()
        end, cut_short = _ending
        try:
            line = end()
        except KeyboardInterrupt:
            line = cut_short("a second Ctrl-C")
        except Exception as exc:  # an import the first Ctrl-C broke, say: still one line
            if os.environ.get("FAIRSIM_DEBUG"):
                raise
            line = cut_short(f"{type(exc).__name__}: {' '.join(str(exc).split())[:200]}")
        print(line, file=sys.stderr, flush=True)
        sys.exit(INTERRUPTED)
    finally:
        _holding = _held = _received = False
        signal.signal(signal.SIGINT, previous)


# ---- a single run -----------------------------------------------------------------------------


def _stamp(path: Path) -> tuple[int, int] | None:
    try:
        st = path.stat()
    except OSError:
        return None
    return st.st_ino, st.st_mtime_ns


def run_ending(folder: Path, track: bool = True) -> Callable[[], str]:
    """The ending of a single run in ``folder``: whether this run wrote its summary (it is
    complete) or not (nothing it wrote counts; a summary already there is an earlier run's)."""
    folder = Path(folder)
    before = _stamp(folder / SUMMARY)  # atomic writes replace the file: a new one has a new inode

    def end() -> str:
        now = _stamp(folder / SUMMARY)
        if now is not None and now != before and why_incomplete(folder) is None:
            return f"interrupted: the run is complete in {folder}" + (
                ", but may not be logged to MLflow" if track else ""
            )
        return "interrupted: the run had not finished; nothing was written as complete" + (
            f" ({folder} still holds an earlier run's results)" if now is not None else ""
        )

    return end


class RunCallback(Callback):
    """Registers a single run's ending as its job starts (sweeps register theirs in
    ``SweepCallback``)."""

    def on_job_start(self, config: DictConfig, **kwargs) -> None:
        from hydra.types import RunMode

        if config.hydra.mode == RunMode.RUN:
            on_ctrl_c(
                run_ending(Path(config.hydra.runtime.output_dir), bool(config.get("track", True))),
                lambda why: "interrupted: the run had not finished; nothing was written as complete",
            )
            release_ctrl_c()
