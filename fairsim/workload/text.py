"""The text of a workload file, read as UTF-8: a byte that is not UTF-8 is refused naming its line
and column, so a stray Latin-1 character in a million-line log is found in one step. A leading
byte-order mark (as spreadsheet programs write) is dropped."""

from __future__ import annotations

from collections.abc import Callable

from fairsim.errors import InputError

BOM = b"\xef\xbb\xbf"


def decoded(data: bytes, where: Callable[[int], str], what: str) -> str:
    """``data`` as text; ``where(line)`` names a 1-based line in errors, ``what`` says what the
    file should hold ("comma-separated lines")."""
    skip = len(BOM) if data.startswith(BOM) else 0
    if data.isascii():  # the common case, checked without decoding first
        return data.decode("ascii")
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
