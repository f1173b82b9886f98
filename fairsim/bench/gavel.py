"""Gavel-compatible replay speed: fairsim against Gavel's own simulator on its reference points.

    python -m fairsim.bench gavel                     # both points
    python -m fairsim.bench gavel --points trace --repeats 5
    python -m fairsim.bench gavel --points paper_ftf  # finish-time fairness, ~1.5 min
    python -m fairsim.bench gavel --points trace allox_trace --gavel /path/to/gavel --gavel-python PY

Points (docs/gavel_compat.md), all with sim=gavel_compat seed=0, policy=gavel_mmf unless named:
  trace  the 96-job max_min_fairness.trace on 4 V100 + 4 P100 + 4 K80
  paper  Gavel's generator at 3.2 jobs/h on 36+36+36 GPUs, JCT over jobs 4000-4999
  paper_ftf  the same point with policy=gavel_ftf (not run by default: LP-bound, ~1.5 min)
  allox_trace  policy=allox policy.queue_choice=gavel (Gavel's AlloX_Perf) on the same trace with
         every job on one GPU (Gavel's AlloX takes single-GPU jobs only), written to a scratch file
  allox_paper  the paper point with policy=allox policy.queue_choice=gavel (~10 s)

Each point runs in this process through the same code path as ``run.py`` (compose the config,
``run_config``). Reported: the run's wall seconds (workload, simulation, metrics), the
simulation's own seconds, rounds, LP recomputes, avg JCT and makespan, and the speed-up over
Gavel's measured wall time on a 2-core machine like ours (GAVEL.md: 2.3, 143 and 516 s; those times
are Gavel's whole run, so ours is too). CPU seconds are printed as well: on a shared machine
wall time includes waiting for a core.

``--gavel DIR`` (a Gavel checkout, its ``scheduler`` folder compiled as its Makefile says) also
runs Gavel's own trace driver (``scripts/drivers/simulate_scheduler_with_trace.py --seed 0``,
Python ``--gavel-python``) on every point, times it, and prints the two
simulators' agreement job by job (fairsim.bench._agreement): both average JCTs and fairsim's
deviation, the per-job Pearson r, the share of jobs within 10% of Gavel's JCT, the deviation of
the 99th percentile, both makespans, and how many jobs finish within 1 s of Gavel's (Gavel prints
no per-job preemption count, so there is no restart column); the speed-up is then against that
measured wall time. The trace points run on 4:4:4. The paper points cannot run on fairsim's own
generator (it draws other jobs than Gavel's), so with ``--gavel`` both simulators replay Gavel's
own jobs: the 6,000 jobs its generated-jobs simulation draws at 3.2 jobs/h with seed 0, written
to a scratch file by a short driver run in Gavel's ``scheduler`` folder (``DUMP_JOBS``: Gavel's
``utils.generate_job`` with its ``Scheduler``'s own generators, in the order its ``simulate``
draws them), Gavel's trace driver with ``-c 36:36:36 -s 4000 -e 5000``, fairsim with
``workload=gavel_trace`` on that file and ``workload.window=[4000,5000]``.
"""

from __future__ import annotations

import argparse
import re
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

import numpy as np

from fairsim.bench._agreement import HEADER, agreement, format_row
from fairsim.experiment.compose import compose_config
from fairsim.workload.gavel_trace import shipped_trace

_PAPER = ["workload=gavel_generated", "workload.rate_per_hour=3.2", "workload.window=[4000,5000]", "cluster=gavel"]
_SMALL = [
    "workload=gavel_trace",
    "cluster=gavel",
    "cluster.counts.v100=4",
    "cluster.counts.p100=4",
    "cluster.counts.k80=4",
]
_ALLOX = ["policy=allox", "policy.queue_choice=gavel"]
SINGLE_GPU_TRACE = "max_min_fairness_1gpu.trace"  # written by single_gpu_trace
POINTS = {  # name: (overrides, Gavel's wall seconds on a 2-core machine: GAVEL.md; AlloX: docs/gavel_compat.md)
    "trace": (["policy=gavel_mmf", *_SMALL, "workload.path=max_min_fairness"], 2.3),
    "paper": (["policy=gavel_mmf", *_PAPER], 143.0),
    "paper_ftf": (["policy=gavel_ftf", *_PAPER], 516.0),
    "allox_trace": ([*_ALLOX, *_SMALL, f"workload.path={{scratch}}/{SINGLE_GPU_TRACE}"], 2.65),
    "allox_paper": ([*_ALLOX, *_PAPER], 99.8),
}
GAVEL_JOBS = "gavel_jobs.trace"  # Gavel's own generated jobs, written by dump_gavel_jobs
PAPER_JOBS, PAPER_RATE_PER_HOUR, PAPER_WINDOW = 6000, 3.2, (4000, 5000)
GAVEL_RUNS = {  # point: (Gavel's policy name, its trace: shipped name or a scratch file)
    "trace": ("max_min_fairness_perf", "max_min_fairness"),
    "allox_trace": ("allox", SINGLE_GPU_TRACE),
    "paper": ("max_min_fairness_perf", GAVEL_JOBS),
    "paper_ftf": ("finish_time_fairness_perf", GAVEL_JOBS),
    "allox_paper": ("allox", GAVEL_JOBS),
}
# fairsim on Gavel's own jobs at the paper point (with --gavel), in place of its own generator's
ON_GAVEL_JOBS = [
    "workload=gavel_trace",
    f"workload.path={{scratch}}/{GAVEL_JOBS}",
    f"workload.window=[{PAPER_WINDOW[0]},{PAPER_WINDOW[1]}]",
    "cluster=gavel",
]
COMMON = ["sim=gavel_compat", "seed=0"]
# Run by --gavel-python in Gavel's scheduler folder: the jobs its generated-jobs simulation draws
# (Scheduler's own generators, seed 0, in the order simulate() draws them), one line each: the
# job as Gavel's trace format writes it, a tab, the arrival time.
DUMP_JOBS = """
import sys
sys.path.insert(0, ".")
import scheduler, utils
lam, seed, n, out = float(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
sched = scheduler.Scheduler(utils.get_policy("fifo", seed=seed), simulate=True, seed=seed,
                            throughputs_file="simulation_throughputs.json", time_per_iteration=360)
t = 0.0
with open(out, "w") as f:
    for _ in range(n):
        job = utils.generate_job(throughputs=sched._oracle_throughputs, reference_worker_type="v100",
                                 rng=sched._job_generator, generate_multi_gpu_jobs=False)
        f.write("%s\\t%r\\n" % (job, t))
        t += sched._sample_arrival_time_delta(1.0 / lam)
sched.shutdown()
"""


def single_gpu_trace(folder: Path) -> Path:
    """Gavel's max_min_fairness.trace with every job's scale factor (its 7th field) set to 1:
    the same 96 jobs, steps and arrivals, each on one GPU."""
    rows = [line.split("\t") for line in shipped_trace("max_min_fairness").read_text().splitlines()]
    path = folder / SINGLE_GPU_TRACE
    path.write_text("".join("\t".join([*r[:6], "1", *r[7:]]) + "\n" for r in rows))
    return path


def gavel_scheduler_dir(gavel_dir: Path) -> Path:
    return gavel_dir / "scheduler" if (gavel_dir / "scheduler").is_dir() else gavel_dir


def dump_gavel_jobs(gavel_dir: Path, python: str, scratch: Path) -> Path:
    """Gavel's generated jobs at the paper point (3.2 jobs/h, seed 0, single-GPU) as a trace file."""
    path = scratch / GAVEL_JOBS
    lam = 3600 / PAPER_RATE_PER_HOUR
    cmd = [python, "-c", DUMP_JOBS, repr(lam), "0", str(PAPER_JOBS), str(path)]
    run = subprocess.run(cmd, cwd=gavel_scheduler_dir(gavel_dir), capture_output=True, text=True, check=False)
    if run.returncode or not path.is_file():
        raise SystemExit(f"dumping Gavel's generated jobs failed:\n{run.stderr[-2000:]}")
    return path


def run_point(name: str, scratch: Path, on_gavel_jobs: bool = False) -> dict:
    """One point in this process; ``on_gavel_jobs``: a paper point on Gavel's dumped jobs."""
    from fairsim.experiment.single import run_config

    overrides, gavel_s = POINTS[name]
    if on_gavel_jobs:
        overrides = [o for o in overrides if o not in _PAPER] + ON_GAVEL_JOBS
    cfg = compose_config([o.format(scratch=scratch) for o in overrides] + COMMON)
    wall, cpu = time.perf_counter(), time.process_time()
    out = run_config(cfg)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    s = out.summary
    finished = out.jobs.dropna(subset=["finish_s"]).set_index("job_id")
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
        "jct_s": finished["jct_s"],
        "finish_s": finished["finish_s"],
    }


def run_gavel(gavel_dir: Path, python: str, name: str, scratch: Path) -> dict:
    """Gavel's trace driver on a point: wall seconds, per-job JCT (the window's at the paper
    points) and the last of those jobs' end timestamps."""
    policy, trace = GAVEL_RUNS[name]
    path = scratch / trace if trace in (SINGLE_GPU_TRACE, GAVEL_JOBS) else shipped_trace(trace)
    driver = ["scripts/drivers/simulate_scheduler_with_trace.py", "-t", str(path), "-p", policy]
    if trace == GAVEL_JOBS:
        driver += ["-c", "36:36:36", "-s", str(PAPER_WINDOW[0]), "-e", str(PAPER_WINDOW[1])]
    else:
        driver += ["-c", "4:4:4"]
    wall = time.perf_counter()
    run = subprocess.run(
        [python, *driver, "--seed", "0"],
        cwd=gavel_scheduler_dir(gavel_dir),
        capture_output=True,
        text=True,
        check=False,
    )
    wall = time.perf_counter() - wall
    if run.returncode:
        raise SystemExit(f"Gavel's driver failed ({' '.join(driver)}):\n{run.stderr[-2000:]}")
    text = run.stdout + run.stderr
    jct = {int(j): float(v) for j, v in re.findall(r"^Job (\d+): ([\d.]+)$", text, re.M)}
    ends = re.findall(r"\[Job succeeded\]\tJob ID: (\d+)\t.*End timestamp: ([\d.]+)", text)
    makespan = max((float(v) for j, v in ends if int(j) in jct), default=float("nan"))
    return {"wall_s": wall, "jct_s": jct, "makespan_s": makespan}


def compare(ours: dict, theirs: dict) -> dict:
    """Job-by-job agreement (fairsim.bench._agreement) over Gavel's jobs, plus how many jobs
    finish within 1 s of Gavel's time. Gavel prints no per-job preemption count, so there are
    no restart columns; its makespan is its last job's end timestamp, ours the last finish."""
    ids = sorted(theirs["jct_s"])
    missing = [j for j in ids if not np.isfinite(ours["jct_s"].get(j, np.nan))]
    if missing:
        raise SystemExit(f"fairsim did not finish jobs Gavel finished: {missing[:5]}")
    g = np.array([theirs["jct_s"][j] for j in ids])
    f = ours["jct_s"].reindex(ids).to_numpy(float)
    a = agreement(g, f, ours_finish=ours["finish_s"].reindex(ids).to_numpy(float), arrival=np.zeros(len(ids)))
    a["theirs_makespan"] = theirs["makespan_s"]
    a["makespan_dev_pct"] = 100.0 * (a["ours_makespan"] - a["theirs_makespan"]) / a["theirs_makespan"]
    a["within_1s"] = int(np.count_nonzero(np.abs(f - g) < 1.0))
    return a


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="python -m fairsim.bench gavel", description=__doc__.splitlines()[0])
    ap.add_argument("--points", nargs="+", choices=sorted(POINTS), default=["trace", "paper"])
    ap.add_argument("--repeats", type=int, default=1, help="runs per point; the median is reported")
    ap.add_argument("--gavel", type=Path, help="a Gavel checkout: also run its simulator on the trace points")
    ap.add_argument("--gavel-python", default="python3", help="the Python that runs Gavel (with its requirements)")
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="fairsim-bench-gavel-") as folder:
        return _run(args, Path(folder))


def _run(args: argparse.Namespace, scratch: Path) -> int:
    single_gpu_trace(scratch)
    on_gavel_jobs = args.gavel is not None and any(GAVEL_RUNS[p][1] == GAVEL_JOBS for p in args.points)
    if on_gavel_jobs:
        dump_gavel_jobs(args.gavel, args.gavel_python, scratch)
    print(
        f"{'point':>11} {'wall s':>7} {'cpu s':>7} {'sim s':>7} {'rounds':>7} {'LPs':>5} {'LP s':>6} "
        f"{'avg JCT h':>9} {'makespan h':>10} {'Gavel s':>8} {'speed-up':>8}"
    )
    compared = []
    for name in args.points:
        replay = on_gavel_jobs and GAVEL_RUNS[name][1] == GAVEL_JOBS
        runs = [run_point(name, scratch, replay) for _ in range(args.repeats)]
        r = dict(runs[0])
        for key in ("wall_s", "cpu_s", "sim_s", "solver_s"):
            r[key] = statistics.median(x[key] for x in runs)
        if args.gavel is not None and name in GAVEL_RUNS:
            theirs = [run_gavel(args.gavel, args.gavel_python, name, scratch) for _ in range(args.repeats)]
            r["gavel_s"] = statistics.median(x["wall_s"] for x in theirs)
            compared.append((name, compare(r, theirs[0])))
        print(
            f"{name:>11} {r['wall_s']:7.2f} {r['cpu_s']:7.2f} {r['sim_s']:7.2f} {r['rounds']:7d} {r['recomputes']:5d} "
            f"{r['solver_s']:6.2f} {r['avg_jct_h']:9.2f} {r['makespan_h']:10.2f} {r['gavel_s']:8.1f} "
            f"{r['gavel_s'] / r['wall_s']:7.1f}x"
        )
    if compared:
        print(f"\nGavel (S) beside fairsim (F), job by job\n{HEADER} {'within 1 s':>10}")
        for name, a in compared:
            policy, trace = GAVEL_RUNS[name]
            print(f"{format_row(policy[:8], name, a)} {a['within_1s']:>5d}/{int(a['n']):<4d}")
    return 0
