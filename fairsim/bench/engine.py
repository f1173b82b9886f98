"""Engine benchmark: FIFO on the 1,000-GPU, 8-type cluster (``cluster=scale8``) with generated
Philly traces of 1k to 20k jobs.

    python -m fairsim.bench engine                  # sizes 1k 2k 4k 8k 16k 20k, 3 repeats each
    python -m fairsim.bench engine --sizes 20000 --repeats 5 --load 0.8
    python -m fairsim.bench engine --policy ours --sizes 20000 --repeats 1   # FFT's paper-scale cell
    python -m fairsim.bench engine --policy ours --sizes 20000 --repeats 1 --set policy.warm_start=true
    python -m fairsim.bench engine --policy tiresias --workload philly --sizes 5000 20000 80000 --clocks rounds events

``--set KEY=VALUE`` (repeatable) passes any further config override to the runs. ``--clocks``
runs each size under each named ``sim.clock``, the clocks alternating run by run (a slow spell
on a shared machine hits both), one row per clock.

Each measurement runs in a fresh child process (so peak RSS is that run's own) through the same
config path as ``run.py``. Reported per size: median wall seconds of the simulation, of the whole
run (trace generation + simulation + metrics), simulated rounds and rounds per second, policy
decisions, the mean number of active jobs, milliseconds of simulation per decision,
microseconds per decision per active job (flat when cost grows linearly with active jobs), and
peak RSS.
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
import time

from fairsim.experiment.compose import compose_config
from fairsim.sim.config import CLOCKS

DEFAULT_SIZES = [1000, 2000, 4000, 8000, 16000, 20000]


def child(num_jobs: int, load: float, seed: int, policy: str, cluster: str, workload: str, extra: list[str]) -> dict:
    from fairsim.experiment.single import run_config

    cfg = compose_config(
        [
            f"policy={policy}",
            f"cluster={cluster}",
            f"workload={workload}",
            f"num_jobs={num_jobs}",
            f"load={load}",
            f"seed={seed}",
            *extra,
        ]
    )
    tick = time.perf_counter()
    out = run_config(cfg)
    total = time.perf_counter() - tick
    rounds = out.rounds
    active_mean = float((rounds["active_jobs"] * rounds["duration_s"]).sum() / rounds["duration_s"].sum())
    decided = rounds[rounds["decided"]]
    return {
        "jobs": num_jobs,
        "sim_s": out.summary["sim_wall_s"],
        "total_s": total,
        "rounds": int(out.summary["rounds"]),
        "decisions": int(out.summary["policy_calls"]),
        "active_mean": active_mean,
        "active_at_decision": float(decided["active_jobs"].mean()) if len(decided) else 0.0,
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "avg_jct_h": out.summary["avg_jct_s"] / 3600,
        "finished": out.summary["finished_jobs"],
    }


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="python -m fairsim.bench engine", description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=DEFAULT_SIZES)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--load", type=float, default=0.8)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--policy", default="fifo")
    ap.add_argument("--cluster", default="scale8")
    ap.add_argument("--workload", default="philly_raw")
    ap.add_argument(
        "--clocks",
        nargs="+",
        choices=CLOCKS,
        default=None,
        help="run each size under each sim.clock (default: the config's)",
    )
    ap.add_argument(
        "--set",
        dest="overrides",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a further config override for every run (repeatable)",
    )
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        print(
            json.dumps(
                child(args.sizes[0], args.load, args.seed, args.policy, args.cluster, args.workload, args.overrides)
            )
        )
        return 0
    print(
        f"engine benchmark: policy={args.policy} cluster={args.cluster} workload={args.workload} "
        f"load={args.load} seed={args.seed}{''.join(' ' + o for o in args.overrides)}, median of {args.repeats}"
    )
    header = (
        f"{'jobs':>6} {'clock':>7} {'sim s':>7} {'total s':>8} {'rounds':>7} {'rounds/s':>9} {'decisions':>9} "
        f"{'ms/dec':>7} {'active':>7} {'us/dec/job':>10} {'RSS MB':>7} {'done':>6}"
    )
    print(header)
    clocks = args.clocks or [None]
    for size in args.sizes:
        runs: dict = {clock: [] for clock in clocks}
        for _ in range(args.repeats):
            for clock in clocks:  # alternating, so a slow spell hits every clock
                extra = args.overrides + ([f"sim.clock={clock}"] if clock else [])
                result = run_child(size, args, extra)
                if result is None:
                    return 1
                runs[clock].append(result)
        for clock in clocks:
            print_row(size, clock or "-", runs[clock])
    return 0


def run_child(size: int, args: argparse.Namespace, overrides: list[str]) -> dict | None:
    """One measurement in a fresh process; None (the child's last error line printed) if it failed."""
    cmd = child_command(size, args.load, args.seed, args.policy, args.cluster, args.workload, overrides)
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        print(proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else "child failed", file=sys.stderr)
        return None
    return json.loads(proc.stdout.strip().splitlines()[-1])


def child_command(
    num_jobs: int, load: float, seed: int, policy: str, cluster: str, workload: str, overrides: list[str]
) -> list[str]:
    """The command that runs one measurement (``child``) in a fresh process and prints it as JSON."""
    return [
        sys.executable,
        "-m",
        "fairsim.bench",
        "engine",
        "--child",
        "--sizes",
        str(num_jobs),
        "--load",
        str(load),
        "--seed",
        str(seed),
        "--policy",
        policy,
        "--cluster",
        cluster,
        "--workload",
        workload,
        *(f"--set={o}" for o in overrides),
    ]


def print_row(size: int, clock: str, runs: list[dict]) -> None:
    med = {k: statistics.median(r[k] for r in runs) for k in ("sim_s", "total_s", "peak_rss_mb")}
    r0 = runs[0]
    decisions = max(r0["decisions"], 1)
    per_decision_job_us = med["sim_s"] / decisions / max(r0["active_at_decision"], 1) * 1e6
    print(
        f"{size:>6} {clock:>7} {med['sim_s']:>7.2f} {med['total_s']:>8.2f} {r0['rounds']:>7} "
        f"{r0['rounds'] / med['sim_s']:>9.0f} {r0['decisions']:>9} {med['sim_s'] / decisions * 1e3:>7.3f} "
        f"{r0['active_mean']:>7.0f} {per_decision_job_us:>10.2f} {med['peak_rss_mb']:>7.0f} {r0['finished']:>6}",
        flush=True,
    )
