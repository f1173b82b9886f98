"""A comma-separated job-log table read as text cells, each row knowing its line in the file.

The logs are plain CSV without quoting (Helios' cluster_log.csv, the PAI tables), often of a
million rows: the field count of every line is checked on the raw bytes before pandas parses
them, so a truncated or padded row is refused naming its line instead of being read as empty
cells. Blank lines are skipped.
"""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from fairsim.errors import InputError, require
from fairsim.files import note_input


@dataclass(frozen=True, eq=False)
class CsvTable:
    cells: pd.DataFrame  # str cells ("" when empty), one row a data line
    lines: np.ndarray  # int64: the file line (1-based) of each row
    path: Path
    src: str

    def where(self, row: int) -> str:
        """The error source of a row: "<workload>: <file>:<line>"."""
        return f"{self.src}: {self.path}:{int(self.lines[row])}"


def read_csv_table(path: Path, src: str, *, columns: tuple[str, ...] | None = None,
                   required: tuple[str, ...] = (), header_first: str | None = None,
                   usecols: tuple[str, ...] | None = None, hint: str = "") -> CsvTable:
    """``columns`` given: a headerless table with these columns, in order (a first line that
    starts with ``header_first`` is taken as a header line and skipped). ``columns`` None: the
    first line is the header, and it must name every column of ``required``. ``usecols``: the
    columns to keep (all by default; every line's field count is checked either way). ``hint``
    follows a missing column's error (e.g. which variant of the file has it)."""
    require(path.is_file(), src, "path", f"no such file: {path}")
    note_input(path)
    data = path.read_bytes()
    starts, commas = _line_layout(data)
    lines = np.flatnonzero(commas >= 0) + 1  # non-blank lines, 1-based
    require(len(lines) > 0, src, "path", f"{path} is empty")
    first = _line_text(data, starts, lines[0], src, path)
    has_header = columns is None or (header_first is not None and first.split(",")[0].strip() == header_first)
    if columns is None:
        columns = tuple(name.strip() for name in first.split(","))
        missing = [c for c in required if c not in columns]
        require(not missing, f"{src}: {path}:{lines[0]}", "header", f"misses the column(s) {', '.join(missing)} "
                f"(needed: {', '.join(required)})" + (f"; {hint}" if hint else ""))
    data_lines = lines[1:] if has_header else lines
    wrong = commas[data_lines - 1] != len(columns) - 1
    if wrong.any():
        line = int(data_lines[np.flatnonzero(wrong)[0]])
        raise InputError(f"{src}: {path}:{line}", "fields", f"has {commas[line - 1] + 1} comma-separated fields, expected "
                         f"{len(columns)} ({','.join(columns)})")
    try:
        cells = pd.read_csv(io.BytesIO(data), header=0 if has_header else None, names=list(columns), dtype=str,
                            keep_default_na=False, skip_blank_lines=True, index_col=False, quoting=csv.QUOTE_NONE,
                            usecols=None if usecols is None else list(usecols))
    except UnicodeDecodeError:
        raise _not_text(src, path) from None
    return CsvTable(cells=cells, lines=data_lines.astype(np.int64), path=path, src=src)


def _line_layout(data: bytes) -> tuple[np.ndarray, np.ndarray]:
    """Start offset of every line, and its comma count (-1 for a blank line)."""
    raw = np.frombuffer(data, dtype=np.uint8)
    ends = np.flatnonzero(raw == ord("\n"))
    if len(raw) and raw[-1] != ord("\n"):
        ends = np.append(ends, len(raw))
    starts = np.concatenate(([0], ends[:-1] + 1)).astype(np.int64) if len(ends) else np.zeros(0, np.int64)
    comma_at = np.flatnonzero(raw == ord(","))
    commas = np.searchsorted(comma_at, ends) - np.searchsorted(comma_at, starts)
    length = ends - starts
    carriage = (length > 0) & (raw[np.maximum(ends - 1, 0)] == ord("\r"))
    blank = (length - carriage) == 0
    return starts, np.where(blank, -1, commas)


def _line_text(data: bytes, starts: np.ndarray, line: int, src: str, path: Path) -> str:
    end = data.find(b"\n", int(starts[line - 1]))
    try:
        return data[int(starts[line - 1]): len(data) if end < 0 else end].decode("utf-8").rstrip("\r")
    except UnicodeDecodeError:
        raise _not_text(src, path) from None


def _not_text(src: str, path: Path) -> InputError:
    return InputError(src, "path", f"{path} is not a text file (expected comma-separated lines)")
