"""What a capacity timeline costs: one config with outages (``capacity=<preset>``) against the
same config without (``capacity=none``), side by side in this process.

    python -m fairsim.bench outages                                   # FFT, trace 3, 20,000 jobs on scale8
    python -m fairsim.bench outages --capacity failures spot --repeats 5 --set policy=gavel num_jobs=3000

Each run goes through the same config path as ``run.py`` (compose the config, ``run_config``),
with a fluid-reference cache in a temporary folder so the metrics' one-off fair-share schedule is
not timed again in every repeat. Reported per capacity preset: median seconds of the simulation
alone and of the whole run, steps, decisions, outages, evictions, avg JCT; then each preset's
medians as a ratio to the run without outages. Runs alternate across presets, each preset first
in turn, so a slow spell on a shared machine hits all of them.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
from pathlib import Path

from fairsim.bench._timed import timed_run

DEFAULT_SET = ["policy=ours", "workload=trace3", "cluster=scale8", "num_jobs=20000", "seed=0"]
NONE = "none"


def run_once(overrides: list[str], capacity: str, cache: Path) -> dict:
    s, total_s = timed_run([*overrides, f"capacity={capacity}", "track=false"], cache)
    return {
        "sim_s": s["sim_wall_s"],
        "total_s": total_s,
        "steps": int(s["rounds"]),
        "decisions": int(s["policy_calls"]),
        "outages": sum(int(s.get(f"outages_{c}", 0)) for c in ("failure", "maintenance", "reclaim")),
        "evictions": int(s.get("evictions", 0)),
        "avg_jct_h": s["avg_jct_s"] / 3600,
    }


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="python -m fairsim.bench outages", description=__doc__.splitlines()[0])
    ap.add_argument("--capacity", nargs="+", default=["failures", "failures_10x"], help="capacity presets to time")
    ap.add_argument("--set", nargs="*", default=DEFAULT_SET, metavar="KEY=VALUE", help="the config's overrides")
    ap.add_argument("--repeats", type=int, default=3, help="runs per preset; medians are reported")
    args = ap.parse_args(argv)
    presets = [NONE, *[c for c in args.capacity if c != NONE]]
    print(f"config: {' '.join(args.set)}")
    print(
        f"{'capacity':>14} {'sim s':>8} {'total s':>8} {'steps':>7} {'decisions':>9} {'outages':>7} "
        f"{'evictions':>9} {'avg JCT h':>9}   / none (sim, total)"
    )
    runs: dict[str, list[dict]] = {c: [] for c in presets}
    with tempfile.TemporaryDirectory() as tmp:
        cache = Path(tmp)
        for i in range(args.repeats + 1):  # the first round warms the cache and imports: not counted
            for capacity in presets[i % len(presets) :] + presets[: i % len(presets)]:  # each preset first in turn
                runs[capacity].append(run_once(args.set, capacity, cache))
    med = {
        c: {k: statistics.median(r[k] for r in runs[c][1:]) for k in ("sim_s", "total_s")} | runs[c][0] for c in presets
    }
    for capacity in presets:
        m = med[capacity]
        tail = ""
        if capacity != NONE:
            tail = f"   {m['sim_s'] / med[NONE]['sim_s']:.2f}, {m['total_s'] / med[NONE]['total_s']:.2f}"
        print(
            f"{capacity:>14} {m['sim_s']:8.2f} {m['total_s']:8.2f} {m['steps']:7d} {m['decisions']:9d} "
            f"{m['outages']:7d} {m['evictions']:9d} {m['avg_jct_h']:9.3f}{tail}"
        )
    return 0
