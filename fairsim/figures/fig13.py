"""Fig. 13: (a) time of one FFT decision against the number of active jobs: the solver benchmark
(``python -m fairsim.bench solver``, random 1,000-GPU instances) and the decisions FFT actually
took inside the sweeps' simulations (median per bin of active jobs), with the paper's two cvxpy
numbers for scale; (b) average JCT against the error of the profiled epoch counts
(``sim.profile_error``) relative to no error, drawn when the profile-error sweep has results."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from fairsim.figures import style
from fairsim.figures.data import Inputs, MissingInput
from fairsim.figures.stats import REFERENCE, mean_ci

PAPER_SOLVER_S = {1000: 0.98, 4000: 1.53}  # PAPER.md sec. 3 (cvxpy, their hardware)
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
    rows = [{"jobs": float(np.median(rounds["active_jobs"].to_numpy()[which == b])),
             "policy_s": float(np.median(rounds["policy_s"].to_numpy()[which == b])), "decisions": int((which == b).sum())}
            for b in np.unique(which)]
    return pd.DataFrame(rows)


def solver_panel(ax, inputs: Inputs) -> pd.DataFrame:
    tables = []
    try:
        bench = inputs.bench("solver")
        ax.plot(bench["jobs"], bench["ours_s"], "o-", color=style.color(REFERENCE), label="FFT, solver benchmark")
        tables.append(bench[["jobs", "ours_s"]].rename(columns={"ours_s": "seconds"}).assign(source="benchmark"))
    except MissingInput:
        pass
    sim = simulated_decisions(inputs)
    if len(sim):
        ax.plot(sim["jobs"], sim["policy_s"], "s--", color="0.4", label="FFT, inside the simulations")
        tables.append(sim.rename(columns={"policy_s": "seconds"}).assign(source="simulations"))
    paper = pd.DataFrame({"jobs": list(PAPER_SOLVER_S), "seconds": list(PAPER_SOLVER_S.values())})
    ax.plot(paper["jobs"], paper["seconds"], "x", color="black", label="paper (cvxpy)")
    tables.append(paper.assign(source="paper"))
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("active jobs")
    ax.set_ylabel("seconds per decision")
    ax.set_title("(a) decision time")
    ax.legend(loc="upper left")
    return pd.concat(tables, ignore_index=True)


def profile_error_panel(ax, inputs: Inputs) -> pd.DataFrame:
    """avg JCT at each profile error as a ratio to the same policy and seed without error."""
    try:
        sweep = inputs.sweep("profile_error")
    except MissingInput:
        ax.text(0.5, 0.5, f"not reproduced:\nno results of the sweep\nover {ERROR_KEY}", ha="center", va="center",
                transform=ax.transAxes)
        ax.set_title("(b) JCT vs profile error")
        ax.set_xticks([])
        ax.set_yticks([])
        return pd.DataFrame()
    cells = sweep.cells.assign(error=sweep.setting(ERROR_KEY).astype(float))
    base = cells[cells["error"] == 0].set_index(["policy", "workload", "seed"])["avg_jct_s"]
    cells = cells.join(base.rename("jct0"), on=["policy", "workload", "seed"])
    cells["ratio"] = cells["avg_jct_s"] / cells["jct0"]
    rows = []
    for (policy, error), group in cells.groupby(["policy", "error"], sort=True):
        ci = mean_ci(group["ratio"])
        rows.append({"policy": policy, "error": error, "mean": ci.mean, "lo": ci.lo, "hi": ci.hi, "n": ci.n})
    table = pd.DataFrame(rows)
    for policy in style.policy_order(table["policy"]):
        part = table[table["policy"] == policy]
        err = np.nan_to_num(np.vstack([part["mean"] - part["lo"], part["hi"] - part["mean"]]))
        ax.errorbar(part["error"] * 100, part["mean"], yerr=err, fmt="o-", capsize=3, color=style.color(policy),
                    label=style.label(policy))
    ax.axhline(1.0, color="black", linewidth=0.8, linestyle="--")
    ax.set_xlabel("error of profiled epoch counts (%)")
    ax.set_ylabel("avg JCT / avg JCT without error")
    ax.set_title("(b) JCT vs profile error")
    ax.legend(loc="upper left")
    return table


def draw(inputs: Inputs, out_dir: Path) -> list[Path]:
    with style.paper_style():
        fig, axes = style.new_figure(2, width=3.6)
        solver = solver_panel(axes[0][0], inputs)
        error = profile_error_panel(axes[0][1], inputs)
        fig.suptitle("Fig. 13: scalability and robustness of FFT", fontsize=9)
        data = pd.concat([solver.assign(panel="a"), error.assign(panel="b")], ignore_index=True)
        return style.save(fig, out_dir, "fig13", data)
