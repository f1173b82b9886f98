"""The candidate clusters of a what-if: presets by name, or GPU counts written as ``TYPE=N,TYPE=N``.

Counts become cluster presets of their own (``<folder>/cluster/<label>.yaml``: a base preset, the
paper testbed's by default, with these counts: its host size and links, and its own GPU types,
power and prices, so the counts may name the types a preset of the user's defines) in a config
folder the sweep searches (``hydra.searchpath``, after the user's own folders), so every
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
HOSTS_FROM = "paper"  # the default base preset: counts are written with its host size and links
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


def label(counts: dict[str, int], base: str = HOSTS_FROM) -> str:
    """A preset name for counts: ``A100-40GBx16_V100x32``, led by the base preset's name when it
    is not the default (``mine_H200x8``: the same counts on another base are another cluster)."""
    name = "_".join(f"{re.sub(r'[^A-Za-z0-9-]', '', t)}x{n}" for t, n in counts.items())
    return name if base == HOSTS_FROM else f"{base}_{name}"


def base_preset(base: str, user_paths: list[str]) -> dict:
    """The cluster preset ``base`` as a plain dict, found where a run finds it (conf/, then the
    user's folders)."""
    from omegaconf import OmegaConf

    args = check_group_choices([f"cluster={base}", *search_path(None, user_paths)], CONF_DIR)
    return OmegaConf.to_container(compose_config(args).cluster, resolve=True)


def prepare(
    specs: list[str], conf_dir: Path, overrides: list[str], base: str = HOSTS_FROM, user_paths: list[str] = ()
) -> list[Candidate]:
    """The candidates, counts written as presets (``base`` with these counts) into
    ``conf_dir/cluster/``; ``overrides`` (the run's other overrides, e.g. +cluster.pricing=spot)
    apply when pricing each candidate; ``user_paths`` are the user's config folders (search-path
    entries), searched before ``conf_dir``."""
    out, names = [], set()
    (conf_dir / "cluster").mkdir(parents=True, exist_ok=True)
    base_cfg = None
    for spec in split(specs):
        counts = parse_counts(spec) if "=" in spec else None
        if counts is not None:
            base_cfg = base_cfg if base_cfg is not None else base_preset(base, list(user_paths))
            name = label(counts, base)
            preset = {**base_cfg, "name": name, "counts": counts}
            try:
                ClusterSpec.from_config(preset, source=f"{SOURCE} {spec}")  # a bad type or count: one line naming it
            except InputError as exc:
                if "unknown GPU type" not in str(exc):
                    raise
                raise InputError(
                    exc.source,
                    exc.field,
                    f"{exc.problem}; or, in counts, the types of a cluster preset of yours: "
                    "--base-cluster <it> (with --config-dir <its folder>)",
                ) from None
            (conf_dir / "cluster" / f"{name}.yaml").write_text(
                f"# written by fairsim.whatif from --clusters {spec} on cluster {base}\n"
                + yaml.safe_dump(preset, sort_keys=False)
            )
        else:
            name = spec
        require(name not in names, SOURCE, spec, "is given twice")
        names.add(name)
        out.append(_priced(name, spec, counts, conf_dir, overrides, list(user_paths)))
    return out


def search_path(conf_dir: Path | None, user_paths: list[str] = ()) -> list[str]:
    """The ``hydra.searchpath`` override of the what-if's cells: the user's folders, then the
    folder of the written presets; none when there is neither."""
    entries = [*user_paths, *([f"file://{conf_dir.resolve()}"] if conf_dir is not None else [])]
    return [f"hydra.searchpath=[{','.join(entries)}]"] if entries else []


def _priced(
    name: str, spec: str, counts: dict | None, conf_dir: Path, overrides: list[str], user_paths: list[str]
) -> Candidate:
    args = check_group_choices([f"cluster={name}", *search_path(conf_dir, user_paths), *overrides], CONF_DIR)
    cfg = compose_config(args)
    cluster = build_cluster(cfg)
    costs = build_costs(cfg, cluster)
    mix = " + ".join(f"{c} {t}" for t, c in zip(cluster.gpu_types, cluster.counts))
    return Candidate(name, spec, mix, cluster.total_gpus, costs.per_h_usd(cluster.counts), counts)
