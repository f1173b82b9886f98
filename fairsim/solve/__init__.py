"""The optimisation library: the gang assignment program and its solvers (HiGHS), K(t), the gang
exchanges, Themis' auction program and Gavel's max-min LPs. It imports nothing of fairsim but
``fairsim.errors``, so policies and tests use it as a plain library."""
