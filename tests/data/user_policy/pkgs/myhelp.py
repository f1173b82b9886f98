"""The helper module of tests/data/user_policy/pkgs/mypol.py."""

import numpy as np


def waiting(running: np.ndarray) -> np.ndarray:
    """The rows of the jobs not running, in arrival order."""
    return np.flatnonzero(~running)
