"""Only for ``import fairsim`` from the folder that holds this repository (a script or notebook
beside the clone): Python then imports this folder, the repository, as ``fairsim``, before any
installed fairsim. This file hands the import on to the real package: an installed fairsim if
there is one, else this repository's ``fairsim/`` (with the repository on sys.path, as
``pip install -e .`` would put it). It plays no part anywhere else.
"""

import importlib
import os
import sys


def _hand_over() -> None:
    repository = os.path.dirname(os.path.abspath(__file__))
    beside = {os.path.dirname(repository), ""}  # sys.path entries that found this folder as `fairsim`
    path = sys.path[:]
    del sys.modules[__name__]
    try:
        sys.path[:] = [p for p in path if (os.path.abspath(p) if p else "") not in beside]
        try:
            importlib.import_module(__name__)  # an installed fairsim
        except ImportError:
            path.insert(0, repository)  # none: this repository's
            sys.path[:] = path
            importlib.import_module(__name__)
    finally:
        sys.path[:] = path


if __name__ == "fairsim":  # pytest imports this folder too, as a package named after the folder: nothing to do then
    _hand_over()
