"""The tree keeps the style pyproject.toml's [tool.ruff] sets: formatted as ruff formats it, and
free of the lint rules it selects (``make format`` fixes what can be fixed)."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def ruff(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "ruff", *args], cwd=ROOT, capture_output=True, text=True)


def test_the_tree_is_formatted():
    out = ruff("format", "--check", ".")
    assert out.returncode == 0, f"run make format:\n{out.stdout}{out.stderr}"


def test_the_tree_passes_the_lint_rules():
    out = ruff("check", "--output-format", "concise", ".")
    assert out.returncode == 0, f"run make format, then fix what it could not:\n{out.stdout}{out.stderr}"
