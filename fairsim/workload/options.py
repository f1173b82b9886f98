"""Checked reads of workload config options: each failure names the option and the rule (the
rules themselves are fairsim.errors': Number, OneOf, check_keys)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from fairsim.errors import InputError, Number, OneOf, check_keys, require

__all__ = ["check_keys", "choice", "number", "window", "worker_spec"]


def number(
    cfg: Mapping[str, Any],
    key: str,
    src: str,
    default: float | None = None,
    *,
    lo: float | None = None,
    hi: float | None = None,
    lo_open: bool = False,
    integer: bool = False,
    optional: bool = False,
) -> Any:
    value = cfg.get(key, default)
    if value is None:
        require(optional, src, key, "is required")
        return None
    return Number(lo=lo, hi=hi, lo_open=lo_open, integer=integer).check(value, src, key)


def worker_spec(value: Any, src: str, key: str = "workers") -> int | dict[int, float] | None:
    """None (the source distribution), one worker count, or a mix {count: probability}."""
    if value is None:
        return None
    if isinstance(value, Mapping):
        require(len(value) > 0, src, key, "a worker mix must list at least one count")
        mix = {}
        for raw, p in value.items():
            try:
                count = int(raw)
            except (TypeError, ValueError):
                raise InputError(src, f"{key}.{raw}", "worker counts must be integers >= 1") from None
            require(
                count >= 1 and str(raw).strip() == str(count),
                src,
                f"{key}.{raw}",
                "worker counts must be integers >= 1",
            )
            mix[count] = number({"p": p}, "p", src, lo=0.0)
        total = sum(mix.values())
        require(abs(total - 1.0) <= 1e-6, src, key, f"probabilities must sum to 1, got {total:g}")
        return dict(sorted(mix.items()))
    return number({key: value}, key, src, lo=1, integer=True)


def window(value: Any, src: str, key: str = "window") -> tuple[int, int] | None:
    if value is None:
        return None
    ok = (
        isinstance(value, (list, tuple))
        and len(value) == 2
        and all(isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in value)
        and value[0] < value[1]
    )
    require(ok, src, key, f"must be [first_job_id, end_job_id) with 0 <= first < end, got {value!r}")
    return int(value[0]), int(value[1])


def choice(cfg: Mapping[str, Any], key: str, src: str, default: str, allowed: tuple[str, ...]) -> str:
    return OneOf(allowed).check(cfg.get(key, default), src, key)
