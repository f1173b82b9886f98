"""fairsim's Dask launcher for Hydra (Hydra loads launchers only from the hydra_plugins namespace)."""
