"""Gather a sweep's cell folders into tidy tables.

A cell counts only when it is complete by ``fairsim.experiment.run_folder.why_incomplete``, the
definition the runner uses to skip it (summary and config parse and agree, per-job table readable),
and once per identity (``run_folder.identity``, the config it composed): of several folders
holding one config (spellings run before a sweep kept one folder per config) the one the
sweep's index names is collected, else the first by name, and each other is reported.
    <sweep>/results.parquet   one row per cell: the cell's folder name and config labels
                              (``policy``, ``cluster``, ``workload``, ``sim``, ``seed``, ``load``,
                              and ``variant`` when a variant preset set one) + one column per
                              config key whose value varies across the sweep's cells, named by
                              its dotted path (``policy.starve_h``, ``cluster.counts.T4``,
                              ``sim.clock``; a top-level key as ``config.<key>``, e.g.
                              ``config.num_jobs``) + its summary + where it came from:
                              ``code_digest``, ``commit``, ``dirty`` (from its provenance.json)
                              and ``stale`` / ``stale_why`` (made by other simulating code or
                              inputs than the current ones; kept only with reuse_stale=true or
                              when drawn without rerunning)
    <sweep>/jobs.parquet      every cell's per-job table, with the cell's identity columns:
                              ``cell``, the labels above and every varying key that tells
                              cells apart beyond them (``distinct_settings``; a policy's
                              options that vary only with the policy are told by ``policy``),
                              as categoricals
    <sweep>/tenants.parquet   every cell's per-tenant table, the same way (when jobs name tenants)
``distinct_settings`` says which of those columns are settings a figure must not pool as seeds.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from fairsim.experiment import provenance
from fairsim.experiment.run_folder import (
    BOOKKEEPING,
    CONFIG,
    JOBS,
    RESULTS,
    SUMMARY,
    TENANTS,
    canonical,
    cell_folders,
    flatten,
    folder_identity,
    identity_digest,
    indexed_folder,
    saved_config,
    why_incomplete,
)
from fairsim.files import atomic_write

LABELS = {
    "policy": ("policy", "name"),
    "cluster": ("cluster", "name"),
    "workload": ("workload", "name"),
    "sim": ("sim", "name"),
}
TOP_LABELS = ("seed", "load", "variant")  # top-level config keys that are label columns themselves
CONFIG_PREFIX = "config."  # a varying top-level key's column: config.num_jobs (its own name may be a summary key's)
# a cell's identity columns in the sweep's per-job and per-tenant tables, beside the varying keys
IDENTITY_COLUMNS = ("cell", *LABELS, *TOP_LABELS)


def survey(sweep_dir: Path) -> tuple[list[Path], dict[str, str], dict[str, str]]:
    """The complete cell folders, one per identity, sorted by name (deterministic row order); for
    every incomplete cell folder why not; and for every complete one holding another's config
    which one that is."""
    complete, incomplete = [], {}
    for cell in cell_folders(sweep_dir):
        why = why_incomplete(cell)
        if why is None:
            complete.append(cell)
        else:
            incomplete[cell.name] = why
    kept, duplicates = one_per_identity(Path(sweep_dir), complete)
    return kept, incomplete, duplicates


def one_per_identity(sweep_dir: Path, cells: list[Path]) -> tuple[list[Path], dict[str, str]]:
    """``cells`` with one folder per identity (the index's, else the first by name), and for
    each folder dropped which one holds its config."""
    groups: dict[str, list[Path]] = {}
    for cell in cells:
        groups.setdefault(identity_digest(folder_identity(cell)), []).append(cell)
    kept, dropped = [], {}
    for digest, folders in groups.items():
        home = indexed_folder(sweep_dir, digest)
        keep = home if home in folders else folders[0]
        kept.append(keep)
        dropped.update(
            {
                f.name: f"the same config as {keep.name} (one row per config; this folder is not collected)"
                for f in folders
                if f != keep
            }
        )
    return sorted(kept), dropped


def complete_cells(sweep_dir: Path) -> list[Path]:
    return survey(sweep_dir)[0]


def cell_row(cell: Path) -> dict:
    summary = json.loads((cell / SUMMARY).read_text())
    cfg = saved_config(cell) if (cell / CONFIG).exists() else {}
    row = {"cell": cell.name}
    for col, (group, key) in LABELS.items():
        row[col] = (cfg.get(group) or {}).get(key)
    for key in ("seed", "load"):
        row[key] = cfg.get(key)
    if (
        "variant" in cfg
    ):  # set by a variant preset (conf/fft_variant/, conf/workload_variant/): which one-at-a-time change
        row["variant"] = cfg["variant"]
    workload = cfg.get("workload") or {}
    row["arrivals"] = workload.get("arrivals") or (
        "poisson" if workload.get("kind") in ("philly", "gavel_generated") else "file"
    )
    row["num_jobs"] = summary.get("num_jobs")  # the jobs the metrics cover (a trace file has its own count)
    row.update({k: v for k, v in summary.items() if k not in row and not isinstance(v, str)})
    record = provenance.read(cell)
    git = (record or {}).get("git") or {}
    row["code_digest"] = (record or {}).get("code_digest")
    row["commit"] = git.get("commit")
    row["dirty"] = provenance.dirty(
        record
    )  # as MLflow's fairsim.dirty: the repository, or code outside it no clean checkout holds
    row["stale_why"] = provenance.why_stale(cell, cfg, record)
    row["stale"] = row["stale_why"] is not None
    return row


def config_columns(cells: list[Path]) -> dict[str, list]:
    """Column name -> one value per cell, for every config key whose value varies across
    ``cells`` (compared canonically: 1 and 1.0 are one value; a key one cell lacks varies)."""
    configs = [saved_config(c) or {} for c in cells]
    flat = [flatten({k: v for k, v in cfg.items() if k not in BOOKKEEPING}) for cfg in configs]
    keys = sorted(set().union(*flat)) if flat else []
    columns = {}
    for key in keys:
        group, _, rest = key.partition(".")
        if (group in LABELS and rest == LABELS[group][1]) or key in TOP_LABELS:
            continue  # a label column already
        values = [f.get(key) for f in flat]
        seen = {repr(canonical(f[key])) if key in f else "<missing>" for f in flat}
        if len(seen) > 1:
            columns[key if rest else CONFIG_PREFIX + key] = _tidy(values)
    return columns


def _tidy(values: list[Any]) -> list[Any]:
    """One parquet column's values: numbers, booleans or text as they are (None where a cell has
    no such key); a mix of kinds, and lists, as their JSON text."""
    present = [v for v in values if v is not None]
    kinds = {bool if isinstance(v, bool) else (int, float) if isinstance(v, (int, float)) else type(v) for v in present}
    if len(kinds) <= 1 and not kinds & {list, dict}:
        return values
    return [None if v is None else v if isinstance(v, str) else json.dumps(v) for v in values]


def distinct_settings(cells: pd.DataFrame, axes: Sequence[str] = ("policy", "load", "seed")) -> list[str]:
    """The columns of ``cells`` (rows of results.parquet) that are settings beyond ``axes``: a
    preset label (cluster, workload, sim), the variant or a varying config key that splits cells
    which agree on the axes and on the settings before it. A key that varies only with another
    (a policy's options with the policy, ``workload.num_jobs`` with ``config.num_jobs``, a
    workload's ``${seed}``) is not one. A figure drawing ``axes`` must facet by these or refuse."""
    base = [a for a in axes if a in cells]
    candidates = [c for c in (*LABELS, "variant") if c in cells and c not in axes]
    candidates += sorted(c for c in cells.columns if "." in c and c not in axes)
    chosen: list[str] = []
    groups = _count_groups(cells, base)
    for column in candidates:
        more = _count_groups(cells, base + chosen + [column])
        if more > groups:
            chosen.append(column)
            groups = more
    return chosen


def _count_groups(cells: pd.DataFrame, columns: list[str]) -> int:
    if not columns:
        return 1 if len(cells) else 0
    return len(cells[columns].astype(str).drop_duplicates())


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
        varying = config_columns(cells)
        at = table.columns.get_loc("arrivals")  # labels, then the varying keys, then the summary
        for offset, (name, values) in enumerate(varying.items()):
            table.insert(at + offset, name, values)
        table.insert(0, "sweep", sweep_dir.name)
        atomic_write(sweep_dir / RESULTS, lambda p: table.to_parquet(p, index=False))
        labels = [c for c in IDENTITY_COLUMNS if c in table]
        # the varying keys that split cells beyond the labels: one that varies only with a preset
        # (a policy's options with the policy) is told by its label already, and would only widen the table
        identity = table[[*labels, *distinct_settings(table, [c for c in labels if c != "cell"])]]
        for name in (JOBS, TENANTS):
            _gather(sweep_dir, cells, name, identity)
    return table, cells


def _gather(sweep_dir: Path, cells: list[Path], name: str, identity: pd.DataFrame) -> None:
    """``<sweep>/<name>``: the cells' tables of that name one after another, each row with its
    cell's ``identity`` columns as categoricals (one small code per row, whatever the sweep's
    size); removed when no cell has one (a sweep without tenants writes no tenants.parquet)."""
    having = [i for i, c in enumerate(cells) if (c / name).is_file()]
    if not having:
        (sweep_dir / name).unlink(missing_ok=True)
        return
    parts = [pd.read_parquet(cells[i] / name) for i in having]
    gathered = pd.concat(parts, ignore_index=True)
    clash = sorted(set(gathered.columns) & set(identity.columns))
    if clash:  # a per-job column named like a label would be overwritten: a bug in whoever added it
        raise ValueError(f"{name} of {sweep_dir.name} has columns named like a cell's identity: {', '.join(clash)}")
    rows = np.repeat(np.asarray(having), [len(p) for p in parts])  # each row's cell, as its index in ``cells``
    for column in identity.columns:
        per_cell = pd.Categorical(identity[column].tolist())
        gathered[column] = pd.Categorical.from_codes(per_cell.codes[rows], dtype=per_cell.dtype)
    gathered = gathered[[*identity.columns, *(c for c in gathered.columns if c not in identity.columns)]]
    atomic_write(sweep_dir / name, lambda p: gathered.to_parquet(p, index=False))
