"""fairsim's Slurm launcher for Hydra: cells packed K to a Slurm task, and submit-and-return."""
