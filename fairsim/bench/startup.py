"""A one-job run's whole command: ``python run.py num_jobs=1`` with ``track=false`` and with
``track=true`` on an existing MLflow store, each in a process of its own, as a user runs it.

    python -m fairsim.bench startup                         # this checkout, 5 runs of each
    python -m fairsim.bench startup --against /tmp/main      # beside another checkout (e.g. git archive main)
    python -m fairsim.bench startup --repeats 9 --floor

Reported per checkout and mode: the median wall time of the whole command and the median CPU
time (user + system) of its process tree, over ``--repeats`` runs; the load average before and
after. With ``--against``, the two checkouts' runs alternate (A, B, A, B, ...), so a slow spell
on a shared machine hits both, and the ratio of their medians is printed. The MLflow store of
each checkout is made by one untimed tracked run first (the timed runs log to an existing
store); every run writes into a temporary results folder, and the first, untimed run of each
checkout fills its caches (file signatures, the fluid reference), as any earlier run would.

``--floor`` also times what no change to fairsim can remove: Python's own start, ``import
hydra`` and Hydra composing the default config twice (``hydra.main`` composes it once to read
``hydra.mode`` and once to run), each in a fresh process, medians likewise.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from fairsim.bench import load_average
from fairsim.experiment.compose import CONF_DIR

HERE = CONF_DIR.parent  # this checkout
MODES = {"track=false": ["track=false"], "track=true": ["track=true"]}
# Hydra's part of a run: its import, then the default config composed twice, as hydra.main does
FLOOR = {
    "python -c pass": "pass",
    "import hydra": "import hydra",
    "hydra: compose x2": (
        "from hydra import compose, initialize_config_dir\n"
        f"with initialize_config_dir(config_dir={str(CONF_DIR)!r}, version_base='1.3'):\n"
        "    compose('config', return_hydra_config=True); compose('config', return_hydra_config=True)"
    ),
}


def timed(argv: list[str], cwd: Path) -> tuple[float, float]:
    """(wall seconds, CPU seconds of the process and its children) of one command."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    tick = time.perf_counter()
    proc = subprocess.run(argv, cwd=cwd, capture_output=True, text=True)
    wall = time.perf_counter() - tick
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise SystemExit(f"error: {' '.join(argv)} exited {proc.returncode}:\n{proc.stderr[-2000:]}")
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def run_command(checkout: Path, results: Path, mode: list[str]) -> list[str]:
    return [sys.executable, str(checkout / "run.py"), "num_jobs=1", f"results_dir={results}", *mode]


def medians(samples: list[tuple[float, float]]) -> tuple[float, float]:
    return statistics.median(s[0] for s in samples), statistics.median(s[1] for s in samples)


def bench_runs(checkouts: dict[str, Path], repeats: int, work: Path) -> dict[tuple[str, str], list]:
    samples: dict[tuple[str, str], list] = {}
    for label, checkout in checkouts.items():
        timed(run_command(checkout, work / label, ["track=true"]), work)  # the store, the caches: untimed
    for _ in range(repeats):
        for mode_name, mode in MODES.items():
            for label, checkout in checkouts.items():  # alternate: a slow spell hits every checkout
                samples.setdefault((label, mode_name), []).append(
                    timed(run_command(checkout, work / label, mode), work)
                )
    return samples


def bench_floor(repeats: int, work: Path) -> dict[str, list]:
    samples: dict[str, list] = {}
    for _ in range(repeats):
        for name, code in FLOOR.items():
            samples.setdefault(name, []).append(timed([sys.executable, "-c", code], work))
    return samples


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="python -m fairsim.bench startup", description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=5, help="runs of each command; medians are reported")
    ap.add_argument("--against", type=Path, help="another checkout (a folder holding run.py) to time beside this one")
    ap.add_argument("--floor", action="store_true", help="also time Python's start, import hydra and its composition")
    args = ap.parse_args(argv)
    checkouts = {"this": HERE}
    if args.against is not None:
        if not (args.against / "run.py").is_file():
            print(
                f"error: --against: {args.against}: no run.py there (allowed: a checkout of fairsim)", file=sys.stderr
            )
            return 2
        checkouts["against"] = args.against.resolve()
    print(f"load average before: {load_average()}  ({os.cpu_count()} cores; {sys.executable})")
    for label, checkout in checkouts.items():
        print(f"  {label:<8} {checkout}")
    with tempfile.TemporaryDirectory() as tmp:
        samples = bench_runs(checkouts, args.repeats, Path(tmp))
        floor = bench_floor(args.repeats, Path(tmp)) if args.floor else {}
    print(f"load average after:  {load_average()}")
    print(f"\nwhole command, medians of {args.repeats}: python run.py num_jobs=1 <mode>")
    print(f"{'checkout':<9} {'mode':<12} {'wall s':>7} {'CPU s':>7}")
    for (label, mode), runs in samples.items():
        wall, cpu = medians(runs)
        print(f"{label:<9} {mode:<12} {wall:7.2f} {cpu:7.2f}")
    if "against" in checkouts:
        for mode in MODES:
            (w_this, c_this), (w_other, c_other) = (medians(samples[(lbl, mode)]) for lbl in ("this", "against"))
            print(f"this / against, {mode}: wall {w_this / w_other:.2f}, CPU {c_this / c_other:.2f}")
    for label in checkouts:
        (w_off, c_off), (w_on, c_on) = (medians(samples[(label, mode)]) for mode in MODES)
        print(
            f"{label}: MLflow logging adds {w_on - w_off:.2f} s wall, {c_on - c_off:.2f} s CPU (track=true - track=false)"
        )
    if floor:
        print(f"\nthe floor, medians of {args.repeats}, each in a fresh process")
        for name, runs in floor.items():
            wall, cpu = medians(runs)
            print(f"{name:<20} {wall:7.2f} s wall {cpu:7.2f} s CPU")
    return 0
