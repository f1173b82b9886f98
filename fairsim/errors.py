"""One exception type for bad input, so entry points can print one line and exit non-zero, and
the declared option rules (Bool, Number, Integer, OneOf) that config sections check their keys with."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

# Every character str.splitlines() breaks a line at, written out: a message quotes text from a
# user's file (a cell, a header name), and it must stay one line whatever that text holds.
_LINE_BREAKS = str.maketrans({c: repr(c)[1:-1] for c in "\n\r\v\f\x1c\x1d\x1e\x85\u2028\u2029"})


LONGEST = 4000  # characters of a message's part, at most: a quoted 1 MB cell must not make a 1 MB line


def one_line(text: object) -> str:
    text = str(text).translate(_LINE_BREAKS)
    if len(text) > LONGEST:  # cut to LONGEST in all, so that a cut text is not cut again
        tail = f"... ({len(text)} characters)"
        text = text[: LONGEST - len(tail)] + tail
    return text


class InputError(ValueError):
    """Bad user input (config, trace, catalog). The message names the source, field and allowed
    values, on one line (line breaks in quoted text are written as \\n), each part cut at
    ``LONGEST`` characters."""

    def __init__(self, source: str, field: str, problem: str):
        self.source = one_line(source)
        self.field = one_line(field)
        self.problem = one_line(problem)
        super().__init__(f"{self.source}: {self.field}: {self.problem}")

    def __reduce__(self):  # picklable, so a worker process (refcheck, joblib) hands it back whole
        return (type(self), (self.source, self.field, self.problem))

    @classmethod
    def from_line(cls, line: str) -> InputError:
        """The error a one-line report states (``[error: ]<source>: <field>: <problem>``, as another
        fairsim process prints it): its message is the line's."""
        text = line.strip().removeprefix("error: ")
        source, field, problem = (
            (text.split(": ", 2) + ["", ""])[:3] if text.count(": ") >= 2 else ("fairsim", "error", text)
        )
        return cls(source, field, problem)


def require(condition: bool, source: str, field: str, problem: str) -> None:
    if not condition:
        raise InputError(source, field, problem)


# ---- declared option rules ---------------------------------------------------------------------
# One small vocabulary for "this key must be ...": a config section declares {key: rule} and
# check_values() refuses the first bad value with one line naming the source, the key and the rule.
# A rule's `what` is the rule in words ("a number of seconds in [1, 86400]"); without it the words
# are generated from the bounds ("a number > 0", "an integer >= 1 and <= 8").


def is_number(value: Any) -> bool:
    """A finite int or float, not a bool (YAML's true would otherwise pass as 1)."""
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


@dataclass(frozen=True)
class Bool:
    """true or false: a switch given as text ("maybe", "yes") would be truthy and silently change the run."""

    def check(self, value: Any, source: str, key: str) -> Any:
        require(isinstance(value, bool), source, key, f"must be true or false, got {value!r}")
        return value


@dataclass(frozen=True)
class Number:
    """A finite number within bounds; integer: a whole number (5.0 counts, returned as 5)."""

    lo: float | None = None
    hi: float | None = None
    lo_open: bool = False
    hi_open: bool = False
    integer: bool = False
    what: str = ""

    def words(self) -> str:
        if self.what:
            return self.what
        low = "" if self.lo is None else f" {'>' if self.lo_open else '>='} {self.lo:g}"
        high = "" if self.hi is None else f"{' and' if low else ''} {'<' if self.hi_open else '<='} {self.hi:g}"
        return f"{'an integer' if self.integer else 'a number'}{low}{high}"

    def ok(self, value: Any) -> bool:
        if not is_number(value) or (self.integer and float(value) != int(value)):
            return False
        if self.lo is not None and not (value > self.lo if self.lo_open else value >= self.lo):
            return False
        return self.hi is None or (value < self.hi if self.hi_open else value <= self.hi)

    def check(self, value: Any, source: str, key: str) -> Any:
        require(self.ok(value), source, key, f"must be {self.words()}, got {value!r}")
        return self.convert(value)

    def convert(self, value: Any) -> Any:
        return int(value) if self.integer else float(value)


@dataclass(frozen=True)
class Integer(Number):
    """An int (not a whole float, not a bool) within bounds, returned as given."""

    def ok(self, value: Any) -> bool:
        return isinstance(value, int) and not isinstance(value, bool) and Number.ok(self, value)

    def convert(self, value: Any) -> Any:
        return value


@dataclass(frozen=True)
class OneOf:
    """One of a few names. wording "must": "must be one of a, b, got 'x'"; "is_not": "'x' is not one of a, b"."""

    allowed: tuple[str, ...]
    wording: str = "must"

    def check(self, value: Any, source: str, key: str) -> Any:
        listed = ", ".join(self.allowed)
        problem = (
            f"{value!r} is not one of {listed}"
            if self.wording == "is_not"
            else f"must be one of {listed}, got {value!r}"
        )
        require(isinstance(value, str) and value in self.allowed, source, key, problem)
        return value


@dataclass(frozen=True)
class Ascending:
    """A list of strictly increasing finite numbers, each > lo (thresholds, class edges); returned
    as a tuple of floats. ``what`` names them: "increasing GPU-second values > 0"."""

    what: str
    lo: float | None = None

    def check(self, value: Any, source: str, key: str) -> tuple[float, ...]:
        ok = isinstance(value, (list, tuple)) and all(is_number(v) and (self.lo is None or v > self.lo) for v in value)
        ok = ok and all(a < b for a, b in zip(value, value[1:]))
        require(ok, source, key, f"must be a list of {self.what}, got {value!r}")
        return tuple(float(v) for v in value)


Rule = Bool | Number | OneOf | Ascending  # Integer is a Number


def check_keys(
    cfg: Mapping[str, Any], allowed: Iterable[str], source: str, *, noun: str = "option", prefix: str = ""
) -> None:
    """Refuse a key not in ``allowed``: "<prefix><key>: unknown <noun> (allowed: <sorted>)"."""
    allowed = tuple(allowed)
    for key in cfg:
        require(key in allowed, source, f"{prefix}{key}", f"unknown {noun} (allowed: {', '.join(sorted(allowed))})")


def check_values(cfg: Mapping[str, Any], schema: Mapping[str, Rule], source: str, *, prefix: str = "") -> None:
    """Check every key of ``schema`` that ``cfg`` sets (in the schema's order: the first bad one is reported)."""
    for key, rule in schema.items():
        if key in cfg:
            rule.check(cfg[key], source, f"{prefix}{key}")
