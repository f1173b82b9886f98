"""``make ui`` and ``make ui-stop``: MLflow's UI over a results folder's store, as one process
group that ends whole.

    python -m fairsim.experiment.ui [RESULTS_DIR] [--port 5000]    # make ui: serve until Ctrl-C
    python -m fairsim.experiment.ui [RESULTS_DIR] --stop           # make ui-stop

``mlflow ui`` is some ten processes (the server, its uvicorn worker, a job runner and its huey
consumers); stopping the server alone leaves the consumers running. So the UI is started in a
session of its own, and its whole process group is stopped (SIGTERM, then SIGKILL after
``STOP_WAIT_S``) when this process gets Ctrl-C, a SIGTERM or a SIGHUP (the terminal closed), or
when ``--stop`` names the folder: the group's id is kept in ``<RESULTS_DIR>/.mlflow-ui.pid``
while it serves. The UI's own Ctrl-C never reaches it (another session), so nothing outlives this
process but by ``--stop``.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import IO

from fairsim.experiment import tracking

PID_FILE = ".mlflow-ui.pid"
# MLflow 3.17's run links carry no workflowType: a run page takes the layout the browser chose last
# (its localStorage, GenAI until the user picks otherwise), which no server setting changes
RUN_PAGE_NOTE = (
    'a run page in the GenAI layout ("Judges", "Evaluation runs"): click "Model training" at its top left once, '
    "and this browser keeps it (MLflow 3.17's run links carry no layout)"
)
STOP_WAIT_S = 30  # for the group to end on SIGTERM before SIGKILL
ENDING = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


def start(results_dir: Path, port: int, out: IO | None = None) -> subprocess.Popen:
    """``mlflow ui`` over the store, on 127.0.0.1:``port``, in a session (and process group) of its own."""
    command = [
        sys.executable,
        "-m",
        "mlflow",
        "ui",
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--workers",
        "1",
        "--backend-store-uri",
        tracking.tracking_uri(results_dir),
    ]
    return subprocess.Popen(
        command, stdout=out, stderr=subprocess.STDOUT if out is not None else None, start_new_session=True
    )


def alive(group: int) -> bool:
    """Whether any process of the group is left (an unreaped child of ours counts: reap it first)."""
    try:
        os.killpg(group, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # a group id reused by another user's processes: not ours to wait for
        return False
    return True


def stop(group: int, reap: subprocess.Popen | None = None) -> None:
    """SIGTERM to every process of the group, SIGKILL to what is left after STOP_WAIT_S; ``reap``
    is the group's leader when it is our child (waited for, so that it counts as gone)."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(group, signal.SIGTERM)
    deadline = time.monotonic() + STOP_WAIT_S
    while time.monotonic() < deadline:
        if reap is not None:
            reap.poll()
        if not alive(group):
            return
        time.sleep(0.2)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(group, signal.SIGKILL)
    if reap is not None:
        reap.wait()


class _Ending(Exception):
    """A signal that ends the UI, raised in the main thread."""


def _raise_ending(signum: int, frame) -> None:
    raise _Ending(signal.Signals(signum).name)


def serve(results_dir: Path, port: int) -> int:
    """Print each experiment's runs table (``tracking.main``), then serve until a signal ends this
    process or the UI exits; its whole group is stopped either way."""
    pid_file = results_dir / PID_FILE
    running = _recorded(pid_file)
    if running is not None:
        print(
            f"error: an MLflow UI already serves {results_dir} (process group {running}); make ui-stop stops it",
            file=sys.stderr,
        )
        return 1
    address = f"http://127.0.0.1:{port}"
    status = tracking.main([str(results_dir), "--address", address])
    if status:
        return status
    results_dir.mkdir(parents=True, exist_ok=True)
    proc = None
    previous = {s: signal.signal(s, _raise_ending) for s in ENDING}
    try:
        proc = start(results_dir, port)
        pid_file.write_text(f"{proc.pid}\n")
        print(f"MLflow UI on {address} (process group {proc.pid}); Ctrl-C or make ui-stop ends all of it")
        print(f"  {RUN_PAGE_NOTE}", flush=True)
        status = proc.wait()
        return 0 if status < 0 else status  # ended by a signal (make ui-stop): as asked
    except _Ending:
        return 0
    finally:
        for s in ENDING:  # a second Ctrl-C must not cut the stop short
            signal.signal(s, signal.SIG_IGN)
        if proc is not None:
            stop(proc.pid, reap=proc)
        pid_file.unlink(missing_ok=True)
        for s, handler in previous.items():
            signal.signal(s, handler)


def _recorded(pid_file: Path) -> int | None:
    """The process group a pid file names, if it still runs (a stale file is removed)."""
    try:
        group = int(pid_file.read_text().strip())
    except (OSError, ValueError):
        return None
    if alive(group):
        return group
    pid_file.unlink(missing_ok=True)
    return None


def stop_serving(results_dir: Path) -> int:
    group = _recorded(results_dir / PID_FILE)
    if group is None:
        print(f"no MLflow UI serves {results_dir}")
        return 0
    stop(group)
    (results_dir / PID_FILE).unlink(missing_ok=True)
    print(f"stopped the MLflow UI over {results_dir} (process group {group})")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m fairsim.experiment.ui", description=__doc__.splitlines()[0])
    parser.add_argument("results_dir", nargs="?", default="results", type=Path)
    parser.add_argument(
        "--port", type=int, default=5000, help="where the UI serves, on 127.0.0.1 (default %(default)s)"
    )
    parser.add_argument("--stop", action="store_true", help="stop the UI serving RESULTS_DIR, all of its processes")
    args = parser.parse_args(argv)
    return stop_serving(args.results_dir) if args.stop else serve(args.results_dir, args.port)


if __name__ == "__main__":
    sys.exit(main())
