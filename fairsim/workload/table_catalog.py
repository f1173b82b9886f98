"""A catalog from measured throughputs: two small CSV files a user can write from their own
profiling runs (Gavel's measurements ship in this form, see ``gavel_catalog``).

throughputs CSV, one row per measured configuration:

| column     | meaning                                                                      |
|------------|------------------------------------------------------------------------------|
| model      | job type name (must be in the models CSV)                                    |
| gpu        | GPU type, a datasheet name (fairsim/data/gpu_specs.csv, case-insensitive)    |
| workers    | worker count, >= 1                                                           |
| placement  | ``packed`` (fewest hosts) or ``spread`` (more hosts than needed)             |
| throughput | work units per second for the whole job, > 0                                 |

A configuration that is absent does not run. A ``spread`` row may be absent: the packed figure
is used. models CSV: ``model``, ``param_count`` (required); ``state_bytes`` (default
16 x param_count: Adam), ``mem_gb`` (per worker, default 0 = fits every GPU), ``large``
(default false); other columns (notes) are ignored.
"""

from __future__ import annotations

from collections.abc import Mapping
from importlib import resources
from pathlib import Path

import numpy as np
import pandas as pd

from fairsim.cluster import GpuSpec, canonical_name, gpu_specs
from fairsim.errors import InputError, require
from fairsim.files import input_path
from fairsim.tables import CsvTable, read_csv_table
from fairsim.workload.catalog import Catalog
from fairsim.workload.trace import LARGEST_INTEGER

PLACEMENTS = ("packed", "spread")
TPUT_COLUMNS = ("model", "gpu", "workers", "placement", "throughput")
STATE_BYTES_PER_PARAM = 16.0
MAX_PARAMS = 1e15  # a thousand times the largest models trained: more is a corrupt cell (and 16 x 1e308 overflows)


def gavel_files() -> tuple[Path, Path]:
    base = resources.files("fairsim.data").joinpath("gavel")
    return Path(str(base.joinpath("throughputs.csv"))), Path(str(base.joinpath("models.csv")))


def gavel_catalog() -> Catalog:
    """Gavel's measured steps/s for its 26 job types on V100, P100 and K80."""
    tput, models = gavel_files()
    return table_catalog(tput, models, name="gavel", work_unit="steps")


def table_catalog(
    throughputs: str | Path,
    models: str | Path,
    name: str = "table",
    work_unit: str = "units",
    known: Mapping[str, GpuSpec] | None = None,
) -> Catalog:
    """The catalog of a throughputs CSV and a models CSV; ``gpu`` names any type of ``known``
    (a cluster's: the datasheet's and its own), by default the datasheet's."""
    tput_table, meta_table = _read_csv(throughputs), _read_csv(models)
    tput, meta = tput_table.cells, meta_table.cells
    tsrc, msrc = str(throughputs), str(models)
    _require_columns(tput, TPUT_COLUMNS, tsrc)
    _require_columns(meta, ("model", "param_count"), msrc)

    model_names = meta["model"].str.strip().tolist()
    dup = meta["model"].str.strip().duplicated()
    if dup.any():
        row = int(np.flatnonzero(dup.to_numpy())[0])
        raise InputError(msrc, "model", f"{model_names[row]!r} is listed twice (line {meta_table.lines[row]})")
    params = _numbers(
        meta_table, "param_count", msrc, lambda x: (x > 0) & (x <= MAX_PARAMS), f"> 0 and <= {MAX_PARAMS:g}"
    )
    state = (
        _numbers(
            meta_table,
            "state_bytes",
            msrc,
            lambda x: (x > 0) & (x <= MAX_PARAMS * STATE_BYTES_PER_PARAM),
            f"> 0 and <= {MAX_PARAMS * STATE_BYTES_PER_PARAM:g}",
        )
        if "state_bytes" in meta
        else STATE_BYTES_PER_PARAM * params
    )
    mem = _numbers(meta_table, "mem_gb", msrc, lambda x: x >= 0, ">= 0") if "mem_gb" in meta else np.zeros(len(meta))
    large = _booleans(meta_table, msrc) if "large" in meta else np.zeros(len(meta), dtype=bool)

    tput_models = tput["model"].str.strip()
    unknown = sorted(set(tput_models) - set(model_names))
    if unknown:
        raise InputError(tsrc, "model", f"{unknown[0]!r} is not in {msrc} (add a row for it)")
    raw_gpu = tput["gpu"].str.strip().tolist()
    known = gpu_specs() if known is None else known
    canonical = {g: canonical_name(g, known, tsrc, "gpu") for g in dict.fromkeys(raw_gpu)}  # each name looked up once
    gpu = [canonical[g] for g in raw_gpu]
    workers = _numbers(
        tput_table, "workers", tsrc, lambda x: (x >= 1) & (x <= LARGEST_INTEGER) & (x == np.round(x)), "an integer >= 1"
    ).astype(np.int64)
    placement = tput["placement"].str.strip().str.lower().to_numpy()
    bad = ~np.isin(placement, PLACEMENTS)
    if bad.any():
        row = int(np.argmax(bad))
        raise InputError(
            tsrc,
            "placement",
            f"{placement[row]!r} (line {tput_table.lines[row]}) is not one of {', '.join(PLACEMENTS)}",
        )
    value = _numbers(
        tput_table, "throughput", tsrc, lambda x: x > 0, "> 0 (leave a configuration out when it does not run)"
    )

    gpus = tuple(dict.fromkeys(gpu))  # first-appearance order
    counts = tuple(int(w) for w in np.unique(workers))
    m_idx = pd.Index(model_names).get_indexer(tput_models)
    g_idx = pd.Index(gpus).get_indexer(gpu)
    w_idx = np.searchsorted(counts, workers)
    key = np.stack([m_idx, g_idx, w_idx, (placement == "spread").astype(np.int64)], axis=1)
    _, first = np.unique(key, axis=0, return_index=True)
    if len(first) != len(key):
        row = int(np.setdiff1d(np.arange(len(key)), first)[0])
        raise InputError(
            tsrc,
            "rows",
            f"line {tput_table.lines[row]} repeats ({tput_models.iloc[row]}, {gpu[row]}, {workers[row]} "
            f"workers, {placement[row]})",
        )

    shape = (len(model_names), len(gpus), len(counts))
    packed = np.full(shape, np.nan)
    spread = np.full(shape, np.nan)
    is_spread = placement == "spread"
    packed[m_idx[~is_spread], g_idx[~is_spread], w_idx[~is_spread]] = value[~is_spread]
    spread[m_idx[is_spread], g_idx[is_spread], w_idx[is_spread]] = value[is_spread]
    orphan = np.isfinite(spread) & np.isnan(packed)
    if orphan.any():
        m, g, w = (int(a[0]) for a in np.nonzero(orphan))
        raise InputError(
            tsrc,
            "placement",
            f"{model_names[m]} on {gpus[g]} with {counts[w]} workers has a spread row but no packed row",
        )
    spread = np.where(np.isnan(spread), packed, spread)  # no spread measurement: as fast as packed
    return Catalog(
        name=name,
        work_unit=work_unit,
        models=tuple(model_names),
        gpu_types=gpus,
        worker_counts=counts,
        packed=packed,
        spread=spread,
        mem_per_worker_gb=np.repeat(mem[:, None], len(counts), axis=1),
        state_bytes=state,
        param_count=params,
        large=large,
        source=tsrc,
    )


def _read_csv(path: str | Path) -> CsvTable:
    """The table's text cells and each row's line (quoted cells, blank lines, a ragged row, a
    non-UTF-8 byte or a repeated header column refused naming its line)."""
    path = input_path(path)
    require(path.is_file(), str(path), "path", "no such file")
    return read_csv_table(path, None, quoted=True)


def _require_columns(df: pd.DataFrame, cols, src: str) -> None:
    missing = [c for c in cols if c not in df.columns]
    require(not missing, src, "columns", f"missing {', '.join(missing)} (required: {', '.join(cols)})")


def _numbers(table: CsvTable, col: str, src: str, ok, rule: str) -> np.ndarray:
    text = table.cells[col].str.strip()
    values = pd.to_numeric(text, errors="coerce").to_numpy(dtype=np.float64)
    good = np.isfinite(values)
    good[good] = ok(values[good])
    if not good.all():
        row = int(np.flatnonzero(~good)[0])
        raise InputError(src, col, f"must be {rule} (line {table.lines[row]} has {text.iloc[row]!r})")
    return values


def _booleans(table: CsvTable, src: str) -> np.ndarray:
    text = table.cells["large"].str.strip().str.lower()
    words = {"true": True, "1": True, "yes": True, "false": False, "0": False, "no": False}
    bad = ~text.isin(list(words))
    if bad.any():
        row = int(np.flatnonzero(bad.to_numpy())[0])
        raise InputError(
            src, "large", f"must be true or false (line {table.lines[row]} has {table.cells['large'].iloc[row]!r})"
        )
    return text.map(words).to_numpy(dtype=bool)
