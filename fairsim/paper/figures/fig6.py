"""Fig. 6: placement inside one GPU type (paper sec. 4.3), drawn by host from the schedule
record: gangs packed onto as few 4-GPU hosts as possible, two jobs spread when no host has room,
and at the churn event when a job finishes the spread job with the smaller state consolidated
onto the freed host (hatched: the migration's overhead). Instance: fig6
in experiments/paper_examples.yaml."""

from __future__ import annotations

from pathlib import Path

from fairsim.figures import gantt, style
from fairsim.figures.tables import Check
from fairsim.paper.examples import fig6_example


def draw(inputs, out_dir: Path) -> list[Check]:
    example = fig6_example()
    result = example.run(example.policy("fifo"))
    sc = result.schedule
    with style.paper_style():
        fig, axes = style.new_figure(1, width=6.4, height=3.4)
        gantt.draw_hosts(axes[0, 0], sc, result.jobs, example.cluster.gpus_per_host, example.labels, unit=(60.0, "min"))
        axes[0, 0].set_title("Fig. 6: packing, spreading and consolidation (smallest state first) on 4-GPU A10 hosts")
        rows = gantt.gpu_slots(sc, example.cluster.gpus_per_host)  # one row per (round, job, GPU): what is drawn
        rows.insert(3, "job", rows.pop("job_id").map(example.labels))
        style.save(fig, out_dir, "fig6", rows)
    jobs = result.jobs.set_index("job_id")
    spread = jobs[jobs["spread_rounds"] > 0]
    state_gb = dict(zip(example.jobs.job_id, example.jobs.state_bytes / 1e9))
    values = {}
    for j, r in spread.iterrows():
        label = example.labels[j]
        values |= {
            f"{label}_state_gb": state_gb[j],
            f"{label}_spread_rounds": int(r["spread_rounds"]),
            f"{label}_overhead_s": r["overhead_s"],
        }
    moves = [
        f"{example.labels[j]} ({state_gb[j]:.0f} GB): spread {int(r['spread_rounds'])} rounds, "
        + (f"then consolidated ({r['overhead_s']:.1f} s overhead)" if r["migrations"] else "never moved")
        for j, r in spread.iterrows()
    ]
    return [
        Check(
            "Fig. 6",
            "consolidation at churn",
            "spread multi-worker jobs move onto fewer hosts, smallest state first",
            "; ".join(moves) or "no job spread",
            values,
        )
    ]
