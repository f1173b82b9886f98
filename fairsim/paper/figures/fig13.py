"""Fig. 13. (b) average JCT against the error of the profiled epoch counts (``sim.profile_error``)
relative to no error (geometric mean over seeds, 95% interval), with the paper's bound; drawn
when the profile-error sweep has results. This is fig13, reproducible bit for bit.
(a) time of one FFT decision against the number of active jobs, two separate panels because they
time different things: the solver benchmark (``python -m fairsim.bench solver``, random
1,000-GPU instances, with the paper's two cvxpy numbers) and the decisions FFT took inside the
sweeps' simulations (36 GPUs at small scale; median per bin of active jobs). Wall-clock times
differ from machine to machine and run to run, so (a) goes to machine/fig13a_timing, which is
not committed: a rerun of the reproduction leaves the committed figures untouched."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

from fairsim.figures import portable, style
from fairsim.figures.data import Inputs, MissingInput
from fairsim.figures.plots import footnote
from fairsim.figures.stats import REFERENCE, ratio_ci
from fairsim.paper.values import PAPER_PROFILE_ERROR, PAPER_SOLVER_S

MACHINE_DIR = "machine"  # machine-dependent timings, kept out of the committed figures (.gitignore)
BINS = np.array([1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000, 20000, 50000])
ERROR_KEY = "sim.profile_error"


def simulated_decisions(inputs: Inputs, roles=("testbed", "simulated")) -> pd.DataFrame:
    """Median FFT decision time per bin of active jobs, over every round of every FFT cell."""
    parts = []
    for role in roles:
        try:
            rounds = inputs.sweep(role).rounds(REFERENCE)
        except MissingInput:
            continue
        if len(rounds):
            parts.append(rounds[(rounds["rounds"] == 1) & (rounds["active_jobs"] > 0)][["active_jobs", "policy_s"]])
    if not parts:
        return pd.DataFrame(columns=["jobs", "policy_s", "decisions"])
    rounds = pd.concat(parts, ignore_index=True)
    which = np.searchsorted(BINS, rounds["active_jobs"].to_numpy(), side="right") - 1
    rows = [
        {
            "jobs": float(np.median(rounds["active_jobs"].to_numpy()[which == b])),
            "policy_s": float(np.median(rounds["policy_s"].to_numpy()[which == b])),
            "decisions": int((which == b).sum()),
        }
        for b in np.unique(which)
    ]
    return pd.DataFrame(rows)


def plain_log_axes(ax) -> None:
    """Log x and y with plain-number ticks (1-2-5 per decade), no 2 x 10^3 labels."""
    for axis, scale in ((ax.xaxis, ax.set_xscale), (ax.yaxis, ax.set_yscale)):
        scale(portable.LogScale())
        axis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
        axis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
        axis.set_minor_formatter(NullFormatter())


def benchmark_panel(ax, inputs: Inputs) -> pd.DataFrame:
    """Seconds per FFT decision on the solver benchmark's random 1,000-GPU instances (median of
    the reps, one untimed warm-up decision first), with the paper's two cvxpy numbers."""
    tables = []
    try:
        bench = inputs.bench("solver")
        ax.plot(bench["jobs"], bench["ours_s"], "o-", color=style.color(REFERENCE), label="FFT, solver benchmark")
        tables.append(bench[["jobs", "ours_s"]].rename(columns={"ours_s": "seconds"}).assign(source="benchmark"))
    except MissingInput:
        ax.text(0.5, 0.5, "no solver benchmark results", ha="center", va="center", transform=ax.transAxes)
    paper = pd.DataFrame({"jobs": list(PAPER_SOLVER_S), "seconds": list(PAPER_SOLVER_S.values())})
    ax.plot(
        paper["jobs"],
        paper["seconds"],
        linestyle="none",
        marker=style.PAPER_MARKER,
        color=style.PAPER_COLOR,
        label=f"{style.PAPER_LABEL} (cvxpy, their hardware)",
    )
    tables.append(paper.assign(source="paper"))
    plain_log_axes(ax)
    ax.set_xlabel("active jobs")
    ax.set_ylabel("seconds per decision")
    ax.set_title("solver benchmark, 1,000 GPUs")
    return pd.concat(tables, ignore_index=True)


def simulation_panel(ax, inputs: Inputs) -> pd.DataFrame:
    """Median seconds of the decisions FFT took inside the sweeps (36-GPU cluster at small scale)."""
    sim = simulated_decisions(inputs)
    if len(sim):
        ax.plot(sim["jobs"], sim["policy_s"], "s--", color=style.color(REFERENCE), label="FFT, inside the simulations")
        plain_log_axes(ax)
    else:
        ax.text(0.5, 0.5, "no FFT cells in the sweeps", ha="center", va="center", transform=ax.transAxes)
    ax.set_xlabel("active jobs")
    ax.set_ylabel("seconds per decision")
    ax.set_title("inside the sweeps (median per bin)")
    return sim.rename(columns={"policy_s": "seconds"}).assign(source="simulations")


def profile_error_panel(ax, inputs: Inputs) -> pd.DataFrame:
    """avg JCT at each profile error as a ratio to the same policy and seed without error."""
    try:
        sweep = inputs.sweep("profile_error")
    except MissingInput:
        ax.text(
            0.5,
            0.5,
            f"not reproduced:\nno results of the sweep\nover {ERROR_KEY}",
            ha="center",
            va="center",
            transform=ax.transAxes,
        )
        ax.set_title("JCT vs profile error")
        ax.set_xticks([])
        ax.set_yticks([])
        return pd.DataFrame()
    cells = sweep.cells.assign(error=sweep.setting(ERROR_KEY).astype(float))
    base = cells[cells["error"] == 0].set_index(["policy", "workload", "seed"])["avg_jct_s"]
    cells = cells.join(base.rename("jct0"), on=["policy", "workload", "seed"])
    cells["ratio"] = cells["avg_jct_s"] / cells["jct0"]
    rows = []
    for (policy, error), group in cells.groupby(["policy", "error"], sort=True):
        ci = ratio_ci(group["ratio"])
        rows.append({"policy": policy, "error": error, "mean": ci.mean, "lo": ci.lo, "hi": ci.hi, "n": ci.n})
    table = pd.DataFrame(rows)
    for policy in style.policy_order(table["policy"]):
        part = table[table["policy"] == policy]
        x, mean, lo, hi = (part[c].to_numpy(float) for c in ("error", "mean", "lo", "hi"))
        ax.plot(x * 100, mean, "-", marker=style.marker(policy), color=style.color(policy), label=style.label(policy))
        ok = np.isfinite(lo) & np.isfinite(hi)  # no whisker (and no zero-width cap) for one seed
        if ok.any():
            ax.errorbar(
                x[ok] * 100,
                mean[ok],
                yerr=np.vstack([mean[ok] - lo[ok], hi[ok] - mean[ok]]),
                fmt="none",
                capsize=3,
                ecolor=style.color(policy),
            )
    error, limit = PAPER_PROFILE_ERROR
    ax.plot(
        [error * 100],
        [limit],
        linestyle="none",
        marker="v",
        color=style.PAPER_COLOR,
        label=f"{style.PAPER_LABEL}: at most {limit:g}x at {error:.0%} error",
    )
    ax.axhline(1.0, color="black", linewidth=0.8, linestyle="--")
    bottom, top = ax.get_ylim()
    ax.set_ylim(bottom, max(top, limit + 0.03))  # the paper's bound inside the axis
    ax.set_xlabel("error of profiled epoch counts (%)")
    ax.set_ylabel("avg JCT / avg JCT without error")
    ax.set_title("JCT vs profile error")
    return table


def draw(inputs: Inputs, out_dir: Path) -> list[Path]:
    """fig13 (profile error, reproducible) in ``out_dir``; the decision times, which depend on
    the machine, in ``out_dir``/machine/fig13a_timing (not committed, see MACHINE_DIR)."""
    out_dir = Path(out_dir)
    with style.paper_style():
        fig, axes = style.new_figure(1, width=4.6, height=2.8)
        error = profile_error_panel(axes[0][0], inputs)
        style.legend_outside(fig, axes[0])
        footnote(fig, error, extra="Decision times (Fig. 13a) depend on the machine: see machine/fig13a_timing.")
        fig.suptitle("Fig. 13b: robustness of FFT to profiling error", fontsize=9)
        error_pct, limit = PAPER_PROFILE_ERROR
        paper = pd.DataFrame([{"policy": REFERENCE, "error": error_pct, "paper": limit, "qualifier": "at most"}])
        data = pd.concat([error.assign(source="ours"), paper.assign(source="paper")], ignore_index=True)
        paths = style.save(fig, out_dir, "fig13", data)
    with style.paper_style():
        fig, axes = style.new_figure(2, width=3.6, height=3.2)
        bench = benchmark_panel(axes[0][0], inputs)
        sim = simulation_panel(axes[0][1], inputs)
        style.panel_letters(axes[0])
        style.legend_outside(fig, axes[0])
        style.note(
            fig,
            "Wall-clock times of this machine (not reproducible bit for bit); (a) and (b) time different "
            "instances: (a) random 1,000-GPU rounds, median of the reps, (b) the sweeps' own clusters "
            "(36 GPUs at small scale). A program of at most exact_columns=512 columns after pruning (every "
            "round on the 36-GPU testbed) is solved by the exact MILP, larger ones by lp_dive.",
        )
        fig.suptitle("Fig. 13a: time of one FFT decision", fontsize=9)
        data = pd.concat([bench.assign(panel="a"), sim.assign(panel="b")], ignore_index=True)
        paths += style.save(fig, out_dir / MACHINE_DIR, "fig13a_timing", data)
    return paths
