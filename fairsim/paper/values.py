"""The paper's reported numbers (PAPER.md sec. 4 and 3), as the figures draw them beside ours; the
numbers themselves are written once, in experiments/paper.yaml (``paper_values``,
``paper_solver_s``, ``paper_profile_error``), beside the headline claims that cite them.

Each entry names what it is comparable with: a ``ratio`` (baseline / FFT, per-seed ratios of
ours) or a ``value`` (a policy's own number, in the unit the figure shows), the setting
(``testbed`` = traces 1-2, ``simulated`` = traces 3-9), the metric as in results.parquet, the
policy, and the trace when the paper names one (None: the paper gives one number for all
traces, or the largest over traces for "up to" claims). These are read off the paper, never fitted.
"""

from __future__ import annotations

from pathlib import Path

import yaml

from fairsim.figures.reference import PaperValue

PLAN = Path(__file__).resolve().parents[2] / "experiments" / "paper.yaml"  # the paper's experiment list and numbers
_NUMBERS = yaml.safe_load(PLAN.read_text())

PAPER_VALUES: tuple[PaperValue, ...] = tuple(
    PaperValue(
        v["setting"], v["kind"], v["metric"], v["policy"], v["workload"], float(v["value"]), v.get("qualifier", "")
    )
    for v in _NUMBERS["paper_values"]
)

# Fig. 13: (a) seconds per decision on the paper's hardware, by active jobs; (b) the profile error
# and the most it raised avg JCT
PAPER_SOLVER_S = {int(jobs): float(s) for jobs, s in _NUMBERS["paper_solver_s"].items()}
PAPER_PROFILE_ERROR = (
    float(_NUMBERS["paper_profile_error"]["error"]),
    float(_NUMBERS["paper_profile_error"]["jct_ratio_at_most"]),
)


def paper_values(setting: str, kind: str | None = None, metric: str | None = None) -> list[PaperValue]:
    """The paper's numbers for one setting (testbed or simulated), optionally of one kind (ratio
    or value) and one metric."""
    return [v for v in PAPER_VALUES if v.setting == setting and kind in (None, v.kind) and metric in (None, v.metric)]


HEADLINES: tuple[dict, ...] = tuple(_NUMBERS["headlines"])  # the claims REPORT.md judges (experiments/paper.yaml)
