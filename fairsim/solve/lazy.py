"""scipy.optimize's solvers, imported on their first call: importing scipy.optimize is about a
third of a short run's start-up, and most runs never call them (HiGHS is reached through
highspy). Modules take these names as they took scipy's, so a test can still replace a module's
``milp`` or ``linprog``."""

from __future__ import annotations

from typing import Any


def milp(*args: Any, **kwargs: Any) -> Any:
    from scipy.optimize import milp as scipy_milp

    return scipy_milp(*args, **kwargs)


def linprog(*args: Any, **kwargs: Any) -> Any:
    from scipy.optimize import linprog as scipy_linprog

    return scipy_linprog(*args, **kwargs)
