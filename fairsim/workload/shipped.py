"""Trace files shipped inside the package (fairsim/data/<folder>/traces), found by bare name."""

from __future__ import annotations

from importlib import resources
from pathlib import Path, PurePosixPath


def _traces(folder: str) -> Path:
    return Path(str(resources.files("fairsim.data").joinpath(folder, "traces")))


def shipped_file(folder: str, name: str, suffix: str) -> Path | None:
    """The shipped trace ``name`` (with or without ``suffix``), or None when it is not one. A name
    may lead through subfolders of the traces folder (``msr/seed=0/ed69ec``) but not out of it."""
    rel = PurePosixPath(name if name.endswith(suffix) else f"{name}{suffix}")
    if rel.is_absolute() or ".." in rel.parts or "\\" in name:
        return None
    path = _traces(folder).joinpath(*rel.parts)
    return path if path.is_file() else None


def shipped_names(folder: str, suffix: str) -> list[str]:
    return sorted(p.stem for p in _traces(folder).glob(f"*{suffix}"))
