"""Benchmarks: ``python -m fairsim.bench <name>`` runs ``fairsim.bench.<name>.main(argv)``."""

import os


def load_average() -> str:
    """The machine's 1, 5 and 15 minute load averages, which every timing printed beside it needs."""
    return " ".join(f"{x:.2f}" for x in os.getloadavg())
