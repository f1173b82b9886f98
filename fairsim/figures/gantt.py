"""Gantt charts of a run's schedule record (``sim.record_schedule=true``).

    python -m fairsim.figures.gantt <run dir> [--by job|host] [--out FILE] [--max-jobs N]

``--by job`` (default): one lane per job in arrival order; a thin grey line from arrival to
finish (waiting), a bar per round it ran coloured by GPU type, the overhead seconds it paid
(migration, restart, profiling) hatched at the start of the bar, and a black tick at every type
switch. ``--by host``: one band per host, one row per GPU, coloured by the job holding it (a job
keeps its rows while it stays): packing, spreading and consolidation moves show directly. Writes <out>.pdf and .png
(default <run dir>/gantt_<by>).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping
from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.patches import Patch

from fairsim.errors import InputError, require
from fairsim.experiment.run_folder import CONFIG, JOBS, SCHEDULE
from fairsim.figures import style

# Okabe-Ito: colour-blind-safe, one per GPU type in the cluster's order
TYPE_COLORS = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442", "#000000")
JOB_COLORS = (
    "#0072B2",
    "#E69F00",
    "#009E73",
    "#CC79A7",
    "#56B4E9",
    "#D55E00",
    "#F0E442",
    "#999999",
    "#332288",
    "#88CCEE",
    "#44AA99",
    "#117733",
    "#DDCC77",
    "#AA4499",
)


def time_unit(span_s: float) -> tuple[float, str]:
    """Seconds per axis unit and its name: minutes up to 3 hours, hours beyond."""
    return (60.0, "min") if span_s <= 3 * 3600 else (3600.0, "h")


def _type_colors(schedule: pd.DataFrame, type_order) -> dict[str, str]:
    """GPU type name -> colour, by the type's index in the cluster (stable across figures of a run)."""
    if type_order is None:
        seen = schedule.loc[schedule["type"] >= 0, ["type", "gpu_type"]].drop_duplicates().sort_values("type")
        type_order = dict(zip(seen["gpu_type"], seen["type"]))
    else:
        type_order = {name: k for k, name in enumerate(type_order)}
    return {name: TYPE_COLORS[int(k) % len(TYPE_COLORS)] for name, k in type_order.items()}


def draw_jobs(
    ax: Axes,
    schedule: pd.DataFrame,
    jobs: pd.DataFrame,
    labels: Mapping[int, str] | None = None,
    type_order=None,
    type_labels: Mapping[str, str] | None = None,
    unit: tuple[float, str] | None = None,
) -> None:
    """One lane per job (top = first to arrive)."""
    labels = labels or {}
    type_labels = type_labels or {}
    jobs = jobs.sort_values(["arrival_s", "job_id"], kind="stable").reset_index(drop=True)
    lane = pd.Series(np.arange(len(jobs)), index=jobs["job_id"])
    end = np.nanmax(
        np.r_[jobs["finish_s"].to_numpy(dtype=float), (schedule["t_s"] + schedule["duration_s"]).to_numpy()]
    )
    scale, name = unit or time_unit(end - float(jobs["arrival_s"].min()))
    colors = _type_colors(schedule, type_order)
    finish = jobs["finish_s"].fillna(end).to_numpy()
    ax.hlines(lane.to_numpy(), jobs["arrival_s"] / scale, finish / scale, color="#b0b0b0", lw=0.8, zorder=1)
    run = schedule[(schedule["type"] >= 0) & schedule["job_id"].isin(lane.index)]
    y = lane.loc[run["job_id"]].to_numpy()
    start, busy, over = run["t_s"].to_numpy(), run["busy_s"].to_numpy(), run["overhead_s"].to_numpy()
    height = 0.7
    for gpu, color in colors.items():
        sel = (run["gpu_type"] == gpu).to_numpy()
        if sel.any():
            ax.barh(y[sel], busy[sel] / scale, left=start[sel] / scale, height=height, color=color, lw=0, zorder=2)
    paid = over > 0
    if paid.any():
        ax.barh(
            y[paid],
            over[paid] / scale,
            left=start[paid] / scale,
            height=height,
            color="white",
            alpha=0.55,
            hatch="////",
            edgecolor="black",
            lw=0,
            zorder=3,
        )
    # type switches: a tick where a job starts a run on another type than its previous run
    ordered = run.sort_values(["job_id", "t_s"], kind="stable")
    prev = ordered.groupby("job_id")["type"].shift()
    switch = ordered[prev.notna() & (prev != ordered["type"])]
    if len(switch):
        ax.scatter(
            switch["t_s"] / scale,
            lane.loc[switch["job_id"]].to_numpy() - height / 2 - 0.08,
            marker="^",
            s=14,
            color="black",
            zorder=4,
            lw=0,
        )
    ax.set_yticks(
        lane.to_numpy(), [labels.get(int(j), f"job {j}") for j in lane.index], fontsize=7 if len(lane) <= 30 else 5
    )
    ax.set_ylim(len(lane) - 0.4, -0.6)
    ax.set_xlabel(f"time ({name})")
    ax.grid(axis="y", visible=False)
    handles = [Patch(color=c, label=type_labels.get(g, g)) for g, c in colors.items()]
    if paid.any():
        handles.append(Patch(facecolor="white", edgecolor="black", hatch="////", label="overhead"))
    if len(switch):
        handles.append(ax.scatter([], [], marker="^", s=14, color="black", label="type switch"))
    handles.append(Patch(color="#b0b0b0", label="waiting"))
    ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False, fontsize=6)


def gpu_slots(schedule: pd.DataFrame, gpus_per_host: int) -> pd.DataFrame:
    """One row per (round, job, GPU) with the GPU's slot on its host: a job keeps its slots for
    as long as it stays on the host with the same GPUs, so a bar only jumps when the job moves."""
    run = schedule[(schedule["type"] >= 0) & (schedule["hosts"].map(len) > 0)]
    require(len(run) > 0, "schedule", "hosts", "no host placement in this record (the run had sim.placement=false)")
    held: dict[int, dict[int, list[int]]] = {}  # host -> job -> its slots
    out = []
    for t, rnd in run.groupby("t_s", sort=True):
        now: dict[int, dict[int, int]] = {}  # host -> job -> GPUs this round
        for job, hosts in zip(rnd["job_id"].tolist(), rnd["hosts"]):
            for h, n in zip(*np.unique(np.asarray(hosts), return_counts=True)):
                now.setdefault(int(h), {})[int(job)] = int(n)
        for h in set(held) | set(now):
            keep = {j: sl for j, sl in held.get(h, {}).items() if now.get(h, {}).get(j) == len(sl)}
            used = {x for sl in keep.values() for x in sl}
            free = [x for x in range(max(gpus_per_host, sum(now.get(h, {}).values()))) if x not in used]
            for j, n in sorted(now.get(h, {}).items()):
                if j not in keep:
                    keep[j], free = free[:n], free[n:]
            held[h] = keep
        info = rnd.set_index("job_id")[["busy_s", "overhead_s", "gpu_type"]]
        for h, jobs_on in held.items():
            for j, sl in jobs_on.items():
                busy, over, gpu = info.loc[j]
                out += [(t, busy, over, j, h, gpu, x) for x in sl]
    return pd.DataFrame(out, columns=["t_s", "busy_s", "overhead_s", "job_id", "host", "gpu_type", "slot"])


def draw_hosts(
    ax: Axes,
    schedule: pd.DataFrame,
    jobs: pd.DataFrame,
    gpus_per_host: int,
    labels: Mapping[int, str] | None = None,
    host_names: Mapping[int, str] | None = None,
    unit: tuple[float, str] | None = None,
) -> None:
    """One band per host, one row per GPU in it; each GPU's bar coloured by the job holding it."""
    labels = labels or {}
    cells = gpu_slots(schedule, gpus_per_host)
    hosts = np.sort(cells["host"].unique())
    band = pd.Series(np.arange(len(hosts)), index=hosts)
    end = float((schedule["t_s"] + schedule["duration_s"]).max())
    scale, name = unit or time_unit(end - float(schedule["t_s"].min()))
    order = {int(j): k for k, j in enumerate(jobs.sort_values(["arrival_s", "job_id"], kind="stable")["job_id"])}
    color = {j: JOB_COLORS[k % len(JOB_COLORS)] for j, k in order.items()}
    rows_per_band = max(gpus_per_host, int(cells["slot"].max()) + 1) + 1  # one empty row between hosts
    y = band.loc[cells["host"]].to_numpy() * rows_per_band + cells["slot"].to_numpy() + 0.5
    left, width, over = (
        cells["t_s"].to_numpy() / scale,
        cells["busy_s"].to_numpy() / scale,
        cells["overhead_s"].to_numpy() / scale,
    )
    job = cells["job_id"].to_numpy()
    ax.barh(y, width, left=left, height=0.9, color=[color.get(int(j), "#404040") for j in job], lw=0, zorder=2)
    paid = over > 0
    if paid.any():
        ax.barh(
            y[paid],
            over[paid],
            left=left[paid],
            height=0.9,
            color="white",
            alpha=0.55,
            hatch="////",
            edgecolor="black",
            lw=0,
            zorder=3,
        )
    if len(color) > len(JOB_COLORS):  # colours repeat: name each job where it first lands on a host
        first = ~cells[["job_id", "host"]].duplicated().to_numpy()
        for x, yy, j in zip(left[first], y[first], job[first]):
            ax.text(x, yy, labels.get(int(j), str(j)), ha="left", va="center", fontsize=4.5, zorder=5)
    for k in range(len(hosts)):
        ax.axhspan(k * rows_per_band, k * rows_per_band + rows_per_band - 1, color="#f2f2f2", zorder=0)
    host_type = cells.drop_duplicates("host").set_index("host")["gpu_type"]
    names = host_names or {int(h): f"host {h} ({host_type[h]})" for h in hosts}
    ax.set_yticks(
        np.arange(len(hosts)) * rows_per_band + (rows_per_band - 1) / 2,
        [names.get(int(h), f"host {h}") for h in hosts],
        fontsize=7 if len(hosts) <= 20 else 5,
    )
    ax.set_ylim(len(hosts) * rows_per_band - 0.8, -0.2)
    ax.set_xlabel(f"time ({name}); one row per GPU")
    ax.grid(axis="y", visible=False)
    present = set(job.tolist())
    handles = [
        Patch(color=color[j], label=labels.get(j, f"job {j}"))
        for j in sorted(color, key=order.get)
        if j in present and len(color) <= len(JOB_COLORS)
    ]
    if paid.any():
        handles.append(Patch(facecolor="white", edgecolor="black", hatch="////", label="overhead"))
    ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False, fontsize=6)


def load_run(folder: Path) -> tuple[pd.DataFrame, pd.DataFrame, int]:
    """schedule.parquet, jobs.parquet and the cluster's GPUs per host of a run folder."""
    folder = Path(folder)
    require(folder.is_dir(), str(folder), "run dir", "not found")
    sched = folder / SCHEDULE
    require(
        sched.is_file(),
        str(folder),
        SCHEDULE,
        "missing: rerun with sim.record_schedule=true (e.g. python run.py sim.record_schedule=true ...)",
    )
    require((folder / JOBS).is_file(), str(folder), JOBS, "missing (not a complete run folder)")
    gpus_per_host = 4
    if (folder / CONFIG).is_file():
        import yaml

        cfg = yaml.safe_load((folder / CONFIG).read_text()) or {}
        gpus_per_host = int((cfg.get("cluster") or {}).get("gpus_per_host", 4))
    return pd.read_parquet(sched), pd.read_parquet(folder / JOBS), gpus_per_host


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m fairsim.figures.gantt", description=__doc__.splitlines()[0])
    ap.add_argument("run_dir", help="a run folder with schedule.parquet (made with sim.record_schedule=true)")
    ap.add_argument("--by", default="job", help="job (one lane per job, default) or host (one band per host)")
    ap.add_argument("--out", help="output path without suffix (default: <run dir>/gantt_<by>)")
    ap.add_argument("--max-jobs", type=int, default=80, help="draw the first N jobs by arrival (default 80)")
    args = ap.parse_args(argv)
    try:
        require(args.by in ("job", "host"), "command line", "--by", f"{args.by!r} is not one of job, host")
        require(args.max_jobs >= 1, "command line", "--max-jobs", f"must be >= 1, got {args.max_jobs}")
        schedule, jobs, gph = load_run(Path(args.run_dir))
        jobs = jobs.sort_values(["arrival_s", "job_id"], kind="stable").head(args.max_jobs)
        schedule = schedule[schedule["job_id"].isin(jobs["job_id"])]
        lanes = (
            len(jobs)
            if args.by == "job"
            else len(set(np.concatenate([*schedule["hosts"].to_numpy(), []]).tolist())) * (gph + 1)
        )
        with style.paper_style():
            fig, axes = style.new_figure(1, width=7.0, height=1.2 + 0.16 * max(lanes, 6))
            names = {
                int(j): f"{j} {m}" if args.by == "job" else str(j)
                for j, m in zip(jobs["job_id"], jobs.get("model", jobs["job_id"]))
            }
            if args.by == "job":
                draw_jobs(axes[0, 0], schedule, jobs, names)
            else:
                draw_hosts(axes[0, 0], schedule, jobs, gph, names)
            shown = f"first {len(jobs)} jobs by arrival" if len(jobs) == args.max_jobs else f"{len(jobs)} jobs"
            axes[0, 0].set_title(f"{Path(args.run_dir).name}: {shown}")
            out = Path(args.out) if args.out else Path(args.run_dir) / f"gantt_{args.by}"
            paths = style.save(fig, out.parent, out.name)
    except InputError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print("\n".join(map(str, paths)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
