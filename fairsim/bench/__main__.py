"""Dispatch ``python -m fairsim.bench <name> [args]`` to the module ``fairsim.bench.<name>``.

A benchmark is one module in this package with a ``main(argv: list[str]) -> int``; adding one
needs no change here.
"""

from __future__ import annotations

import importlib
import pkgutil
import sys

import fairsim.bench as package


def available() -> list[str]:
    return sorted(m.name for m in pkgutil.iter_modules(package.__path__) if not m.name.startswith("_"))


def main(argv: list[str]) -> int:
    names = available()
    if not argv or argv[0] not in names:
        print(f"usage: python -m fairsim.bench {{{','.join(names)}}} [options]", file=sys.stderr)
        return 2
    return int(importlib.import_module(f"fairsim.bench.{argv[0]}").main(argv[1:]) or 0)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
