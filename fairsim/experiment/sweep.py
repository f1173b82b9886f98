"""Sweep support: cells that several sweeps may share, progress lines, resource errors, and the
Hydra callback that collects and logs.

Layout: ``<results_dir>/sweeps/<sweep_name>/<cell>/`` where ``<cell>`` is the cell's overrides
(``load=0.5,policy=ours``; ``fairsim.experiment.run_folder.cell_name``, through the resolver
``fairsim_cell`` in conf/hydra/fairsim.yaml). A cell is its identity, the config it composes
(``run_folder.identity``): a spelling whose config a folder of the sweep already holds (``load=1``
beside ``load=1.0``, or beside no load override) is that cell, and its own new folder is
removed. A cell is complete by ``fairsim.experiment.run_folder.why_incomplete`` (the collector's
definition too) with the identity of the config it would run with now, and fresh by
``fairsim.experiment.provenance.why_stale`` (made by the simulating code and input files it
would use now). A complete, fresh cell is skipped on a rerun; anything else runs again from
scratch with one line saying why, except that ``reuse_stale=true`` keeps complete stale cells
(each said in a line, and marked stale in results.parquet).

Concurrency: a cell is decided and run while its identity's lock is held (and its folder's:
``<sweep>/.cells/``, ``filelock``), so two sweeps of one grid, or two spellings of one cell in
one sweep, compute it once: the second waits, then finds it complete. Every multirun keeps its
own progress file (``.progress.<run id>``), so its summary says what it computed, skipped and
waited for.
"""

from __future__ import annotations

import errno
import json
import os
import re
import socket
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from hydra.experimental.callback import Callback
from omegaconf import DictConfig, OmegaConf

from fairsim.experiment.run_folder import (
    CONFIG,
    FAILED,
    HYDRA_DIR,
    JOBS,
    RESULTS,
    RUN_LOG,
    SUMMARY,
    cell_name,
    claimed,
    folder_identity,
    folder_lock,
    identity_digest,
    identity_lock,
    identity_of_text,
    index_sweep,
    indexed_folder,
    record_in_index,
    unless_default,
    why_incomplete,
)

if TYPE_CHECKING:
    import pandas as pd

PROGRESS = ".progress"
COLLECT_LOCK = ".collect.lock"
CELL_RESOLVER = (
    "fairsim_cell"  # ${fairsim_cell:${hydra:job.override_dirname}}: a cell's folder name (conf/hydra/fairsim.yaml)
)
UNLESS_DEFAULT_RESOLVER = (
    "fairsim_unless_default"  # ${fairsim_unless_default:${load},1.0,-load}: a part of a run's folder name
)
CLAIMED_RESOLVER = "fairsim_claimed"  # ${fairsim_claimed:<run.dir>}: that folder, made, or a -2 beside it if taken
# what a spelling's own folder may hold and still be removed when its cell lives in another folder:
# Hydra's record of the job, what the run printed, an earlier failure, a lock of the old layout
DISPOSABLE = {HYDRA_DIR, RUN_LOG, FAILED, ".lock"}
RUN_ENV = "FAIRSIM_SWEEP_RUN"  # this multirun's id: names its progress file (set in each cell's process)
CELLS_ENV = "FAIRSIM_SWEEP_CELLS"  # cells in this multirun's grid, for the progress lines
# a cell's outcome in its run's progress file
RAN, SKIPPED, WAITED, FAILED_STATUS, REUSED = "ran", "skipped", "waited", "failed", "reused"
WATCH_THREAD = "fairsim-parent-watch"
# set in a process that runs cells for a launcher whose tasks may outlive the sweep's parent by
# design (hydra/launcher=slurm with wait=false): no parent watch there
DETACHED_ENV = "FAIRSIM_SWEEP_DETACHED"
# set in the sweep's parent by a launcher that returned with cells still queued (wait=false): how many
QUEUED_ENV = "FAIRSIM_SWEEP_QUEUED"

RESOURCE_ERRORS = {  # errno -> (what happened, what to do)
    errno.ENOSPC: ("no space left on device", "free space there or point results_dir= at a larger disk"),
    errno.EDQUOT: ("disk quota exceeded", "free space there or point results_dir= at another disk"),
    errno.EACCES: ("permission denied", "make it writable for this user or choose another results_dir="),
    errno.EPERM: ("operation not permitted", "make it writable for this user or choose another results_dir="),
    errno.EROFS: ("read-only file system", "choose a writable results_dir="),
}


def config_text(cfg: DictConfig) -> str:
    return OmegaConf.to_yaml(cfg, resolve=True)


def register_cell_resolver() -> None:
    """Let conf/hydra/fairsim.yaml name a cell's folder by ``run_folder.cell_name``, and a single
    run's by ``run_folder.unless_default`` and ``run_folder.claimed``. Done when this module is imported: by run.py, and in
    every worker as it unpickles the sweep callback, before Hydra resolves the job's folder."""
    if not OmegaConf.has_resolver(CELL_RESOLVER):
        OmegaConf.register_new_resolver(CELL_RESOLVER, cell_name)
    if not OmegaConf.has_resolver(UNLESS_DEFAULT_RESOLVER):
        OmegaConf.register_new_resolver(UNLESS_DEFAULT_RESOLVER, unless_default)
    if not OmegaConf.has_resolver(CLAIMED_RESOLVER):
        OmegaConf.register_new_resolver(CLAIMED_RESOLVER, claimed)


register_cell_resolver()


# ---- progress ---------------------------------------------------------------------------------


def progress_file(sweep_dir: Path, run_id: str | None = None) -> Path:
    return Path(sweep_dir) / f"{PROGRESS}.{run_id or os.environ.get(RUN_ENV) or 'unknown'}"


def new_run_id() -> str:
    """``<pid>-<random>@<host>``: unique, and says which process on which machine owns the file."""
    return f"{os.getpid()}-{uuid.uuid4().hex[:8]}@{socket.gethostname()}"


def remove_orphaned_progress(sweep_dir: Path) -> None:
    """Remove the progress files of multiruns on this machine whose process is gone (killed
    before it could remove its own); a file of another machine's run is left alone."""
    for path in Path(sweep_dir).glob(f"{PROGRESS}.*"):
        run_id = path.name[len(PROGRESS) + 1 :]
        pid = run_id.split("-", 1)[0]
        host = (
            run_id.rpartition("@")[2] if "@" in run_id else socket.gethostname()
        )  # ids before hosts were added: local
        if pid.isdigit() and host == socket.gethostname() and not _alive(int(pid)):
            path.unlink(missing_ok=True)


def read_progress(path: Path) -> dict[str, tuple[float, str]]:
    """Cell -> (seconds, status) from one run's progress file (the last line of a cell wins, but
    a cell the grid lists twice that this run computed stays computed when its second visit
    finds it complete)."""
    out: dict[str, tuple[float, str]] = {}
    if path.exists():
        for row in path.read_text().splitlines():
            parts = row.split("\t")
            if len(parts) == 3 and not (parts[2] == SKIPPED and parts[0] in out):
                out[parts[0]] = (float(parts[1]), parts[2])
    return out


def report_progress(sweep_dir: Path, cell: str, seconds: float, status: str) -> str:
    """Append this cell to its run's progress file (O_APPEND: safe across worker processes)
    and return a one-line status."""
    path = progress_file(sweep_dir)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    try:
        os.write(fd, f"{cell}\t{seconds:.3f}\t{status}\n".encode())
    finally:
        os.close(fd)
    rows = read_progress(path)
    done = len(rows)
    ran = [s for s, st in rows.values() if st == RAN]
    total = int(os.environ.get(CELLS_ENV) or 0)
    left = max(total - done, 0)
    mean = sum(ran) / len(ran) if ran else 0.0
    shown = {
        RAN: f"{seconds:.1f} s",
        SKIPPED: "skipped (complete)",
        FAILED_STATUS: "FAILED",
        REUSED: "reused (stale)",
        WAITED: f"skipped (computed by another sweep; waited {seconds:.1f} s)",
    }[status]
    return (
        f"[sweep {Path(sweep_dir).name}] {cell}: {shown} | {done}/{total or '?'} cells done, {left} left, "
        f"{mean:.1f} s/cell" + (f", ~{left * mean / max(os.cpu_count() or 1, 1):.0f} s to go" if left and ran else "")
    )


def record_failure(folder: Path, cell: str, text: str) -> None:
    """Keep a failed cell's error beside it (it has no summary, so it is not complete) and say so."""
    last = text.strip().splitlines()[-1] if text.strip() else "failed"
    where = folder / FAILED
    try:
        folder.mkdir(parents=True, exist_ok=True)
        where.write_text(text if text.endswith("\n") else text + "\n")
    except OSError:
        where = None  # the error line below still says what went wrong
    report_progress(folder.parent, cell, 0.0, FAILED_STATUS)
    print(
        f"[sweep {folder.parent.name}] {cell}: FAILED: {last}" + (f" (details: {where})" if where else ""),
        file=sys.stderr,
    )


def record_done(folder: Path, cell: str, seconds: float) -> None:
    (folder / FAILED).unlink(missing_ok=True)  # an earlier failure of this cell is history now
    from fairsim.experiment.output import emit

    emit(report_progress(folder.parent, cell, seconds, RAN), folder)  # run.log holds what the cell printed


# ---- one cell ---------------------------------------------------------------------------------


@contextmanager
def claim_cell(folder: Path, cfg: DictConfig) -> Iterator[Path | None]:
    """Hold the cell's locks and yield the folder to run it in, or None when it is complete
    (reported as skipped). The cell is the config's identity: the folder is ``folder`` (Hydra's,
    named by this spelling) unless the sweep's index names another folder holding the same
    config, in which case ``folder`` is removed when it holds no results. If another sweep
    holds a lock, wait for it first and say so."""
    sweep_dir, cell = folder.parent, folder.name
    sweep = f"[sweep {sweep_dir.name}] {cell}"
    expected = identity_of_text(config_text(cfg))
    digest = identity_digest(expected)
    tick = time.perf_counter()
    with _held(identity_lock(sweep_dir, digest), sweep) as waited_since:
        target = _cell_folder(folder, digest, expected)
        with _held(folder_lock(sweep_dir, target.name), sweep) as also_since:
            if target != folder:
                print(f"{sweep}: the same config as {target.name}: that folder is this cell", flush=True)
                _remove_if_disposable(folder)
            waited = _computed_since(target, min(filter(None, (waited_since, also_since)), default=None))
            why, kept_stale = _why_run(target, cfg, expected, sweep)
            if why is None:  # waited: computed by another sweep, or by a spelling of it in this one (skipped, then)
                status = (
                    REUSED
                    if kept_stale
                    else WAITED
                    if waited and target.name not in read_progress(progress_file(sweep_dir))
                    else SKIPPED
                )
                print(report_progress(sweep_dir, cell, time.perf_counter() - tick, status), flush=True)
                record_in_index(sweep_dir, digest, target)
                yield None
                return
            if waited:
                print(f"{sweep}: the other sweep did not complete it ({why}); running it here", flush=True)
            elif (target / FAILED).exists():
                print(f"{sweep}: failed before (see {target / FAILED}); running it again", flush=True)
            elif any((target / name).exists() for name in (SUMMARY, CONFIG, JOBS)):
                print(f"{sweep}: recomputing: {why}", flush=True)
            try:
                yield target
            finally:
                if (target / SUMMARY).is_file():
                    record_in_index(sweep_dir, digest, target)


def found_complete(folder: Path, cfg: DictConfig) -> bool:
    """Whether ``claim_cell`` would find this cell complete and fresh (or kept stale with
    ``reuse_stale=true``) now: a look without its locks, for a launcher that need not start a
    process for such a cell. A cell not found complete here is decided again under its locks
    where it runs."""
    from fairsim.experiment.provenance import sections, why_stale

    expected = identity_of_text(config_text(cfg))
    target = _cell_folder(folder, identity_digest(expected), expected)
    if why_incomplete(target, expected) is not None:
        return False
    return why_stale(target, sections(cfg)) is None or bool(cfg.get("reuse_stale", False))


def report_found(folder: Path, waited: float | None = None) -> None:
    """Count a cell ``found_complete`` found in this run's progress, and say so: as skipped, or
    as waited for (``waited`` seconds) when another submission computed it meanwhile."""
    status, seconds = (SKIPPED, 0.0) if waited is None else (WAITED, waited)
    print(report_progress(folder.parent, folder.name, seconds, status), flush=True)


def _cell_folder(folder: Path, digest: str, expected: dict) -> Path:
    """Where the cell of identity ``digest`` lives: ``folder`` (this spelling's) if it holds that
    config or no folder of the sweep does, else the folder the sweep's index names for it."""
    home = indexed_folder(folder.parent, digest)
    if home in (None, folder) or folder_identity(folder) == expected or folder_identity(home) != expected:
        return folder
    return home


def _why_run(folder: Path, cfg: DictConfig, expected: dict, sweep: str) -> tuple[str | None, bool]:
    """Why the cell in ``folder`` must run (None: complete and fresh, or kept stale with
    reuse_stale=true, said in a line), and whether it is kept stale."""
    from fairsim.experiment.provenance import sections, why_stale

    why = why_incomplete(folder, expected)
    if why is not None:
        return why, False
    stale = why_stale(folder, sections(cfg))
    if stale is not None and cfg.get("reuse_stale", False):
        print(f"{sweep}: reusing it stale (reuse_stale=true): {stale}", flush=True)
        return None, True
    return stale, False


@contextmanager
def _held(path: Path, sweep: str) -> Iterator[float | None]:
    """Hold the lock file ``path``; yield when this process began waiting for another holder
    (``time.time()``, said in a line), or None when it did not wait."""
    from filelock import FileLock, Timeout

    path.parent.mkdir(parents=True, exist_ok=True)
    lock = FileLock(path)
    since = None
    try:
        lock.acquire(blocking=False)
    except Timeout:
        since = time.time()
        print(f"{sweep}: another sweep or worker is running this cell; waiting for it", flush=True)
        lock.acquire()
    try:
        yield since
    finally:
        lock.release()


def _computed_since(folder: Path, since: float | None) -> bool:
    """Whether ``folder``'s summary was written after ``since`` (a wait that ended with the cell
    computed, not one behind another's check of a complete cell)."""
    try:
        return since is not None and (folder / SUMMARY).stat().st_mtime >= since
    except OSError:
        return False


def _remove_if_disposable(folder: Path) -> None:
    """Remove a spelling's own folder when it holds nothing but what Hydra and a run that never
    finished leave (its cell lives in another folder); anything else stays where it is."""
    import shutil

    try:
        if folder.is_dir() and {p.name for p in folder.iterdir()} <= DISPOSABLE:
            shutil.rmtree(folder)
    except OSError:
        pass  # a folder left behind is not collected (no results); never worth failing the cell for


def watch_parent(parent_pid: int, parent_host: str, poll_s: float = 0.5) -> None:
    """In a worker process of the sweep's parent: exit as soon as the parent is gone. Without it
    an orphaned loky worker finishes the cells it holds and idles until loky's idle timeout.
    A cell cut off this way has no summary, so it is not complete and runs again on a rerun.

    On Linux the kernel kills the worker when the parent dies (``PR_SET_PDEATHSIG``): a thread
    that polls can only act when it gets the GIL, which a solver call may hold for seconds.
    The polling thread stays as the portable fallback."""
    if os.getpid() == parent_pid or socket.gethostname() != parent_host or os.environ.get(DETACHED_ENV):
        return  # the cell runs in the parent itself, on another machine (Dask, Slurm), or in a detached task
    if os.getppid() != parent_pid:
        if _alive(parent_pid):
            return  # a launcher with processes of its own (submitit_local): not ours to watch
        os._exit(1)  # the parent died before this worker took its first cell
    if any(t.name == WATCH_THREAD for t in threading.enumerate()):
        return
    _die_with_parent()
    if os.getppid() != parent_pid:
        os._exit(1)  # the parent died while the signal was being set up

    def watch() -> None:
        while os.getppid() == parent_pid:
            time.sleep(poll_s)
        os._exit(1)

    threading.Thread(target=watch, name=WATCH_THREAD, daemon=True).start()


PR_SET_PDEATHSIG = 1  # prctl(2)


def _die_with_parent() -> None:
    """Ask Linux to SIGKILL this process when its parent dies (a no-op elsewhere)."""
    if not sys.platform.startswith("linux"):
        return
    import ctypes
    import signal

    try:
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
    except (OSError, AttributeError):
        pass  # no prctl: the polling thread still watches


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


# ---- resource errors --------------------------------------------------------------------------


def resource_errno(exc: BaseException) -> int | None:
    """The errno of a resource error (no space, quota, permission, read-only) in ``exc`` or its
    causes; pyarrow reports it only in its message ("[errno 28] ...")."""
    seen = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        code = getattr(exc, "errno", None) if isinstance(exc, OSError) else None
        if code is None and isinstance(exc, OSError):
            found = re.search(r"\[errno (\d+)\]", str(exc), re.IGNORECASE)
            code = int(found.group(1)) if found else None
        if code in RESOURCE_ERRORS:
            return code
        exc = exc.__cause__ or exc.__context__
    return None


def resource_error_line(
    exc: BaseException, where: Path | str | None = None, then: str = "rerun the same command (complete cells are kept)"
) -> str | None:
    """One line naming the path and what to do, or None if ``exc`` is no resource error."""
    code = resource_errno(exc)
    if code is None:
        return None
    what, todo = RESOURCE_ERRORS[code]
    path = getattr(exc, "filename", None) or where or "?"
    return f"error: {what}: {path}: {todo}, then {then}"


def with_path(exc: OSError, where: Path) -> OSError:
    """The same resource error, naming ``where`` if it names no file (pyarrow's do not)."""
    if getattr(exc, "filename", None):
        return exc
    code = resource_errno(exc)
    return OSError(code, os.strerror(code), str(where))


# ---- the sweep --------------------------------------------------------------------------------


def grid_cells(config: DictConfig) -> list[str]:
    """The folder names of this multirun's cells, as Hydra's basic sweeper makes the grid (the
    product of the sweep overrides of the command line and ``hydra.sweeper.params``) and names each
    cell (``override_dirname`` with its settings, then ``run_folder.cell_name``). A cell the grid
    lists twice (``seed=0,0``; ``load=1.0,1.00``, which Hydra reads as one value) is one folder and
    counts once."""
    import itertools

    from hydra.core.global_hydra import GlobalHydra
    from hydra.core.override_parser.overrides_parser import OverridesParser

    from fairsim.experiment.run_folder import cell_name

    overrides = list(config.hydra.overrides.task)
    params = config.hydra.sweeper.get("params") or {}
    cli_keys = {o.split("=", 1)[0].lstrip("+~") for o in overrides}
    overrides += [f"{k}={v}" for k, v in params.items() if k.lstrip("+~") not in cli_keys]
    # a config group swept as glob(*) lists its options through the running Hydra's config loader
    hydra = GlobalHydra.instance()
    parser = OverridesParser.create(config_loader=hydra.config_loader() if hydra.is_initialized() else None)
    naming = OmegaConf.select(config, "hydra.job.config.override_dirname") or {}
    exclude = set(naming.get("exclude_keys") or [])
    item_sep, kv_sep = naming.get("item_sep", ","), naming.get("kv_sep", "=")
    choices = []
    for o in parser.parse_overrides(overrides):
        values = list(o.sweep_string_iterator()) if o.is_sweep_override() else [o.get_value_element_as_str()]
        named = o.key_or_group not in exclude  # an excluded key still multiplies the grid
        choices.append([f"{o.get_key_element()}={v}" if named else None for v in values])
    names = (
        cell_name(item_sep.join(sorted(line for line in combo if line is not None)).replace("=", kv_sep))
        for combo in itertools.product(*choices)
    )
    return list(dict.fromkeys(names))


def count_cells(config: DictConfig) -> int:
    """Cells in this multirun (``grid_cells``)."""
    return len(grid_cells(config))


def sweep_abort_line(exc: BaseException | None, sweep_dir: Path) -> str | None:
    """The one line that ends a sweep for ``exc`` raised by a cell or by the worker pool: a
    resource error or a dead worker; None for anything else (not ours to summarize)."""
    if not isinstance(exc, BaseException):
        return None
    line = resource_error_line(exc, sweep_dir)
    if line is None and type(exc).__name__ == "TerminatedWorkerError":  # joblib's, raised in the parent
        codes = re.search(r"exit codes of the workers are (\{.*?\})", str(exc))
        line = (
            f"error: a worker process of sweep {Path(sweep_dir).name} died (exit codes {codes.group(1) if codes else '?'}: "
            "killed, or out of memory) and the sweep stopped; complete cells are kept: rerun the same command to run the rest"
        )
    return line


# loky's resource tracker (a process of its own, started with the worker pool) warns about the
# pool's semaphores at exit when a worker was killed mid-task; the sweep has already said what
# happened in one line, so these warnings are noise. The tracker inherits the environment.
TRACKER_WARNINGS = "ignore::UserWarning:joblib.externals.loky.backend.resource_tracker"


def quiet_resource_tracker() -> None:
    """Silence loky's resource-tracker warnings in the processes this sweep starts."""
    current = os.environ.get("PYTHONWARNINGS", "")
    if TRACKER_WARNINGS not in current.split(","):
        os.environ["PYTHONWARNINGS"] = ",".join(filter(None, (current, TRACKER_WARNINGS)))


def fail(line: str) -> None:
    """End the sweep with one line on stderr (Hydra turns a callback's exception into a warning)."""
    print(line, file=sys.stderr, flush=True)
    sys.exit(1)


@dataclass
class Collected:
    """What ``collect_and_log`` did: the table written, its cells, why the other cell folders are
    not complete, how many cells were newly logged to MLflow, the store's error line if any, and
    the address of the sweep's MLflow runs table."""

    table: pd.DataFrame
    cells: list[Path]
    incomplete: dict[str, str]  # incomplete cell folders, and complete ones holding another's config
    logged: int
    store_error: str | None
    runs_table: str | None = None


def collect_and_log(
    sweep_dir: Path, results_dir: Path, store_error: str | None = None, track: bool = True
) -> Collected:
    """Collect the sweep's complete cells into results.parquet and jobs.parquet, then log those
    not yet in MLflow (not with ``track`` false: a later sweep of the grid that tracks logs them):
    how every sweep ends, after its last cell or on Ctrl-C. A store already known to be broken
    (``store_error``) is not tried again; a collection that cannot write ends the sweep with one line."""
    from filelock import FileLock

    from fairsim.experiment.collect import collect, survey
    from fairsim.experiment.tracking import experiment_url, log_sweep, store_error_line

    sweep_dir = Path(sweep_dir)
    try:
        with FileLock(sweep_dir / COLLECT_LOCK):  # two sweeps ending together write whole, consistent tables
            cells, incomplete, duplicates = survey(sweep_dir)
            table, cells = collect(sweep_dir, cells)
    except OSError as exc:
        fail(resource_error_line(exc, sweep_dir) or f"error: collecting {sweep_dir}: {exc}")
    logged, runs_table = 0, None
    if store_error is None and track:
        try:
            logged = log_sweep(results_dir, sweep_dir.name, cells, drop=list(duplicates))
            runs_table = experiment_url(results_dir, sweep_dir.name)
        except Exception as exc:
            store_error = store_error_line(results_dir, exc)
    return Collected(table, cells, {**incomplete, **duplicates}, logged, store_error, runs_table)


class SweepCallback(Callback):
    """Runs in the parent process of a multirun: prepares the sweep folder and the MLflow store
    before the workers start, and after the last cell (or on Ctrl-C, see ``interrupted``)
    collects results.parquet and logs every complete cell to MLflow. ``on_job_start`` runs in
    each cell's process (the callback travels with the job): it tells the cell its run's id and
    watches for the parent's death."""

    def __init__(self, results_dir: str = "results", track: bool = True) -> None:
        self.results_dir = Path(results_dir)
        self.track = track  # false (track=false): collect, but log nothing to MLflow
        self.started = 0.0
        self.run_id = ""
        self.argv = ""  # the sweep's command line, JSON, for each cell's provenance (provenance.ARGV_ENV)
        self.parent_pid = 0
        self.parent_host = ""
        self.total = 0
        self.grid: list[str] = []
        self.store_error: str | None = None
        self.sweep_dir = Path()

    def on_multirun_start(self, config: DictConfig, **kwargs) -> None:
        from fairsim.experiment.interrupt import hold_ctrl_c, on_ctrl_c, release_ctrl_c
        from fairsim.experiment.provenance import command_line
        from fairsim.experiment.tracking import ensure_store, store_error_line

        self.started = time.perf_counter()
        self.run_id = new_run_id()
        self.argv = json.dumps(command_line())
        self.parent_pid = os.getpid()
        self.parent_host = socket.gethostname()
        sweep_dir = self.sweep_dir = Path(config.hydra.sweep.dir)
        on_ctrl_c(self.interrupted_early, lambda why: f"[sweep {sweep_dir.name}] interrupted before any cell ran")
        release_ctrl_c()  # held while Hydra composed the config (fairsim/experiment/interrupt.py)
        self.grid = grid_cells(config)
        self.total = len(self.grid)
        try:
            sweep_dir.mkdir(parents=True, exist_ok=True)
            remove_orphaned_progress(sweep_dir)
            progress_file(sweep_dir, self.run_id).touch()  # also proves the folder writable before any cell runs
            index_sweep(
                sweep_dir
            )  # cell folders made before the sweep's index existed: a spelling of theirs finds them
        except OSError as exc:
            fail(resource_error_line(exc, sweep_dir) or f"error: cannot prepare the sweep folder {sweep_dir}: {exc}")
        self._export()
        quiet_resource_tracker()
        try:
            if self.track:
                ensure_store(self.results_dir)
        except Exception as exc:  # a damaged or unwritable store must not cost the cells
            self.store_error = store_error_line(self.results_dir, exc)
        import fairsim.experiment.collect  # noqa: F401  loaded now: a Ctrl-C cannot leave it half-imported for the ending

        on_ctrl_c(
            self.interrupted,
            lambda why: (
                f"[sweep {sweep_dir.name}] interrupted, and collecting was cut short ({why}): "
                "results.parquet and MLflow may lack complete cells; rerun the same command to collect them and run the rest"
            ),
        )
        if str(config.hydra.launcher.get("_target_", "")).startswith("hydra_plugins.fairsim_local_launcher."):
            hold_ctrl_c()  # while Hydra composes every cell's config; the local launcher releases it as it starts

    def on_job_start(self, config: DictConfig, **kwargs) -> None:
        if self.run_id:
            self._export()
            watch_parent(self.parent_pid, self.parent_host)

    def _export(self) -> None:
        from fairsim.experiment.provenance import ARGV_ENV

        os.environ[RUN_ENV] = self.run_id
        os.environ[CELLS_ENV] = str(self.total)
        os.environ[ARGV_ENV] = self.argv

    def on_multirun_end(self, config: DictConfig, **kwargs) -> None:
        from fairsim.experiment.tracking import ui_command

        sweep_dir = Path(config.hydra.sweep.dir)
        name = f"[sweep {sweep_dir.name}]"
        own = read_progress(progress_file(sweep_dir, self.run_id))
        done = collect_and_log(sweep_dir, self.results_dir, self.store_error, self.track)
        elapsed = time.perf_counter() - self.started
        counts = {
            st: sorted(c for c, (_, s) in own.items() if s == st)
            for st in (RAN, SKIPPED, WAITED, FAILED_STATUS, REUSED)
        }
        reused = f", reused {len(counts[REUSED])} stale (reuse_stale=true)" if counts[REUSED] else ""
        print(
            f"{name} {len(done.cells)} complete cells in {sweep_dir} ({self.total} in this run's grid): this run computed "
            f"{len(counts[RAN])}, found {len(counts[SKIPPED])} complete, waited for {len(counts[WAITED])} that another "
            f"sweep computed{reused}; {self._logged(done)}, {elapsed:.1f} s"
        )
        if counts[WAITED]:
            print(f"{name} computed by another sweep while this one waited: {', '.join(counts[WAITED])}")
        if len(done.table):
            print(f"{name} results: {sweep_dir / 'results.parquet'}")
        if done.runs_table and done.cells:
            print(f"{name} MLflow runs table ({ui_command(self.results_dir)}): {done.runs_table}")
        for cell, why in done.incomplete.items():
            if cell not in counts[FAILED_STATUS]:
                print(f"{name} not collected: {cell}: {why}")
        progress_file(sweep_dir, self.run_id).unlink(missing_ok=True)
        problems = []
        if counts[FAILED_STATUS]:
            problems.append(
                f"{name} {len(counts[FAILED_STATUS])} cells FAILED: {', '.join(counts[FAILED_STATUS])}; the others "
                "are kept. Fix the cause and rerun the same command to run only the missing cells."
            )
        if done.store_error:
            problems.append(done.store_error)
        if problems:
            fail("\n".join(problems))
        queued = int(os.environ.pop(QUEUED_ENV, "0") or 0)
        if queued:
            print(
                f"{name} {queued} cells are queued on Slurm: rerun the same command to collect them once they "
                "end (it submits again only cells neither complete nor queued)"
            )
        elif len(own) < self.total:
            print(
                f"{name} warning: {self.total - len(own)} of {self.total} cells did not finish; "
                "rerun the same command to run only those"
            )
        elif not counts[REUSED] and set(own) <= {c.name for c in done.cells}:
            from fairsim.experiment.cli import searched_folders
            from fairsim.experiment.sweep_stamp import write_stamp

            # lets a rerun of this grid, from the same config folders, skip starting at all
            write_stamp(
                sweep_dir, config.hydra.overrides.task, own, searched_folders(config.hydra.runtime.config_sources)
            )

    def _logged(self, done: Collected) -> str:
        from fairsim.experiment.tracking import tracking_uri

        if not self.track:
            return "nothing logged to MLflow (track=false)"
        return f"{done.logged} newly logged to MLflow ({tracking_uri(self.results_dir)})"

    def interrupted_early(self) -> str:
        """The end on Ctrl-C while the sweep is being prepared (no cell has started)."""
        if self.run_id:
            progress_file(self.sweep_dir, self.run_id).unlink(missing_ok=True)
        return f"[sweep {self.sweep_dir.name}] interrupted before any cell ran; nothing was computed"

    def unfinished(self, own: dict[str, tuple[float, str]]) -> list[str]:
        """The grid's cells that neither ended in this run (ran, skipped, waited for, reused) nor
        are complete in their folders (from an earlier run, never reached by this one)."""
        from fairsim.experiment.run_folder import why_incomplete

        ended = {cell for cell, (_, status) in own.items() if status != FAILED_STATUS}
        return [c for c in self.grid if c not in ended and why_incomplete(self.sweep_dir / c) is not None]

    def interrupted(self) -> str:
        """The end on Ctrl-C, once the launcher has stopped the workers: collect and log the
        complete cells as ``on_multirun_end`` does, and say so in one line (a second line only
        for a broken MLflow store)."""
        own = read_progress(progress_file(self.sweep_dir, self.run_id))
        done = collect_and_log(self.sweep_dir, self.results_dir, self.store_error, self.track)
        progress_file(self.sweep_dir, self.run_id).unlink(missing_ok=True)
        failed = sum(status == FAILED_STATUS for _, status in own.values())
        if done.cells:
            kept = f"{len(done.cells)} complete cells kept and collected into {self.sweep_dir / RESULTS}"
            kept += "" if done.store_error or not self.track else f" and MLflow ({done.logged} newly logged)"
        else:
            kept = "no complete cell to collect"
        line = (
            f"[sweep {self.sweep_dir.name}] interrupted: {kept}; {len(self.unfinished(own))} of the grid's "
            f"{self.total} cells did not finish"
            + (f" and {failed} FAILED" if failed else "")
            + "; rerun the same command to run only those"
        )
        return "\n".join(filter(None, [line, done.store_error]))
