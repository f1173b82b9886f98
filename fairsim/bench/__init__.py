"""Benchmarks: ``python -m fairsim.bench <name>`` runs ``fairsim.bench.<name>.main(argv)``."""
