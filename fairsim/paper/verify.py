"""Check that the committed figures come from the committed code: recompute a fixed sample of
their cells and compare each per-job table with the manifest committed beside paper_figs/.

    python -m fairsim.paper.verify            # `make verify`: recompute, compare; exit 1 naming the first differing cell and job
    python -m fairsim.paper.verify --write    # write the manifest from the (fresh) cells in results/

The sample is ``verify.cells`` in experiments/paper.yaml (every testbed cell of one seed and one
cell at the paper's size). For each cell the manifest keeps how to run it (its overrides), the
identity of the config they compose, its provenance (code digest, commit, input digests,
Python and package versions) and a digest of its per-job table plus one short digest per job
(fairsim/experiment/digest.py). A recomputed cell matches when its whole table's digest does.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from fairsim.errors import InputError, require
from fairsim.paper.reproduce import ROOT, load_plan, sweep_name
from fairsim.paper.values import PLAN

KEPT = ("code_digest", "git", "inputs", "python", "packages")  # of a cell's provenance: no host, user or times


def cell_overrides(plan: dict, role: str, cell: str) -> list[str]:
    """The command-line overrides that make ``cell`` of the sweep ``role``: its preset and its
    folder name's overrides (Hydra's override_dirname: key=value joined by commas)."""
    return [f"+experiment={plan['sweeps'][role]['preset']}", *cell.split(",")]


def sample(plan: dict, results_dir: Path) -> list[dict]:
    """The sample's cells as they are on disk: [{role, scale, sweep, cell, folder}]."""
    import pandas as pd

    from fairsim.experiment.run_folder import RESULTS

    spec = plan.get("verify") or {}
    require(spec.get("cells"), str(PLAN), "verify.cells", "missing: the cells make verify recomputes")
    out = []
    for entry in spec["cells"]:
        role, scale = entry["sweep"], entry["scale"]
        require(
            role in plan["sweeps"],
            str(PLAN),
            "verify.cells.sweep",
            f"unknown sweep {role!r} (allowed: {', '.join(plan['sweeps'])})",
        )
        folder = results_dir / "sweeps" / sweep_name(plan, role, scale)
        require(
            (folder / RESULTS).is_file(),
            str(folder),
            RESULTS,
            "missing: run the sweep first (make reproduce, SCALE=full for full)",
        )
        cells = pd.read_parquet(folder / RESULTS)["cell"]
        match = [str(m) for m in entry.get("match") or []]
        chosen = sorted(c for c in cells if all(m in c.split(",") for m in match))
        require(chosen, str(PLAN), "verify.cells.match", f"no cell of {folder.name} has {', '.join(match)}")
        out += [{"role": role, "scale": scale, "sweep": folder.name, "cell": c, "folder": folder / c} for c in chosen]
    return out


def write(plan: dict, results_dir: Path, manifest: Path) -> int:
    """The manifest from the sample's cells on disk, which must be complete and fresh."""
    import pandas as pd

    from fairsim.experiment import provenance
    from fairsim.experiment.digest import job_digests, table_digest
    from fairsim.experiment.run_folder import CONFIG, JOBS, identity_digest, identity_of_text, why_incomplete

    cells = []
    for item in sample(plan, results_dir):
        folder = item["folder"]
        why = why_incomplete(folder) or provenance.why_folder_stale(folder)
        require(why is None, str(folder), "cell", f"not fresh ({why}): rerun its sweep before writing the manifest")
        jobs = pd.read_parquet(folder / JOBS)
        record = provenance.read(folder)
        identity = identity_of_text((folder / CONFIG).read_text())
        cells.append(
            {
                "sweep": item["sweep"],
                "role": item["role"],
                "scale": item["scale"],
                "cell": item["cell"],
                "overrides": cell_overrides(plan, item["role"], item["cell"]),
                "identity": identity_digest(identity),
                "provenance": {k: record.get(k) for k in KEPT},
                "jobs": len(jobs),
                "jobs_digest": table_digest(jobs),
                "job_digests": "".join(job_digests(jobs)),
            }
        )
    manifest.parent.mkdir(parents=True, exist_ok=True)
    manifest.write_text(
        json.dumps(
            {
                "about": "make verify recomputes these cells and compares their per-job tables "
                "(fairsim/paper/verify.py)",
                "cells": cells,
            },
            indent=1,
        )
        + "\n"
    )
    print(f"[verify] {manifest}: {len(cells)} cells")
    return 0


def recompute(overrides: list[str]) -> dict:
    """Run one cell as a sweep would and digest its per-job table."""
    from fairsim.experiment.compose import compose_config
    from fairsim.experiment.digest import job_digests, table_digest
    from fairsim.experiment.run_folder import identity_digest, identity_of_text
    from fairsim.experiment.single import run_config
    from fairsim.experiment.sweep import config_text

    cfg = compose_config(overrides)
    tick = time.perf_counter()
    out = run_config(cfg)
    return {
        "identity": identity_digest(identity_of_text(config_text(cfg))),
        "jobs_digest": table_digest(out.jobs),
        "job_digests": job_digests(out.jobs),
        "job_ids": out.jobs["job_id"].tolist(),
        "seconds": time.perf_counter() - tick,
        "code_digest": out.provenance["code_digest"],
        "packages": out.provenance["packages"],
        "python": out.provenance["python"],
        "time_limit_hits": int(out.summary.get("solver_time_limit_hits") or 0),
    }


def first_difference(want: dict, got: dict) -> str:
    """Where a recomputed table first departs from the manifest's, as a phrase."""
    width = len(got["job_digests"][0]) if got["job_digests"] else 8
    wanted = [want["job_digests"][i : i + width] for i in range(0, len(want["job_digests"]), width)]
    if len(wanted) != len(got["job_digests"]):
        return f"{len(got['job_digests'])} jobs, the manifest has {len(wanted)}"
    for i, (a, b) in enumerate(zip(wanted, got["job_digests"])):
        if a != b:
            return f"first at job {got['job_ids'][i]} (row {i})"
    return "the column names differ"


def verify(manifest: Path, workers: int) -> int:
    from joblib import Parallel, delayed

    require(
        manifest.is_file(), str(manifest), "file", "not found (write it with python -m fairsim.paper.verify --write)"
    )
    cells = json.loads(manifest.read_text())["cells"]
    print(f"[verify] recomputing {len(cells)} cells of {manifest} ({workers} at a time)", flush=True)
    tick = time.perf_counter()
    results = Parallel(n_jobs=workers)(delayed(recompute)(c["overrides"]) for c in cells)
    first = None
    for want, got in zip(cells, results):
        name = f"{want['sweep']}/{want['cell']}"
        if got["jobs_digest"] != want["jobs_digest"]:
            line = f"DIFFERS: per-job table, {first_difference(want, got)}"
            if got["time_limit_hits"]:
                line += f" (its solver hit its wall-clock limit {got['time_limit_hits']} times: a loaded machine can change it)"
        else:
            line = "identical"
        if got["identity"] != want["identity"]:  # said after the table's verdict, which holds either way
            line = "DIFFERS: conf/ composes another config for it than the manifest's (its per-job table is " + (
                "identical)" if line == "identical" else line[len("DIFFERS: ") :] + ")"
            )
        if got["code_digest"] != (want["provenance"] or {}).get("code_digest"):
            line += "; its simulating code differs from the manifest's"
        print(f"[verify] {name}: {line} ({got['seconds']:.0f} s)", flush=True)
        if line.startswith("DIFFERS") and first is None:
            first = f"{name}: {line[len('DIFFERS: ') :]}"
    env = results[0] if results else {}
    want_env = (cells[0]["provenance"] or {}) if cells else {}
    have, wanted = env.get("packages") or {}, want_env.get("packages") or {}
    moved = [f"{p} {have.get(p)} vs {v}" for p, v in sorted(wanted.items()) if have.get(p) != v]
    if env.get("python") != want_env.get("python"):
        moved.insert(0, f"python {env.get('python')} vs {want_env.get('python')}")
    if moved:
        print(
            f"[verify] note: this environment differs from the manifest's ({'; '.join(moved)}): make setup installs "
            "the locked one",
            flush=True,
        )
    elapsed = time.perf_counter() - tick
    if first:
        print(f"[verify] FAILED after {elapsed:.0f} s: {first}", file=sys.stderr, flush=True)
        return 1
    print(f"[verify] all {len(cells)} cells identical to {manifest} in {elapsed:.0f} s")
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m fairsim.paper.verify", description=__doc__.splitlines()[0])
    ap.add_argument(
        "--write",
        action="store_true",
        help="write the manifest from the fresh cells in --results-dir instead of checking",
    )
    ap.add_argument("--results-dir", default="results", help="where the sweeps live, for --write (default: results)")
    ap.add_argument("--manifest", help="default: verify.manifest in the plan (paper_figs/MANIFEST.json)")
    ap.add_argument("--plan", default=str(PLAN), help="the experiment list (default: experiments/paper.yaml)")
    ap.add_argument("--workers", type=int, default=2, help="cells recomputed at once (default 2)")
    args = ap.parse_args(argv)
    try:
        plan = load_plan(Path(args.plan))
        manifest = Path(args.manifest or ROOT / (plan.get("verify") or {}).get("manifest", "paper_figs/MANIFEST.json"))
        require(args.workers >= 1, "command line", "--workers", f"must be >= 1, got {args.workers}")
        return write(plan, Path(args.results_dir), manifest) if args.write else verify(manifest, args.workers)
    except InputError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
