"""fairsim: a reproducible harness for scheduling DL training jobs on heterogeneous GPU clusters."""

__version__ = "0.1.0"
