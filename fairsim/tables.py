"""Text tables read as text cells, each row knowing its line in the file: every table-like input
of fairsim (job logs, traces, node lists, catalogs, capacity traces, failure logs) is read here,
so they share one set of checks and one wording of their errors.

The text is UTF-8: a byte that is not is refused naming its line and column, so a stray Latin-1
character in a million-line log is found in one step (a UTF-16 file is named as such); a leading
byte-order mark (as spreadsheet programs write) is dropped.

The published logs are plain CSV without quoting (Helios' cluster_log.csv, the PAI tables), often
of a million rows: the field count of every line is checked on the raw bytes before pandas
parses them, so a truncated or padded row is refused naming its line instead of being read as
empty cells. An operator's own log may quote its cells (``quoted=True``: a quoted cell may hold
the separator and line breaks), and is read row by row with the csv module, each row knowing the
line it starts on. Cells are separated by commas, or by another one-character ``sep`` (``|``:
Slurm's ``sacct --parsable2``, whose cells are never quoted). Either way blank lines are skipped,
a cell may be of any length, and a header that names a column twice is refused (which of the two
would be read is anyone's guess). An error quotes at most ``SHOWN`` characters of a cell.
"""

from __future__ import annotations

import csv
import io
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from fairsim.errors import InputError, require
from fairsim.files import note_input

BOM = b"\xef\xbb\xbf"
_UTF16 = (b"\xff\xfe", b"\xfe\xff")
SHOWN = 80  # characters of a cell an error quotes
SEPARATORS = {",": "comma", "|": "pipe", "\t": "tab", ";": "semicolon"}


def shown(value: object) -> str:
    """``repr(value)``, cut to ``SHOWN`` characters with the length said: a 1 MB bad cell makes a
    short error line."""
    text = repr(value)
    if len(text) <= SHOWN:
        return text
    length = len(value) if isinstance(value, (str, bytes)) else len(text)
    return f"{text[:SHOWN]}... ({length} characters)"


def decoded(data: bytes, where: Callable[[int], str], what: str) -> str:
    """``data`` as text; ``where(line)`` names a 1-based line in errors, ``what`` says what the
    file should hold ("comma-separated lines")."""
    skip = len(BOM) if data.startswith(BOM) else 0
    if data.isascii():  # the common case, checked without decoding first
        return data.decode("ascii")
    if data.startswith(_UTF16):
        raise InputError(where(1), "file", f"is UTF-16 text; save it as UTF-8 (expected {what})")
    try:
        return data[skip:].decode("utf-8")
    except UnicodeDecodeError as exc:
        at = skip + exc.start
        line = data.count(b"\n", 0, at) + 1
        column = at - data.rfind(b"\n", 0, at)
        raise InputError(
            where(line),
            "file",
            f"is not a text file (byte 0x{data[at]:02x} at column {column} is not UTF-8; expected {what})",
        ) from None


def _what(sep: str) -> str:
    return f"{SEPARATORS.get(sep, repr(sep))}-separated lines"


@dataclass(frozen=True, eq=False)
class CsvTable:
    cells: pd.DataFrame  # str cells ("" when empty), one row a data line
    lines: np.ndarray  # int64: the file line (1-based) of each row (its first line, when a quoted cell spans several)
    path: Path
    src: str | None

    def where(self, row: int) -> str:
        """The error source of a row: "<workload>: <file>:<line>"."""
        return _place(self.src, self.path, int(self.lines[row]))


def _place(src: str | None, path: Path, line: int) -> str:
    return f"{src}: {path}:{line}" if src else f"{path}:{line}"


def read_csv_table(
    path: Path,
    src: str | None,
    *,
    columns: tuple[str, ...] | None = None,
    required: tuple[str, ...] = (),
    header_first: str | None = None,
    usecols: tuple[str, ...] | None = None,
    hint: str = "",
    quoted: bool = False,
    sep: str = ",",
) -> CsvTable:
    """``columns`` given: a headerless table with these columns, in order (a first line that
    starts with ``header_first`` is taken as a header line and skipped). ``columns`` None: the
    first line is the header, and it must name every column of ``required``. ``usecols``: the
    columns to keep (all by default; every line's field count is checked either way). ``hint``
    follows a missing column's error (e.g. which variant of the file has it). ``quoted``: cells
    may be quoted (an operator's own CSV); otherwise a quote is an ordinary character. ``sep``:
    the one-character cell separator. ``src`` (the workload) starts every error's source; None:
    the file alone."""
    require(path.is_file(), src or str(path), "path", f"no such file: {path}")
    note_input(path)
    data = path.read_bytes()
    text = decoded(data, lambda line: _place(src, path, line), _what(sep))
    read = _quoted_rows if quoted else _plain_rows
    return read(
        data[len(BOM) :] if data.startswith(BOM) else data,
        text,
        path,
        src,
        columns,
        required,
        header_first,
        usecols,
        hint,
        sep,
    )


def _plain_rows(data, text, path, src, columns, required, header_first, usecols, hint, sep) -> CsvTable:
    starts, seps = _line_layout(data, sep)
    lines = np.flatnonzero(seps >= 0) + 1  # non-blank lines, 1-based
    require(len(lines) > 0, src or str(path), "path", f"{path} is empty")
    first = _line_text(data, starts, lines[0])
    has_header = columns is None or (header_first is not None and first.split(sep)[0].strip() == header_first)
    if columns is None:
        columns = _header(first.split(sep), _place(src, path, int(lines[0])), required, hint)
    data_lines = lines[1:] if has_header else lines
    wrong = seps[data_lines - 1] != len(columns) - 1
    if wrong.any():
        line = int(data_lines[np.flatnonzero(wrong)[0]])
        raise _ragged(_place(src, path, line), seps[line - 1] + 1, columns, sep)
    cells = pd.read_csv(
        io.BytesIO(data),
        sep=sep,
        header=0 if has_header else None,
        names=list(columns),
        dtype=str,
        keep_default_na=False,
        skip_blank_lines=True,
        index_col=False,
        quoting=csv.QUOTE_NONE,
        usecols=None if usecols is None else list(usecols),
        encoding="utf-8",
    )
    return CsvTable(cells=cells, lines=data_lines.astype(np.int64), path=path, src=src)


def _quoted_rows(data, text, path, src, columns, required, header_first, usecols, hint, sep) -> CsvTable:
    rows, lines = _parsed(text, lambda line: _place(src, path, line), sep)
    require(len(rows) > 0, src or str(path), "path", f"{path} is empty")
    has_header = columns is None or (header_first is not None and rows[0][0].strip() == header_first)
    if columns is None:
        columns = _header(rows[0], _place(src, path, lines[0]), required, hint)
    if has_header:
        rows, lines = rows[1:], lines[1:]
    for fields, line in zip(rows, lines):
        if len(fields) != len(columns):
            raise _ragged(_place(src, path, line), len(fields), columns, sep)
    cells = pd.DataFrame(rows, columns=list(columns), dtype=object)
    if usecols is not None:
        cells = cells[list(usecols)]
    return CsvTable(cells=cells.astype(str), lines=np.asarray(lines, dtype=np.int64), path=path, src=src)


def _parsed(text: str, where, sep: str = ",") -> tuple[list[list[str]], list[int]]:
    """The non-blank rows and the line each starts on (a cell may be as long as the text)."""
    reader = csv.reader(io.StringIO(text, newline=""), strict=True, delimiter=sep)
    rows, lines = [], []
    start = 1
    limit = csv.field_size_limit()
    csv.field_size_limit(max(limit, len(text) + 1))
    try:
        for fields in reader:
            if fields:  # a blank line reads as no fields
                rows.append(fields)
                lines.append(start)
            start = reader.line_num + 1
    except csv.Error as exc:
        raise InputError(
            where(start),
            "fields",
            f"is not valid CSV ({exc}; a quoted cell must end with a quote before the next {SEPARATORS.get(sep, repr(sep))} or line end)",
        ) from None
    finally:
        csv.field_size_limit(limit)
    return rows, lines


def _header(names: list[str], where: str, required: tuple[str, ...], hint: str) -> tuple[str, ...]:
    columns = tuple(name.strip() for name in names)
    twice = sorted(name for name, n in Counter(columns).items() if n > 1)
    require(
        not twice,
        where,
        "header",
        f"names the column(s) {', '.join(map(shown, twice))} more than once (each column once)",
    )
    missing = [c for c in required if c not in columns]
    require(
        not missing,
        where,
        "header",
        f"misses the column(s) {', '.join(missing)} (needed: {', '.join(required)})" + (f"; {hint}" if hint else ""),
    )
    return columns


def _ragged(where: str, fields: int, columns: tuple[str, ...], sep: str = ",") -> InputError:
    return InputError(
        where,
        "fields",
        f"has {fields} {SEPARATORS.get(sep, repr(sep))}-separated fields, expected {len(columns)} ({sep.join(columns)})",
    )


def _line_layout(data: bytes, sep: str = ",") -> tuple[np.ndarray, np.ndarray]:
    """Start offset of every line, and its separator count (-1 for a blank line)."""
    raw = np.frombuffer(data, dtype=np.uint8)
    ends = np.flatnonzero(raw == ord("\n"))
    if len(raw) and raw[-1] != ord("\n"):
        ends = np.append(ends, len(raw))
    starts = np.concatenate(([0], ends[:-1] + 1)).astype(np.int64) if len(ends) else np.zeros(0, np.int64)
    sep_at = np.flatnonzero(raw == ord(sep))
    seps = np.searchsorted(sep_at, ends) - np.searchsorted(sep_at, starts)
    length = ends - starts
    carriage = (length > 0) & (raw[np.maximum(ends - 1, 0)] == ord("\r"))
    blank = (length - carriage) == 0
    return starts, np.where(blank, -1, seps)


def _line_text(data: bytes, starts: np.ndarray, line: int) -> str:
    end = data.find(b"\n", int(starts[line - 1]))
    return data[int(starts[line - 1]) : len(data) if end < 0 else end].decode("utf-8").rstrip("\r")
