"""A sweep of many tiny cells, end to end, and where each cell's time goes.

    python -m fairsim.bench sweep                          # 200 cells of num_jobs=50, this checkout
    python -m fairsim.bench sweep --cells 1000
    python -m fairsim.bench sweep --cells 200 --against /tmp/main   # the same sweep by another checkout first

The sweep is ``python run.py -m seed=range(0,N) num_jobs=50 policy=fifo`` into a temporary
results folder, as a user runs it (joblib on every core, then collection and MLflow logging in the
parent). Reported: its whole command's wall time and cells per second, and a per-cell breakdown:

- run: each cell's own time in its worker (``.progress``: building, simulating, provenance,
  writing), split by its provenance record into the simulation (``started_at`` to
  ``finished_at``: workload, policy, simulation, metrics) and the rest (the provenance record
  and writing the folder);
- outside the cells: the whole command less the cells' run time spread over the workers, that
  is Python's and Hydra's start, composing each cell's config, worker start, claiming the cell
  (locks, completeness and freshness checks), collection and MLflow;
- collection and MLflow logging, timed again in this process on the finished sweep
  (``collect`` into the sweep folder, ``log_sweep`` into a fresh store), per cell.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from fairsim.bench import load_average
from fairsim.experiment.compose import CONF_DIR

HERE = CONF_DIR.parent


def sweep_command(checkout: Path, results: Path, cells: int, num_jobs: int) -> list[str]:
    return [
        sys.executable,
        str(checkout / "run.py"),
        "-m",
        f"seed=range(0,{cells})",
        f"num_jobs={num_jobs}",
        "policy=fifo",
        f"results_dir={results}",
        "sweep_name=bench",
    ]


def run_sweep(checkout: Path, results: Path, cells: int, num_jobs: int) -> float:
    tick = time.perf_counter()
    proc = subprocess.run(sweep_command(checkout, results, cells, num_jobs), capture_output=True, text=True)
    wall = time.perf_counter() - tick
    if proc.returncode != 0:
        raise SystemExit(f"error: the sweep by {checkout} exited {proc.returncode}:\n{proc.stderr[-2000:]}")
    return wall


def _seconds(record: dict) -> float | None:
    try:
        start, end = (dt.datetime.fromisoformat(record[k]) for k in ("started_at", "finished_at"))
    except (KeyError, TypeError, ValueError):
        return None
    return (end - start).total_seconds()


def cell_times(sweep_dir: Path) -> tuple[list[float], list[float]]:
    """(each cell's run seconds in its worker, each cell's simulation seconds) from its folder."""
    from fairsim.experiment.run_folder import PROVENANCE

    ran, simulated = [], []
    for cell in sorted(p for p in sweep_dir.iterdir() if (p / PROVENANCE).is_file()):
        seconds = _seconds(json.loads((cell / PROVENANCE).read_text()))
        if seconds is not None:
            simulated.append(seconds)
        log = (cell / "run.log").read_text() if (cell / "run.log").is_file() else ""
        for line in log.splitlines():  # record_done's progress line: "... <cell>: 0.4 s | ..."
            head = line.split(" | ")[0]
            if head.endswith(" s") and ": " in head:
                ran.append(float(head.rsplit(": ", 1)[1][:-2]))
    return ran, simulated


def after_the_sweep(sweep_dir: Path, store: Path) -> tuple[float, float, int]:
    """(collection seconds, MLflow logging seconds into a fresh store, cells) in this process."""
    from fairsim.experiment.collect import collect, survey
    from fairsim.experiment.tracking import ensure_store, log_sweep

    tick = time.perf_counter()
    cells, _, _ = survey(sweep_dir)
    collect(sweep_dir, cells)
    collected = time.perf_counter() - tick
    ensure_store(store)  # the store exists before a sweep logs (its parent makes it first)
    tick = time.perf_counter()
    log_sweep(store, "bench", cells)
    return collected, time.perf_counter() - tick, len(cells)


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="python -m fairsim.bench sweep", description=__doc__.splitlines()[0])
    ap.add_argument("--cells", type=int, default=200, help="cells in the sweep (seeds 0..N-1)")
    ap.add_argument("--num-jobs", type=int, default=50, help="jobs per cell")
    ap.add_argument("--against", type=Path, help="another checkout (a folder holding run.py): its sweep first")
    args = ap.parse_args(argv)
    checkouts = {"this": HERE} if args.against is None else {"against": args.against.resolve(), "this": HERE}
    workers = os.cpu_count() or 1
    print(f"load average before: {load_average()}  ({workers} cores)")
    with tempfile.TemporaryDirectory() as tmp:
        for label, checkout in checkouts.items():
            results = Path(tmp) / label
            wall = run_sweep(checkout, results, args.cells, args.num_jobs)
            sweep_dir = results / "sweeps" / "bench"
            ran, simulated = cell_times(sweep_dir)
            collected, logged, cells = after_the_sweep(sweep_dir, Path(tmp) / f"{label}-store")
            run_s = statistics.median(ran) if ran else float("nan")
            sim_s = statistics.median(simulated) if simulated else float("nan")
            outside = max(wall - sum(ran) / workers, 0.0) / max(cells, 1)
            print(f"\n{label}: {checkout}")
            print(
                f"  {cells} cells of num_jobs={args.num_jobs} in {wall:.1f} s whole command: {cells / wall:.2f} cells/s"
            )
            print("  per cell (medians over the cells; the outside part is per cell of the whole command):")
            print(f"    run in its worker        {run_s * 1000:7.1f} ms  ({len(ran)} cells)")
            print(f"      simulation             {sim_s * 1000:7.1f} ms  (workload, policy, engine, metrics)")
            print(f"      provenance + writing   {(run_s - sim_s) * 1000:7.1f} ms")
            print(
                f"    outside the cells        {outside * 1000:7.1f} ms  (start, composing, workers, claiming, collection, MLflow)"
            )
            print(f"    collection (again)       {collected / max(cells, 1) * 1000:7.1f} ms")
            print(f"    MLflow logging (again)   {logged / max(cells, 1) * 1000:7.1f} ms  (a fresh store)")
    print(f"\nload average after: {load_average()}")
    return 0
