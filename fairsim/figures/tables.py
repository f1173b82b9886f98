"""Paper tables as Markdown (for reading) and CSV (for reuse), written deterministically, and the
paper-vs-ours rows the worked-example figures and tables add to REPORT.md."""

from __future__ import annotations

from pathlib import Path
from typing import NamedTuple

import pandas as pd


class Check(NamedTuple):
    """One number of the paper beside ours, for REPORT.md."""

    item: str  # "Table 1", "Fig. 2", ...
    quantity: str
    paper: str
    ours: str


def markdown(table: pd.DataFrame, floatfmt: str = ".3g") -> str:
    def cell(v) -> str:
        if isinstance(v, float):
            return format(v, floatfmt) if pd.notna(v) else "-"
        return str(v).replace("|", "\\|")

    lines = ["| " + " | ".join(map(str, table.columns)) + " |", "|" + "---|" * len(table.columns)]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in table.itertuples(index=False)]
    return "\n".join(lines)


def save_table(table: pd.DataFrame, out_dir: Path, stem: str, title: str, notes: list[str] | None = None,
               floatfmt: str = ".3g") -> list[Path]:
    """Write <stem>.md (title, table, notes) and data/<stem>.csv."""
    out_dir = Path(out_dir)
    (out_dir / "data").mkdir(parents=True, exist_ok=True)
    md, csv = out_dir / f"{stem}.md", out_dir / "data" / f"{stem}.csv"
    md.write_text("\n".join([f"# {title}", "", markdown(table, floatfmt), "", *[f"- {n}" for n in notes or []], ""]))
    table.to_csv(csv, index=False, float_format="%.6g")
    return [md, csv]
