"""Shared test plumbing: the repository root, and ``python run.py`` in a subprocess.

Tests import the root as ``from conftest import ROOT`` (pytest puts this folder on sys.path) and
ask for the ``run_py`` fixture to run the command line.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections import Counter
from collections.abc import Mapping
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]  # the repository root: run.py, conf/, experiments/


def run_py_command(*args: str) -> list[str]:
    """``python run.py *args`` with this interpreter, as a command line (for Popen as well)."""
    return [sys.executable, str(ROOT / "run.py"), *args]


def _run_py(
    *args: str, timeout: float | None = 300, env: Mapping[str, str | None] | None = None
) -> subprocess.CompletedProcess:
    """Run ``python run.py *args`` from the repository root; stdout and stderr captured as text.

    The subprocess inherits this process's environment, PYTHONPATH included (so it imports the
    same fairsim); ``env`` sets variables over it, and a value of None removes that variable.
    The exit status is not checked: the tests assert on it.
    """
    full = None
    if env is not None:
        full = {k: v for k, v in os.environ.items() if k not in env}
        full.update({k: v for k, v in env.items() if v is not None})
    return subprocess.run(run_py_command(*args), capture_output=True, text=True, cwd=ROOT, timeout=timeout, env=full)


@pytest.fixture(scope="session")
def run_py():
    """``run_py(*args, timeout=300, env=None) -> CompletedProcess``: ``python run.py *args``.

    Session-scoped (it holds no state) so that module-scoped fixtures can use it too.
    """
    return _run_py


def sweep_inputs(tmp_path, tables):
    """Figure inputs from hand-made cell tables: each ``{role: results.parquet rows}`` written to
    its own sweep folder under ``tmp_path`` and loaded as the figures load a sweep."""
    from fairsim.figures.data import Inputs, SweepData

    sweeps = {}
    for role, table in tables.items():
        folder = tmp_path / role
        folder.mkdir()
        table.to_parquet(folder / "results.parquet", index=False)
        sweeps[role] = SweepData.load(folder)
    return Inputs(sweeps, {})


def pytest_collection_modifyitems(config, items):
    """Files with the most tests marked slow first. Under ``make test``'s ``--dist loadfile`` a
    file is one unit of work, handed out in collection order: long files started last would
    leave one core idle at the end (longest first). Files stay whole, and so does each one's order."""
    slow = Counter(item.path for item in items if item.get_closest_marker("slow"))
    first_seen = {path: i for i, path in enumerate(dict.fromkeys(item.path for item in items))}
    items.sort(key=lambda item: (-slow[item.path], first_seen[item.path]))
