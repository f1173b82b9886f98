"""Reference runs whose per-job tables must not change when code is only moved or tidied.

    python -m fairsim.experiment.refcheck --save refs.json          # record digests on this code
    python -m fairsim.experiment.refcheck --compare refs.json       # rerun, exit 1 naming each run that differs
    python -m fairsim.experiment.refcheck --compare refs.json --only themis_scale
    python -m fairsim.experiment.refcheck --compare refs.json --skip testbed_pollux

Each reference is one config (overrides of conf/config.yaml); its record is the SHA-256 of its
per-job table written as CSV (floats round-trip exactly) and the summary's values that do not
depend on the machine (timings are left out). A comparison fails when a per-job table differs or
a summary value changes or disappears; summary keys that are new are listed, not failed (a
refactor may add a counter without moving a number), and so are per-job columns appended after
the saved ones when the saved columns are identical (the table without them digests as saved).
The set covers a testbed cell of every policy preset, FFT and Themis on large programs (the LP
dive and the auction dive), elastic jobs under Sia, and a Gavel replay.
Each run's end is printed as it comes (on stderr); testbed_pollux alone takes about half an hour
(NSGA-II every round), so ``--skip`` leaves it out of a quick check.
"""

from __future__ import annotations

import argparse
import hashlib
import io
import json
import sys
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path

from fairsim.experiment.compose import CONF_DIR, compose_config

# parts of the summary keys that measure the machine, not the simulation
TIMED = ("wall_s", "policy_s", "solver_s", "time_s")


def is_timed(key: str) -> bool:
    """Whether a summary key (or a column or MLflow metric of that name) measures the machine."""
    return any(part in key for part in TIMED)


def references() -> dict[str, list[str]]:
    refs = {
        f"testbed_{p.stem}": [f"policy={p.stem}", "workload=trace1", "seed=0"]
        for p in sorted((CONF_DIR / "policy").glob("*.yaml"))
    }
    refs["ours_trace4_3000"] = ["policy=ours", "cluster=scale8", "workload=trace4", "num_jobs=3000", "load=1", "seed=0"]
    refs["themis_scale"] = ["policy=themis", "cluster=scale8", "workload=trace3", "num_jobs=1500", "load=1", "seed=0"]
    # elastic jobs sized by Sia every 60 s: the engine's Allocation path, resizes and goodput steps
    refs["sia_elastic"] = [
        "policy=sia",
        "workload=trace1",
        "seed=0",
        "+workload.elastic={fraction: 1.0}",
        "sim.round_len_s=60",
    ]
    refs["gavel_replay"] = [
        "policy=gavel_mmf",
        "workload=gavel_trace",
        "workload.path=max_min_fairness",
        "cluster=gavel",
        "cluster.counts.v100=4",
        "cluster.counts.p100=4",
        "cluster.counts.k80=4",
        "sim=gavel_compat",
        "seed=0",
    ]
    refs["gavel_generated"] = [
        "policy=gavel",
        "workload=gavel_generated",
        "workload.rate_per_hour=1.5",
        "workload.window=[100,300]",
        "workload.num_jobs=500",
        "cluster=gavel",
        "sim=gavel_compat",
        "seed=1",
    ]
    return refs


def record(overrides: list[str]) -> dict:
    """{jobs: SHA-256 of the per-job table as CSV, summary: the machine-independent summary values}."""
    from fairsim.experiment.single import run_config

    out = run_config(compose_config(overrides + ["track=false"]))
    summary = {k: v for k, v in sorted(out.summary.items()) if not is_timed(k)}
    columns = list(out.jobs.columns)
    return {
        "jobs": table_digest(out.jobs),
        "summary": json.loads(json.dumps(summary, sort_keys=True, default=repr)),
        "jobs_columns": columns,
        # the digest of the table's first k columns, k = 1 .. all but one: a saved digest found here
        # means the columns after the k-th are new and the first k unchanged
        "jobs_leading": [table_digest(out.jobs[columns[:k]]) for k in range(1, len(columns))],
    }


def table_digest(table) -> str:
    """SHA-256 of a table written as CSV (floats round-trip exactly)."""
    buf = io.StringIO()
    table.to_csv(buf, index=False)
    return hashlib.sha256(buf.getvalue().encode()).hexdigest()


def _same(value) -> str:
    """A value as compared: its JSON text, so NaN equals NaN."""
    return json.dumps(value, sort_keys=True)


def differences(want: dict, got: dict) -> tuple[list[str], list[str]]:
    """(what differs, what is new: summary keys, and per-job columns appended after unchanged
    ones) between a saved record and a fresh one."""
    if not isinstance(want, dict):
        return ["saved in an older format: save the references again on the code before the change"], []
    bad, new_columns = [], []
    if want.get("jobs") != got["jobs"]:
        leading = got.get("jobs_leading", [])
        if want.get("jobs") in leading:
            new_columns = [f"column {c}" for c in got["jobs_columns"][leading.index(want["jobs"]) + 1 :]]
        else:
            bad.append("per-job table")
    before, now = want.get("summary") or {}, got["summary"]
    bad += [
        f"summary {k}: {before[k]!r} -> {now[k]!r}" if k in now else f"summary {k}: gone"
        for k in sorted(before)
        if _same(now.get(k, "<gone>")) != _same(before[k])
    ]
    return bad, new_columns + sorted(set(now) - set(before))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m fairsim.experiment.refcheck", description=__doc__.splitlines()[0])
    mode = ap.add_mutually_exclusive_group(required=True)
    mode.add_argument("--save", type=Path, help="write the digests of this code to this JSON file")
    mode.add_argument("--compare", type=Path, help="rerun and compare with the digests in this JSON file")
    ap.add_argument("--only", nargs="+", help="names of references to run (default: all)")
    ap.add_argument("--skip", nargs="+", default=[], help="names of references to leave out")
    ap.add_argument("--workers", type=int, default=2)
    args = ap.parse_args(argv)
    refs = references()
    names = [n for n in (args.only or list(refs)) if n not in args.skip]
    unknown = sorted({*names, *args.skip} - set(refs))
    if unknown:
        ap.error(f"unknown reference {unknown[0]!r} (known: {', '.join(refs)})")
    got = {}
    start = time.perf_counter()
    with ProcessPoolExecutor(args.workers) as pool:
        runs = {pool.submit(record, refs[n]): n for n in names}
        for k, run in enumerate(as_completed(runs), 1):
            got[runs[run]] = run.result()
            print(
                f"[{k}/{len(names)}] {runs[run]} ran ({time.perf_counter() - start:.0f} s)", file=sys.stderr, flush=True
            )
    if args.save:
        saved = {n: {k: r[k] for k in ("jobs", "summary")} for n, r in got.items()}
        args.save.write_text(json.dumps(saved, indent=1, sort_keys=True) + "\n")
        print(f"{len(got)} reference records written to {args.save}")
        return 0
    want = json.loads(args.compare.read_text())
    failed = 0
    for n in names:
        if n not in want:
            print(f"DIFFERS: {n}: not in {args.compare}")
            failed += 1
            continue
        bad, new = differences(want[n], got[n])
        failed += bool(bad)
        for line in bad:
            print(f"DIFFERS: {n} ({' '.join(refs[n])}): {line}")
        if new and not bad:
            print(f"same: {n}; new: {', '.join(new)}")
    print(f"{len(names) - failed} of {len(names)} reference runs identical")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
