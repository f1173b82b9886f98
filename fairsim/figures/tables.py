"""Paper tables as Markdown (for reading) and CSV (for reuse), written deterministically, and the
paper-vs-ours rows the worked-example figures and tables add to REPORT.md."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from types import MappingProxyType
from typing import NamedTuple

import pandas as pd

from fairsim.figures.style import save_data


class Check(NamedTuple):
    """One number of the paper beside ours, for REPORT.md."""

    item: str  # "Table 1", "Fig. 2", ...
    quantity: str
    paper: str
    ours: str
    values: Mapping[str, object] = MappingProxyType({})  # the numbers ``ours`` is formed from (data/examples.csv)


def markdown(table: pd.DataFrame, floatfmt: str = ".3g") -> str:
    def cell(v) -> str:
        if isinstance(v, float):
            return format(v, floatfmt) if pd.notna(v) else "-"
        return str(v).replace("|", "\\|")

    lines = ["| " + " | ".join(map(str, table.columns)) + " |", "|" + "---|" * len(table.columns)]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in table.itertuples(index=False)]
    return "\n".join(lines)


def save_table(
    table: pd.DataFrame, out_dir: Path, stem: str, title: str, notes: list[str] | None = None, floatfmt: str = ".3g"
) -> list[Path]:
    """Write <stem>.md (title, table, notes) and data/<stem>.csv."""
    csv = save_data(table, out_dir, stem)
    md = Path(out_dir) / f"{stem}.md"
    md.write_text("\n".join([f"# {title}", "", markdown(table, floatfmt), "", *[f"- {n}" for n in notes or []], ""]))
    return [md, csv]
