"""A published number drawn beside ours: what it is comparable with (a ratio of baseline / FFT
or a policy's own value), its setting, metric, policy and trace, and how the source qualifies it
("up to", "about"). The numbers themselves belong to whoever publishes them (the paper's are in
``fairsim.paper.values``); the plotting library only draws them."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class PaperValue:
    setting: str  # testbed | simulated
    kind: str  # ratio | value
    metric: str  # column of results.parquet
    policy: str | None  # None: any baseline (e.g. "makespan vs baselines, up to 3.12x")
    workload: str | None  # None: not tied to one trace
    value: float  # in the unit the figure draws (ratios plain, shares 0-1, hours)
    qualifier: str = ""  # "", "about", "up to", "at most", "more than"

    def text(self) -> str:
        number = f"{self.value:g}x" if self.kind == "ratio" else f"{self.value:g}"
        return f"{self.qualifier} {number}".strip()


def matching(values: Sequence[PaperValue], kind: str, metric: str) -> list[PaperValue]:
    """The values of one kind (ratio or value) for one metric."""
    return [v for v in values if (v.kind, v.metric) == (kind, metric)]
