"""Shared drawing of the paper's worked examples (fairsim.paper.examples): a Gantt
panel per policy and the plotted rows as CSV."""

from __future__ import annotations

import pandas as pd

from fairsim.figures import gantt, style
from fairsim.paper.examples import Example


def gantt_rows(example: Example, result, policy: str) -> pd.DataFrame:
    """The schedule rows a Gantt panel draws, with the job's display name (the figure's CSV)."""
    sc = result.schedule
    rows = sc[sc["type"] >= 0][["t_s", "duration_s", "job_id", "gpu_type", "overhead_s", "busy_s"]].copy()
    rows.insert(0, "policy", policy)
    rows.insert(3, "job", rows["job_id"].map(lambda j: example.labels.get(int(j), f"job {j}")))
    rows["gpu_type"] = rows["gpu_type"].map(lambda g: example.type_labels.get(g, g))
    return rows.reset_index(drop=True)


def gantt_panels(example: Example, results: dict, titles: dict, suptitle: str, height: float):
    """One job-lane Gantt per policy, stacked, on a shared time axis in minutes."""
    fig, axes = style.new_figure(1, nrows=len(results), width=6.4, height=height)
    end = max(float((r.schedule["t_s"] + r.schedule["duration_s"]).max()) for r in results.values())
    for ax, (policy, result) in zip(axes[:, 0], results.items()):
        gantt.draw_jobs(
            ax,
            result.schedule,
            result.jobs,
            example.labels,
            type_order=example.cluster.gpu_types,
            type_labels=example.type_labels,
            unit=(60.0, "min"),
        )
        ax.set_xlim(0, end / 60 * 1.02)
        ax.set_title(titles[policy])
    fig.suptitle(suptitle, fontsize=9)
    return fig
