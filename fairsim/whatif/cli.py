"""python -m fairsim.whatif: which cluster to buy or rent for a workload.

    python -m fairsim.whatif --workload team_cluster --clusters paper scale8 T4=8,A10=8,V100=8 \\
        --policies ours gavel --jct-target-h 2 [--budget-per-h 100] [--name mine] [--set KEY=VALUE ...]
    python -m fairsim.whatif --config-dir ~/myconf --base-cluster mine --clusters mine H200=16 MI300X=16 ...

Runs every policy on every candidate cluster as one sweep (``python run.py -m``: Hydra's
multirun through the joblib launcher, cells in ``results/sweeps/<name>/``, logged to MLflow,
rerun cells reused), prints one row per (cluster, policy) (fairsim/whatif/table.py) and writes
``<sweep>/whatif/whatif.csv`` with ``whatif.{png,pdf}`` beside it.

``--workload``: a workload preset (team_cluster, philly, trace1, ...) or the path of a job log
(read with ``workload=jobs_log``; map its columns with ``--set workload.columns.<name>=...``). A
generated workload (philly, trace*) scales its arrivals to each cluster's capacity (``load``), so
its candidates see different jobs; a trace or a log gives every candidate the same jobs.
``--budget-per-h``: candidates whose GPUs cost more per hour are not run. ``--set``: any other
override for every cell (num_jobs=50, +cluster.pricing=spot, track=false, hydra.launcher.n_jobs=1).
``--config-dir DIR`` (or ``--set "hydra.searchpath=[...]"``): the user's presets, found as
``python run.py --config-dir`` finds them (docs/presets.md); ``--base-cluster PRESET``: the preset
counts are written from (default paper), so counts may name the GPU types that preset defines
(``gpu_types``, ``gpu_specs``: docs/clusters.md) and are priced by its prices.
Bad input ends with one line and exit status 2.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from fairsim.errors import InputError, require
from fairsim.experiment.cli import check_group_choices, folder, searchpath_override
from fairsim.experiment.compose import CONF_DIR, compose_config
from fairsim.figures.whatif import draw
from fairsim.whatif import table as whatif_table
from fairsim.whatif.candidates import HOSTS_FROM, prepare, search_path

SOURCE = "command line"


class OneLineParser(argparse.ArgumentParser):
    def error(self, message: str):
        print(f"error: {SOURCE}: {message} (python -m fairsim.whatif --help)", file=sys.stderr)
        sys.exit(2)


def parse(argv: list[str]) -> argparse.Namespace:
    ap = OneLineParser(prog="python -m fairsim.whatif", description=__doc__.splitlines()[0])
    ap.add_argument("--workload", required=True, help="a workload preset or a job log's path")
    ap.add_argument("--clusters", nargs="+", required=True, help="presets (paper scale8) or counts (T4=8,V100=8)")
    ap.add_argument("--policies", nargs="+", required=True, help="policy presets (ours gavel)")
    ap.add_argument("--jct-target-h", type=float, required=True, help="the mean JCT to meet, in hours")
    ap.add_argument("--budget-per-h", type=float, default=None, help="leave out clusters costing more USD per hour")
    ap.add_argument("--name", default="whatif", help="the sweep's name: results/sweeps/<name>/")
    ap.add_argument(
        "--config-dir", metavar="DIR", help="a folder of your own presets, laid out like conf/ (docs/presets.md)"
    )
    ap.add_argument(
        "--base-cluster",
        default=HOSTS_FROM,
        metavar="PRESET",
        help="the cluster preset counts are written from: its hosts, links, own GPU types and prices (default %(default)s)",
    )
    ap.add_argument(
        "--set", nargs="*", action="extend", default=[], metavar="KEY=VALUE", help="more overrides for every cell"
    )
    return ap.parse_args(argv)


def workload_overrides(workload: str) -> list[str]:
    """A preset name as ``workload=<name>``; a file as ``workload=jobs_log workload.path=<it>``."""
    path = Path(workload).expanduser()
    if path.suffix.lower() in (".csv", ".parquet", ".tsv", ".txt") or os.sep in workload:
        require(path.is_file(), SOURCE, "--workload", f"no such file: {workload}")
        return ["workload=jobs_log", f"workload.path={path.resolve()}"]
    return [f"workload={workload}"]


def run(args: argparse.Namespace) -> tuple[str, Path]:
    import fairsim

    policies = [p for spec in args.policies for p in spec.split(",") if p.strip()]
    require(len(policies) > 0, SOURCE, "--policies", "give at least one policy preset (ours gavel)")
    require(args.jct_target_h > 0, SOURCE, "--jct-target-h", f"must be hours > 0, got {args.jct_target_h:g}")
    require(
        args.budget_per_h is None or args.budget_per_h > 0,
        SOURCE,
        "--budget-per-h",
        f"must be USD > 0, got {args.budget_per_h}",
    )
    user_paths, rest = user_folders(args.config_dir, args.set)
    mine = search_path(None, user_paths)
    policies = [
        check_group_choices([f"policy={p}", *mine], CONF_DIR)[0].split("=", 1)[1] for p in policies
    ]  # FFT is ours
    overrides = check_group_choices(
        [f"sweep_name={args.name}", *workload_overrides(args.workload), *rest, *mine], CONF_DIR
    )
    overrides = [o for o in overrides if o not in mine]  # the cells get the what-if's whole search path below
    results_dir = Path(str(composed([*overrides, *mine]).results_dir))
    conf_dir = results_dir / "whatif_conf" / args.name
    candidates = prepare(args.clusters, conf_dir, overrides, args.base_cluster, user_paths)
    chosen, skipped = [], []
    for cand in candidates:
        if args.budget_per_h is not None and not cand.cost_per_h_usd <= args.budget_per_h:
            skipped.append((cand, f"{cand.cost_per_h_usd:,.2f} USD/h is over the budget of {args.budget_per_h:,.2f}"))
        else:
            chosen.append(cand)
    require(len(chosen) > 0, SOURCE, "--budget-per-h", "no candidate cluster is within the budget")
    sweep = fairsim.sweep(
        f"cluster={','.join(c.name for c in chosen)}",
        f"policy={','.join(policies)}",
        *search_path(conf_dir, user_paths),
        *overrides,
    )
    table = whatif_table.build(sweep.results, chosen, policies, args.jct_target_h)
    out_dir = sweep.folder / "whatif"
    out_dir.mkdir(parents=True, exist_ok=True)
    table.to_csv(out_dir / "whatif.csv", index=False, float_format="%.6g")
    draw(table, args.jct_target_h, out_dir)
    return whatif_table.text(table, args.jct_target_h, skipped), out_dir


def user_folders(config_dir: str | None, sets: list[str]) -> tuple[list[str], list[str]]:
    """The user's config folders as search-path entries (``--config-dir`` first, then the entries
    of a ``hydra.searchpath=[...]`` in ``--set``, each checked and made absolute: the cells run
    from another folder's point of view only through them), and ``sets`` without that override."""
    entries = []
    if config_dir is not None:
        entries.append(("--config-dir", config_dir))
    entries += [("hydra.searchpath", e) for e in searchpath_override(sets) or []]
    rest = [s for s in sets if s.split("=", 1)[0].strip() != "hydra.searchpath"]
    paths = []
    for field, entry in entries:
        found = folder(entry, SOURCE, field)  # a folder that is not there: one line naming it
        paths.append(found.label if found.label.startswith("pkg://") else f"file://{found.root}")
    return paths, rest


def composed(overrides: list[str]):
    """The config of ``overrides``; Hydra's errors (a mistyped key) as the command line's one line."""
    from hydra.errors import HydraException
    from omegaconf.errors import OmegaConfBaseException

    from fairsim.experiment.cli import hydra_error_line

    try:
        return compose_config(overrides)
    except (HydraException, OmegaConfBaseException) as exc:
        raise InputError.from_line(hydra_error_line(exc, overrides, CONF_DIR)) from None


def main(argv: list[str] | None = None) -> int:
    from fairsim.api import SweepError

    args = parse(sys.argv[1:] if argv is None else argv)
    try:
        report, out_dir = run(args)
    except InputError as exc:
        if os.environ.get("FAIRSIM_DEBUG"):
            raise
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except SweepError as exc:  # a cell failed: its lines were printed; the complete cells are kept
        print(f"error: the sweep did not finish, complete cells kept in {exc.folder}", file=sys.stderr)
        return 1
    print(report)
    print(f"table and figure: {out_dir}/whatif.csv, whatif.png, whatif.pdf")
    return 0
