"""Fig. 5: one job's fairness compensation rho over time under FFT (the schedule record's rho
column): it rises while the job starves behind a stream of short jobs, lets the job in, and
falls in the rounds it runs (shaded). Instance: fig5 in experiments/paper_examples.yaml."""

from __future__ import annotations

from pathlib import Path

from matplotlib.patches import Patch

from fairsim.figures import style
from fairsim.figures.tables import Check
from fairsim.paper.examples import fig5_example


def trace():
    """The big job's rows of the schedule record: t_s, type (-1 = waiting), rho."""
    example = fig5_example()
    result = example.run(example.policy("ours"))
    sc = result.schedule
    return result, sc[sc["job_id"] == 0][["t_s", "duration_s", "type", "rho", "busy_s"]].reset_index(drop=True)


def draw(inputs, out_dir: Path) -> list[Check]:
    result, big = trace()
    ran = big[big["type"] >= 0]
    with style.paper_style():
        fig, axes = style.new_figure(1, width=6.0, height=2.4)
        ax = axes[0, 0]
        for t, d in zip(ran["t_s"], ran["busy_s"]):
            ax.axvspan(t / 3600, (t + d) / 3600, color="#009E73", alpha=0.3, lw=0)
        ax.step(
            big["t_s"] / 3600,
            big["rho"],
            where="post",
            color="#0072B2",
            lw=1.2,
            label="rho (as of the round's decision)",
        )
        ax.set_xlabel("time (h)")
        ax.set_ylabel("rho of the 2-GPU job")
        handles, _ = ax.get_legend_handles_labels()
        ax.legend(
            handles=[*handles, Patch(color="#009E73", alpha=0.3, label="rounds the job runs")],
            loc="upper left",
            fontsize=7,
        )
        ax.set_title("Fig. 5: FFT's rho for a 2-GPU job behind a stream of 1-round jobs (2 GPUs)")
        style.save(fig, out_dir, "fig5", big)
    first = float(result.jobs["first_start_s"].iloc[0])
    peak = float(big.loc[big["t_s"] <= first, "rho"].max())
    after = float(big.loc[big["t_s"] > first, "rho"].iloc[0])
    return [
        Check(
            "Fig. 5",
            "a starved job's rho",
            "rises while it waits, falls once it runs",
            f"rises for {first / 300:.0f} rounds to {peak:.1f}, the job starts, then {after:.1f}",
            {"rounds_waited": first / 300, "rho_peak": peak, "rho_after_start": after},
        )
    ]
