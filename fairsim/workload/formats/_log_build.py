"""What the log readers share after parsing: dropping rows by reason (each row counted under the
first reason that applies), the sorted normalized log, and the figures worth reporting."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from fairsim.errors import InputError, require
from fairsim.files import input_path
from fairsim.workload.formats import LogRead, Where, placed


def file_in(path: Any, default_name: str, src: str) -> Path:
    """``path`` itself, or ``default_name`` inside it when it is a folder."""
    require(
        isinstance(path, (str, Path)) and str(path) != "",
        src,
        "path",
        f"must be a file or a folder holding {default_name}, got {path!r}",
    )
    path = input_path(path)
    return path / default_name if path.is_dir() else path


def optional_name(cfg: Mapping[str, Any], key: str, src: str, example: str) -> str | None:
    """A non-empty name or None (a GPU type name the log itself does not record)."""
    value = cfg.get(key)
    ok = value is None or (isinstance(value, str) and value.strip() != "")
    require(ok, src, key, f"must be a name (e.g. {example}) or null, got {value!r}")
    return None if value is None else value.strip()


def keep_after_drops(keep: np.ndarray, reasons: Sequence[tuple[str, np.ndarray]]) -> tuple[np.ndarray, dict[str, int]]:
    """Rows still kept after each (reason, mask) in turn; dropped counts only the rows that
    were still kept when their reason came up, and lists only reasons that dropped a row."""
    keep = keep.copy()
    dropped: dict[str, int] = {}
    for reason, mask in reasons:
        hit = keep & mask
        if hit.any():
            dropped[reason] = dropped.get(reason, 0) + int(hit.sum())
            keep &= ~hit
    return keep, dropped


def finished_log(
    columns: Mapping[str, Any],
    kept: np.ndarray,
    where: Where,
    dropped: Mapping[str, int],
    rows_read: int,
    source: str,
    meta: Mapping[str, Any] | None = None,
) -> LogRead:
    """The normalized log sorted by submission (ties in file order), refused when nothing is left.
    ``columns`` hold the ``kept`` rows (their positions in the file, where ``where`` places them);
    ``source`` names the log as a whole."""
    log = pd.DataFrame(dict(columns))
    if len(log) == 0:
        counts = ", ".join(f"{reason} {n}" for reason, n in dropped.items()) or "the log has no jobs"
        raise InputError(source, "rows", f"no GPU job is left to simulate of {rows_read} read ({counts})")
    order = np.argsort(log["submit_s"].to_numpy(), kind="stable")
    log = log.iloc[order].reset_index(drop=True)
    submit = log["submit_s"].to_numpy()
    figures = {"rows": int(rows_read), "jobs_kept": len(log), "span_s": float(submit[-1] - submit[0])}
    figures.update(meta or {})
    return LogRead(
        log=log, source=source, where=placed(where, np.asarray(kept)[order]), dropped=dict(dropped), meta=figures
    )


def text_or_none(values: pd.Series) -> np.ndarray:
    """object array of stripped strings, None where empty."""
    text = values.astype(str).str.strip()
    return text.where(text != "", None).to_numpy(dtype=object)
