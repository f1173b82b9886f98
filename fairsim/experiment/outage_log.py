"""A cluster's own failure records as a capacity trace (docs/capacity.md, "A log of failures").

    python -m fairsim.experiment.outage_log my_sacct.csv --cluster paper --time End --status State \\
        --statuses NODE_FAIL --type GPUType --gpu-map a10g=A10 --repair-h 24 --out failures.csv
    python run.py workload=jobs_log workload.path=my_sacct.csv ... +capacity.trace=failures.csv

Each row of the log whose status is one of ``--statuses`` (Slurm's NODE_FAIL by default) is a
host that failed at its ``--time`` (the job's end) and came back ``--repair-h`` hours later. A row
whose ``--type`` names a GPU type of the cluster takes a host of that type; without the column, or
for a type the cluster lacks, the host is of the cluster's type with the most hosts. Times are
seconds from ``--origin``: the earliest ``--submit`` of the log (default), the origin of a job-log
workload whose first submitted job runs, or a timestamp. The output is a capacity trace file
(``time_s, gpu_type, hosts, cause``): the hosts of each type available from each time on, with
overlapping failures counted together and never below zero hosts. A row listed twice (the same
cells) is one failure; a failure row without a ``--time`` is skipped; both are counted in the
line the command prints. Timestamps are ISO 8601 or epoch seconds, or ``--timestamp-format``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import pandas as pd

from fairsim.cluster import ClusterSpec
from fairsim.errors import InputError, require
from fairsim.experiment.cli import check_group_choices
from fairsim.experiment.compose import CONF_DIR, compose_config
from fairsim.experiment.single import build_cluster
from fairsim.files import atomic_write, input_path
from fairsim.tables import CsvTable, read_csv_table
from fairsim.workload.formats import placed
from fairsim.workload.formats.csv import seconds_since_epoch

SOURCE = "outage_log"


def failure_rows(
    table: CsvTable,
    cluster: ClusterSpec,
    *,
    time: str,
    status: str,
    statuses: list[str],
    submit: str | None,
    origin: str | None,
    type_column: str | None,
    gpu_map: dict[str, str],
    repair_h: float,
    fmt: str | None = None,
    skipped: dict[str, int] | None = None,
) -> pd.DataFrame:
    """The capacity trace rows (time_s, gpu_type, hosts, cause) of the log's failures. Times are
    read as the job-log reader reads them (epoch seconds or ISO 8601 timestamps, or ``fmt``).
    ``skipped`` gets the failure rows left out, by reason: ``repeated_row`` (a row listed before,
    the same in every cell), ``no_time`` (no ``time`` to place the failure at)."""
    log = table.cells
    require(len(log) > 0, str(table.path), "rows", "the log has a header and no rows: no failure to read")
    key = "--timestamp-format"
    if origin is not None:
        start = float(seconds_since_epoch(pd.Series([origin]), fmt, "--origin", lambda _: SOURCE, key)[0])
    else:
        require(submit is not None, SOURCE, "--submit", "names the submission column the origin is taken from")
        submitted = seconds_since_epoch(log[submit], fmt, submit, table.where, key)
        require(
            bool(np.isfinite(submitted).any()),
            str(table.path),
            submit,
            "no row has a submission time to take the origin from (set --origin)",
        )
        start = float(np.nanmin(submitted))
    failing = log[status].str.strip().str.upper().isin({s.upper() for s in statuses}).to_numpy()
    repeated = log.duplicated(keep="first").to_numpy() & failing
    rows = np.flatnonzero(failing & ~repeated)
    failed = log.iloc[rows]
    at = seconds_since_epoch(failed[time], fmt, time, placed(table.where, rows), key) - start
    if skipped is not None:
        for reason, n in (("repeated_row", int(repeated.sum())), ("no_time", int(np.isnan(at).sum()))):
            if n:
                skipped[reason] = n
    default = int(np.argmax(cluster.hosts_per_type))
    kinds = np.full(len(failed), default)
    if type_column is not None:
        known = {t.lower(): k for k, t in enumerate(cluster.gpu_types)}
        for i, raw in enumerate(failed[type_column].astype(str).str.strip().tolist()):
            name = gpu_map.get(raw, gpu_map.get(raw.lower(), raw)).lower()
            kinds[i] = known.get(name, default)
    changes = sorted(
        [(float(t), int(k), -1) for t, k in zip(at, kinds) if np.isfinite(t)]
        + [(float(t) + repair_h * 3600.0, int(k), +1) for t, k in zip(at, kinds) if np.isfinite(t)]
    )
    down = np.zeros(cluster.num_types, dtype=np.int64)
    rows = []
    for t, k, step in changes:
        down[k] -= step
        hosts = int(max(cluster.hosts_per_type[k] - down[k], 0))
        if rows and rows[-1][0] == t and rows[-1][1] == cluster.gpu_types[k]:
            rows[-1] = (t, cluster.gpu_types[k], hosts, "failure")
        else:
            rows.append((t, cluster.gpu_types[k], hosts, "failure"))
    rows = [r for r in rows if r[0] >= 0]  # a failure before the origin: the part after it counts
    return pd.DataFrame(rows, columns=["time_s", "gpu_type", "hosts", "cause"])


def cluster_of(name: str) -> ClusterSpec:
    """A cluster preset (conf/cluster/, or a config folder of your own) as a run builds it."""
    return build_cluster(compose_config(check_group_choices([f"cluster={name}"], CONF_DIR)))


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="python -m fairsim.experiment.outage_log", description=__doc__.splitlines()[0])
    ap.add_argument("log", help="a CSV job log (a Slurm sacct export, Acme's or Helios' trace, ...)")
    ap.add_argument("--cluster", required=True, help="a cluster preset's name (conf/cluster/)")
    ap.add_argument("--time", required=True, help="the column of the failure's time (the job's end)")
    ap.add_argument("--status", required=True, help="the column of how the job ended")
    ap.add_argument("--statuses", nargs="+", default=["NODE_FAIL"], help="the statuses that mean a node failed")
    ap.add_argument("--submit", help="the submission column (the origin is its earliest value)")
    ap.add_argument("--origin", help="the origin instead: seconds or a timestamp")
    ap.add_argument("--timestamp-format", help="strftime codes of the log's timestamps (default: ISO 8601)")
    ap.add_argument("--type", dest="type_column", help="the column naming the GPU type")
    ap.add_argument("--gpu-map", nargs="*", default=[], metavar="NAME=TYPE", help="the log's GPU names -> types")
    ap.add_argument("--repair-h", type=float, default=24.0, help="hours a failed host stays out (default 24)")
    ap.add_argument("--out", required=True, help="the capacity trace CSV to write")
    args = ap.parse_args(argv)
    try:
        require(args.repair_h > 0, SOURCE, "--repair-h", f"must be a number of hours > 0, got {args.repair_h!r}")
        gpu_map = {}
        for pair in args.gpu_map:
            require("=" in pair, SOURCE, "--gpu-map", f"entries are NAME=TYPE, got {pair!r}")
            name, kind = pair.split("=", 1)
            gpu_map[name.strip()] = kind.strip()
        skipped: dict[str, int] = {}
        needed = tuple(c for c in (args.time, args.status, args.submit, args.type_column) if c is not None)
        table = read_csv_table(input_path(args.log), None, required=needed, quoted=True)
        cluster = cluster_of(args.cluster)
        rows = failure_rows(
            table,
            cluster,
            time=args.time,
            status=args.status,
            statuses=args.statuses,
            submit=args.submit,
            origin=args.origin,
            type_column=args.type_column,
            gpu_map=gpu_map,
            repair_h=args.repair_h,
            fmt=args.timestamp_format,
            skipped=skipped,
        )
    except InputError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    out = Path(args.out)
    atomic_write(out, lambda p: rows.to_csv(p, index=False))
    left_out = ", ".join(f"{n} {reason.replace('_', ' ')}" for reason, n in skipped.items())
    print(
        f"{out}: {len(rows)} rows of {cluster.name}'s hosts available over time; run with +capacity.trace={out}"
        + (f" (failure rows skipped: {left_out})" if left_out else "")
    )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
