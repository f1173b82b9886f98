"""What the figures read: collected sweeps (results.parquet + jobs.parquet) and benchmark tables.

A figure names its inputs by role (``testbed``, ``simulated``...); experiments/paper.yaml maps
each role to a sweep folder, so the same figure code draws the small and the full scale.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from fairsim.experiment.run_folder import CONFIG, JOBS, RESULTS, ROUNDS

LABELS = ["policy", "workload", "cluster", "seed"]


class MissingInput(LookupError):
    """A figure asked for a sweep or benchmark that was not run (or not collected)."""


@dataclass
class SweepData:
    name: str
    folder: Path
    cells: pd.DataFrame  # results.parquet: one row per complete cell
    _jobs: pd.DataFrame | None = field(default=None, repr=False)

    @classmethod
    def load(cls, folder: Path) -> SweepData:
        folder = Path(folder)
        path = folder / RESULTS
        if not path.is_file():
            raise MissingInput(f"{path} is missing: run the sweep first")
        return cls(folder.name, folder, pd.read_parquet(path))

    def jobs(self) -> pd.DataFrame:
        """Every job of every cell, labelled with its cell's policy, workload, cluster and seed
        (the sweep's jobs.parquet carries them; one collected before it did gets them from the cells)."""
        if self._jobs is None:
            jobs = pd.read_parquet(self.folder / JOBS)
            missing = [k for k in LABELS if k not in jobs]
            if missing:
                jobs = jobs.merge(self.cells[["cell", *missing]], on="cell", how="inner", validate="many_to_one")
            self._jobs = jobs[jobs["cell"].isin(self.cells["cell"])]
        return self._jobs

    def setting(self, key: str) -> pd.Series:
        """A dotted config key (e.g. ``sim.round_len_s``) of every cell, read from its config.yaml."""
        import yaml

        values = []
        for cell in self.cells["cell"]:
            node = yaml.safe_load((self.folder / cell / CONFIG).read_text())
            for part in key.split("."):
                node = node.get(part) if isinstance(node, dict) else None
            values.append(node)
        return pd.Series(values, index=self.cells.index, name=key)

    def rounds(self, policy: str) -> pd.DataFrame:
        """Per-round tables of the policy's cells (from the cell folders), labelled like ``jobs``."""
        parts = [
            pd.read_parquet(self.folder / row.cell / ROUNDS).assign(**{k: getattr(row, k) for k in LABELS})
            for row in self.cells[self.cells["policy"] == policy].sort_values("cell").itertuples()
        ]
        return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame()


@dataclass
class Inputs:
    """The sweeps (by role) and benchmark tables (by name) a run of the figures can use."""

    sweeps: dict[str, SweepData]
    benches: dict[str, pd.DataFrame]

    def sweep(self, role: str) -> SweepData:
        if role not in self.sweeps:
            raise MissingInput(f"no results for the {role!r} sweep")
        return self.sweeps[role]

    def cells(self, *roles: str) -> pd.DataFrame:
        """The cell tables of several sweeps stacked (a policy present in two keeps the first)."""
        tables = [self.sweep(r).cells for r in roles]
        table = pd.concat(tables, ignore_index=True)
        return table.drop_duplicates(subset=["policy", "workload", "cluster", "seed"], keep="first")

    def bench(self, name: str) -> pd.DataFrame:
        if name not in self.benches:
            raise MissingInput(f"no results for the {name!r} benchmark")
        return self.benches[name]
