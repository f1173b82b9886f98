"""Tiresias-compatible replay: fairsim against Tiresias' own simulator on the same traces.

    python -m fairsim.bench tiresias --tiresias /path/to/Tiresias --python2 /path/to/python2.7
    python -m fairsim.bench tiresias --traces 480_job --schemes dlas-gpu --repeats 3
    python -m fairsim.bench tiresias                  # fairsim alone: its speed

Every scheme of Tiresias' simulator (``simulator/run_sim.py --scheme=count``, plain GPU counting)
runs on every trace beside the fairsim policy that implements it (docs/tiresias_compat.md):

  fifo          policy=fifo policy.backfill=false
  fjf           policy=fifo                     (FIFO with backfill: fit-job-first)
  shortest      policy=srtf
  shortest-gpu  policy=tiresias                 (shortest remaining GPU-time; one type, one queue)
  dlas-gpu      policy=tiresias_las             (2D-LAS, thresholds 3250 and 7200 GPU-seconds)

both with ``workload=tiresias_trace cluster=tiresias cluster.counts.V100=<GPUs>
sim=tiresias_compat`` (``--set KEY=VALUE`` adds fairsim overrides, e.g. ``--set sim.round_len_s=300``).
Traces: the shipped ones by name (``fairsim/data/tiresias/traces``), each on the cluster size
in TRACES, or ``--trace PATH:GPUS``.

Reported per (trace, scheme): the average JCT of each simulator and fairsim's deviation in %,
the Pearson correlation of the per-job JCTs, and wall seconds, medians over ``--repeats``:
Tiresias' whole command (interpreter start-up included) and its simulation alone (``run_sim.main()``,
run as its ``__main__`` does, timed inside the same Python 2 process), fairsim's whole command
(``python run.py ...`` with the same overrides, track=false, results in a scratch folder) and
fairsim's simulation alone (the engine loop, as the run's summary reports it); the CPU seconds
of both commands too, since on a shared machine wall time includes waiting for a core. A second
table then gives the two simulators' agreement job by job (fairsim.bench._agreement): both average
JCTs, fairsim's deviation, the per-job Pearson r, the share of jobs within 10% of Tiresias' JCT,
the deviation of the 99th percentile, preemptions per job on both sides (Tiresias' ``preempt``
column, fairsim's ``preemptions``) and both makespans (last finish less first arrival).
``--their-jobs PATH`` writes Tiresias' per-job results as one CSV (trace, gpus, scheme, job_id,
jct_s, preemptions).
"""

from __future__ import annotations

import argparse
import csv
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import NamedTuple

import numpy as np

from fairsim.bench import write_their_jobs
from fairsim.bench._agreement import HEADER, agreement, format_row
from fairsim.experiment.compose import CONF_DIR, compose_config
from fairsim.workload.tiresias_trace import shipped_trace

SCHEMES = {  # Tiresias' --schedule: fairsim overrides
    "fifo": ["policy=fifo", "policy.backfill=false"],
    "fjf": ["policy=fifo"],
    "shortest": ["policy=srtf"],
    "shortest-gpu": ["policy=tiresias"],
    "dlas-gpu": ["policy=tiresias_las"],
}
TRACES = {"60_job": 16, "las_120": 16, "480_job": 32}  # shipped trace: V100 GPUs it is replayed on
GPUS_PER_HOST = 4
RUN_PY = CONF_DIR.parent / "run.py"


class JobResult(NamedTuple):
    jct_s: float
    preemptions: float
    finish_s: float
    arrival_s: float


# Python 2 run by --python2: Tiresias' run_sim.py as its own __main__ does (main()), with the
# wall seconds of main() alone, its simulation without the interpreter's start-up, on the last line
TIMED_MAIN = """
import os, sys, time
sim_dir = sys.argv[1]
sys.argv = ['run_sim.py'] + sys.argv[2:]
sys.path.insert(0, sim_dir)
os.chdir(sim_dir)
import run_sim
out = sys.stdout
sys.stdout = open(os.devnull, 'w')
tick = time.time()
run_sim.main()
wall = time.time() - tick
sys.stdout = out
print(repr(wall))
"""


def fairsim_overrides(trace: str, gpus: int, scheme: str, extra: list[str]) -> list[str]:
    return [
        *SCHEMES[scheme],
        "workload=tiresias_trace",
        f"workload.path={trace}",
        "cluster=tiresias",
        f"cluster.counts.V100={gpus}",
        "sim=tiresias_compat",
        "seed=0",
        *extra,
    ]


def run_fairsim(overrides: list[str]) -> tuple[dict[int, JobResult], float]:
    """Per-job results by job id, and the simulation's own wall seconds (in this process)."""
    from fairsim.experiment.single import run_config

    out = run_config(compose_config(overrides))
    cols = [out.jobs[c].tolist() for c in ("job_id", "jct_s", "preemptions", "finish_s", "arrival_s")]
    jobs = {int(j): JobResult(float(jct), float(n), float(f), float(a)) for j, jct, n, f, a in zip(*cols)}
    return jobs, float(out.summary["sim_wall_s"])


def children_cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def time_fairsim_command(overrides: list[str]) -> tuple[float, float]:
    """Wall and CPU seconds of ``python run.py`` with these overrides."""
    with tempfile.TemporaryDirectory() as tmp:
        cmd = [sys.executable, str(RUN_PY), *overrides, "track=false", f"results_dir={tmp}"]
        tick, cpu = time.perf_counter(), children_cpu_s()
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=tmp)
        return time.perf_counter() - tick, children_cpu_s() - cpu


def simulator_dir(path: Path) -> Path:
    """The folder holding run_sim.py: the checkout itself or its simulator/ folder."""
    for cand in (path, path / "simulator"):
        if (cand / "run_sim.py").is_file():
            return cand
    raise SystemExit(f"--tiresias {path}: no run_sim.py there or in its simulator/ folder")


def read_job_csv(path: Path) -> dict[int, JobResult]:
    """Tiresias' job.csv by job id: JCT, and where its columns are there, preemptions
    (``preempt``), finish (``end_time``) and arrival (``submit_time``); nan where not."""
    nan = float("nan")
    with open(path, newline="") as f:
        return {
            int(r["job_id"]): JobResult(
                float(r["JCT"]),
                float(r.get("preempt", nan)),
                float(r.get("end_time", nan)),
                float(r.get("submit_time", nan)),
            )
            for r in csv.DictReader(f)
        }


def run_tiresias(
    sim_dir: Path, python2: str, trace: Path, gpus: int, scheme: str
) -> tuple[dict[int, JobResult], float, float, float]:
    """Per-job results by job id from Tiresias' job.csv, the command's wall and CPU seconds,
    and the wall seconds of its simulation alone (run_sim.main())."""
    if gpus % GPUS_PER_HOST:
        raise SystemExit(f"{trace}: {gpus} GPUs is not a whole number of {GPUS_PER_HOST}-GPU hosts")
    with tempfile.TemporaryDirectory() as tmp:
        log = Path(tmp) / "log"
        cmd = [
            python2,
            "-c",
            TIMED_MAIN,
            str(sim_dir),
            "--scheme=count",
            f"--schedule={scheme}",
            f"--trace_file={trace.resolve()}",
            "--num_switch=1",
            f"--num_node_p_switch={gpus // GPUS_PER_HOST}",
            f"--num_gpu_p_node={GPUS_PER_HOST}",
            f"--log_path={log}",
        ]
        tick, cpu = time.perf_counter(), children_cpu_s()
        done = subprocess.run(
            cmd, cwd=sim_dir, capture_output=True, text=True, check=False
        )  # its stderr goes into our message
        wall, cpu = time.perf_counter() - tick, children_cpu_s() - cpu
        if done.returncode != 0:
            raise SystemExit(f"Tiresias' simulator failed (scheme {scheme}, {trace}):\n{done.stderr.strip()[-2000:]}")
        sim_s = float(done.stdout.split()[-1])
        jobs = read_job_csv(log / "job.csv")
    return jobs, wall, cpu, sim_s


def resolve_traces(names: list[str], paths: list[str]) -> list[tuple[str, Path, int]]:
    out = []
    for name in names:
        if name not in TRACES:
            raise SystemExit(f"--traces: {name!r} is not one of {', '.join(TRACES)} (or give --trace PATH:GPUS)")
        out.append((name, shipped_trace(name), TRACES[name]))
    for spec in paths:
        path, _, gpus = spec.rpartition(":")
        if not path or not gpus.isdigit() or not Path(path).is_file():
            raise SystemExit(f"--trace {spec!r}: expected PATH:GPUS with an existing file")
        out.append((Path(path).stem, Path(path), int(gpus)))
    return out


def compare(theirs: dict[int, JobResult], ours: dict[int, JobResult]) -> dict[str, float]:
    """Job-by-job agreement (fairsim.bench._agreement): restarts are both sides' preemptions,
    makespans the last finish less the first arrival (fairsim's arrival times, which are the
    trace's submit times), each where Tiresias' job.csv has the column."""
    ids = sorted(theirs)
    if sorted(ours) != ids:
        raise SystemExit("the two simulators finished different job sets")
    t, o = [theirs[i] for i in ids], [ours[i] for i in ids]

    def column(rows: list[JobResult], k: int) -> np.ndarray | None:
        a = np.array([r[k] for r in rows])
        return a if np.isfinite(a).all() else None

    restarts = column(t, 1)
    return agreement(
        column(t, 0),
        column(o, 0),
        theirs_restarts=restarts,
        ours_restarts=column(o, 1) if restarts is not None else None,
        theirs_finish=column(t, 2),
        ours_finish=column(o, 2),
        arrival=column(o, 3),
    )


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="python -m fairsim.bench tiresias", description=__doc__.splitlines()[0])
    ap.add_argument(
        "--tiresias", type=Path, help="Tiresias checkout (or its simulator/ folder); without it fairsim runs alone"
    )
    ap.add_argument("--python2", default="python2.7", help="Python 2.7 with numpy for Tiresias' simulator")
    ap.add_argument("--traces", nargs="*", default=list(TRACES), help=f"shipped traces ({', '.join(TRACES)})")
    ap.add_argument(
        "--trace",
        action="append",
        default=[],
        metavar="PATH:GPUS",
        help="a trace file of your own and its cluster size",
    )
    ap.add_argument("--schemes", nargs="+", choices=list(SCHEMES), default=list(SCHEMES))
    ap.add_argument(
        "--set", action="append", default=[], metavar="KEY=VALUE", help="a fairsim override, e.g. sim.round_len_s=300"
    )
    ap.add_argument("--repeats", type=int, default=1, help="runs of each command; medians are reported")
    ap.add_argument("--no-command", action="store_true", help="skip timing fairsim's whole command (python run.py)")
    ap.add_argument("--their-jobs", type=Path, metavar="CSV", help="write Tiresias' per-job JCTs here")
    args = ap.parse_args(argv)
    traces = resolve_traces(args.traces, args.trace)
    sim_dir = simulator_dir(args.tiresias) if args.tiresias else None
    print(f"fairsim overrides: sim=tiresias_compat {' '.join(args.set)}".rstrip())
    print(
        "T = Tiresias' simulator, F = fairsim: cmd = the whole command (wall), cpu = its CPU seconds, sim = the simulation alone (wall)"
    )
    head = f"{'trace':>10} {'GPUs':>4} {'scheme':>12} "
    if sim_dir:
        head += (
            f"{'theirs h':>8} {'fairsim h':>9} {'dev %':>6} {'corr':>6} {'T cmd s':>7} {'T cpu s':>7} {'T sim s':>7} "
        )
    else:
        head += f"{'fairsim h':>9} "
    print(head + f"{'F cmd s':>7} {'F cpu s':>7} {'F sim s':>7}")
    their_rows, compared = [], []
    for name, path, gpus in traces:
        trace_arg = str(path.resolve()) if name not in TRACES else name
        for scheme in args.schemes:
            overrides = fairsim_overrides(trace_arg, gpus, scheme, args.set)
            runs = [run_fairsim(overrides) for _ in range(args.repeats)]
            ours, sim_s = runs[0][0], statistics.median(r[1] for r in runs)
            cmd = (
                [(float("nan"), float("nan"))]
                if args.no_command
                else [time_fairsim_command(overrides) for _ in range(args.repeats)]
            )
            cmd_s, cmd_cpu = statistics.median(c[0] for c in cmd), statistics.median(c[1] for c in cmd)
            line = f"{name:>10} {gpus:4d} {scheme:>12} "
            if sim_dir:
                their = [run_tiresias(sim_dir, args.python2, path, gpus, scheme) for _ in range(args.repeats)]
                theirs = their[0][0]
                their_s, their_cpu, their_sim = (statistics.median(r[k] for r in their) for k in (1, 2, 3))
                a = compare(theirs, ours)
                compared.append((scheme, f"{name}/{gpus}", a))
                line += (
                    f"{a['theirs_avg'] / 3600:8.3f} {a['ours_avg'] / 3600:9.3f} {a['avg_dev_pct']:+6.2f} "
                    f"{a['r']:6.4f} {their_s:7.2f} {their_cpu:7.2f} {their_sim:7.2f} "
                )
                their_rows += [(name, gpus, scheme, j, theirs[j].jct_s, theirs[j].preemptions) for j in sorted(theirs)]
            else:
                line += f"{np.mean([j.jct_s for j in ours.values()]) / 3600:9.3f} "
            print(line + f"{cmd_s:7.2f} {cmd_cpu:7.2f} {sim_s:7.2f}", flush=True)
    if compared:
        print("\nTiresias (S) beside fairsim (F), job by job; restarts: preemptions; workload: trace/GPUs")
        print(HEADER.replace("  policy", "  scheme"))
        for scheme, workload, a in compared:
            print(format_row(scheme, workload, a))
    if args.their_jobs and their_rows:
        header = ["trace", "gpus", "scheme", "job_id", "jct_s", "preemptions"]
        write_their_jobs(args.their_jobs, header, their_rows, "Tiresias'")
    return 0
