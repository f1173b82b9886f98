"""fairsim's sweeper for Hydra (Hydra loads sweepers only from the hydra_plugins namespace)."""
