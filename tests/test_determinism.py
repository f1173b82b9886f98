"""Same config and seed, bit-identical per-job results: serially, through joblib (a
Hydra sweep on the loky backend, two cells with the same config), and in a rerun of run.py.

What is compared: the per-job table (jobs.parquet: a SHA-256 over pandas' row hashes plus the
column names and dtypes, and the parquet file bytes), the per-round table without its timing
column, and the summary without its timing keys. rounds.parquet's ``policy_s`` and the
summary's wall-clock keys measure this machine, not the simulation, and are not expected to
repeat. Subprocesses get a fresh random PYTHONHASHSEED each, so set or dict ordering leaking into
results would show up here.
"""

from __future__ import annotations

import hashlib
import io
import json

import pandas as pd
import pytest

from fairsim.experiment.compose import compose_config
from fairsim.experiment.refcheck import is_timed
from fairsim.experiment.single import run_config

RUN = ["seed=3", "num_jobs=40"]


def table_hash(df: pd.DataFrame) -> str:
    h = hashlib.sha256(pd.util.hash_pandas_object(df, index=True).to_numpy().tobytes())
    h.update(repr([(c, str(t)) for c, t in df.dtypes.items()]).encode())
    return h.hexdigest()


def parquet_bytes(df: pd.DataFrame) -> bytes:
    buf = io.BytesIO()
    df.to_parquet(buf, index=False)
    return buf.getvalue()


def untimed(summary: dict) -> dict:
    return {k: v for k, v in summary.items() if not is_timed(k)}


def as_written(summary: dict) -> dict:
    """The summary as summary.json holds it (JSON has no NaN: null)."""
    return json.loads(json.dumps({k: None if isinstance(v, float) and v != v else v for k, v in summary.items()}))


def serial(policy: str):
    return run_config(compose_config([f"policy={policy}", *RUN]))


# solver-based and stateful policies: the likeliest to leak nondeterminism
@pytest.mark.parametrize("policy", ["ours", "gavel", "gavel_mmf", "themis", "allox", "pal"])
def test_serial_reruns_are_bit_identical(policy):
    a, b = serial(policy), serial(policy)
    assert a.summary["finished_jobs"] == 40
    assert table_hash(a.jobs) == table_hash(b.jobs)
    assert parquet_bytes(a.jobs) == parquet_bytes(b.jobs)
    pd.testing.assert_frame_equal(a.rounds.drop(columns="policy_s"), b.rounds.drop(columns="policy_s"))
    assert json.dumps(untimed(a.summary), sort_keys=True) == json.dumps(untimed(b.summary), sort_keys=True)


def test_a_different_seed_changes_the_table():
    """The hash is sensitive: another seed gives another trace and other results."""
    a = serial("fifo")
    b = run_config(compose_config(["policy=fifo", "seed=4", "num_jobs=40"]))
    assert table_hash(a.jobs) != table_hash(b.jobs)


@pytest.mark.slow
def test_joblib_sweep_and_rerun_match_the_serial_run(tmp_path, run_py):
    expected = {p: serial(p) for p in ("ours", "gavel")}
    # two cells per policy with identical configs (+tag only names the folder), on joblib workers
    proc = run_py("-m", f"results_dir={tmp_path}", "sweep_name=det", "+tag=a,b", "policy=ours,gavel", *RUN)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    sweep = tmp_path / "sweeps" / "det"
    cell_bytes = {}
    for policy, out in expected.items():
        for tag in ("a", "b"):
            cell = sweep / f"+tag={tag},num_jobs=40,policy={policy},seed=3"
            jobs = pd.read_parquet(cell / "jobs.parquet")
            assert table_hash(jobs) == table_hash(out.jobs), (policy, tag)
            cell_bytes[policy, tag] = (cell / "jobs.parquet").read_bytes()
            assert untimed(json.loads((cell / "summary.json").read_text())) == as_written(untimed(out.summary))
        assert cell_bytes[policy, "a"] == cell_bytes[policy, "b"] == parquet_bytes(out.jobs)

    # a rerun from the command line, outside any sweep
    proc = run_py(f"results_dir={tmp_path}", "policy=ours", *RUN)
    assert proc.returncode == 0, proc.stderr[-2000:]
    (run_dir,) = (tmp_path / "runs").iterdir()
    assert (run_dir / "jobs.parquet").read_bytes() == cell_bytes["ours", "a"]
    rounds = pd.read_parquet(run_dir / "rounds.parquet").drop(columns="policy_s")
    pd.testing.assert_frame_equal(rounds, expected["ours"].rounds.drop(columns="policy_s"))
