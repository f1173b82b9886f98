"""The candidate clusters of a what-if: presets by name, or GPU counts written as ``TYPE=N,TYPE=N``.

Counts become cluster presets of their own (``<folder>/cluster/<label>.yaml``: the paper testbed's
preset, its host size and links, with these counts) in a config folder the sweep searches (``hydra.searchpath``), so every
candidate is a ``cluster=<name>`` choice of one Hydra sweep. Each candidate is built here first
(ClusterSpec and its prices), so a bad type or count, or an unknown preset, is refused before
anything runs, and the budget is checked on the cluster's price per hour.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import yaml

from fairsim.cluster import ClusterSpec
from fairsim.errors import InputError, require
from fairsim.experiment.cli import check_group_choices
from fairsim.experiment.compose import CONF_DIR, compose_config
from fairsim.experiment.single import build_cluster, build_costs

SOURCE = "--clusters"
HOSTS_FROM = "paper"  # the cluster preset whose host size and links counts are written with
COUNTS = re.compile(r"^\s*([^=,\s]+)\s*=\s*([^=,]+?)\s*$")


@dataclass(frozen=True)
class Candidate:
    name: str  # the cluster preset's name (a cluster=<name> choice)
    written: str  # as the user wrote it
    mix: str  # "12 T4 + 12 A10 + 12 V100"
    gpus: int
    cost_per_h_usd: float  # every GPU at the run's pricing (NaN: a type has no price)
    counts: dict | None = None  # the preset's counts when written as counts


def split(specs: list[str]) -> list[str]:
    """Each ``--clusters`` argument is a preset, a comma list of presets, or one set of counts."""
    out = []
    for spec in specs:
        out.extend([spec] if "=" in spec else [p.strip() for p in spec.split(",") if p.strip()])
    require(len(out) > 0, SOURCE, "clusters", "give at least one: a preset (paper) or counts (A100-40GB=16,V100=32)")
    return out


def parse_counts(spec: str) -> dict[str, int]:
    """``A100-40GB=16,V100=32`` -> {type: count} as written; the types and counts are checked by ClusterSpec."""
    counts = {}
    for part in spec.split(","):
        match = COUNTS.match(part)
        require(match is not None, SOURCE, spec, f"{part!r} is not TYPE=COUNT (e.g. A100-40GB=16,V100=32)")
        name, raw = match.groups()
        require(name not in counts, SOURCE, spec, f"{name} is listed twice")
        try:
            counts[name] = int(raw)
        except ValueError:
            raise InputError(SOURCE, spec, f"the count of {name} must be a whole number of GPUs, got {raw!r}") from None
    return counts


def label(counts: dict[str, int]) -> str:
    """A preset name for counts: ``A100-40GBx16_V100x32``."""
    return "_".join(f"{re.sub(r'[^A-Za-z0-9-]', '', t)}x{n}" for t, n in counts.items())


def prepare(specs: list[str], conf_dir: Path, overrides: list[str]) -> list[Candidate]:
    """The candidates, counts written as presets into ``conf_dir/cluster/``; ``overrides`` (the
    run's other overrides, e.g. +cluster.pricing=spot) apply when pricing each candidate."""
    out, names = [], set()
    (conf_dir / "cluster").mkdir(parents=True, exist_ok=True)
    for spec in split(specs):
        counts = parse_counts(spec) if "=" in spec else None
        if counts is not None:
            name = label(counts)
            base = yaml.safe_load((CONF_DIR / "cluster" / f"{HOSTS_FROM}.yaml").read_text())
            preset = {**base, "name": name, "counts": counts}
            ClusterSpec.from_config(preset, source=f"{SOURCE} {spec}")  # a bad type or count: one line naming it
            (conf_dir / "cluster" / f"{name}.yaml").write_text(
                f"# written by fairsim.whatif from --clusters {spec}\n" + yaml.safe_dump(preset, sort_keys=False)
            )
        else:
            name = spec
        require(name not in names, SOURCE, spec, "is given twice")
        names.add(name)
        out.append(_priced(name, spec, counts, conf_dir, overrides))
    return out


def search_path(conf_dir: Path) -> str:
    return f"hydra.searchpath=[file://{conf_dir.resolve()}]"


def _priced(name: str, spec: str, counts: dict | None, conf_dir: Path, overrides: list[str]) -> Candidate:
    args = check_group_choices([f"cluster={name}", search_path(conf_dir), *overrides], CONF_DIR)
    cfg = compose_config(args)
    cluster = build_cluster(cfg)
    costs = build_costs(cfg, cluster)
    mix = " + ".join(f"{c} {t}" for t, c in zip(cluster.gpu_types, cluster.counts))
    return Candidate(name, spec, mix, cluster.total_gpus, costs.per_h_usd(cluster.counts), counts)
