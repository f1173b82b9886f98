"""docs/results.md is the result schema: every column and key that runs and sweeps write is
listed there, and everything listed there is written by some run (a small config of every
policy family, a job log with tenants, a variant, a window that outlasts its trace, a GPU type
of the cluster's own) or by the
sweep that collects them."""

from __future__ import annotations

import json
import re

import pandas as pd
import pytest
from conftest import ROOT

from fairsim.experiment.collect import collect, survey
from fairsim.experiment.compose import compose_config
from fairsim.experiment.single import run_config, write_results

PAGE = ROOT / "docs" / "results.md"
SMALL = ["num_jobs=20", "sim.record_schedule=true"]
CONFIGS = [
    *(
        [f"policy={p}", *SMALL]
        for p in (
            "ours",
            "themis",
            "gavel",
            "gavel_ftf",
            "tiresias_las",
            "allox",
            "pal",
            "fifo",
            "srtf",
            "sia",
            "pollux",
        )
    ),
    ["policy=fifo", "policy.backfill=false", *SMALL],  # a policy option that tells two cells apart
    ["policy=fifo", "num_jobs=25"],  # a top-level key that does
    ["policy=ours", "+fft_variant=age_weight_0", *SMALL],  # a variant's label
    ["policy=fifo", "workload=team_cluster"],  # a job log: tenants, rows dropped
    ["policy=sia", "num_jobs=20", "+workload.elastic={fraction: 1.0}", "sim.round_len_s=60"],  # elastic jobs
    ["policy=ours", "num_jobs=20", "capacity=failures", "capacity.failures.gpu_mtbf_h=20"],  # outages
    [
        "policy=fifo",
        "num_jobs=20",
        "+cluster.counts.H100=4",
        "+cluster.gpu_types={H100: {memory_gb: 80, fp32_tflops: 67, fp16_tflops: 989, mem_bw_gb_s: 3350}}",
    ],  # a type of the cluster's own, modelled by a fallback rule: a warning
    [
        "policy=fifo",
        "workload=gavel_generated",
        "cluster=gavel",
        "sim=gavel_compat",
        "workload.num_jobs=30",
        "workload.window=[10,20]",
    ],  # every job arrives before the window's jobs finish: a warning
]


def schema() -> dict[tuple[str, str], list[str]]:
    """(run|sweep, file) -> the names its table on the page lists, in order."""
    tables, current = {}, None
    for line in PAGE.read_text().splitlines():
        heading = re.match(r"## A (run|sweep)'s `([a-z_]+\.[a-z]+)`", line)
        if heading:
            current = tables.setdefault(heading.groups(), [])
        elif current is not None and (row := re.match(r"\| `([^`]+)` \|", line)):
            current.append(row.group(1))
    return tables


def expand(tables: dict, scope: str, name: str) -> list[str]:
    """A listed name as entries: itself, or for ``<jobs.parquet>`` the run table's entries."""
    return tables[("run", name[1:-1])] if ("run", name.strip("<>")) in tables else [name]


def matches(entry: str, name: str) -> bool:
    return (
        re.fullmatch("".join(".+" if p.startswith("<") else re.escape(p) for p in re.split(r"(<[^>]+>)", entry)), name)
        is not None
    )


@pytest.fixture(scope="module")
def written(tmp_path_factory):
    """(run|sweep, file) -> the names every run or the sweep wrote."""
    sweep = tmp_path_factory.mktemp("sweeps") / "schema"
    out: dict[tuple[str, str], set[str]] = {}
    for i, overrides in enumerate(CONFIGS):
        cfg = compose_config([*overrides, "track=false"])
        folder = write_results(run_config(cfg), sweep / f"cell{i:02d}", cfg)
        for table in ("jobs", "rounds", "tenants", "schedule"):
            if (folder / f"{table}.parquet").is_file():
                out.setdefault(("run", f"{table}.parquet"), set()).update(
                    pd.read_parquet(folder / f"{table}.parquet").columns
                )
        for record in ("summary", "provenance"):
            out.setdefault(("run", f"{record}.json"), set()).update(json.loads((folder / f"{record}.json").read_text()))
    collect(sweep, survey(sweep)[0])
    for table in ("results", "jobs", "tenants"):
        out[("sweep", f"{table}.parquet")] = set(pd.read_parquet(sweep / f"{table}.parquet").columns)
    return out


@pytest.mark.slow
def test_every_written_name_is_on_the_page(written):
    tables = schema()
    assert set(tables) == set(written)
    for key, names in written.items():
        entries = [e for name in tables[key] for e in expand(tables, key[0], name)]
        missing = sorted(n for n in names if not any(matches(e, n) for e in entries))
        assert missing == [], f"{key[0]}'s {key[1]} writes names docs/results.md does not list: {missing}"


@pytest.mark.slow
def test_every_name_on_the_page_is_written(written):
    for key, listed in schema().items():
        unwritten = [
            name
            for name in listed
            if not any(matches(e, n) for e in expand(schema(), key[0], name) for n in written[key])
        ]
        assert unwritten == [], f"docs/results.md lists names {key[0]}'s {key[1]} never writes: {unwritten}"


def test_the_page_parses_into_every_table():
    tables = schema()
    assert set(tables) == {
        ("run", f)
        for f in (
            "jobs.parquet",
            "rounds.parquet",
            "tenants.parquet",
            "schedule.parquet",
            "summary.json",
            "provenance.json",
        )
    } | {("sweep", f) for f in ("results.parquet", "jobs.parquet", "tenants.parquet")}
    assert (
        matches("gpu_s_<type>", "gpu_s_T4") and not matches("gpu_s_<type>", "gpu_s_") and not matches("jct_s", "jct_s2")
    )
    assert "jct_s" in expand(tables, "sweep", "<jobs.parquet>")
