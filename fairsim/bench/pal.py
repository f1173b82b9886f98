"""PAL-compatible replay: fairsim against PAL's artifact simulator (Blox) on its Sia-Philly traces.

    python -m fairsim.bench pal --pal /path/to/blox-pal --python /path/to/python3.8
    python -m fairsim.bench pal --pal DIR --python PY --workloads workload-1 workload-2 --flat

``--pal`` is a checkout of hal-uw/blox-pal on its ``artifact`` branch with the gRPC stubs built
as its README says (``cd blox/deployment && mkdir grpc_stubs && make rpc``); ``--python`` a
Python with its requirements (Python 3.8, numpy 1.19, pandas 1.1, scikit-learn < 1.2, grpcio,
grpcio-tools, seaborn). Its simulator is two processes that talk over gRPC on the fixed local
ports 50050 and 50051, so one run at a time on a machine. Each run happens in a scratch folder
(their code writes its logs into the working folder), their files untouched:

- the job server is their ``simulator_sia.SimulatorRunner`` built as ``simulator_sia.py``'s
  ``launch_server`` builds it (FIFO, AcceptAll, load 2, tracked jobs 0-159) but with the one
  placement policy asked for, and every job it serves is written down: after the trace's jobs it
  keeps serving repeats of them at Poisson arrivals (2 jobs/hour) until the tracked jobs finish,
  and those jobs share the cluster, so fairsim replays exactly the served list;
- the scheduler is their ``blox_new_flow_multi_run.py`` run as its ``__main__`` does
  (``--round-duration 360 --simulate``, locality penalty 1.7), timed inside the process.

With ``--flat`` every run is repeated with one change made from outside (the driver replaces
``BloxManager._get_perfvar_by_gpulist`` by a constant 1): a job no longer runs at its slowest
GPU's measured variability profile. PAL's placement still ranks GPUs by those profiles. That
isolates the one thing fairsim does not model (GPUs of one type are identical here).

Placements and the fairsim runs beside them (``workload=pal_trace cluster=pal sim=pal_compat``,
the served list, statistics over jobs 0-159):

  PAL               policy=pal policy.head_of_line=true   (re-placed every round: sim.consolidate=true)
  Default-Packed-S  policy=fifo policy.backfill=false     (sticky, never re-packed: sim.consolidate=false)

Reported per (trace, placement, variant): both average JCTs, fairsim's deviation in % with its
finish times as they are and as Blox records them (at the end of the round a job finishes in),
the per-job Pearson correlation, both makespans (last tracked finish), and wall seconds: their
scheduler process whole and its simulation loop alone, fairsim's simulation alone and (unless
``--no-command``) its whole ``python run.py`` command. A second table gives the agreement job by
job (fairsim.bench._agreement): both averages, fairsim's deviation, per-job Pearson r, the share
of tracked jobs within 10% of their JCT (also with fairsim's finishes at the round's end), the
deviation of the 99th percentile and both makespans; their job statistics record only submit and
finish times, so there is no restart column.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from fairsim.bench import write_their_jobs
from fairsim.bench._agreement import HEADER, agreement, format_row
from fairsim.bench.tiresias import time_fairsim_command

PLACEMENTS = {  # their placement policy: fairsim overrides
    "PAL": ["policy=pal", "policy.head_of_line=true", "sim.consolidate=true"],
    "Default-Packed-S": ["policy=fifo", "policy.backfill=false", "sim.consolidate=false"],
}
WORKLOADS = tuple(f"workload-{n}" for n in range(1, 9))  # workload-traces/philly/<name>.csv
ROUND_S = 360.0
SERVER_PORT = 50050
# Their job server: simulator_sia.SimulatorRunner with one placement, recording what it serves.
THEIR_SERVER = """
import json, os, sys
os.environ["PROTOCOL_BUFFERS_PYTHON_IMPLEMENTATION"] = "python"
sim_dir, trace, placement, served_path, first, last = sys.argv[1:7]
sys.path.insert(0, sim_dir)
import grpc
from concurrent import futures
import simulator_sia
from blox.deployment.grpc_stubs import simulator_pb2_grpc
runner = simulator_sia.SimulatorRunner("", [2.0], (int(first), int(last)), ["Fifo"], [placement],
    ["AcceptAll"], exp_prefix="pal", multigpu=True, trace=trace)
serve = runner.GetJobs
out = open(served_path, "w")
out.write("job_id,num_gpus,submit_time,duration,model\\n")
def recorded(request, context):
    reply = serve(request, context)
    for job in json.loads(reply.response).values():
        out.write(f"{job['job_id']},{job['num_GPUs']},{job['job_arrival_time']!r},"
                  f"{job['job_total_iteration']!r},{job['job_name']}\\n")
    out.flush()
    return reply
runner.GetJobs = recorded
server = grpc.server(futures.ThreadPoolExecutor(max_workers=1))
simulator_pb2_grpc.add_SimServerServicer_to_server(runner, server)
server.add_insecure_port("[::]:50050")
server.start()
server.wait_for_termination()
"""
# Their scheduler loop as blox_new_flow_multi_run.py's __main__ runs it; "flat": no variability slowdown.
THEIR_LOOP = """
import os, sys, time
os.environ["PROTOCOL_BUFFERS_PYTHON_IMPLEMENTATION"] = "python"
sim_dir, flat = sys.argv[1], sys.argv[2] == "flat"
sys.argv = [os.path.join(sim_dir, "blox_new_flow_multi_run.py")] + sys.argv[3:]
sys.path.insert(0, sim_dir)
import blox_new_flow_multi_run as loop
if flat:
    loop.BloxManager._get_perfvar_by_gpulist = lambda self, gpu_df, gpulist, perfclass: 1.0
loop.setup_logging()
args = loop.parse_args(loop.argparse.ArgumentParser())
tick = time.time()
loop.main(args)
print("SIM_WALL", repr(time.time() - tick))
"""


@dataclass(frozen=True)
class TheirRun:
    jobs: dict[int, tuple[float, float]]  # tracked job id -> (submit, finish) seconds
    served: Path  # every job their server handed out, in PAL's trace format
    cmd_s: float  # their scheduler process, whole
    sim_s: float  # its main() alone


def check_checkout(path: Path) -> Path:
    for rel, what in (
        ("simulator_sia.py", "a checkout of hal-uw/blox-pal on its artifact branch"),
        ("blox_new_flow_multi_run.py", "a checkout of hal-uw/blox-pal on its artifact branch"),
        (
            "blox/deployment/grpc_stubs/simulator_pb2.py",
            "the gRPC stubs: cd blox/deployment && mkdir grpc_stubs && make rpc",
        ),
    ):
        if not (path / rel).is_file():
            raise SystemExit(f"--pal {path}: no {rel} (needs {what})")
    return path


def wait_for_port(port: int, server: subprocess.Popen, timeout_s: float = 120.0) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise SystemExit(f"their job server exited with code {server.returncode} before listening")
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.2)
    raise SystemExit(f"their job server did not listen on port {port} within {timeout_s:g} s")


def run_theirs(
    sim_dir: Path, python: str, trace: Path, placement: str, flat: bool, first: int, last: int, work: Path
) -> TheirRun:
    """One run of their simulator in ``work`` (a fresh folder)."""
    work.mkdir(parents=True)
    for name in ("profiles.json", "aggregated_data"):  # read relative to the working folder
        (work / name).symlink_to(sim_dir / name)
    served = work / "served.csv"
    env = {**os.environ, "PROTOCOL_BUFFERS_PYTHON_IMPLEMENTATION": "python"}
    with open(work / "server.log", "w") as log:
        server = subprocess.Popen(
            [
                python,
                "-c",
                THEIR_SERVER,
                str(sim_dir),
                str(trace.resolve()),
                placement,
                str(served),
                str(first),
                str(last),
            ],
            cwd=work,
            stdout=log,
            stderr=subprocess.STDOUT,
            env=env,
        )
    try:
        wait_for_port(SERVER_PORT, server)
        cmd = [python, "-c", THEIR_LOOP, str(sim_dir), "flat" if flat else "shipped"]
        cmd += ["--start-id-track", str(first), "--stop-id-track", str(last), "--round-duration", str(int(ROUND_S))]
        cmd += ["--simulate"]
        tick = time.perf_counter()
        with open(work / "loop.log", "w") as log:
            done = subprocess.run(cmd, cwd=work, stdout=log, stderr=subprocess.STDOUT, env=env, check=False)
        cmd_s = time.perf_counter() - tick
    finally:
        server.terminate()
        server.wait()
    tail = (work / "loop.log").read_text(errors="replace").splitlines()
    if done.returncode != 0 or not tail or not tail[-1].startswith("SIM_WALL"):
        raise SystemExit(f"their simulator failed ({placement}, {trace}):\n" + "\n".join(tail[-20:]))
    stats = work / f"None_{first}_{last}_Fifo_AcceptAll_{placement}_load_2.0_job_stats.json"
    jobs = {int(k): (float(v[0]), float(v[1])) for k, v in json.loads(stats.read_text()).items()}
    return TheirRun(jobs=jobs, served=served, cmd_s=cmd_s, sim_s=float(tail[-1].split()[1]))


def fairsim_overrides(served: Path, placement: str, first: int, last: int, extra: list[str]) -> list[str]:
    return [
        *PLACEMENTS[placement],
        "workload=pal_trace",
        f"workload.path={served.resolve()}",
        f"workload.window=[{first},{last + 1}]",
        "cluster=pal",
        "sim=pal_compat",
        "seed=0",
        *extra,
    ]


def run_fairsim(overrides: list[str]) -> tuple[dict[int, tuple[float, float]], float]:
    """(arrival, finish) seconds by job id, and the simulation's own wall seconds."""
    from fairsim.experiment.compose import compose_config
    from fairsim.experiment.single import run_config

    out = run_config(compose_config(overrides))
    rows = zip(out.jobs["job_id"].tolist(), out.jobs["arrival_s"].tolist(), out.jobs["finish_s"].tolist())
    return {int(j): (float(a), float(f)) for j, a, f in rows}, float(out.summary["sim_wall_s"])


def at_round_end(finish: np.ndarray) -> np.ndarray:
    """Finish times as Blox records them: at the end of the round a job finishes in."""
    return np.ceil(finish / ROUND_S - 1e-9) * ROUND_S


def compare(theirs: dict[int, tuple[float, float]], ours: dict[int, tuple[float, float]]) -> dict[str, float]:
    ids = sorted(theirs)
    missing = [i for i in ids if i not in ours or not np.isfinite(ours[i][1])]
    if missing:
        raise SystemExit(f"fairsim did not finish tracked jobs {missing[:5]}")
    t_sub, t_fin = (np.asarray([theirs[i][k] for i in ids]) for k in (0, 1))
    o_arr, o_fin = (np.asarray([ours[i][k] for i in ids]) for k in (0, 1))
    a, b, b_end = t_fin - t_sub, o_fin - o_arr, at_round_end(o_fin) - o_arr
    out = agreement(a, b, theirs_finish=t_fin, ours_finish=o_fin)
    end = agreement(a, b_end)
    return out | {"dev_end": end["avg_dev_pct"], "within10_end_pct": end["within10_pct"]}


def resolve_traces(sim_dir: Path, names: list[str], paths: list[str]) -> list[tuple[str, Path]]:
    out = []
    for name in names:
        path = sim_dir / "workload-traces" / "philly" / f"{name}.csv"
        if not path.is_file():
            raise SystemExit(f"--workloads: {name!r}: no {path} (their traces: {', '.join(WORKLOADS)})")
        out.append((name, path))
    for raw in paths:
        if not Path(raw).is_file():
            raise SystemExit(f"--trace {raw!r}: no such file")
        out.append((Path(raw).stem, Path(raw)))
    return out


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="python -m fairsim.bench pal", description=__doc__.splitlines()[0])
    ap.add_argument("--pal", type=Path, required=True, help="checkout of hal-uw/blox-pal, branch artifact, stubs built")
    ap.add_argument("--python", default="python3", help="Python with blox-pal's requirements (3.8, pandas 1.1)")
    ap.add_argument("--workloads", nargs="*", default=["workload-1"], help=f"their traces ({', '.join(WORKLOADS)})")
    ap.add_argument("--trace", action="append", default=[], metavar="PATH", help="a trace of your own in their format")
    ap.add_argument("--placements", nargs="+", choices=list(PLACEMENTS), default=list(PLACEMENTS))
    ap.add_argument("--flat", action="store_true", help="also run theirs with no variability slowdown")
    ap.add_argument("--track", nargs=2, type=int, default=[0, 159], metavar=("FIRST", "LAST"), help="tracked job ids")
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="a fairsim override")
    ap.add_argument("--no-command", action="store_true", help="skip timing fairsim's whole command (python run.py)")
    ap.add_argument("--their-jobs", type=Path, metavar="CSV", help="write their per-job JCTs here")
    args = ap.parse_args(argv)
    sim_dir = check_checkout(args.pal.resolve())
    first, last = args.track
    traces = resolve_traces(sim_dir, args.workloads, args.trace)
    variants = ["shipped", "flat"] if args.flat else ["shipped"]
    print("B = blox-pal (cmd: its scheduler process, sim: its loop alone), F = fairsim (sim: the simulation alone)")
    print("dev %: fairsim's finish times as they are / at the end of their round, as Blox records them")
    print(
        f"{'trace':>11} {'placement':>16} {'variant':>7} {'B h':>7} {'F h':>7} {'dev %':>6} {'end %':>6} "
        f"{'corr':>6} {'B mk h':>7} {'F mk h':>7} {'B cmd s':>7} {'B sim s':>7} {'F sim s':>7} {'F cmd s':>7}"
    )
    their_rows, compared = [], []
    with tempfile.TemporaryDirectory() as tmp:
        for name, trace in traces:
            for placement in args.placements:
                for variant in variants:
                    work = Path(tmp) / f"{name}-{placement}-{variant}"
                    theirs = run_theirs(sim_dir, args.python, trace, placement, variant == "flat", first, last, work)
                    overrides = fairsim_overrides(theirs.served, placement, first, last, args.set)
                    ours, sim_s = run_fairsim(overrides)
                    cmd_s = float("nan") if args.no_command else time_fairsim_command(overrides)[0]
                    c = compare(theirs.jobs, ours)
                    compared.append((placement, f"{name}/{variant}", c))
                    print(
                        f"{name:>11} {placement:>16} {variant:>7} {c['theirs_avg'] / 3600:7.3f} "
                        f"{c['ours_avg'] / 3600:7.3f} {c['avg_dev_pct']:+6.2f} {c['dev_end']:+6.2f} {c['r']:6.4f} "
                        f"{c['theirs_makespan'] / 3600:7.2f} {c['ours_makespan'] / 3600:7.2f} {theirs.cmd_s:7.1f} "
                        f"{theirs.sim_s:7.1f} {sim_s:7.3f} {cmd_s:7.2f}",
                        flush=True,
                    )
                    their_rows += [(name, placement, variant, j, f - s) for j, (s, f) in sorted(theirs.jobs.items())]
    if compared:
        print(
            "\nblox-pal (S) beside fairsim (F), job by job; workload: trace/variant; its job stats record no "
            "restarts; ±10% end: with fairsim's finishes at the end of their round"
        )
        print(f"{HEADER} {'±10% end':>8}")
        for placement, workload, c in compared:
            print(f"{format_row(placement.removeprefix('Default-'), workload, c)} {c['within10_end_pct']:8.1f}")
    if args.their_jobs and their_rows:
        write_their_jobs(
            args.their_jobs, ["trace", "placement", "variant", "job_id", "jct_s"], their_rows, "blox-pal's"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
