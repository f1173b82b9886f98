"""make verify: a manifest written from fresh cells matches their recomputation, and a changed
per-job table fails naming its cell and job."""

from __future__ import annotations

import json
import shutil

import pandas as pd
import pytest

from fairsim.errors import InputError
from fairsim.experiment.collect import collect
from fairsim.experiment.compose import compose_config
from fairsim.experiment.digest import job_digests, table_digest
from fairsim.experiment.single import run_config, write_results
from fairsim.paper import verify

CELL = "num_jobs=10,policy=fifo"
PLAN = {
    "scales": {"small": {"suffix": ""}},
    "sweeps": {"tiny": {"preset": "smoke", "small": []}},
    "verify": {"cells": [{"sweep": "tiny", "scale": "small", "match": ["policy=fifo"]}]},
}


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    """A results folder with one fresh cell of the sweep ``smoke`` (the plan's role ``tiny``)."""
    root = tmp_path_factory.mktemp("results")
    cfg = compose_config(verify.cell_overrides(PLAN, "tiny", CELL))
    write_results(run_config(cfg), root / "sweeps" / "smoke" / CELL, cfg)
    collect(root / "sweeps" / "smoke")
    return root


def test_the_digests_see_one_changed_value_and_name_its_job(results):
    jobs = pd.read_parquet(results / "sweeps" / "smoke" / CELL / "jobs.parquet")
    changed = jobs.copy()
    changed.loc[3, "finish_s"] = float(jobs.loc[3, "finish_s"]) + 1e-9
    assert table_digest(changed) != table_digest(jobs)
    before, after = job_digests(jobs), job_digests(changed)
    assert [i for i, (a, b) in enumerate(zip(before, after)) if a != b] == [3]
    assert table_digest(jobs.copy()) == table_digest(jobs)


def test_a_manifest_matches_its_recomputation(results, tmp_path, capsys):
    manifest = tmp_path / "MANIFEST.json"
    assert verify.write(PLAN, results, manifest) == 0
    entry = json.loads(manifest.read_text())["cells"][0]
    assert entry["cell"] == CELL and entry["overrides"] == ["+experiment=smoke", "num_jobs=10", "policy=fifo"]
    assert entry["jobs"] == 10 and len(entry["job_digests"]) == 80
    assert set(entry["provenance"]) == set(verify.KEPT) and "host" not in entry["provenance"]
    assert verify.verify(manifest, workers=1) == 0
    assert "[verify] smoke/num_jobs=10,policy=fifo: identical" in capsys.readouterr().out


def test_a_changed_per_job_table_fails_naming_cell_and_job(results, tmp_path, capsys):
    manifest = tmp_path / "MANIFEST.json"
    verify.write(PLAN, results, manifest)
    data = json.loads(manifest.read_text())
    entry = data["cells"][0]
    jobs = pd.read_parquet(results / "sweeps" / "smoke" / CELL / "jobs.parquet")
    jobs.loc[4, "jct_s"] = float(jobs.loc[4, "jct_s"]) * 2  # as if the committed figures came from other numbers
    entry["jobs_digest"], entry["job_digests"] = table_digest(jobs), "".join(job_digests(jobs))
    manifest.write_text(json.dumps(data))
    assert verify.verify(manifest, workers=1) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [
        f"[verify] FAILED after {err[0].split('after ')[1].split(' s')[0]} s: smoke/{CELL}: per-job table, "
        f"first at job {int(jobs.loc[4, 'job_id'])} (row 4)"
    ]


def test_the_manifest_is_written_from_fresh_cells_only(results, tmp_path):
    stale = tmp_path / "results"
    shutil.copytree(results, stale)
    (stale / "sweeps" / "smoke" / CELL / "provenance.json").unlink()
    with pytest.raises(InputError, match="not fresh .*made before runs recorded their provenance"):
        verify.write(PLAN, stale, tmp_path / "MANIFEST.json")
