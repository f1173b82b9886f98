"""Gavel-compatible replay speed: fairsim against Gavel's own simulator on its reference points.

    python -m fairsim.bench gavel                     # both points
    python -m fairsim.bench gavel --points trace --repeats 5
    python -m fairsim.bench gavel --points paper_ftf  # finish-time fairness, ~1.5 min

Points (docs/gavel_compat.md), all with sim=gavel_compat seed=0, policy=gavel_mmf unless named:
  trace  the 96-job max_min_fairness.trace on 4 V100 + 4 P100 + 4 K80
  paper  Gavel's generator at 3.2 jobs/h on 36+36+36 GPUs, JCT over jobs 4000-4999
  paper_ftf  the same point with policy=gavel_ftf (not run by default: LP-bound, ~1.5 min)

Each point runs in this process through the same code path as ``run.py`` (compose the config,
``run_config``). Reported: the run's wall seconds (workload, simulation, metrics), the
simulation's own seconds, rounds, LP recomputes, avg JCT and makespan, and the speed-up over
Gavel's measured wall time on a 2-core machine like ours (GAVEL.md: 2.3, 143 and 516 s; those times
are Gavel's whole run, so ours is too). CPU seconds are printed as well: on a shared machine
wall time includes waiting for a core.
"""

from __future__ import annotations

import argparse
import statistics
import time

from fairsim.experiment.compose import compose_config

_PAPER = ["workload=gavel_generated", "workload.rate_per_hour=3.2", "workload.window=[4000,5000]", "cluster=gavel"]
POINTS = {  # name: (overrides, Gavel's wall seconds on a 2-core machine, GAVEL.md)
    "trace": (
        [
            "policy=gavel_mmf",
            "workload=gavel_trace",
            "workload.path=max_min_fairness",
            "cluster=gavel",
            "cluster.counts.v100=4",
            "cluster.counts.p100=4",
            "cluster.counts.k80=4",
        ],
        2.3,
    ),
    "paper": (["policy=gavel_mmf", *_PAPER], 143.0),
    "paper_ftf": (["policy=gavel_ftf", *_PAPER], 516.0),
}
COMMON = ["sim=gavel_compat", "seed=0"]


def run_point(name: str) -> dict:
    from fairsim.experiment.single import run_config

    overrides, gavel_s = POINTS[name]
    cfg = compose_config(overrides + COMMON)
    wall, cpu = time.perf_counter(), time.process_time()
    out = run_config(cfg)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    s = out.summary
    return {
        "point": name,
        "wall_s": wall,
        "cpu_s": cpu,
        "sim_s": s["sim_wall_s"],
        "rounds": int(s["rounds"]),
        "recomputes": int(s.get("allocation_recomputes", 0)),
        "solver_s": float(s.get("solver_s", 0.0)),
        "avg_jct_h": s["avg_jct_s"] / 3600,
        "makespan_h": s["makespan_s"] / 3600,
        "gavel_s": gavel_s,
    }


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="python -m fairsim.bench gavel", description=__doc__.splitlines()[0])
    ap.add_argument("--points", nargs="+", choices=sorted(POINTS), default=["trace", "paper"])
    ap.add_argument("--repeats", type=int, default=1, help="runs per point; the median is reported")
    args = ap.parse_args(argv)
    print(
        f"{'point':>9} {'wall s':>7} {'cpu s':>7} {'sim s':>7} {'rounds':>7} {'LPs':>5} {'LP s':>6} "
        f"{'avg JCT h':>9} {'makespan h':>10} {'Gavel s':>8} {'speed-up':>8}"
    )
    for name in args.points:
        runs = [run_point(name) for _ in range(args.repeats)]
        r = dict(runs[0])
        for key in ("wall_s", "cpu_s", "sim_s", "solver_s"):
            r[key] = statistics.median(x[key] for x in runs)
        print(
            f"{name:>9} {r['wall_s']:7.2f} {r['cpu_s']:7.2f} {r['sim_s']:7.2f} {r['rounds']:7d} {r['recomputes']:5d} "
            f"{r['solver_s']:6.2f} {r['avg_jct_h']:9.2f} {r['makespan_h']:10.2f} {r['gavel_s']:8.1f} "
            f"{r['gavel_s'] / r['wall_s']:7.1f}x"
        )
    return 0
