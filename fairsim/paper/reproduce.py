"""Reproduce the paper's figures and headline numbers with one command.

    python -m fairsim.paper.reproduce [--scale small|full] [--only fig7 fig11 ...]

Reads experiments/paper.yaml. For each sweep a selected figure needs it runs, as a subprocess,
    python run.py -m +experiment=<preset> sweep_name=<preset><suffix> results_dir=<dir> <scale overrides>
so Hydra's joblib launcher runs the cells in parallel, complete and fresh cells are skipped on a
rerun and MLflow logs the sweep as it logs any other; a sweep whose freshness stamp still holds
(fairsim/experiment/sweep_stamp.py) is not started at all. Benchmarks (``python -m fairsim.bench <name>``) run
once and are cached under <results>/bench/. Then every figure is drawn into paper_figs/ (PDF,
PNG, and the plotted numbers as data/*.csv) and paper_figs/REPORT.md is written. Same results ->
byte-identical figures and report. Ctrl-C ends it with one line and exit status 130, after the
sweep it reached has collected its complete cells; the same command resumes.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib
import json
import re
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pandas as pd
import yaml

from fairsim.errors import InputError, require
from fairsim.experiment.interrupt import INTERRUPTED
from fairsim.experiment.output import interactive
from fairsim.experiment.run_folder import RESULTS
from fairsim.experiment.sweep_stamp import why_not_fresh
from fairsim.paper.values import PLAN

ROOT = Path(__file__).resolve().parents[2]
RUN = ROOT / "run.py"


def load_plan(path: Path = PLAN) -> dict:
    require(Path(path).is_file(), str(path), "file", "not found (the experiment list, e.g. experiments/paper.yaml)")
    plan = yaml.safe_load(Path(path).read_text())
    require(isinstance(plan, dict), str(path), "file", "must be a YAML mapping")
    for key in ("scales", "sweeps", "figures", "headlines"):
        require(isinstance(plan.get(key), dict if key != "headlines" else list), str(path), key, "missing or malformed")
    roles = set(plan["sweeps"])
    benches = set(plan.get("benches") or {})
    for name, fig in plan["figures"].items():
        for role in fig.get("sweeps", []):
            require(
                role in roles,
                str(path),
                f"figures.{name}.sweeps",
                f"unknown sweep {role!r} (allowed: {', '.join(sorted(roles))})",
            )
        for bench in fig.get("benches", []):
            require(bench in benches, str(path), f"figures.{name}.benches", f"unknown benchmark {bench!r}")
    return plan


def needed(plan: dict, figures: list[str]) -> tuple[list[str], list[str]]:
    """Sweep roles and benchmarks the figures need, in the plan's order."""
    roles = {r for f in figures for r in plan["figures"][f].get("sweeps", [])}
    benches = {b for f in figures for b in plan["figures"][f].get("benches", [])}
    return [r for r in plan["sweeps"] if r in roles], [b for b in plan.get("benches") or {} if b in benches]


def sweep_name(plan: dict, role: str, scale: str) -> str:
    """The sweep's folder name: the preset, plus the scale's suffix when the sweep's overrides at
    this scale differ from those at the first scale of the plan. A sweep that does not change
    with the scale (the testbed's, already the paper's size) is the same sweep at every scale,
    computed once."""
    spec, base = plan["sweeps"][role], next(iter(plan["scales"]))
    same = [str(a) for a in spec.get(scale) or []] == [str(a) for a in spec.get(base) or []]
    return spec["preset"] + plan["scales"][base if same else scale].get("suffix", "")


def sweep_command(plan: dict, role: str, scale: str, results_dir: str, extra: list[str]) -> list[str]:
    spec = plan["sweeps"][role]
    return [
        sys.executable,
        str(RUN),
        "-m",
        f"+experiment={spec['preset']}",
        f"sweep_name={sweep_name(plan, role, scale)}",
        f"results_dir={results_dir}",
        *map(str, spec.get(scale) or []),
        *extra,
    ]


def missing_option(key: str | None) -> str | None:
    """Why a sweep cannot run: the config option it needs does not exist (None if it does)."""
    if not key:
        return None
    from fairsim.experiment.compose import compose_config

    try:
        compose_config([f"{key}=0"])
    except Exception:  # Hydra refuses to override a key the config does not have
        return f"needs option {key} (not in the harness yet)"
    return None


def parse_bench_table(text: str) -> pd.DataFrame:
    """The benchmark's printed table (a header line starting with ``jobs``, then aligned rows) as
    numbers; ``%`` and ``x`` suffixes are dropped, ``-`` is NaN."""
    lines = text.splitlines()
    start = next((i for i, line in enumerate(lines) if line.split()[:1] == ["jobs"]), None)
    if start is None:
        return pd.DataFrame()
    header = lines[start].split()
    rows = []
    for line in lines[start + 1 :]:
        parts = line.split()
        if len(parts) != len(header) or not parts[0].isdigit():
            break
        rows.append([float("nan") if p == "-" else float(p.rstrip("%x")) for p in parts])
    return pd.DataFrame(rows, columns=header)


CELLS_DONE = re.compile(r"\| (\d+)/(\d+) cells done")  # the per-cell status line of fairsim.experiment.sweep


INTERRUPTED_LINE = (
    "[reproduce] interrupted: the sweeps' complete cells are kept and collected; figures and REPORT.md "
    "are not all redrawn; rerun the same command to run only what is missing and draw"
)


def run_sweep(cmd: list[str], role: str, bar: bool | None = None) -> int:
    """Run one sweep as a subprocess. On a terminal (``bar=None``) its lines scroll above a
    progress bar of complete cells; elsewhere its output passes through untouched. A Ctrl-C
    reaches the sweep too (one process group): this waits while the sweep collects its complete
    cells and ends, then raises KeyboardInterrupt (also when the sweep alone was interrupted)."""
    print(f"[reproduce] sweep {role}: {' '.join(cmd[1:])}", flush=True)
    started = time.perf_counter()
    if not (interactive() if bar is None else bar):
        with subprocess.Popen(cmd) as proc:
            code, interrupted = _wait_through_ctrl_c(proc)
    else:
        from tqdm import tqdm

        with (
            subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True, bufsize=1) as proc,
            tqdm(desc=f"sweep {role}", unit="cell", file=sys.stderr, dynamic_ncols=True) as progress,
        ):

            def show(line: str) -> None:
                progress.write(line.rstrip("\n"), file=sys.stdout)
                if found := CELLS_DONE.search(line):
                    progress.total = int(found[2])
                    progress.n = int(found[1])
                    progress.refresh()

            code, interrupted = _wait_through_ctrl_c(proc, show)
    if interrupted or code in (INTERRUPTED, -signal.SIGINT):
        raise KeyboardInterrupt
    print(f"[reproduce] sweep {role}: exit {code} after {time.perf_counter() - started:.0f} s", flush=True)
    return code


def _wait_through_ctrl_c(proc: subprocess.Popen, each_line: Callable[[str], None] | None = None) -> tuple[int, bool]:
    """The sweep's exit status once it ends (its output, when piped, through ``each_line``) and
    whether Ctrl-C was pressed meanwhile; never kills it, as ``subprocess.run`` would."""
    interrupted = False
    while True:
        try:
            if each_line is not None:
                for line in proc.stdout:
                    each_line(line)
            return proc.wait(), interrupted
        except KeyboardInterrupt:
            interrupted = True


def _bench_paths(plan: dict, name: str, scale: str, results_dir: str) -> tuple[Path, Path]:
    stem = f"{name}{plan['scales'][scale].get('suffix', '')}"
    folder = Path(results_dir) / "bench"
    return folder / f"{stem}.csv", folder / f"{stem}.args.json"


def cached_bench(plan: dict, name: str, scale: str, results_dir: str) -> pd.DataFrame | None:
    table_path, _ = _bench_paths(plan, name, scale, results_dir)
    return pd.read_csv(table_path) if table_path.is_file() else None


def bench_code_digest() -> str:
    """A digest of the code a benchmark times (the policies and the benchmarks): a cached table
    is reused only while both its arguments and this code are unchanged."""
    digest = hashlib.sha256()
    for path in sorted(
        [
            *(ROOT / "fairsim" / "policies").glob("*.py"),
            *(ROOT / "fairsim" / "solve").glob("*.py"),
            *(ROOT / "fairsim" / "bench").glob("*.py"),
        ]
    ):
        digest.update(path.name.encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:16]


def run_bench(plan: dict, name: str, scale: str, results_dir: str) -> pd.DataFrame:
    """Run ``python -m fairsim.bench <name> <args>`` once; reuse the cached table while the args
    and the code it times match."""
    args = [str(a) for a in plan["benches"][name].get(scale) or []]
    key = {"args": args, "code": bench_code_digest()}
    table_path, args_path = _bench_paths(plan, name, scale, results_dir)
    if table_path.is_file() and args_path.is_file() and json.loads(args_path.read_text()) == key:
        print(f"[reproduce] benchmark {name}: cached in {table_path}", flush=True)
        return pd.read_csv(table_path)
    print(f"[reproduce] benchmark {name}: python -m fairsim.bench {name} {' '.join(args)}", flush=True)
    proc = subprocess.run([sys.executable, "-m", "fairsim.bench", name, *args], capture_output=True, text=True)
    print(proc.stdout, end="", flush=True)
    if proc.returncode != 0:
        raise RuntimeError(f"benchmark {name} failed (exit {proc.returncode}): {proc.stderr.strip()[-500:]}")
    table = parse_bench_table(proc.stdout)
    if table.empty:
        raise RuntimeError(f"benchmark {name} printed no table")
    table_path.parent.mkdir(parents=True, exist_ok=True)
    table.to_csv(table_path, index=False)
    args_path.write_text(json.dumps(key))
    return table


def draw_key(
    plan: dict, scale: str, results_dir: str, figures: list[str], benches: dict, gaps: dict, sweep_args: list[str]
) -> dict:
    """Everything the figures and REPORT.md are drawn from: the sweeps' tables (size and mtime),
    the benchmarks' tables, every file of the package and of conf/ and experiments/ (code, data,
    plan), the plotting packages' versions and the command's options."""
    from fairsim.experiment.provenance import environment
    from fairsim.experiment.sweep_stamp import signature, tree_digest

    sweeps = {}
    for role in plan["sweeps"]:
        folder = Path(results_dir) / "sweeps" / sweep_name(plan, role, scale)
        sweeps[role] = [signature(folder / RESULTS), signature(folder / "jobs.parquet")]
    files = [
        p
        for top in ("fairsim", "conf", "experiments")
        for p in (ROOT / top).rglob("*")
        if p.is_file() and "__pycache__" not in p.parts
    ]
    return {
        "scale": scale,
        "figures": figures,
        "sweep_args": sweep_args,
        "gaps": gaps,
        "sweeps": sweeps,
        "benches": {n: hashlib.sha256(t.to_csv(index=False).encode()).hexdigest() for n, t in sorted(benches.items())},
        "files": tree_digest(ROOT, files),
        "packages": environment()["packages"],
    }


def _outputs(plan: dict, out: Path) -> list[Path]:
    """The files a draw leaves in ``out``: all but another scale's folder and the verify manifest."""
    others = {(ROOT / s["out"]).resolve() for s in plan["scales"].values() if s.get("out")} - {out.resolve()}
    manifest = (ROOT / (plan.get("verify") or {}).get("manifest", "paper_figs/MANIFEST.json")).resolve()
    return sorted(
        p
        for p in out.rglob("*")
        if p.is_file() and p.resolve() != manifest and not any(p.resolve().is_relative_to(o) for o in others)
    )


def drawn_before(stamp: Path, key: dict, plan: dict, out: Path) -> list[str] | None:
    """The figures drawn last time, if ``out`` holds exactly what a draw from ``key`` left there
    then; else None."""
    from fairsim.files import file_digest

    try:
        saved = json.loads(stamp.read_text())
    except (OSError, ValueError):
        return None
    if saved.get("key") != json.loads(json.dumps(key)):
        return None
    files = {str(p.relative_to(out)): file_digest(p) for p in _outputs(plan, out)} if out.is_dir() else {}
    return saved.get("drawn", []) if files == saved.get("outputs") else None


def save_draw_stamp(stamp: Path, key: dict, plan: dict, out: Path, drawn: list[str]) -> None:
    from fairsim.files import atomic_write, file_digest

    outputs = {str(p.relative_to(out)): file_digest(p) for p in _outputs(plan, out)}
    stamp.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(
        stamp,
        lambda p: p.write_text(json.dumps({"key": key, "outputs": outputs, "drawn": drawn}, sort_keys=True) + "\n"),
    )


def load_inputs(plan: dict, scale: str, results_dir: str, benches: dict[str, pd.DataFrame]):
    """Every sweep of the plan that has collected results at this scale (run now or before), its
    cells judged stale or fresh against the code and inputs as they are now."""
    from fairsim.experiment.collect import stale_now
    from fairsim.figures.data import Inputs, SweepData

    sweeps = {}
    for role in plan["sweeps"]:
        folder = Path(results_dir) / "sweeps" / sweep_name(plan, role, scale)
        if (folder / RESULTS).is_file():
            sweeps[role] = SweepData.load(folder)
            sweeps[role].cells = stale_now(folder, sweeps[role].cells)
    return Inputs(sweeps, benches)


def left_out(plan: dict, drawn, scale: str) -> str | None:
    """The line naming the optional REPORT.md sections (figures marked ``optional`` in the plan)
    that were not drawn and the command that adds each, or None when every one was drawn."""
    parts = []
    for name, spec in plan["figures"].items():
        if not spec.get("optional") or name in drawn:
            continue
        command = f"make {spec['make']}" if spec.get("make") else f"python -m fairsim.paper.reproduce --only {name}"
        if scale != next(iter(plan["scales"])):
            command += f" SCALE={scale}" if spec.get("make") else f" --scale {scale}"
        took = (spec.get("time") or {}).get(scale)
        parts.append(f"'{spec.get('section') or name}' (needs {command}{f', {took}' if took else ''})")
    if not parts:
        return None
    listed = parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]
    return f"[reproduce] REPORT.md lacks {listed}"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m fairsim.paper.reproduce", description=__doc__.splitlines()[0])
    ap.add_argument(
        "--scale",
        default="small",
        help="small (default, about 10 min on 2 cores) or full (the paper's sizes, about 21 min)",
    )
    ap.add_argument(
        "--only", nargs="+", metavar="FIG", help="draw only these figures (e.g. fig7 fig11) and run only their sweeps"
    )
    ap.add_argument("--results-dir", default="results", help="where the sweeps live (default: results)")
    ap.add_argument(
        "--out",
        help="figures and REPORT.md go here (default: the scale's out in the plan: paper_figs, paper_figs/full)",
    )
    ap.add_argument("--plan", default=str(PLAN), help="the experiment list (default: experiments/paper.yaml)")
    ap.add_argument("--draw-only", action="store_true", help="run nothing: draw from the results already on disk")
    ap.add_argument(
        "--sweep-arg",
        action="append",
        default=[],
        metavar="OVERRIDE",
        help="extra Hydra override for every sweep, e.g. hydra.launcher.n_jobs=1 (repeatable)",
    )
    ap.add_argument(
        "--reuse-stale",
        action="store_true",
        help="keep complete cells made by other simulating code or inputs instead of recomputing them "
        "(reuse_stale=true for every sweep); REPORT.md lists each one",
    )
    ap.add_argument(
        "--redraw", action="store_true", help="draw every figure and REPORT.md even when nothing they come from changed"
    )
    args = ap.parse_args(argv)
    sweep_args = [*args.sweep_arg, *(["reuse_stale=true"] if args.reuse_stale else [])]
    tick = time.perf_counter()
    try:
        plan = load_plan(Path(args.plan))
        require(
            args.scale in plan["scales"],
            "command line",
            "--scale",
            f"unknown scale {args.scale!r} (allowed: {', '.join(plan['scales'])})",
        )
        # optional figures (their sweeps are long) run only when named; without --only they are
        # still drawn when their sweeps' results are already on disk
        figures = args.only or [f for f, spec in plan["figures"].items() if not spec.get("optional")]
        for f in figures:
            require(
                f in plan["figures"],
                "command line",
                "--only",
                f"unknown figure {f!r} (allowed: {', '.join(plan['figures'])})",
            )
    except InputError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2

    roles, bench_names = needed(plan, figures)
    gaps = {role: why for role, spec in plan["sweeps"].items() if (why := missing_option(spec.get("requires")))}
    failed = False
    for role in roles:
        if role in gaps:
            print(f"[reproduce] sweep {role}: skipped, {gaps[role]}", flush=True)
        elif not args.draw_only:
            cmd = sweep_command(plan, role, args.scale, args.results_dir, sweep_args)
            why, cells = why_not_fresh(Path(args.results_dir) / "sweeps" / sweep_name(plan, role, args.scale), cmd[3:])
            if why is None:
                print(
                    f"[reproduce] sweep {role}: all {cells} cells fresh (code, inputs, config files and cells unchanged since "
                    "it last ran), not started",
                    flush=True,
                )
                continue
            code = run_sweep(cmd, role)
            if code != 0:
                gaps[role] = f"the sweep failed (exit {code}); rerun the same command to resume it"
                failed = True
    benches = {}
    for name in bench_names:
        try:
            table = (
                cached_bench(plan, name, args.scale, args.results_dir)
                if args.draw_only
                else run_bench(plan, name, args.scale, args.results_dir)
            )
        except RuntimeError as exc:
            print(f"[reproduce] {exc}", file=sys.stderr)
            failed, table = True, None
        if table is not None:
            benches[name] = table

    from fairsim.figures.data import MissingInput
    from fairsim.figures.tables import Check
    from fairsim.paper.headlines import evaluate
    from fairsim.paper.report import output_files, write_report

    inputs = load_inputs(plan, args.scale, args.results_dir, benches)
    if not args.only:
        figures += [
            f
            for f, spec in plan["figures"].items()
            if spec.get("optional") and all(r in inputs.sweeps for r in spec.get("sweeps", []))
        ]
    out = Path(args.out or plan["scales"][args.scale].get("out", "paper_figs"))
    key = draw_key(plan, args.scale, args.results_dir, figures, benches, gaps, sweep_args)
    stamp = (
        Path(args.results_dir)
        / "cache"
        / "draw"
        / f"{hashlib.sha256(str(out.resolve()).encode()).hexdigest()[:16]}.json"
    )
    before = None if args.redraw else drawn_before(stamp, key, plan, out)
    if before is not None:
        print(
            f"[reproduce] {out}: figures and REPORT.md unchanged since drawn from these results by this code; "
            "not redrawn (--redraw forces it)"
        )
        print(f"[reproduce] done in {time.perf_counter() - tick:.0f} s")
        if line := left_out(plan, before, args.scale):
            print(line)
        return 1 if failed else 0
    drawn, notes, examples, sections = {}, [], [], []
    from tqdm import tqdm

    from fairsim.experiment.output import progress_bar

    with progress_bar(len(figures), "figures", unit="figure") as advance:
        for name in figures:
            spec = plan["figures"][name]
            try:
                # worked examples and tables run their own small instances and return paper-vs-ours rows
                module = importlib.import_module(spec["module"])
                returned = module.draw(inputs, out, **(spec.get("options") or {}))
                examples += [row for row in returned or [] if isinstance(row, Check)]
                drawn[name] = spec.get("what", "")
                tqdm.write(f"[reproduce] {name}: {out / output_files(name, drawn[name])[0]}", file=sys.stdout)
                if hasattr(module, "report_section"):  # a figure or table may add its own section to REPORT.md
                    sections += module.report_section(inputs, plan["headlines"])
            except MissingInput as exc:
                notes.append(f"{name} not drawn: {exc}")
                tqdm.write(f"[reproduce] {name}: not drawn, {exc}", file=sys.stdout)
            if advance:
                advance(1)
    rows = evaluate(plan["headlines"], inputs, gaps)
    command = " ".join(
        [
            "python -m fairsim.paper.reproduce --scale",
            args.scale,
            *(["--only", *args.only] if args.only else []),
            *(f"--sweep-arg {a}" for a in args.sweep_arg),
            *(["--reuse-stale"] if args.reuse_stale else []),
        ]
    )
    report = write_report(out / "REPORT.md", args.scale, rows, inputs, drawn, gaps, command, notes, examples, sections)
    save_draw_stamp(stamp, key, plan, out, list(drawn))
    print(
        f"[reproduce] {report}: {sum(r.verdict == 'yes' for r in rows)} of {len(rows)} headline numbers reproduce in direction"
    )
    print(f"[reproduce] done in {time.perf_counter() - tick:.0f} s")
    if line := left_out(plan, drawn, args.scale):
        print(line)
    return 1 if failed else 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except KeyboardInterrupt:  # Ctrl-C: one line, no traceback; a sweep it reached has collected already
        print(INTERRUPTED_LINE, file=sys.stderr, flush=True)
        sys.exit(INTERRUPTED)
