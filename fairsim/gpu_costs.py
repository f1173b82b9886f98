"""Power and price per GPU type: what a run's energy and cost are computed from (fairsim.metrics).

Defaults come from ``fairsim/data/gpu_costs.csv`` (datasheet board power, an idle fraction, AWS
on-demand and spot prices per GPU-hour; each row names its sources and the date they were read,
and its .license file says how). A cluster's config overrides any of them::

    cluster:
      pricing: spot                          # on_demand (default) or spot
      power: {A100-40GB: {busy_w: 350, idle_fraction: 0.1}}
      price: {A100-40GB: {on_demand: 2.1, spot: 0.9}, K80: {on_demand: 0.3}}

Prices are US dollars per GPU-hour, power is watts per GPU; idle power is ``idle_fraction *
busy_w``. A type of the cluster's own takes the table's idle fraction (``IDLE_FRACTION``); its
busy watts and prices, and the prices of a type without a cloud offer (K80, P100, A40), are NaN
until the config sets them, and every energy or cost that needs one is null (NaN): a missing
figure is never made up. ``GpuCosts.missing`` names the ones a cluster lacks.
"""

from __future__ import annotations

import csv
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np

from fairsim.cluster import ClusterSpec
from fairsim.errors import Number, OneOf, check_keys, require
from fairsim.files import note_input

COST_TABLE = "fairsim/data/gpu_costs.csv"
PRICINGS = ("on_demand", "spot")
POWER_KEYS = ("busy_w", "idle_fraction")
CONFIG_KEYS = ("power", "price", "pricing")  # a cluster config's keys read here
WATT_S_PER_KWH = 3.6e6
IDLE_FRACTION = 0.15  # every row's idle_fraction in the shipped table (its .license says why); a type of the cluster's own starts from it


@dataclass(frozen=True)
class TypeCost:
    busy_w: float = float("nan")
    idle_fraction: float = float("nan")
    on_demand: float = float("nan")  # USD per GPU-hour
    spot: float = float("nan")


@dataclass(frozen=True, eq=False)
class GpuCosts:
    """Per type of a cluster, in its type order: busy and idle watts and the USD per GPU-hour of
    the chosen pricing."""

    gpu_types: tuple[str, ...]
    busy_w: np.ndarray
    idle_w: np.ndarray
    usd_per_gpu_h: np.ndarray
    pricing: str = "on_demand"

    @classmethod
    def for_cluster(
        cls, cluster: ClusterSpec, cfg: Mapping[str, Any] | None = None, source: str = "cluster"
    ) -> GpuCosts:
        """The shipped table for the cluster's types with the config's ``power``, ``price`` and
        ``pricing`` over it; a bad value: InputError naming the field and what it allows."""
        cfg = cfg or {}
        pricing = OneOf(PRICINGS).check(cfg.get("pricing", "on_demand"), source, "pricing")
        own = TypeCost(idle_fraction=IDLE_FRACTION)  # a type the table lacks: no power or price of its own
        table = {name: shipped_costs().get(name.lower(), own) for name in cluster.gpu_types}
        for key, allowed in (("power", POWER_KEYS), ("price", PRICINGS)):
            for name, entry in _per_type(cfg.get(key), cluster, source, key).items():
                check_keys(entry, allowed, source, prefix=f"{key}.{name}.", noun=f"{key} key")
                values = {k: _rule(k).check(v, source, f"{key}.{name}.{k}") for k, v in entry.items()}
                if name in table:  # a known type this cluster does not have costs nothing here
                    table[name] = TypeCost(**{**table[name].__dict__, **values})
        rows = [table[name] for name in cluster.gpu_types]
        busy = np.array([r.busy_w for r in rows], dtype=float)
        return cls(
            gpu_types=cluster.gpu_types,
            busy_w=busy,
            idle_w=busy * np.array([r.idle_fraction for r in rows], dtype=float),
            usd_per_gpu_h=np.array([getattr(r, pricing) for r in rows], dtype=float),
            pricing=pricing,
        )

    def missing(self, counts: np.ndarray) -> tuple[str, ...]:
        """The figures the run's energy and cost lack, as the cluster config's keys
        (``power.X.busy_w``, ``power.X.idle_fraction``, ``price.X.<pricing>``), for each type the
        cluster provisions; empty when every figure is known."""
        out = []
        for name, count, busy, idle, usd in zip(self.gpu_types, counts, self.busy_w, self.idle_w, self.usd_per_gpu_h):
            if count <= 0:
                continue
            if not np.isfinite(busy):
                out.append(f"power.{name}.busy_w")
            elif not np.isfinite(idle):
                out.append(f"power.{name}.idle_fraction")
            if not np.isfinite(usd):
                out.append(f"price.{name}.{self.pricing}")
        return tuple(out)

    def per_h_usd(self, counts: np.ndarray) -> float:
        """What the GPUs cost per hour, all of them provisioned (NaN when a held type has no price)."""
        return float(weighted(np.asarray(counts, dtype=float), self.usd_per_gpu_h).sum())


def _rule(key: str) -> Number:
    if key == "idle_fraction":
        return Number(lo=0, hi=1, what="a fraction of busy_w in [0, 1]")
    if key == "busy_w":
        return Number(lo=0, what="watts >= 0")
    return Number(lo=0, what="US dollars per GPU-hour >= 0")


def _per_type(raw: Any, cluster: ClusterSpec, source: str, key: str) -> dict[str, Mapping[str, Any]]:
    """``power`` or ``price``: {type: {key: value}}, type names as the cluster spells them."""
    if raw is None:
        return {}
    require(
        isinstance(raw, Mapping),
        source,
        key,
        f"must map GPU types to {{{', '.join(POWER_KEYS if key == 'power' else PRICINGS)}}}, got {raw!r}",
    )
    out = {}
    for name, entry in raw.items():
        require(
            isinstance(entry, Mapping),
            source,
            f"{key}.{name}",
            f"must be {{{', '.join(POWER_KEYS if key == 'power' else PRICINGS)}: <number>}}, got {entry!r}",
        )
        out[cluster.canonical(name, source, f"{key}.{name}")] = entry
    return out


def weighted(amount: np.ndarray, rate: np.ndarray) -> np.ndarray:
    """amount * rate, 0 where the amount is 0 (an unpriced type that was not used costs nothing)."""
    with np.errstate(invalid="ignore"):
        return np.where(amount > 0, amount * rate, 0.0)


def shipped_costs() -> dict[str, TypeCost]:
    """The shipped table, by lower-case type name."""
    path = Path(str(resources.files("fairsim.data").joinpath("gpu_costs.csv")))
    note_input(path)
    return _read(path)


@lru_cache(maxsize=1)
def _read(path: Path) -> dict[str, TypeCost]:
    def number(text: str) -> float:
        return float(text) if text.strip() else float("nan")

    out = {}
    for row in csv.DictReader(path.read_text().splitlines()):
        out[row["gpu"].lower()] = TypeCost(
            busy_w=number(row["busy_w"]),
            idle_fraction=number(row["idle_fraction"]),
            on_demand=number(row["on_demand_usd_per_gpu_h"]),
            spot=number(row["spot_usd_per_gpu_h"]),
        )
    return out
