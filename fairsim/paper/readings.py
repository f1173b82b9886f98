"""Readings of the testbed comparison: the headline claims judged on a cell set in which some
policies' cells are replaced by cells run another way (another clock, another FFT variant),
exactly as the headline table judges the testbed (``fairsim.paper.headlines.evaluate``)."""

from __future__ import annotations

from pathlib import Path
from typing import Mapping, Sequence

import pandas as pd

from fairsim.figures.data import Inputs, SweepData
from fairsim.paper.headlines import evaluate

MARK = {"yes": "Y", "weak": "w", "no": "N", "not measured": "-", "not reproduced": "-"}


def testbed_claims(specs: Sequence[Mapping]) -> list[Mapping]:
    """The headline claims judged on the testbed sweep (ratios and comparisons)."""
    return [s for s in specs if s.get("sweep") == "testbed" and s.get("kind") in ("ratio", "compare")]


def replace_cells(base: pd.DataFrame, replacement: pd.DataFrame, policies: Sequence[str]) -> pd.DataFrame:
    """``base`` with the cells of ``policies`` taken from ``replacement`` instead (a policy that
    ``replacement`` lacks keeps no cells, so its claims read "not measured")."""
    kept = base[~base["policy"].isin(policies)]
    return pd.concat([kept, replacement[replacement["policy"].isin(policies)]], ignore_index=True)


def verdicts(specs: Sequence[Mapping], cells: pd.DataFrame) -> dict[str, str]:
    """claim -> verdict of every testbed claim, judged on ``cells`` as if they were the testbed sweep."""
    view = Inputs({"testbed": SweepData("reading", Path("reading"), cells.reset_index(drop=True))}, {})
    return {r.claim: r.verdict for r in evaluate(testbed_claims(specs), view)}


def verdict_table(specs: Sequence[Mapping], readings: Mapping[str, pd.DataFrame]) -> pd.DataFrame:
    """claim x reading -> verdict, one column per named cell set, claims in the headline order."""
    return pd.DataFrame({name: verdicts(specs, cells) for name, cells in readings.items()})


def counts(column: pd.Series) -> str:
    """"a yes, b weak, c no" of one reading's verdicts."""
    return ", ".join(f"{int((column == v).sum())} {v}" for v in ("yes", "weak", "no"))
