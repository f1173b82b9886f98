"""Trace files shipped inside the package (fairsim/data/<folder>/traces), found by bare name."""

from __future__ import annotations

from importlib import resources
from pathlib import Path


def _traces(folder: str) -> Path:
    return Path(str(resources.files("fairsim.data").joinpath(folder, "traces")))


def shipped_file(folder: str, name: str, suffix: str) -> Path | None:
    """The shipped trace ``name`` (with or without ``suffix``), or None when ``name`` is a path or unknown."""
    path = _traces(folder) / (name if name.endswith(suffix) else f"{name}{suffix}")
    return path if "/" not in name and path.is_file() else None


def shipped_names(folder: str, suffix: str) -> list[str]:
    return sorted(p.stem for p in _traces(folder).glob(f"*{suffix}"))
