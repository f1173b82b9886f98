"""The event clock's cost: each event-driven policy on the testbed traces under ``sim.clock=events``
against the same policy on 300 s rounds, side by side in this process.

    python -m fairsim.bench clock                                   # 6 policies x traces 1-2, 3 repeats
    python -m fairsim.bench clock --policies tiresias_las --workloads trace2 --repeats 5

Each run goes through the same config path as ``run.py`` (compose the config, ``run_config``),
with a fluid-reference cache in a temporary folder so the metrics' one-off fair-share schedule
is not timed again in every repeat. Reported per (policy, trace, clock): median seconds of the
simulation alone and of the whole run, steps, policy decisions, avg JCT; then the ratio of the
event clock's medians to the rounds clock's (< 1: the event clock is faster). Runs of the two
clocks alternate, so a slow spell on a shared machine hits both.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
from pathlib import Path

from fairsim.bench._timed import timed_run

EVENT_DRIVEN = ["fifo", "srtf", "tiresias", "tiresias_random", "tiresias_las", "allox"]
CLOCKS = ("rounds", "events")


def run_once(policy: str, workload: str, clock: str, seed: int, cache: Path) -> dict:
    s, total_s = timed_run([f"policy={policy}", f"workload={workload}", f"seed={seed}", f"sim.clock={clock}"], cache)
    return {
        "sim_s": s["sim_wall_s"],
        "total_s": total_s,
        "steps": int(s["rounds"]),
        "decisions": int(s["policy_calls"]),
        "avg_jct_h": s["avg_jct_s"] / 3600,
    }


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="python -m fairsim.bench clock", description=__doc__.splitlines()[0])
    ap.add_argument("--policies", nargs="+", default=EVENT_DRIVEN)
    ap.add_argument("--workloads", nargs="+", default=["trace1", "trace2"])
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--repeats", type=int, default=3, help="runs per clock; medians are reported")
    args = ap.parse_args(argv)
    print(
        f"{'policy':>16} {'trace':>7} {'clock':>7} {'sim s':>7} {'total s':>8} {'steps':>6} {'decisions':>9} "
        f"{'avg JCT h':>9}   events / rounds (sim, total)"
    )
    sim_ratios, total_ratios = [], []
    with tempfile.TemporaryDirectory() as tmp:
        cache = Path(tmp)
        for policy in args.policies:
            for workload in args.workloads:
                runs: dict[str, list[dict]] = {c: [] for c in CLOCKS}
                for _ in range(args.repeats + 1):  # the first pair warms the cache and imports: not counted
                    for clock in CLOCKS:
                        runs[clock].append(run_once(policy, workload, clock, args.seed, cache))
                med = {
                    c: {k: statistics.median(r[k] for r in runs[c][1:]) for k in ("sim_s", "total_s")} | runs[c][0]
                    for c in CLOCKS
                }
                for clock in CLOCKS:
                    m = med[clock]
                    tail = ""
                    if clock == "events":
                        sim_r, tot_r = m["sim_s"] / med["rounds"]["sim_s"], m["total_s"] / med["rounds"]["total_s"]
                        sim_ratios.append(sim_r)
                        total_ratios.append(tot_r)
                        tail = f"   {sim_r:.2f}, {tot_r:.2f}"
                    print(
                        f"{policy:>16} {workload:>7} {clock:>7} {m['sim_s']:7.3f} {m['total_s']:8.3f} {m['steps']:6d} "
                        f"{m['decisions']:9d} {m['avg_jct_h']:9.2f}{tail}"
                    )
    print(
        f"median ratio events / rounds over {len(sim_ratios)} (policy, trace) pairs: simulation {statistics.median(sim_ratios):.2f}, "
        f"whole run {statistics.median(total_ratios):.2f}"
    )
    return 0
