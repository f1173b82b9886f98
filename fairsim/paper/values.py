"""The paper's reported numbers (PAPER.md sec. 4 and 3), as the figures draw them beside ours.

Each entry names what it is comparable with: a ``ratio`` (baseline / FFT, per-seed ratios of
ours) or a ``value`` (a policy's own number, in the unit the figure shows), the setting
(``testbed`` = traces 1-2, ``simulated`` = traces 3-9), the metric as in results.parquet, the
policy, and the trace when the paper names one (None: the paper gives one number for all
traces, or the largest over traces for "up to" claims). These are read off the paper, never fitted.
"""

from __future__ import annotations

from fairsim.figures.reference import PaperValue

PAPER_VALUES: tuple[PaperValue, ...] = (
    # Fig. 7: avg JCT and makespan on the testbed
    PaperValue("testbed", "ratio", "avg_jct_s", "gavel", "trace1", 1.46),
    PaperValue("testbed", "ratio", "avg_jct_s", "gavel", "trace2", 1.37),
    PaperValue("testbed", "ratio", "avg_jct_s", "allox", "trace1", 5.22, "up to"),
    PaperValue("testbed", "ratio", "avg_jct_s", "pal", None, 2.1, "about"),
    PaperValue("testbed", "ratio", "avg_jct_s", "tiresias", None, 3.15, "up to"),
    PaperValue("testbed", "ratio", "makespan_s", None, None, 3.12, "up to"),
    # Fig. 8: finish-time fairness on the testbed
    PaperValue("testbed", "value", "rho_fluid_lt1_share", "ours", None, 0.70),
    PaperValue("testbed", "value", "rho_fluid_lt1_share", "gavel", None, 0.38),
    PaperValue("testbed", "value", "rho_fluid_lt1_share", "tiresias", None, 0.49),
    PaperValue("testbed", "ratio", "rho_fluid_mean", "gavel", None, 1.64),
    PaperValue("testbed", "ratio", "rho_fluid_mean", "tiresias", None, 1.67),
    PaperValue("testbed", "ratio", "rho_fluid_max", "gavel", None, 1.4),
    PaperValue("testbed", "ratio", "rho_fluid_max", "tiresias", None, 2.18),
    # Fig. 9: max starvation in hours (the paper's testbed hours; ours are scaled traces)
    PaperValue("testbed", "value", "starvation_max_s", "ours", None, 25.0, "about"),
    PaperValue("testbed", "value", "starvation_max_s", "gavel", None, 55.0, "about"),
    PaperValue("testbed", "value", "starvation_max_s", "tiresias", None, 70.0, "more than"),
    # Fig. 10: migrations
    PaperValue("testbed", "value", "switches_to_faster_share", "ours", None, 0.63),
    PaperValue("testbed", "value", "switches_to_faster_share", "gavel", None, 0.49),
    PaperValue("testbed", "ratio", "type_switches", "gavel", None, 1.46),
    # Figs. 11-12: simulated traces 3-9, the largest ratio over traces
    PaperValue("simulated", "ratio", "avg_jct_s", "gavel", None, 1.74, "up to"),
    PaperValue("simulated", "ratio", "avg_jct_s", "pal", None, 2.38, "up to"),
    PaperValue("simulated", "ratio", "avg_jct_s", "tiresias", None, 3.88, "up to"),
    PaperValue("simulated", "ratio", "rho_fluid_mean", "gavel", None, 2.19, "up to"),
    PaperValue("simulated", "ratio", "rho_fluid_mean", "tiresias", None, 2.48, "up to"),
    PaperValue("simulated", "ratio", "rho_fluid_max", "gavel", None, 1.99, "up to"),
    PaperValue("simulated", "ratio", "rho_fluid_max", "tiresias", None, 2.52, "up to"),
)

# Fig. 13: (a) seconds per decision with cvxpy on the paper's hardware, by active jobs (PAPER.md
# sec. 3); (b) avg JCT with 30% profile error over avg JCT without, at most this.
PAPER_SOLVER_S = {1000: 0.98, 4000: 1.53}
PAPER_PROFILE_ERROR = (0.3, 1.17)


def paper_values(setting: str, kind: str | None = None, metric: str | None = None) -> list[PaperValue]:
    """The paper's numbers for one setting (testbed or simulated), optionally of one kind (ratio
    or value) and one metric."""
    return [v for v in PAPER_VALUES if v.setting == setting and kind in (None, v.kind) and metric in (None, v.metric)]
