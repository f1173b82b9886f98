"""Sia-compatible replay: fairsim against Sia's artifact simulator on Sia's workloads.

    python -m fairsim.bench sia --sia /path/to/sia-simulator --python /path/to/python
    python -m fairsim.bench sia --sia DIR --their-results RUNS --workloads saturn/workload-1 --policies sia gavel
    python -m fairsim.bench sia --sia DIR --their-results RUNS --partial     # runs of theirs still going
    python -m fairsim.bench sia --sia DIR --fairsim-only --workloads philly/workload-2

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
``--partial`` (with ``--their-results``) compares a run of theirs that has not written its log yet
on the jobs it has finished, from the last "Completed jobs:" line of its ``stdout.txt``;
``--fairsim-only`` runs fairsim's side alone on their workload files.

fairsim runs the same workload (``workload=sia_trace workload.dir=<--sia> cluster=sia
sim=sia_compat seed=0``) with the matching policy:

  sia     policy=sia +policy.host_gpus={A100-40GB: 8, RTX2080Ti: 8} policy.growth_cap=2
          policy.restart_penalty_by_model={deepspeech2: 25, imagenet: 250, cifar10: 30, bert: 120,
          yolov3: 45}   (the restart penalties of the artifact's sia.py; its jobs tell the policy
          their goodput at batches up to their CSV batch_size: workload.scheduler_batch=submitted)
          sim.replace=sia   every running job re-placed from scratch each round, as sia.py's
              alloc_to_placement_fast (smart_placement=False) on its 8-GPU A100 and RTX nodes, a
              changed per-node split a restart (job.py reallocate) paying the job's restore
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
            policy.mechanism.type_order=cluster   the global queue's entries start in the cluster's
                order (schedule_jobs_on_workers_helper appends each cluster's entries in
                simulator_config.cluster_nnodes order: aws, dgx-ext, rtx = T4, A100-40GB, RTX2080Ti)
                before the stable sort, so equal keys go to the types in that order
            sim.replace=gavel   its worker assignment (schedule_jobs_on_workers): gang sizes
                largest first, a job keeps last round's workers if none is taken yet, the others
                take workers from a pointer over the nodes, so a gang can straddle nodes (2 + 2);
                a changed per-node split is a restart
          batch: fixed makes each job's work its steps at its CSV batch and its throughput its
          steps/s at its gang, the iterations/s their predict_throughput gives the LP
  pollux  policy=pollux workload.scheduler_batch=tuned   (the artifact's type-blind jobs carry no
          submitted batch: its Pollux judges them at batches up to the application's largest)
          policy.explore_from=trained   a job's bound grows from the most GPUs it has trained on:
              max_profiled_replicas reads its Job's recorded step times, which it records only
              after its checkpoint-restore delay (job.py step, update_params)

Reported per (policy, workload), job by job (fairsim.bench._agreement): both average JCTs and
fairsim's deviation in %, the per-job Pearson correlation of JCTs, the share of jobs whose JCT is
within +-10% of theirs, restarts per job on each side (their log's num_restarts; fairsim's
``restarts`` column), the deviation of the p99 JCT (their print_run_stats.py's: the sorted JCTs
at index int(0.99 n)), both makespans (last finish - first submission), and wall seconds: their
command whole, fairsim's simulation alone and (unless ``--no-command``) its whole ``python
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

from fairsim.bench import load_average, write_their_jobs
from fairsim.bench._agreement import HEADER, agreement, format_row
from fairsim.bench._agreement import p99 as agreement_p99
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
        "sim.replace=sia",
    ],
    "gavel": [
        "policy=gavel_throughput",
        "workload.batch=fixed",
        "sim.round_len_s=360",
        "policy.mechanism.recompute_min_interval_s=0",
        "+policy.mechanism.queue=global",
        "+policy.mechanism.reset_counters=false",
        "+policy.mechanism.time_counted=round",
        "policy.mechanism.type_order=cluster",
        "sim.replace=gavel",
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
    restarts: np.ndarray | None = None  # num_restarts per job (None if their log has none)


def parse_workload(name: str) -> tuple[str, str]:
    match = WORKLOAD.match(name)
    if not match:
        raise SystemExit(f"--workloads: {name!r} is not <set>/workload-<N> (e.g. saturn/workload-1)")
    return match.group(1), match.group(2)


def run_folder(results: Path, policy: str, workload: str) -> Path:
    suite, n = parse_workload(workload)
    return results / f"{policy}-{suite}-{n}"


def read_their_log(log: Path, names: list[str]) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """(submit, finish) seconds and restarts (None if the log has no num_restarts) per job in the
    workload's row order, from the last record of their JSON-lines log (every submitted job, with
    its completion time and num_restarts)."""
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
    counts = [jobs[n].get("num_restarts") for n in names]
    restarts = (
        np.array([c or 0 for c in counts], dtype=float) if all("num_restarts" in jobs[n] for n in names) else None
    )
    return submit, finish, restarts


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
    submit, finish, restarts = read_their_log(log, names)
    return TheirRun(names=names, submit=submit, finish=finish, wall_s=their_wall(folder), restarts=restarts)


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


@dataclass(frozen=True)
class OurRun:
    arrival: np.ndarray  # seconds, in job-id order (the workload's rows)
    finish: np.ndarray
    restarts: np.ndarray | None  # the per-job restarts column (sim=sia_compat has it)
    sim_s: float  # the simulation's wall seconds


def run_fairsim(overrides: list[str]) -> OurRun:
    """fairsim's run of one (policy, workload), per job in job-id order."""
    from fairsim.experiment.compose import compose_config
    from fairsim.experiment.single import run_config

    out = run_config(compose_config(overrides))
    jobs = out.jobs.sort_values("job_id")
    restarts = jobs["restarts"].to_numpy(float) if "restarts" in jobs else None
    return OurRun(
        jobs["arrival_s"].to_numpy(float), jobs["finish_s"].to_numpy(float), restarts, float(out.summary["sim_wall_s"])
    )


def p99(jct: np.ndarray) -> float:
    """print_run_stats.py's p99: the sorted JCTs at index int(0.99 n)."""
    return agreement_p99(jct)


def compare(theirs: TheirRun, ours: OurRun, jobs: np.ndarray | None = None) -> dict[str, float]:
    """``fairsim.bench._agreement``'s figures of the two runs (``jobs``: only these rows, e.g. the
    jobs a partial run of theirs finished)."""
    if len(ours.arrival) != len(theirs.submit):
        raise SystemExit(f"the two simulators ran different job counts ({len(theirs.submit)} and {len(ours.arrival)})")
    if not np.isfinite(ours.finish).all():
        raise SystemExit(f"fairsim did not finish {int((~np.isfinite(ours.finish)).sum())} jobs")
    rows = np.arange(len(ours.arrival)) if jobs is None else jobs
    pick = lambda a: None if a is None else a[rows]  # noqa: E731
    return agreement(
        theirs.finish[rows] - theirs.submit[rows],
        ours.finish[rows] - ours.arrival[rows],
        theirs_restarts=pick(theirs.restarts),
        ours_restarts=pick(ours.restarts),
        theirs_finish=theirs.finish[rows],
        ours_finish=ours.finish[rows],
    )


def read_partial(folder: Path, csv: Path, names: list[str]) -> tuple[TheirRun, np.ndarray]:
    """A run of theirs that has not ended (``--partial``): the jobs it finished so far, from the
    last "Completed jobs:" line its stdout printed ({name: JCT}), and their rows. Submissions
    are the workload's ``time`` column; restarts are not known."""
    import ast

    import pandas as pd

    out = folder / "stdout.txt"
    if not out.is_file():
        raise SystemExit(f"--partial: no {out}")
    last = None
    lines = out.read_text(errors="replace").splitlines()
    for k, line in enumerate(lines[:-1]):
        if line.startswith("Completed jobs:"):
            last = lines[k + 1]
    done = ast.literal_eval(last) if last else {}
    if not done:
        raise SystemExit(f"--partial: {out}: no job finished yet")
    submit = pd.read_csv(csv, skipinitialspace=True)["time"].to_numpy(float)
    finish = np.array([submit[k] + float(done[n]) if n in done else np.nan for k, n in enumerate(names)])
    rows = np.flatnonzero(np.isfinite(finish))
    return TheirRun(names, submit, finish, float("nan")), rows


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
    ap.add_argument("--fairsim-only", action="store_true", help="run fairsim's side alone on their workload files")
    ap.add_argument(
        "--partial", action="store_true", help="with --their-results: a run of theirs still going, its finished jobs"
    )
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="a fairsim override")
    ap.add_argument("--no-command", action="store_true", help="skip timing fairsim's whole command (python run.py)")
    ap.add_argument("--their-jobs", type=Path, metavar="CSV", help="write their per-job JCTs here")
    args = ap.parse_args(argv)
    sim_dir = check_sim_dir(args.sia.expanduser().resolve())
    for workload in args.workloads:
        parse_workload(workload)
        workload_csv(sim_dir, workload)
    if args.partial and args.their_results is None:
        raise SystemExit("--partial: give --their-results DIR (the runs of theirs still going)")
    if args.their_results is not None and not args.their_results.is_dir():
        raise SystemExit(f"--their-results {args.their_results}: no such folder")
    theirs_run = not args.fairsim_only and args.their_results is None
    if theirs_run and shutil.which(args.python) is None and not Path(args.python).is_file():
        raise SystemExit(f"--python {args.python}: no such program (a Python with their requirements)")
    policies = []
    for policy in args.policies:
        if policy == "pollux" and not (CONF_DIR / "policy" / "pollux.yaml").is_file():
            print("pollux: skipped (fairsim has no policy=pollux yet: conf/policy/pollux.yaml)")
            continue
        policies.append(policy)
    print(f"load average {load_average()}")
    if args.fairsim_only:
        print("fairsim alone (sim: the simulation; cmd: python run.py), JCTs and makespan in hours")
        print(
            f"{'policy':>8} {'workload':>18} {'F avg h':>7} {'F p99 h':>7} {'F mk h':>7} {'F rst/j':>7} {'F sim s':>7} {'F cmd s':>7}"
        )
    else:
        print(
            "S = Sia's simulator (cmd: its whole command), F = fairsim (sim: the simulation alone; cmd: python run.py)"
        )
        print(f"{HEADER} {'S cmd s':>7} {'F sim s':>7} {'F cmd s':>7}")
    their_rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for workload in args.workloads:
            csv = workload_csv(sim_dir, workload)
            names = job_names(csv)
            for policy in policies:
                overrides = fairsim_overrides(sim_dir, policy, workload, args.set)
                if args.fairsim_only:
                    ours = run_fairsim(overrides)
                    cmd_s = float("nan") if args.no_command else time_fairsim_command(overrides)[0]
                    jct = ours.finish - ours.arrival
                    rst = float("nan") if ours.restarts is None else float(ours.restarts.mean())
                    print(
                        f"{policy:>8} {workload:>18} {jct.mean() / 3600:7.3f} {p99(jct) / 3600:7.3f} "
                        f"{(ours.finish.max() - ours.arrival.min()) / 3600:7.2f} {rst:7.2f} {ours.sim_s:7.2f} {cmd_s:7.2f}",
                        flush=True,
                    )
                    continue
                rows = None
                if args.their_results is not None:
                    folder = run_folder(args.their_results, policy, workload)
                    if args.partial and not (folder / f"workload-{parse_workload(workload)[1]}.log").is_file():
                        theirs, rows = read_partial(folder, csv, names)
                    else:
                        theirs = their_run(folder, names, workload)
                else:
                    folder = run_folder(args.keep_results or Path(tmp), policy, workload)
                    run_theirs(sim_dir, args.python, policy, workload, folder)
                    theirs = their_run(folder, names, workload)
                ours = run_fairsim(overrides)
                cmd_s = float("nan") if args.no_command else time_fairsim_command(overrides)[0]
                fig = compare(theirs, ours, rows)
                label = workload if rows is None else f"{workload}:{len(rows)}"
                print(
                    f"{format_row(policy, label, fig)} {theirs.wall_s:7.1f} {ours.sim_s:7.2f} {cmd_s:7.2f}", flush=True
                )
                their_rows += [
                    (policy, workload, j, name, s, f - s)
                    for j, (name, s, f) in enumerate(zip(names, theirs.submit, theirs.finish))
                    if np.isfinite(f)
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
