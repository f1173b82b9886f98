"""What-if capacity planning: a workload's policies on candidate clusters, one sweep, one table
(python -m fairsim.whatif; fairsim/whatif/cli.py)."""
