"""Gather a sweep's cell folders into tidy tables.

A cell counts only when it is complete by ``fairsim.experiment.run_folder.why_incomplete``, the
definition the runner uses to skip it (summary and config parse and agree, per-job table readable).
    <sweep>/results.parquet   one row per cell: the cell's overrides and config labels (and its
                              ``variant`` when a variant preset set one) + its summary + where it
                              came from: ``code_digest``, ``commit``, ``dirty`` (from its
                              provenance.json) and ``stale`` / ``stale_why`` (made by other
                              simulating code or inputs than the current ones; kept only with
                              reuse_stale=true or when drawn without rerunning)
    <sweep>/jobs.parquet      every cell's per-job table, with a ``cell`` column
    <sweep>/tenants.parquet   every cell's per-tenant table, with a ``cell`` column (when jobs name tenants)
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import yaml

from fairsim.experiment import provenance
from fairsim.experiment.run_folder import (
    CONFIG,
    JOBS,
    RESULTS,
    SUMMARY,
    TENANTS,
    cell_folders,
    why_incomplete,
)
from fairsim.files import atomic_write

LABELS = {"policy": ("policy", "name"), "cluster": ("cluster", "name"), "workload": ("workload", "name"),
          "sim": ("sim", "name")}


def survey(sweep_dir: Path) -> tuple[list[Path], dict[str, str]]:
    """The complete cell folders, sorted by name (deterministic row order), and for every other
    cell folder why it is not complete."""
    complete, incomplete = [], {}
    for cell in cell_folders(sweep_dir):
        why = why_incomplete(cell)
        if why is None:
            complete.append(cell)
        else:
            incomplete[cell.name] = why
    return complete, incomplete


def complete_cells(sweep_dir: Path) -> list[Path]:
    return survey(sweep_dir)[0]


def cell_row(cell: Path) -> dict:
    summary = json.loads((cell / SUMMARY).read_text())
    cfg = yaml.safe_load((cell / CONFIG).read_text()) if (cell / CONFIG).exists() else {}
    row = {"cell": cell.name}
    for col, (group, key) in LABELS.items():
        row[col] = (cfg.get(group) or {}).get(key)
    for key in ("seed", "load"):
        row[key] = cfg.get(key)
    if "variant" in cfg:  # set by a variant preset (conf/fft_variant/, conf/workload_variant/): which one-at-a-time change
        row["variant"] = cfg["variant"]
    workload = cfg.get("workload") or {}
    row["arrivals"] = workload.get("arrivals") or ("poisson" if workload.get("kind") in ("philly", "gavel_generated") else "file")
    row["num_jobs"] = summary.get("num_jobs")  # the jobs the metrics cover (a trace file has its own count)
    row.update({k: v for k, v in summary.items() if k not in row and not isinstance(v, str)})
    record = provenance.read(cell)
    git = (record or {}).get("git") or {}
    row["code_digest"] = (record or {}).get("code_digest")
    row["commit"] = git.get("commit")
    row["dirty"] = provenance.dirty(record)  # as MLflow's fairsim.dirty: the repository, or code outside it no clean checkout holds
    row["stale_why"] = provenance.why_stale(cell, cfg, record)
    row["stale"] = row["stale_why"] is not None
    return row


def stale_now(sweep_dir: Path, cells: pd.DataFrame) -> pd.DataFrame:
    """``cells`` (rows of results.parquet) with ``stale`` / ``stale_why`` judged against the code
    and inputs as they are now, not as they were when the table was collected."""
    whys = [provenance.why_folder_stale(Path(sweep_dir) / name) for name in cells["cell"]]
    return cells.assign(stale_why=whys, stale=[w is not None for w in whys])


def collect(sweep_dir: Path, cells: list[Path] | None = None) -> tuple[pd.DataFrame, list[Path]]:
    """Write the sweep's tables from its complete cells (found here unless given)."""
    sweep_dir = Path(sweep_dir)
    cells = complete_cells(sweep_dir) if cells is None else cells
    table = pd.DataFrame([cell_row(c) for c in cells])
    if len(table):
        table.insert(0, "sweep", sweep_dir.name)
        atomic_write(sweep_dir / RESULTS, lambda p: table.to_parquet(p, index=False))
        for name in (JOBS, TENANTS):
            _gather(sweep_dir, cells, name)
    return table, cells


def _gather(sweep_dir: Path, cells: list[Path], name: str) -> None:
    """``<sweep>/<name>``: the cells' tables of that name one after another, with a ``cell``
    column; removed when no cell has one (a sweep without tenants writes no tenants.parquet)."""
    parts = [pd.read_parquet(c / name).assign(cell=c.name) for c in cells if (c / name).is_file()]
    if parts:
        gathered = pd.concat(parts, ignore_index=True)
        atomic_write(sweep_dir / name, lambda p: gathered.to_parquet(p, index=False))
    else:
        (sweep_dir / name).unlink(missing_ok=True)
