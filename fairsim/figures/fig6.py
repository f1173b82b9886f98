"""Fig. 6: placement inside one GPU type (paper sec. 4.3), drawn by host from the schedule
record: 3-worker jobs packed one per 4-GPU host, a fourth spread over three hosts, and its
consolidation onto one host at the churn event when a job finishes (hatched: the migration's
overhead). Instance: fairsim.experiment.paper_examples.fig6_example."""

from __future__ import annotations

from pathlib import Path

from fairsim.experiment.paper_examples import fig6_example, fig6_policy
from fairsim.figures import gantt, style
from fairsim.figures.tables import Check


def draw(inputs, out_dir: Path) -> list[Check]:
    example = fig6_example()
    result = example.run(fig6_policy())
    sc = result.schedule
    with style.paper_style():
        fig, axes = style.new_figure(1, width=6.4, height=2.8)
        gantt.draw_hosts(axes[0, 0], sc, result.jobs, example.cluster.gpus_per_host, example.labels, unit=(60.0, "min"))
        axes[0, 0].set_title("Fig. 6: packing, spreading and consolidation on three 4-GPU A10 hosts (FIFO order)")
        rows = sc[sc["type"] >= 0].explode("hosts").rename(columns={"hosts": "host"})
        rows["job"] = rows["job_id"].map(example.labels)
        style.save(fig, out_dir, "fig6", rows[["t_s", "duration_s", "job", "host", "overhead_s", "busy_s"]])
    jobs = result.jobs.set_index("job_id")
    moved = jobs[jobs["migrations"] > 0]
    return [Check("Fig. 6", "consolidation at churn", "spread multi-worker jobs move onto fewer hosts, smallest state first",
                  ", ".join(f"{example.labels[j]}: {int(r['spread_rounds'])} rounds spread, then 1 move "
                            f"({r['overhead_s']:.1f} s overhead)" for j, r in moved.iterrows()) or "no move")]
