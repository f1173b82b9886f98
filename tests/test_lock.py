"""requirements.lock (`make lock`), which `make setup` installs: one exact version and its sha256
hashes for each package, within pyproject.toml's ranges, and the repository's .venv as it says."""

from __future__ import annotations

import re
import sys
import tomllib
from importlib import metadata
from pathlib import Path

import pytest
from conftest import ROOT
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

LOCK = ROOT / "requirements.lock"
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
HASH = re.compile(r"--hash=sha256:[0-9a-f]{64}")
# the extras `make lock` resolves (its uv command line in the Makefile, the one place they are named)
LOCKED_EXTRAS = sorted(set(re.findall(r"--extra (\S+)", (ROOT / "Makefile").read_text())))


def read_lock(text: str) -> dict[str, tuple[Requirement, list[str]]]:
    """Each entry of a requirements file: its requirement and its hash options, by canonical name."""
    out: dict[str, tuple[Requirement, list[str]]] = {}
    for entry in re.sub(r"\\\n", " ", text).splitlines():  # an entry and its hashes: one line
        entry = entry.strip()
        if not entry or entry.startswith("#"):
            continue
        spec, *options = entry.split(" --")
        req = Requirement(spec.strip())
        name = canonicalize_name(req.name)
        assert name not in out, f"{name} twice in the lock"
        out[name] = (req, ["--" + o.strip() for o in options])
    return out


def pinned(req: Requirement) -> Version | None:
    """The version of an `name==version` requirement with nothing else; None for anything else."""
    specs = list(req.specifier)
    if req.url or req.marker or req.extras or len(specs) != 1 or specs[0].operator != "==":
        return None
    return Version(specs[0].version)


def top_requirements() -> list[Requirement]:
    """What the lock is made from: runtime dependencies, the extras `make lock` names, the build-system requires."""
    project = PYPROJECT["project"]
    extras = [r for extra in LOCKED_EXTRAS for r in project["optional-dependencies"][extra]]
    return [Requirement(r) for r in (*project["dependencies"], *extras, *PYPROJECT["build-system"]["requires"])]


def test_the_lock_covers_the_extras_make_test_needs():
    """dev (the test tools), docs (tests/test_docs.py), dask and slurm (tests/test_launchers.py)."""
    assert {"dev", "docs", "dask", "slurm"} <= set(LOCKED_EXTRAS)


def test_read_lock_reads_entries_and_hashes():
    text = (
        "# header\nnumpy==2.4.6 \\\n    --hash=sha256:"
        + "a" * 64
        + " \\\n    --hash=sha256:"
        + "b" * 64
        + "\n    # via fairsim (pyproject.toml)\nsix>=1\n"
    )
    lock = read_lock(text)
    assert pinned(lock["numpy"][0]) == Version("2.4.6") and len(lock["numpy"][1]) == 2
    assert pinned(lock["six"][0]) is None and lock["six"][1] == []


def test_every_entry_is_one_exact_version_with_hashes():
    lock = read_lock(LOCK.read_text())
    assert "fairsim" not in lock  # the project itself is installed from the work tree
    for name, (req, options) in lock.items():
        assert pinned(req) is not None, f"{req} in the lock is not name==version"
        assert options and all(HASH.fullmatch(o) for o in options), f"{name}: {options}"


def test_pyproject_dependencies_are_locked_within_their_ranges():
    lock = read_lock(LOCK.read_text())
    for req in top_requirements():
        name = canonicalize_name(req.name)
        assert name in lock, f"{req} (pyproject.toml) is not in the lock: make lock"
        version = pinned(lock[name][0])
        assert req.specifier.contains(version, prereleases=True), (
            f"the lock's {name}=={version} is outside pyproject.toml's {req}: make lock"
        )


def test_the_venv_has_the_locked_versions_and_nothing_is_missing():
    """In the .venv that `make setup` builds (CI's), every locked package is installed at its
    locked version, and the lock holds every package that those requirements need, at a version
    they accept (the install uses --no-deps, so nothing else would bring one in)."""
    if Path(sys.prefix).resolve() != (ROOT / ".venv").resolve():
        pytest.skip(f"not the repository's .venv (make setup installs the lock there): {sys.prefix}")
    lock = {name: pinned(req) for name, (req, _) in read_lock(LOCK.read_text()).items()}
    installed = {canonicalize_name(d.metadata["Name"]): Version(d.version) for d in metadata.distributions()}
    for name, version in lock.items():
        assert installed.get(name) == version, f"{name} {installed.get(name, 'not')} installed, {version} locked"
    needed, seen = {"pip"}, set()  # pip: the lock's installer, needed by no package
    todo = [(r, "pyproject.toml") for r in top_requirements()]
    while todo:
        req, by = todo.pop()
        name = canonicalize_name(req.name)
        assert name in lock, f"{by} needs {req}, which is not in the lock: make lock"
        assert req.specifier.contains(lock[name], prereleases=True), f"{by} needs {req}, the lock has {lock[name]}"
        needed.add(name)
        if (name, frozenset(req.extras)) in seen:
            continue
        seen.add((name, frozenset(req.extras)))
        for dep in map(Requirement, metadata.requires(name) or []):
            if dep.marker is None or any(dep.marker.evaluate({"extra": e}) for e in ("", *req.extras)):
                todo.append((dep, name))
    unneeded = sorted(set(lock) - needed)
    assert not unneeded, f"in the lock but needed by nothing: {unneeded}; make lock"
