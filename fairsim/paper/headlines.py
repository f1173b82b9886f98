"""The headline numbers of PAPER.md sec. 4, computed from the sweeps and judged for direction.

Each claim is a mapping from experiments/paper.yaml; its ``kind`` picks an evaluator from
``EVALUATORS``. An evaluator returns one row per number: the paper's value, ours (ratios: the
geometric mean over seeds with the t-interval of the log ratios; values: the mean with its
t-interval cut at 0; differences: the mean with its t-interval) and a verdict on the direction:
    yes   the whole interval is on the paper's side (of 1 for ratios, of 0 for differences)
    weak  the mean is on the paper's side but the interval reaches across
    no    the mean is on the other side
A claim whose sweep or policy did not run says so instead of a number.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from fairsim.figures import style
from fairsim.figures.data import Inputs, MissingInput
from fairsim.figures.stats import (
    REFERENCE,
    Interval,
    mean_ci,
    nonneg_ci,
    paired_differences,
    paired_ratios,
    ratio_ci,
)


@dataclass(frozen=True)
class Row:
    claim: str
    paper: str
    ours: str
    verdict: str
    values: Mapping[str, object] = field(
        default_factory=dict
    )  # the numbers ``ours`` is formed from (data/headlines.csv)


def interval_values(prefix: str, ci: Interval) -> dict[str, float]:
    """An interval's mean and bounds as columns ``<prefix>_mean``, ``_lo``, ``_hi``."""
    return {f"{prefix}_mean": ci.mean, f"{prefix}_lo": ci.lo, f"{prefix}_hi": ci.hi}


def verdict(ci: Interval, threshold: float, expect_above: bool) -> str:
    if not np.isfinite(ci.mean):
        return "not measured"
    right_side = ci.mean > threshold if expect_above else ci.mean < threshold
    if not right_side:
        return "no"
    return "yes" if ci.excludes(threshold) else "weak"


def fmt(ci: Interval, unit: str = "x", digits: int = 2) -> str:
    if ci.n == 0:
        return "n/a"
    text = f"{ci.mean:.{digits}f}{unit}"
    return text + (f" [{ci.lo:.{digits}f}, {ci.hi:.{digits}f}]" if np.isfinite(ci.lo) else " (1 seed, no CI)")


def _cells(spec: Mapping, inputs: Inputs) -> pd.DataFrame:
    cells = inputs.sweep(spec["sweep"]).cells
    workloads = spec.get("workloads")
    return cells[cells["workload"].isin(workloads)] if workloads else cells


def evaluate_ratio(spec: Mapping, inputs: Inputs) -> list[Row]:
    """baseline / FFT per (trace, seed); pooled, or the largest per-trace mean ("up to")."""
    cells = _cells(spec, inputs)
    metric, claim, paper = spec["metric"], spec["claim"], str(spec["paper"])
    found = {b: paired_ratios(cells, metric, b) for b in spec["baselines"]}
    missing = [b for b, r in found.items() if r.empty]
    if len(missing) == len(found):
        return [Row(claim, paper, f"not measured: no runs of {', '.join(missing)} and FFT", "not measured")]
    if spec.get("reduce", "pool") == "pool":
        rows = []
        for baseline, ratios in found.items():
            ci = ratio_ci(ratios)
            name = f"{claim} [{style.label(baseline)}]" if len(found) > 1 else claim
            values = {"baseline": baseline, **interval_values("ratio", ci), "n": ci.n}
            rows.append(Row(name, paper, f"{fmt(ci)} (n={ci.n})", verdict(ci, 1.0, expect_above=True), values))
        return rows
    groups = [
        (b, w, ratio_ci(part))
        for b, ratios in found.items()
        if not ratios.empty
        for w, part in ratios.groupby(level="workload", sort=True)
    ]
    above = sum(ci.mean > 1 for _, _, ci in groups)
    baseline, workload, best = max(groups, key=lambda g: (g[2].mean, g[0], g[1]))
    where = (
        f"{style.label(baseline)}, {style.WORKLOAD_LABELS.get(workload, workload)}"
        if len(found) > 1
        else style.WORKLOAD_LABELS.get(workload, workload)
    )
    ours = f"up to {fmt(best)} ({where}, n={best.n}); > 1 in {above}/{len(groups)} settings"
    if missing:
        ours += f"; not run: {', '.join(missing)}"
    values = {
        "baseline": baseline,
        "selected": where,
        **interval_values("ratio", best),
        "n": best.n,
        "parity": 1,
        "settings_above_parity": above,
        "settings": len(groups),
    }
    return [Row(claim, paper, ours, verdict(best, 1.0, expect_above=True), values)]


def evaluate_compare(spec: Mapping, inputs: Inputs) -> list[Row]:
    """One row per other policy: both values (mean over traces and seeds) and the paired
    difference FFT - other, expected > 0 (``better: higher``) or < 0 (``better: lower``)."""
    cells = _cells(spec, inputs)
    metric, scale, unit = spec["metric"], float(spec.get("scale", 1.0)), spec.get("unit", "")
    higher = spec.get("better", "lower") == "higher"
    digits = 1 if unit else 2
    present = set(cells["policy"])
    upper = scale if metric.endswith("_share") else None  # a share of 1 is 100% at scale 100
    value = {
        p: nonneg_ci(cells.loc[cells["policy"] == p, metric].astype(float) * scale, upper) for p in spec["policies"]
    }
    rows = []
    for other in (p for p in spec["policies"] if p != REFERENCE):
        claim = f"{spec['claim']} [FFT vs {style.label(other)}]"
        if other not in present or REFERENCE not in present:
            rows.append(
                Row(
                    claim,
                    str(spec["paper"]),
                    f"not measured: no runs of {other if other not in present else REFERENCE}",
                    "not measured",
                )
            )
            continue
        diff = mean_ci(paired_differences(cells, metric, other) * scale)
        ours = (
            f"FFT {fmt(value[REFERENCE], unit, digits)} vs {style.label(other)} {fmt(value[other], unit, digits)}; "
            f"difference {fmt(diff, unit, digits)} (n={diff.n})"
        )
        values = {
            "baseline": other,
            "unit": unit,
            **interval_values("fft", value[REFERENCE]),
            **interval_values("baseline", value[other]),
            **interval_values("difference", diff),
            "n": diff.n,
        }
        rows.append(Row(claim, str(spec["paper"]), ours, verdict(diff, 0.0, expect_above=higher), values))
    return rows


def evaluate_profile_error(spec: Mapping, inputs: Inputs) -> list[Row]:
    """avg JCT with the given profile error over avg JCT without, per seed; expected <= limit."""
    from fairsim.paper.figures.fig13 import ERROR_KEY

    sweep = inputs.sweep(spec["sweep"])
    cells = sweep.cells.assign(error=sweep.setting(ERROR_KEY).astype(float))
    cells = cells[cells["policy"] == spec["policy"]]
    jct = cells.set_index(["error", "workload", "seed"])["avg_jct_s"]
    error = float(spec["error"])
    if error not in jct.index.get_level_values(0) or 0.0 not in jct.index.get_level_values(0):
        return [
            Row(spec["claim"], str(spec["paper"]), f"not measured: no runs at error 0 and {error:g}", "not measured")
        ]
    with_err, without = jct.xs(error, level=0), jct.xs(0.0, level=0)
    common = with_err.index.intersection(without.index)
    ci = ratio_ci(with_err.loc[common] / without.loc[common])
    return [
        Row(
            spec["claim"],
            str(spec["paper"]),
            f"{fmt(ci)} (n={ci.n})",
            verdict(ci, float(spec["limit"]), expect_above=False),
            {**interval_values("ratio", ci), "n": ci.n, "limit_ratio": float(spec["limit"])},
        )
    ]


EVALUATORS: dict[str, Callable[[Mapping, Inputs], list[Row]]] = {
    "ratio": evaluate_ratio,
    "compare": evaluate_compare,
    "profile_error": evaluate_profile_error,
}


def headline_frame(rows: list[Row]) -> pd.DataFrame:
    """One row per headline number: the claim, the paper's value, the verdict and the numbers
    ours is formed from (data/headlines.csv)."""
    return pd.DataFrame([{"claim": r.claim, "paper": r.paper, "verdict": r.verdict, **r.values} for r in rows])


def evaluate(specs: list[Mapping], inputs: Inputs, gaps: Mapping[str, str] | None = None) -> list[Row]:
    """Every claim in order. ``gaps`` maps a sweep role to why it could not run."""
    rows: list[Row] = []
    for spec in specs:
        role = spec["sweep"]
        if gaps and role in gaps:
            rows.append(Row(spec["claim"], str(spec["paper"]), f"not reproduced: {gaps[role]}", "not reproduced"))
            continue
        try:
            rows.extend(EVALUATORS[spec["kind"]](spec, inputs))
        except MissingInput as exc:
            rows.append(Row(spec["claim"], str(spec["paper"]), f"not measured: {exc}", "not measured"))
    return rows
