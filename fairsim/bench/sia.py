"""Sia-compatible replay: fairsim against Sia's artifact simulator on Sia's workloads.

    python -m fairsim.bench sia --sia /path/to/sia-simulator --python /path/to/python
    python -m fairsim.bench sia --sia DIR --their-results RUNS --workloads saturn/workload-1 --policies sia gavel

``--sia`` is the ``sia-simulator`` folder of siasosp23/artifacts (it has no licence: it is read
where it is, nothing is copied); ``--python`` a Python with its requirements (cvxpy with CBC,
pymoo 0.4 for Pollux). Each (policy, workload) runs their simulator as ``run_experiment.sh`` does,
on the one workload file, unmodified, in their folder, its log written to a scratch folder:

  sia     multi_simulator.py --policy=sia --policy_p_val=-0.5 --mip_lambda_a=0.01 --mip_lambda_n=1.1
          --interval=60 --project_throughput --share_max_replicas
  gavel   multi_simulator.py --policy=gavel --interval=360     (Gavel's max_sum_throughput_perf,
          jobs rigid at their CSV num_replicas and batch_size)
  pollux  multi_simulator_unaware.py --policy=pollux --interval=60 --policy_p_val=-1

``--their-results DIR`` reuses runs instead (they take minutes to half an hour): a folder
``DIR/<policy>-<set>-<N>/`` holding ``workload-<N>.log`` and, for its wall time, a ``wall_s.txt``
(seconds) or GNU time's ``time.txt``; ``--keep-results DIR`` writes new runs there in that layout.

fairsim runs the same workload (``workload=sia_trace workload.dir=<--sia> cluster=sia
sim=sia_compat seed=0``) with the matching policy:

  sia     policy=sia +policy.host_gpus={A100-40GB: 8, RTX2080Ti: 8} policy.growth_cap=2
          policy.restart_penalty_by_model={deepspeech2: 25, imagenet: 250, cifar10: 30, bert: 120,
          yolov3: 45}   (the restart penalties of the artifact's sia.py; its jobs tell the policy
          their goodput at batches up to their CSV batch_size: workload.scheduler_batch=submitted)
  gavel   policy=gavel_throughput workload.batch=fixed sim.round_len_s=360 and the round
          mechanism of their gavel.py (GavelMechanism options, each as their code does it):
            policy.mechanism.recompute_min_interval_s=0   their LP is re-solved every round
                (gavel.py schedule_jobs_on_workers -> update_priorities -> compute_allocations);
                its inputs change only when a job arrives or finishes, so re-solving then is the same
            +policy.mechanism.queue=global   one queue of every (job, type) entry sorted by
                (priority, deficit, X) (the per-type sort is commented out in
                schedule_jobs_on_workers_helper)
            +policy.mechanism.reset_counters=false   received time counted since arrival: their
                reset_time is commented out, so the counters and the type totals only grow
                (finished jobs' time stays in the totals) and the deficits stay 0
            +policy.mechanism.time_counted=round   each placement adds the whole interval to the
                job's and the type's counters (optimize, "update time"), however long it ran
          batch: fixed makes each job's work its steps at its CSV batch and its throughput its
          steps/s at its gang, the iterations/s their predict_throughput gives the LP
  pollux  policy=pollux workload.scheduler_batch=tuned   (the artifact's type-blind jobs carry no
          submitted batch: its Pollux judges them at batches up to the application's largest)
          policy.explore_from=trained   a job's bound grows from the most GPUs it has trained on:
              max_profiled_replicas reads its Job's recorded step times, which it records only
              after its checkpoint-restore delay (job.py step, update_params)

Reported per (policy, workload): both average JCTs and fairsim's deviation in %, the deviation of
the p99 JCT (their print_run_stats.py's: the sorted JCTs at index int(0.99 n)), both makespans
(last finish - first submission), the per-job Pearson correlation of JCTs, and wall seconds:
their command whole, fairsim's simulation alone and (unless ``--no-command``) its whole ``python
run.py`` command.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from fairsim.bench import jct_agreement, load_average, write_their_jobs
from fairsim.bench.tiresias import time_fairsim_command
from fairsim.experiment.compose import CONF_DIR

POLICIES = ("sia", "gavel", "pollux")
THEIR_COMMANDS = {  # (their script, its arguments), as run_experiment.sh runs them
    "sia": (
        "multi_simulator.py",
        [
            "--policy=sia",
            "--policy_p_val=-0.5",
            "--mip_lambda_a=0.01",
            "--mip_lambda_n=1.1",
            "--interval=60",
            "--project_throughput",
            "--share_max_replicas",
        ],
    ),
    "gavel": ("multi_simulator.py", ["--policy=gavel", "--interval=360"]),
    "pollux": ("multi_simulator_unaware.py", ["--policy=pollux", "--interval=60", "--policy_p_val=-1"]),
}
OUR_POLICY = {
    "sia": [
        "policy=sia",
        "+policy.host_gpus={A100-40GB: 8, RTX2080Ti: 8}",
        "policy.growth_cap=2",
        "policy.restart_penalty_by_model={deepspeech2: 25, imagenet: 250, cifar10: 30, bert: 120, yolov3: 45}",
    ],
    "gavel": [
        "policy=gavel_throughput",
        "workload.batch=fixed",
        "sim.round_len_s=360",
        "policy.mechanism.recompute_min_interval_s=0",
        "+policy.mechanism.queue=global",
        "+policy.mechanism.reset_counters=false",
        "+policy.mechanism.time_counted=round",
    ],
    "pollux": ["policy=pollux", "workload.scheduler_batch=tuned", "policy.explore_from=trained"],
}
WORKLOAD = re.compile(r"^([A-Za-z0-9_.-]+)/workload-(\d+)$")


@dataclass(frozen=True)
class TheirRun:
    names: list[str]  # job names in the workload's row order
    submit: np.ndarray  # seconds
    finish: np.ndarray  # seconds
    wall_s: float  # their command, whole (nan if unknown)


def parse_workload(name: str) -> tuple[str, str]:
    match = WORKLOAD.match(name)
    if not match:
        raise SystemExit(f"--workloads: {name!r} is not <set>/workload-<N> (e.g. saturn/workload-1)")
    return match.group(1), match.group(2)


def run_folder(results: Path, policy: str, workload: str) -> Path:
    suite, n = parse_workload(workload)
    return results / f"{policy}-{suite}-{n}"


def read_their_log(log: Path, names: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """(submit, finish) seconds per job in the workload's row order, from the last record of
    their JSON-lines log (every submitted job, with its completion time)."""
    if not log.is_file():
        raise SystemExit(f"--their-results: no {log}")
    with open(log, "rb") as f:
        f.seek(0, 2)
        size, chunk, tail = f.tell(), 1 << 16, b""
        while True:  # the last line, read from the end (their logs are tens of MB)
            start = max(0, size - len(tail) - chunk)
            f.seek(start)
            tail = f.read(size - start)
            lines = tail.rstrip(b"\n").split(b"\n")
            if len(lines) > 1 or start == 0:
                break
    try:
        record = json.loads(lines[-1])
        jobs = {j["name"]: j for j in record["submitted_jobs"]}
    except (ValueError, KeyError, TypeError) as e:
        raise SystemExit(f"--their-results: {log}: its last line is not a round record ({e})") from None
    missing = [n for n in names if n not in jobs or jobs[n].get("completion_time") is None]
    if missing:
        raise SystemExit(f"--their-results: {log}: jobs not finished in its last record: {', '.join(missing[:5])}")
    submit = np.array([float(jobs[n]["submission_time"]) for n in names])
    finish = np.array([float(jobs[n]["completion_time"]) for n in names])
    return submit, finish


def their_wall(folder: Path) -> float:
    """Their command's wall seconds: wall_s.txt, else GNU time's 'Elapsed' line; nan if neither."""
    if (folder / "wall_s.txt").is_file():
        return float((folder / "wall_s.txt").read_text().split()[0])
    if (folder / "time.txt").is_file():
        found = re.search(r"Elapsed \(wall clock\) time.*: ([\d:.]+)", (folder / "time.txt").read_text())
        if found:
            parts = [float(p) for p in found.group(1).split(":")]
            return sum(p * 60**i for i, p in enumerate(reversed(parts)))
    return float("nan")


def workload_csv(sim_dir: Path, workload: str) -> Path:
    path = sim_dir / "workloads" / f"{workload}.csv"
    if not path.is_file():
        raise SystemExit(f"--workloads: {workload!r}: no {path}")
    return path


def job_names(path: Path) -> list[str]:
    import pandas as pd

    return [str(n).strip() for n in pd.read_csv(path, skipinitialspace=True)["name"]]


def run_theirs(sim_dir: Path, python: str, policy: str, workload: str, folder: Path) -> None:
    """Their simulator on one workload file, its log and wall seconds into ``folder``."""
    script, extra = THEIR_COMMANDS[policy]
    n = parse_workload(workload)[1]
    folder.mkdir(parents=True, exist_ok=True)
    cmd = [python, script, str(workload_csv(sim_dir, workload)), *extra, f"--output={folder / f'workload-{n}.log'}"]
    tick = time.perf_counter()
    with open(folder / "stdout.txt", "w") as out:
        done = subprocess.run(cmd, cwd=sim_dir, stdout=out, stderr=subprocess.STDOUT, check=False)
    wall = time.perf_counter() - tick
    if done.returncode != 0:
        tail = (folder / "stdout.txt").read_text(errors="replace").splitlines()[-20:]
        raise SystemExit(f"their simulator failed ({policy}, {workload}):\n" + "\n".join(tail))
    (folder / "wall_s.txt").write_text(f"{wall!r}\n")


def their_run(folder: Path, names: list[str], workload: str) -> TheirRun:
    log = folder / f"workload-{parse_workload(workload)[1]}.log"
    submit, finish = read_their_log(log, names)
    return TheirRun(names=names, submit=submit, finish=finish, wall_s=their_wall(folder))


def fairsim_overrides(sim_dir: Path, policy: str, workload: str, extra: list[str]) -> list[str]:
    return [
        "workload=sia_trace",
        f"workload.dir={sim_dir}",
        f"workload.path={workload}",
        "cluster=sia",
        "sim=sia_compat",
        *OUR_POLICY[policy],
        "seed=0",
        *extra,
    ]


def run_fairsim(overrides: list[str]) -> tuple[np.ndarray, np.ndarray, float]:
    """(arrival, finish) seconds in job-id order (the workload's rows), and the simulation's wall seconds."""
    from fairsim.experiment.compose import compose_config
    from fairsim.experiment.single import run_config

    out = run_config(compose_config(overrides))
    jobs = out.jobs.sort_values("job_id")
    return jobs["arrival_s"].to_numpy(float), jobs["finish_s"].to_numpy(float), float(out.summary["sim_wall_s"])


def p99(jct: np.ndarray) -> float:
    """print_run_stats.py's p99: the sorted JCTs at index int(0.99 n)."""
    return float(np.sort(jct)[int(0.99 * len(jct))])


def compare(theirs: TheirRun, arrival: np.ndarray, finish: np.ndarray) -> dict[str, float]:
    if len(arrival) != len(theirs.submit):
        raise SystemExit(f"the two simulators ran different job counts ({len(theirs.submit)} and {len(arrival)})")
    if not np.isfinite(finish).all():
        raise SystemExit(f"fairsim did not finish {int((~np.isfinite(finish)).sum())} jobs")
    a, b = theirs.finish - theirs.submit, finish - arrival
    t_avg, o_avg, dev, corr = jct_agreement(a, b)
    return {
        "theirs": t_avg,
        "ours": o_avg,
        "dev": dev,
        "their_p99": p99(a),
        "our_p99": p99(b),
        "p99_dev": 100.0 * (p99(b) - p99(a)) / p99(a),
        "corr": corr,
        "their_makespan": float(theirs.finish.max() - theirs.submit.min()),
        "our_makespan": float(finish.max() - arrival.min()),
    }


def check_sim_dir(path: Path) -> Path:
    for rel in ("multi_simulator.py", "applications.py", "workloads", "traces"):
        if not (path / rel).exists():
            raise SystemExit(f"--sia {path}: no {rel} (give the sia-simulator folder of siasosp23/artifacts)")
    return path


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="python -m fairsim.bench sia", description=__doc__.splitlines()[0])
    ap.add_argument("--sia", type=Path, required=True, help="the sia-simulator folder of siasosp23/artifacts")
    ap.add_argument("--python", default="python3", help="Python with their requirements (runs their simulator)")
    ap.add_argument("--workloads", nargs="+", default=["saturn/workload-1"], help="<set>/workload-<N> of theirs")
    ap.add_argument("--policies", nargs="+", choices=POLICIES, default=["sia"])
    ap.add_argument("--their-results", type=Path, metavar="DIR", help="reuse their runs: DIR/<policy>-<set>-<N>/")
    ap.add_argument("--keep-results", type=Path, metavar="DIR", help="write new runs of theirs here (same layout)")
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="a fairsim override")
    ap.add_argument("--no-command", action="store_true", help="skip timing fairsim's whole command (python run.py)")
    ap.add_argument("--their-jobs", type=Path, metavar="CSV", help="write their per-job JCTs here")
    args = ap.parse_args(argv)
    sim_dir = check_sim_dir(args.sia.expanduser().resolve())
    for workload in args.workloads:
        parse_workload(workload)
        workload_csv(sim_dir, workload)
    if args.their_results is not None and not args.their_results.is_dir():
        raise SystemExit(f"--their-results {args.their_results}: no such folder")
    if args.their_results is None and shutil.which(args.python) is None and not Path(args.python).is_file():
        raise SystemExit(f"--python {args.python}: no such program (a Python with their requirements)")
    policies = []
    for policy in args.policies:
        if policy == "pollux" and not (CONF_DIR / "policy" / "pollux.yaml").is_file():
            print("pollux: skipped (fairsim has no policy=pollux yet: conf/policy/pollux.yaml)")
            continue
        policies.append(policy)
    print(f"load average {load_average()}")
    print("S = Sia's simulator (cmd: its whole command), F = fairsim (sim: the simulation alone; cmd: python run.py)")
    print(
        f"{'policy':>6} {'workload':>18} {'S avg h':>7} {'F avg h':>7} {'dev %':>7} {'S p99 h':>7} {'F p99 h':>7} "
        f"{'p99 %':>7} {'S mk h':>7} {'F mk h':>7} {'corr':>6} {'S cmd s':>7} {'F sim s':>7} {'F cmd s':>7}"
    )
    their_rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for workload in args.workloads:
            names = job_names(workload_csv(sim_dir, workload))
            for policy in policies:
                if args.their_results is not None:
                    folder = run_folder(args.their_results, policy, workload)
                else:
                    folder = run_folder(args.keep_results or Path(tmp), policy, workload)
                    run_theirs(sim_dir, args.python, policy, workload, folder)
                theirs = their_run(folder, names, workload)
                overrides = fairsim_overrides(sim_dir, policy, workload, args.set)
                arrival, finish, sim_s = run_fairsim(overrides)
                cmd_s = float("nan") if args.no_command else time_fairsim_command(overrides)[0]
                c = compare(theirs, arrival, finish)
                print(
                    f"{policy:>6} {workload:>18} {c['theirs'] / 3600:7.3f} {c['ours'] / 3600:7.3f} {c['dev']:+7.2f} "
                    f"{c['their_p99'] / 3600:7.3f} {c['our_p99'] / 3600:7.3f} {c['p99_dev']:+7.2f} "
                    f"{c['their_makespan'] / 3600:7.2f} {c['our_makespan'] / 3600:7.2f} {c['corr']:6.3f} "
                    f"{theirs.wall_s:7.1f} {sim_s:7.2f} {cmd_s:7.2f}",
                    flush=True,
                )
                their_rows += [
                    (policy, workload, j, name, s, f - s)
                    for j, (name, s, f) in enumerate(zip(names, theirs.submit, theirs.finish))
                ]
    if args.their_jobs and their_rows:
        write_their_jobs(
            args.their_jobs,
            ["policy", "workload", "job_id", "name", "submit_s", "jct_s"],
            their_rows,
            "Sia's simulator",
        )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
