"""Production scale: the shipped Philly trace on ``cluster=scale8`` for FIFO, Tiresias, Gavel, Themis
and FFT on both clocks, and a synthetic 1,000,000-job trace on 10,000 GPUs of 8 types for FIFO and
Tiresias; wall time, decisions, time per decision and peak RSS of each cell, against the targets.

    python -m fairsim.bench scale                                  # every cell (hours: the lead's table)
    python -m fairsim.bench scale --only 'philly/*' --num-jobs 20000 --timeout 120 --out scale.csv
    python -m fairsim.bench scale --only 'philly/fifo/*' 'synthetic/*' --num-jobs 2000 --synthetic-jobs 20000

Cells are named ``trace/policy/clock``; ``--only`` takes shell patterns of those names. The Philly
cells (``workload=philly``: consecutive real submissions with their own durations, GPU counts and
virtual clusters, ``fairsim/data/philly/philly_jobs.csv``) run once per ``--num-jobs`` size; the
full trace is 82,247 jobs. The synthetic cells draw ``--synthetic-jobs`` jobs (Poisson arrivals,
Philly's measured durations and GPU counts: ``workload=philly_raw``, seed 0) on ``scale8``'s type
mix times 10 (10,000 GPUs), on the event clock, the one FIFO and Tiresias decide on.

Each cell runs in a child process of its own through the path ``python -m fairsim.bench engine``
takes (compose the config, ``run_config``), so its peak RSS is its own; a cell still running after
``--timeout`` seconds is stopped and recorded as ``timeout`` (its RSS read from /proc before the
stop). Columns of the CSV (``--out``): the cell, its size and status; ``run_s``, the child's whole
run (trace, simulation, metrics with the fluid reference; not the interpreter's start-up); ``sim_s``,
the simulation alone; steps (rounds or events) and policy decisions; ``us_per_decision`` (sim_s /
decisions); peak RSS; the target and whether it is met:

- a Philly cell on its own clock (events for FIFO and Tiresias; rounds for FFT, Gavel, Themis and
  PAL): ``run_s`` at most 60 s (the other clock's cells are reported, not judged);
- a synthetic cell: ``run_s`` at most 600 s and peak RSS at most 4 GiB;
- the growth exponent of the engine, log(sim_s(n_max) / sim_s(n_min)) / log(n_max / n_min) between
  the smallest and largest Philly sizes run (on the row of the largest): at most 1.2 on the own
  clock. ``--num-jobs 20000 80000`` gives the 20k-to-80k exponent.
"""

from __future__ import annotations

import argparse
import csv
import fnmatch
import json
import math
import os
import subprocess
import sys
import time
from dataclasses import dataclass

from fairsim.bench.engine import child_command

PHILLY_SIZE = 82_247  # the shipped trace, fairsim/data/philly/philly_jobs.csv
SYNTHETIC_SIZE = 1_000_000
PHILLY_POLICIES = ("fifo", "tiresias", "gavel", "themis", "ours")
SYNTHETIC_POLICIES = ("fifo", "tiresias")
ROUND_BASED = frozenset({"ours", "gavel", "themis", "pal"})  # decide on rounds in their own systems
CLOCKS = ("rounds", "events")
SYNTHETIC_SCALE = 10  # scale8's type mix times 10: 10,000 GPUs of 8 types
PHILLY_TARGET_S = 60.0
SYNTHETIC_TARGET_S = 600.0
SYNTHETIC_TARGET_RSS_MB = 4096.0
EXPONENT_TARGET = 1.2
LOAD = 0.8  # the engine benchmark's load
COLUMNS = (
    "cell",
    "trace",
    "policy",
    "clock",
    "jobs",
    "gpus",
    "status",
    "run_s",
    "sim_s",
    "steps",
    "decisions",
    "us_per_decision",
    "peak_rss_mb",
    "target",
    "met",
    "growth_exponent",
    "exponent_met",
)


@dataclass(frozen=True)
class Cell:
    trace: str  # philly or synthetic
    policy: str
    clock: str
    jobs: int

    @property
    def name(self) -> str:
        return f"{self.trace}/{self.policy}/{self.clock}"


def own_clock(policy: str) -> str:
    return "rounds" if policy in ROUND_BASED else "events"


def plan(only: list[str] | None, philly_sizes: list[int], synthetic_jobs: int) -> list[Cell]:
    """The cells to run, in order: Philly sizes smallest first, then the synthetic cells."""
    cells = [
        Cell("philly", policy, clock, n) for n in sorted(philly_sizes) for policy in PHILLY_POLICIES for clock in CLOCKS
    ]
    cells += [Cell("synthetic", policy, own_clock(policy), synthetic_jobs) for policy in SYNTHETIC_POLICIES]
    if only:
        cells = [c for c in cells if any(fnmatch.fnmatchcase(c.name, pattern) for pattern in only)]
    return cells


def scale8_counts() -> dict[str, int]:
    """GPUs of each type of ``conf/cluster/scale8.yaml``."""
    from omegaconf import OmegaConf

    from fairsim.experiment.compose import CONF_DIR

    return {str(k): int(n) for k, n in OmegaConf.load(CONF_DIR / "cluster" / "scale8.yaml").counts.items()}


def synthetic_cluster() -> list[str]:
    """Overrides making ``scale8``'s type mix ``SYNTHETIC_SCALE`` times larger."""
    return [f"cluster.name=scale8x{SYNTHETIC_SCALE}"] + [
        f"cluster.counts.{name}={n * SYNTHETIC_SCALE}" for name, n in scale8_counts().items()
    ]


def cluster_gpus(cell: Cell) -> int:
    return sum(scale8_counts().values()) * (SYNTHETIC_SCALE if cell.trace == "synthetic" else 1)


def child_args(cell: Cell, seed: int) -> list[str]:
    """The ``bench engine`` child command that runs ``cell``."""
    workload, extra = ("philly", []) if cell.trace == "philly" else ("philly_raw", synthetic_cluster())
    return child_command(cell.jobs, LOAD, seed, cell.policy, "scale8", workload, [f"sim.clock={cell.clock}", *extra])


def peak_rss_mb(pid: int) -> float:
    """A live process's peak resident set (VmHWM), MiB; nan where /proc does not say."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return math.nan


def run_cell(cell: Cell, seed: int, timeout: float) -> dict:
    """One cell in a child process: its measurements, or its status when it failed or timed out."""
    row = {
        "cell": cell.name,
        "trace": cell.trace,
        "policy": cell.policy,
        "clock": cell.clock,
        "jobs": cell.jobs,
        "gpus": cluster_gpus(cell),
    }
    proc = subprocess.Popen(child_args(cell, seed), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    tick = time.perf_counter()
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        rss = peak_rss_mb(proc.pid)
        proc.kill()
        proc.communicate()
        return row | {"status": "timeout", "run_s": time.perf_counter() - tick, "peak_rss_mb": rss}
    if proc.returncode != 0 or not out.strip():
        lines = err.strip().splitlines()
        print(f"{cell.name} ({cell.jobs} jobs) failed: {lines[-1] if lines else proc.returncode}", file=sys.stderr)
        return row | {"status": "failed"}
    got = json.loads(out.strip().splitlines()[-1])
    return row | {
        "status": "ok",
        "run_s": got["total_s"],
        "sim_s": got["sim_s"],
        "steps": got["rounds"],
        "decisions": got["decisions"],
        "us_per_decision": got["sim_s"] / max(got["decisions"], 1) * 1e6,
        "peak_rss_mb": got["peak_rss_mb"],
    }


def judge(row: dict) -> dict:
    """The row's target and whether it is met (a cell that did not finish misses it)."""
    done = row["status"] == "ok"
    if row["trace"] == "synthetic":
        target = f"run_s <= {SYNTHETIC_TARGET_S:g}, rss <= {SYNTHETIC_TARGET_RSS_MB:g} MB"
        met = done and row["run_s"] <= SYNTHETIC_TARGET_S and row["peak_rss_mb"] <= SYNTHETIC_TARGET_RSS_MB
    elif row["clock"] == own_clock(row["policy"]):
        target, met = f"run_s <= {PHILLY_TARGET_S:g}", done and row["run_s"] <= PHILLY_TARGET_S
    else:
        return row | {"target": "", "met": ""}
    return row | {"target": target, "met": "met" if met else "missed"}


def growth_exponents(rows: list[dict]) -> list[dict]:
    """Each Philly (policy, clock)'s growth exponent of sim_s between its smallest and largest size,
    on the row of the largest (judged on the policy's own clock)."""
    out = [dict(r) for r in rows]
    by_pair: dict[tuple[str, str], list[dict]] = {}
    for r in out:
        if r["trace"] == "philly":
            by_pair.setdefault((r["policy"], r["clock"]), []).append(r)
    for (policy, clock), group in by_pair.items():
        small, large = min(group, key=lambda r: r["jobs"]), max(group, key=lambda r: r["jobs"])
        if small["jobs"] == large["jobs"]:
            continue
        exponent = math.nan
        if small["status"] == large["status"] == "ok":
            exponent = math.log(large["sim_s"] / small["sim_s"]) / math.log(large["jobs"] / small["jobs"])
        large["growth_exponent"] = exponent
        if clock == own_clock(policy):
            large["exponent_met"] = "met" if exponent <= EXPONENT_TARGET else "missed"  # nan: missed
    return out


def fmt(value) -> str:
    if isinstance(value, float):
        return "" if math.isnan(value) else f"{value:.4g}"
    return str(value)


def print_row(row: dict) -> None:
    print(
        f"{row['cell']:>26} {row['jobs']:>8} {row['status']:>7} {fmt(row.get('run_s', '')):>8} "
        f"{fmt(row.get('sim_s', '')):>8} {fmt(row.get('decisions', '')):>9} {fmt(row.get('us_per_decision', '')):>9} "
        f"{fmt(row.get('peak_rss_mb', '')):>7} {row.get('met', ''):>6}",
        flush=True,
    )


def write_csv(rows: list[dict], path: str) -> None:
    with open(path, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=COLUMNS, restval="")
        writer.writeheader()
        writer.writerows({k: fmt(v) for k, v in r.items()} for r in rows)


def parse(argv: list[str]) -> tuple[argparse.Namespace, list[Cell]]:
    """The options and the cells they pick (argparse's one-line refusal and exit 2 otherwise)."""
    ap = argparse.ArgumentParser(prog="python -m fairsim.bench scale", description=__doc__.splitlines()[0])
    ap.add_argument("--only", nargs="+", metavar="PATTERN", help="cells to run: patterns of trace/policy/clock")
    ap.add_argument(
        "--num-jobs", type=int, nargs="+", default=[20_000, PHILLY_SIZE], help="Philly trace sizes (at most 82247)"
    )
    ap.add_argument("--synthetic-jobs", type=int, default=SYNTHETIC_SIZE, help="jobs of the synthetic trace")
    ap.add_argument("--timeout", type=float, default=900.0, help="seconds a cell may take before it is stopped")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default="scale.csv", help="the CSV written")
    args = ap.parse_args(argv)
    if not all(1 <= n <= PHILLY_SIZE for n in args.num_jobs):
        ap.error(f"--num-jobs: each size must be in [1, {PHILLY_SIZE}] (the shipped Philly trace)")
    if args.synthetic_jobs < 1 or args.timeout <= 0:
        ap.error("--synthetic-jobs must be >= 1 and --timeout > 0")
    cells = plan(args.only, args.num_jobs, args.synthetic_jobs)
    if not cells:
        ap.error(f"--only: no cell matches {' '.join(args.only)} (cells are trace/policy/clock)")
    return args, cells


def main(argv: list[str]) -> int:
    args, cells = parse(argv)
    print(f"scale benchmark: {len(cells)} cells, load {LOAD}, seed {args.seed}, timeout {args.timeout:g} s per cell")
    print(
        f"{'cell':>26} {'jobs':>8} {'status':>7} {'run s':>8} {'sim s':>8} {'decisions':>9} {'us/dec':>9} {'RSS MB':>7} {'target':>6}"
    )
    rows = []
    for cell in cells:
        rows.append(judge(run_cell(cell, args.seed, args.timeout)))
        print_row(rows[-1])
    rows = growth_exponents(rows)
    for r in rows:
        if "growth_exponent" in r:
            print(
                f"growth exponent {r['policy']}/{r['clock']}: {fmt(r['growth_exponent'])} {r.get('exponent_met', '')}"
            )
    write_csv(rows, args.out)
    print(f"written: {os.path.abspath(args.out)}")
    return 0
