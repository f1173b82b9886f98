"""A trace's own GPU names -> datasheet types, for the readers whose node lists build clusters
(openb, PAI 2020): the format's known names, its undisclosed ones (no type until the user maps
them), and the user's ``gpu_map`` over both. A name in none of them may be a datasheet name
itself (T4, P100, any case)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from fairsim.cluster import canonical_gpu_name, gpu_specs
from fairsim.errors import InputError, require


def name_table(
    known: Mapping[str, str], undisclosed: Iterable[str], gpu_map: Mapping[str, Any] | None, src: str, example: str
) -> dict[str, str | None]:
    """Raw name -> datasheet type (None: not mapped yet); ``example`` shows a mapping in errors."""
    require(
        gpu_map is None or isinstance(gpu_map, Mapping),
        src,
        "gpu_map",
        f"must map the trace's GPU names to datasheet types, e.g. {example}, got {gpu_map!r}",
    )
    table: dict[str, str | None] = {**known, **{name: None for name in undisclosed}}
    for raw, value in (gpu_map or {}).items():
        table[str(raw)] = None if value is None else canonical_gpu_name(value, src, f"gpu_map.{raw}")
    return table


def datasheet_type(raw: str, table: Mapping[str, str | None]) -> str | None:
    if raw in table:
        return table[raw]
    spec = gpu_specs().get(raw.lower())
    return None if spec is None else spec.name


def datasheet_types(
    raw_names: Iterable[str], table: Mapping[str, str | None], src: str, trace: str, why: str = ""
) -> dict[str, str]:
    """{raw name: datasheet type} for every name; the names without one refused in one line
    (``why`` says why the trace leaves them unnamed)."""
    names = sorted(set(raw_names))
    unmapped = [n for n in names if datasheet_type(n, table) is None]
    if unmapped:
        allowed = ", ".join(spec.name for spec in gpu_specs().values())
        example = ", ".join(f"{n}: <type>" for n in unmapped)
        raise InputError(
            src,
            "gpu_map",
            f"no datasheet type for {trace}'s GPU name(s) {', '.join(unmapped)}"
            f"{f' ({why})' if why else ''}: set gpu_map: {{{example}}} with types among {allowed}",
        )
    return {n: datasheet_type(n, table) for n in names}
