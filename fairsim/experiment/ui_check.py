"""Checks in a real browser that the address fairsim prints for an experiment (``runs_url``)
opens MLflow's runs table with the key metrics as columns, not its GenAI overview.

    python -m fairsim.experiment.ui_check                       # a fresh store: a sweep of four tiny cells
    python -m fairsim.experiment.ui_check --results /tmp/ui6 --experiment ui6
    python -m fairsim.experiment.ui_check --screenshot /tmp/runs.png

It starts ``mlflow ui`` on a free local port over the store, loads the address in headless
Chromium (``--dump-dom``), and passes when every run name of the experiment (the sweep's parent
and its cells) is in the page, so are the key metrics' column headers (``tracking.KEY_METRICS``),
and none of the GenAI navigation is. Exit status 0: passed; 1: failed (one line); 2: no Chromium
(set FAIRSIM_CHROMIUM to its path). Every process it starts is stopped by its pid.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

from fairsim.experiment import tracking, ui

CHROMIUM_NAMES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
# words of the GenAI layout (its side navigation and overview), absent from the classic runs table
GENAI_MARKERS = ("Sessions", "Judges", "Evaluation runs", "Detect Issues")
SERVER_START_S = 180  # mlflow ui takes tens of seconds to start on a busy machine
PAGE_BUDGETS_MS = (15_000, 30_000, 60_000)  # virtual time for the page; retried longer when the runs are not in yet
TINY = ["num_jobs=10"]
TINY_GRID = [("policy", ("fifo", "srtf")), ("seed", ("0", "1"))]  # the fresh store's sweep: four cells
WINDOW = "1600,1000"


class UICheckError(Exception):
    """The check could not run or did not pass; the message is one line."""


def find_chromium() -> str | None:
    named = os.environ.get("FAIRSIM_CHROMIUM")
    if named:
        return shutil.which(named) or (named if Path(named).is_file() else None)
    return next((found for name in CHROMIUM_NAMES if (found := shutil.which(name))), None)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def tiny_store(results_dir: Path, name: str = "ui_check") -> Path:
    """A store with one sweep of tiny cells (``TINY_GRID``, each a complete run folder under
    results_dir/sweeps/name, named by its overrides as a sweep names it), logged as a sweep is."""
    import itertools

    from fairsim.experiment.compose import compose_config
    from fairsim.experiment.single import run_config, write_results

    sweep = Path(results_dir) / "sweeps" / name
    cells = []
    for values in itertools.product(*(v for _, v in TINY_GRID)):
        overrides = [f"{key}={value}" for (key, _), value in zip(TINY_GRID, values)]
        cfg = compose_config([*TINY, *overrides])
        cells.append(write_results(run_config(cfg), sweep / ",".join(overrides), cfg))
    tracking.ensure_store(results_dir)
    tracking.log_sweep(results_dir, name, cells)
    return sweep


@contextlib.contextmanager
def mlflow_ui(results_dir: Path, port: int, log: Path) -> Iterator[str]:
    """``mlflow ui`` over the store, serving at the address yielded; stopped on exit."""
    address = f"http://127.0.0.1:{port}"
    with open(log, "w") as out:
        proc = ui.start(results_dir, port, out)
    try:
        deadline = time.monotonic() + SERVER_START_S
        while True:
            if proc.poll() is not None:
                raise UICheckError(f"mlflow ui exited with status {proc.returncode} before serving (log: {log})")
            try:
                with urllib.request.urlopen(f"{address}/health", timeout=5) as response:
                    if response.status == 200:
                        break
            except (urllib.error.URLError, OSError):
                pass
            if time.monotonic() > deadline:
                raise UICheckError(f"mlflow ui did not answer on {address} within {SERVER_START_S} s (log: {log})")
            time.sleep(1)
        yield address
    finally:
        ui.stop(proc.pid, reap=proc)  # its own session: the server and every process it started, nothing else


def chromium(browser: str, url: str, *args: str, budget_ms: int) -> subprocess.CompletedProcess:
    """One headless Chromium load of ``url`` with a fresh profile, offline from everything but the UI."""
    with tempfile.TemporaryDirectory(prefix="fairsim-chromium-") as profile:
        command = [
            browser,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--no-first-run",
            f"--user-data-dir={profile}",
            f"--window-size={WINDOW}",
            f"--virtual-time-budget={budget_ms}",
            *args,
            url,
        ]
        try:
            return subprocess.run(command, check=False, capture_output=True, text=True, timeout=budget_ms / 1000 + 120)
        except subprocess.TimeoutExpired as exc:
            raise UICheckError(f"chromium did not finish loading {url} within {exc.timeout:.0f} s") from exc


def problems(dom: str, names: list[str], columns: tuple[str, ...] = tracking.KEY_METRICS) -> list[str]:
    """What keeps the page from being the runs table of these runs with these metric columns (empty: it is)."""
    from html import escape

    missing = [n for n in names if escape(n, quote=False) not in dom]
    hidden = [c for c in columns if c not in dom]
    genai = [m for m in GENAI_MARKERS if m in dom]
    out = []
    if missing:
        out.append(f"{len(missing)} of {len(names)} runs not shown (first: {missing[0]})")
    if hidden:
        out.append(f"no column of the metrics {', '.join(hidden)}")
    if genai:
        out.append(f"the GenAI layout is shown ({', '.join(genai)})")
    return out


def load(
    browser: str, url: str, names: list[str], columns: tuple[str, ...] = tracking.KEY_METRICS
) -> tuple[list[str], int]:
    """``problems`` of the page at ``url`` and the virtual time it got: retried with more time while
    the runs are not in (the UI fetches them after its first paint)."""
    for budget in PAGE_BUDGETS_MS:
        found = problems(chromium(browser, url, "--dump-dom", budget_ms=budget).stdout, names, columns)
        if not found:
            break
    return found, budget


def check(results_dir: Path, experiment: str, browser: str, screenshot: Path | None = None) -> str:
    """Load the experiment's printed address in ``browser``; a one-line summary if it shows the
    runs table, else UICheckError."""
    client = tracking._client(results_dir)
    exp = client.get_experiment_by_name(experiment)
    if exp is None:
        raise UICheckError(f"{tracking.tracking_uri(results_dir)} has no experiment {experiment!r}")
    names = sorted(r.info.run_name for r in client.search_runs([exp.experiment_id], max_results=1000))
    if not names:
        raise UICheckError(f"experiment {experiment!r} has no runs to look for")
    with (
        tempfile.TemporaryDirectory(prefix="fairsim-ui-check-") as tmp,
        mlflow_ui(results_dir, free_port(), Path(tmp) / "mlflow-ui.log") as address,
    ):
        url = tracking.runs_url(exp.experiment_id, address)
        found, budget = load(browser, url, names)
        if screenshot is not None:
            chromium(browser, url, f"--screenshot={Path(screenshot).resolve()}", budget_ms=budget)
    if found:
        raise UICheckError(f"{url}: {'; '.join(found)}")
    return (
        f"{url} shows the runs table: {len(names)} runs, the columns {', '.join(tracking.KEY_METRICS)}, no GenAI layout"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m fairsim.experiment.ui_check", description=__doc__.splitlines()[0])
    parser.add_argument("--results", type=Path, help="a results folder with mlflow.db (default: a fresh tiny store)")
    parser.add_argument("--experiment", default="ui_check", help="the experiment to open (default %(default)s)")
    parser.add_argument("--screenshot", type=Path, help="also save the page as this PNG")
    args = parser.parse_args(argv)
    browser = find_chromium()
    if browser is None:
        print(f"skipped: no Chromium found ({', '.join(CHROMIUM_NAMES)} on PATH, or FAIRSIM_CHROMIUM)", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="fairsim-ui-store-") as tmp:
        results = args.results
        try:
            if results is None:
                results = Path(tmp)
                tiny_store(results, args.experiment)
            print(f"ok: {check(results, args.experiment, browser, args.screenshot)}")
        except UICheckError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
