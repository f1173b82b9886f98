"""The headline claims under another reading of the paper: the claims' own sweep with some
policies' cells replaced by cells run another way (FFT with one open choice changed, a workload
variant, baselines on another clock), judged exactly as the headline table judges the sweep
(``fairsim.paper.headlines.evaluate``).

A reading is a table of cells (results.parquet rows). Its cells stand in for the base sweep's
cells of the same policies on the same settings (workload, cluster, seed); every other policy
keeps the base sweep's cells. Both the reading and the base are judged only on the settings
the reading covers, so a reading run on fewer traces or seeds is compared like with like.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import pandas as pd

from fairsim.figures.data import Inputs, SweepData
from fairsim.paper.headlines import Row, evaluate
from fairsim.paper.report_table import ReportTable

SETTING = ["workload", "cluster", "seed"]  # what makes two cells comparable (same trace, same cluster, same seed)
JUDGED_KINDS = ("ratio", "compare")  # the claims decided by cells of one sweep
MARK = {"yes": "Y", "weak": "w", "no": "N", "not measured": "-", "not reproduced": "-"}  # verdicts in a narrow table
DEFAULT = "default"  # the reading that replaces nothing


def claims_of(specs: Sequence[Mapping], role: str) -> list[Mapping]:
    """The headline claims judged on one sweep role's cells alone."""
    return [s for s in specs if s.get("sweep") == role and s.get("kind") in JUDGED_KINDS]


def settings(cells: pd.DataFrame) -> pd.MultiIndex:
    return pd.MultiIndex.from_frame(cells[SETTING].drop_duplicates())


def on_settings(cells: pd.DataFrame, where: pd.MultiIndex) -> pd.DataFrame:
    """The cells whose (workload, cluster, seed) is one of ``where``."""
    return cells[pd.MultiIndex.from_frame(cells[SETTING]).isin(where)]


def stand_in(base: pd.DataFrame, reading: pd.DataFrame, policies: Sequence[str] | None = None) -> pd.DataFrame:
    """``base``'s cells on the settings ``reading`` covers, with the cells of ``policies`` (default:
    every policy ``reading`` has) taken from ``reading`` instead."""
    policies = sorted(set(reading["policy"])) if policies is None else list(policies)
    unknown = sorted(set(policies) - set(reading["policy"]))
    if unknown:
        raise ValueError(f"the reading has no cells of {', '.join(unknown)}")
    mine = reading[reading["policy"].isin(policies)]
    kept = on_settings(base[~base["policy"].isin(policies)], settings(mine))
    return pd.concat([kept, mine], ignore_index=True)


def judge(specs: Sequence[Mapping], role: str, cells: pd.DataFrame, name: str = DEFAULT) -> list[Row]:
    """The role's claims (kinds ratio and compare) on this cell table, as the headline table
    judges the sweep of that role."""
    view = Inputs({role: SweepData(name, None, cells.reset_index(drop=True))}, {})
    return evaluate(claims_of(specs, role), view)


def reading_verdicts(
    specs: Sequence[Mapping],
    role: str,
    base: pd.DataFrame,
    readings: Mapping[str, pd.DataFrame],
    policies: Sequence[str] | None = None,
) -> pd.DataFrame:
    """claim x reading -> verdict ("yes", "weak", "no", "not measured"). The first column,
    ``default``, is the base sweep on the settings the readings cover; each reading's cells stand
    in for the base's cells of ``policies`` (default: the policies the reading has)."""
    covered = settings(pd.concat(list(readings.values()), ignore_index=True)) if readings else settings(base)
    columns = {DEFAULT: {r.claim: r.verdict for r in judge(specs, role, on_settings(base, covered))}}
    for name, cells in readings.items():
        columns[name] = {r.claim: r.verdict for r in judge(specs, role, stand_in(base, cells, policies), name)}
    return pd.DataFrame(columns)


def survivors(verdicts: pd.DataFrame) -> tuple[list[str], dict[str, dict[str, str]]]:
    """The claims whose verdict is the default's under every reading, and for every other claim
    the readings where it differs (reading -> verdict)."""
    same, flips = [], {}
    for claim, row in verdicts.iterrows():
        moved = {name: row[name] for name in verdicts.columns if name != DEFAULT and row[name] != row[DEFAULT]}
        if moved:
            flips[str(claim)] = moved
        else:
            same.append(str(claim))
    return same, flips


def verdict_report_table(
    name: str, verdict: pd.DataFrame, names: Sequence[str], headers: Sequence[str] | None = None
) -> ReportTable:
    """A claim x reading table of verdict marks, as REPORT.md's sections print it, with its
    verdicts (words) as data/<name>.csv; ``headers``: the readings' column titles (their names)."""
    frame = verdict[list(names)].rename_axis("claim").reset_index()
    frame["claim"] = frame["claim"].astype(str)
    return ReportTable(
        name,
        ["claim", *(headers or names)],
        [
            [claim, *(MARK.get(row[n], "?") for n in names)]
            for claim, row in zip(frame["claim"], verdict[list(names)].to_dict("records"))
        ],
        frame,
    )


def verdict_counts(column: pd.Series) -> str:
    """ "a yes, b weak, c no" of one reading's verdicts."""
    return ", ".join(f"{int((column == v).sum())} {v}" for v in ("yes", "weak", "no"))
