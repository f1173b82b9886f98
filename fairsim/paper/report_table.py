"""Every number REPORT.md shows comes from a CSV under data/.

A report table is the Markdown rows a reader sees and, beside them, the values they were formed
from: a frame with one row per Markdown row, its columns named with their units (``_h`` hours,
``_ratio`` a ratio, ``_pct`` a percentage, ``n`` a count). The frame is written in full
precision to ``data/<name>.csv`` and the table is introduced by a link to it, so a number in the
report can be traced to its CSV and re-formed from it: ``check_report`` reads a REPORT.md back
and names every table without a CSV and every printed number that its CSV row does not hold at
the printed precision (tests/test_report_tables.py runs it over the committed reports).

A section's ``report_section`` returns lines and ``ReportTable`` items; ``expand`` writes each
table's CSV and puts its Markdown in place.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

DATA = "data"
_SOURCE = re.compile(r"^Data: \[`data/([\w.-]+\.csv)`\]\(data/[\w.-]+\.csv\)$")
# a number as the report prints it (1.61, -5.4, 1,728.13, 2.07x, 21.9 h): not part of an
# identifier (T4, fig7), followed at most by a one-letter unit
_NUMBER = re.compile(r"(?<![\w.])-?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?![\d.,]\d|[A-Za-z_]\w)")


@dataclass(frozen=True, eq=False)
class ReportTable:
    """``header`` and ``rows``: the Markdown cells; ``frame``: the values behind them, one row per
    Markdown row; written to data/<name>.csv."""

    name: str
    header: Sequence[str]
    rows: Sequence[Sequence[str]]
    frame: pd.DataFrame

    def __post_init__(self) -> None:
        if len(self.rows) != len(self.frame):
            raise ValueError(f"report table {self.name}: {len(self.rows)} rows shown, {len(self.frame)} in its frame")
        for row in self.rows:
            if len(row) != len(self.header):
                raise ValueError(
                    f"report table {self.name}: a row of {len(row)} cells under {len(self.header)} columns"
                )

    def markdown(self) -> list[str]:
        return [
            f"Data: [`data/{self.name}.csv`](data/{self.name}.csv)",
            "",
            "| " + " | ".join(map(_cell, self.header)) + " |",
            "|" + "---|" * len(self.header),
            *("| " + " | ".join(map(_cell, row)) + " |" for row in self.rows),
        ]

    def save(self, out_dir: Path) -> Path:
        """data/<name>.csv in full precision (each float written so that it reads back exactly)."""
        path = Path(out_dir) / DATA / f"{self.name}.csv"
        path.parent.mkdir(parents=True, exist_ok=True)
        self.frame.to_csv(path, index=False)
        return path


def interval_text(mean: float, lo: float, hi: float, digits: int) -> str:
    """``mean [lo, hi]`` as the report prints an interval."""
    return f"{mean:.{digits}f} [{lo:.{digits}f}, {hi:.{digits}f}]"


def _cell(text: object) -> str:
    return str(text).replace("|", "\\|")


def expand(items: Iterable[str | ReportTable], out_dir: Path) -> list[str]:
    """Lines of a REPORT.md part: each table's CSV written under ``out_dir`` and its Markdown in place."""
    lines: list[str] = []
    for item in items:
        if isinstance(item, ReportTable):
            item.save(out_dir)
            lines += item.markdown()
        else:
            lines.append(item)
    return lines


# ---- reading a report back ---------------------------------------------------------------------


def _split(line: str) -> list[str]:
    cells = re.split(r"(?<!\\)\|", line.strip())[1:-1]
    return [c.strip().replace("\\|", "|") for c in cells]


def tables(text: str) -> list[tuple[str | None, int, list[list[str]]]]:
    """Each Markdown table of ``text``: (its CSV's file name or None, the line number of its
    header, its body rows as cells)."""
    lines = text.splitlines()
    found = []
    i = 0
    while i < len(lines):
        if lines[i].startswith("|") and i + 1 < len(lines) and lines[i + 1].startswith("|---"):
            source = None
            back = [ln for ln in lines[max(i - 2, 0) : i] if ln.strip()]
            if back and (m := _SOURCE.match(back[-1].strip())):
                source = m.group(1)
            body = []
            j = i + 2
            while j < len(lines) and lines[j].startswith("|"):
                body.append(_split(lines[j]))
                j += 1
            found.append((source, i + 1, body))
            i = j
        else:
            i += 1
    return found


def _decimals(token: str) -> int:
    return len(token.split(".")[1]) if "." in token else 0


def _row_forms(values: Sequence[object], decimals: set[int]) -> set[str]:
    """Every way a printed number may stand for a value of the row: each numeric value at each
    precision the row prints, and each number inside a text value."""
    forms: set[str] = set()
    for value in values:
        if isinstance(value, str):
            forms.update(_NUMBER.findall(value))
            continue
        try:
            number = float(value)
        except (TypeError, ValueError):
            continue
        if pd.isna(number):
            continue
        for d in decimals:
            forms.update((f"{number:.{d}f}", f"{number:,.{d}f}"))
    return forms


def check_report(path: Path) -> list[str]:
    """Problems of a REPORT.md: a table with no CSV link, a CSV that is missing or has another
    number of rows, a printed number its CSV row does not hold. Empty when every number has a
    CSV behind it."""
    path = Path(path)
    problems = []
    for source, line, body in tables(path.read_text()):
        if source is None:
            problems.append(f"{path.name}:{line}: a table without a 'Data: [data/<name>.csv]' line above it")
            continue
        csv = path.parent / DATA / source
        if not csv.is_file():
            problems.append(f"{path.name}:{line}: data/{source} does not exist")
            continue
        frame = pd.read_csv(csv, keep_default_na=False, na_values=[""])
        if len(frame) != len(body):
            problems.append(f"{path.name}:{line}: {len(body)} rows shown, data/{source} has {len(frame)}")
            continue
        for k, (cells, values) in enumerate(zip(body, frame.itertuples(index=False))):
            tokens = [t for c in cells for t in _NUMBER.findall(c)]
            forms = _row_forms(list(values), {_decimals(t) for t in tokens})
            missing = [t for t in tokens if t not in forms and t.lstrip("-") not in forms and f"-{t}" not in forms]
            if missing:
                problems.append(
                    f"{path.name}:{line + 2 + k}: {', '.join(sorted(set(missing)))} not in row {k + 1} of data/{source}"
                )
    return problems
