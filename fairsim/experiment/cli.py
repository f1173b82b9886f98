"""Command-line checks made before Hydra starts, so that a mistyped config-group choice ends
with one line naming the group and its options instead of Hydra's multi-line report."""

from __future__ import annotations

from pathlib import Path

from fairsim.errors import InputError


def group_options(conf_dir: Path, group: str) -> list[str]:
    return sorted(p.stem for p in (conf_dir / group).glob("*.yaml"))


def check_group_choices(argv: list[str], conf_dir: Path) -> None:
    """Raise InputError for ``group=choice`` overrides (comma sweeps included) that name no preset."""
    for arg in argv:
        if "=" not in arg or arg.startswith("-"):
            continue
        key, value = arg.split("=", 1)
        group = key.lstrip("+~")
        if "/" in group or "." in group or not (conf_dir / group).is_dir() or "(" in value:
            continue
        options = group_options(conf_dir, group)
        for choice in (v.strip() for v in value.split(",")):
            if choice and choice not in options:
                raise InputError("command line", group, f"no preset {choice!r} in conf/{group}/ (allowed: {', '.join(options)})")
