"""fairsim: a reproducible harness for scheduling DL training jobs on heterogeneous GPU clusters.

As a library (docs/api.md)::

    import fairsim
    r = fairsim.run("policy=themis", "num_jobs=100", track=False)
    r.jobs, r.rounds, r.tenants, r.summary, r.folder, r.provenance
    s = fairsim.sweep("policy=ours,themis", "load=0.5,0.8", sweep_name="mine")
    s.results, s.jobs
    fairsim.load("results/runs/...")     # any run or sweep folder, read back

Bad input raises ``fairsim.InputError`` (``fairsim.errors.InputError``). The names below are
imported on first use, so ``import fairsim`` stays cheap.
"""

from __future__ import annotations

from typing import Any

__version__ = "0.1.0"

# public name -> the module that defines it, imported on first access (PEP 562)
_LAZY = {
    "run": "fairsim.api",
    "sweep": "fairsim.api",
    "load": "fairsim.api",
    "Run": "fairsim.api",
    "Sweep": "fairsim.api",
    "SweepError": "fairsim.api",
    "InputError": "fairsim.errors",
}
__all__ = ["__version__", *_LAZY]


def __getattr__(name: str) -> Any:
    if name not in _LAZY:
        raise AttributeError(f"module 'fairsim' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(_LAZY[name]), name)
    globals()[name] = value  # found once; later lookups do not come here
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY})
