"""The policy contract, broken on purpose: every breach is one line naming the policy, the
simulated time, the job (its trace job_id), the GPU type and why; an answer that is not
integers is refused, never truncated (a -0.5 once read as type 0 and ended in a misleading
"oversubscribed"). Through ``python run.py``: that line and exit 1, the traceback only with
FAIRSIM_DEBUG=1, and a sweep cell keeps the line in its error.txt."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from fairsim.errors import InputError
from fairsim.policies.base import Policy
from fairsim.sim.config import SimConfig
from fairsim.sim.engine import PolicyContractError, simulate
from fairsim.testing import toy_cluster, toy_jobs

CLUSTER = toy_cluster({"T4": 2, "A10": 4})  # T4: 16 GB, A10: 24 GB (the datasheet)
IDS = [100, 200, 300]


class Answers(Policy):
    """Runs nothing until t = 600 s, then gives the scripted answer (a list, as a policy author might)."""

    def __init__(self, answer):
        self.answer = answer

    def decide(self, view):
        return self.answer if view.now >= 600 else [-1] * view.num_jobs


def jobs():
    """Job 100: a gang of 4 (too wide for T4); job 200: 20 GB per worker (too big for T4); job 300:
    allowed on A10 only (its gpu_types)."""
    base = toy_jobs(
        [[1.0, 1.0], [1.0, 1.0], [1.0, 1.0]],
        work=[1000.0] * 3,
        workers=[4, 1, 1],
        feasible=[[False, True], [False, True], [False, True]],
    )
    return dataclasses.replace(base, job_id=np.array(IDS), mem_per_worker_gb=np.array([1.0, 20.0, 1.0]))


def breach(answer) -> str:
    with pytest.raises(PolicyContractError) as caught:
        simulate(jobs(), CLUSTER, Answers(answer), SimConfig(round_len_s=300))
    message = str(caught.value)
    assert len(message.splitlines()) == 1 and message.startswith("policy Answers at t=600.0 s "), message
    return message


@pytest.mark.parametrize(
    "answer, said",
    [
        (
            [-0.5, -1, -1],
            "gave job 100 the type -0.5 (float64 answer); an assignment is integers: a GPU type index 0..1, or -1 to wait",
        ),
        ([np.nan, -1, -1], "gave job 100 the type nan (float64 answer)"),
        ([-1, 0.5, -1], "gave job 200 the type 0.5 (float64 answer)"),
        ([True, False, False], "gave job 100 the type True (bool answer)"),
        ([-1, None, -1], "gave job 200 the type None (object answer)"),
    ],
)
def test_an_answer_that_is_not_integers_is_refused_never_cast(answer, said):
    assert said in breach(answer)


def test_whole_floats_are_integers_still():
    class OneAtATime(Policy):  # the first active job on A10, as a float array
        def decide(self, view):
            return np.where(np.arange(view.num_jobs) == 0, 1.0, -1.0)

    out = simulate(jobs(), CLUSTER, OneAtATime(), SimConfig(round_len_s=300))
    assert np.isfinite(out.jobs["finish_s"]).all()


@pytest.mark.parametrize(
    "answer, said",
    [
        ([-1, 2, -1], "put job 200 on type index 2, outside -1..1 (-1 waits; 0 = T4, 1 = A10)"),
        ([-2, -1, -1], "put job 100 on type index -2, outside -1..1"),
        ([-1, -1, 1e20], "put job 300 on type index 1e+20, outside -1..1"),
        ([0, -1, -1], "put job 100 on T4, a type it cannot run on: its gang of 4 is wider than the type's 2 GPUs"),
        ([-1, 0, -1], "put job 200 on T4, a type it cannot run on: it needs 20.0 GB per worker, the type has 16 GB"),
        (
            [-1, -1, 0],
            "put job 300 on T4, a type it cannot run on: the type is outside the job's gpu_types, or its model has no "
            "throughput there",
        ),
        ([1, 1, -1], "oversubscribed A10: 5 GPUs of 4 (jobs and their gangs: 100 (4), 200 (1))"),
        ([1, -1], "returned 2 entries for 3 active jobs"),
    ],
)
def test_each_breach_names_time_job_type_and_why(answer, said):
    assert said in breach(answer)


def test_a_decision_asked_for_in_the_past_names_the_time():
    class Stuck(Answers):
        def next_decision_s(self, view, assignment):
            return view.now - 1

    with pytest.raises(
        PolicyContractError, match=r"^policy Stuck at t=0.0 s asked to decide again at -1.0, not after now"
    ):
        simulate(jobs(), CLUSTER, Stuck([-1, -1, -1]), SimConfig(clock="events", round_len_s=300))


def test_a_policy_that_never_runs_a_job_ends_in_one_line():
    """It ran to sim.max_rounds (1e7 rounds: half an hour of Gavel's mechanism with a huge
    recompute interval and recompute_when_idle off, found by the config fuzzer)."""
    with pytest.raises(PolicyContractError) as caught:
        simulate(jobs(), CLUSTER, Answers([-1, -1, -1]), SimConfig(round_len_s=300))
    assert str(caught.value) == (
        "policy Answers at t=300000.0 s ran no job in 1000 steps while 3 jobs waited and no job was left to "
        "arrive: the run would never end (the policy, or options that keep it from starting a waiting job)"
    )
    with pytest.raises(InputError) as caught:  # a smaller sim.max_rounds ends it first
        simulate(jobs(), CLUSTER, Answers([-1, -1, -1]), SimConfig(round_len_s=300, max_rounds=50))
    assert str(caught.value) == (
        "sim: max_rounds: the run stopped after 50 steps at t=15000 s with 3 jobs still active; raise "
        "sim.max_rounds (a policy that leaves jobs waiting forever ends here too)"
    )


# ---- through run.py ------------------------------------------------------------------------------

BROKEN = '''
from fairsim.policies.base import Policy


class HalfPolicy(Policy):
    """Every job on type -0.5: truncated by a cast, it once read as type 0."""

    def __init__(self, backfill: bool = True):
        pass

    def decide(self, view):
        return [-0.5] * view.num_jobs
'''
ARGS = ("policy=fifo", "policy._target_=brokenpol.HalfPolicy", "num_jobs=5", "track=false")


@pytest.fixture
def broken_env(tmp_path):
    (tmp_path / "brokenpol.py").write_text(BROKEN)
    from conftest import ROOT

    return {"PYTHONPATH": f"{tmp_path}:{ROOT}", "FAIRSIM_DEBUG": None}


@pytest.mark.slow
def test_run_py_says_a_broken_policy_in_one_line(tmp_path, run_py, broken_env):
    proc = run_py(*ARGS, f"hydra.run.dir={tmp_path / 'run'}", env=broken_env, timeout=120)
    assert proc.returncode == 1, proc.stderr
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert lines[0].startswith("error: policy HalfPolicy at t=0.0 s gave job 0 the type -0.5 (float64 answer)")
    assert lines[0].endswith("(the policy broke the engine's contract; FAIRSIM_DEBUG=1 shows where)")
    assert not (tmp_path / "run" / "summary.json").exists()
    debug = run_py(*ARGS, f"hydra.run.dir={tmp_path / 'debug'}", env={**broken_env, "FAIRSIM_DEBUG": "1"}, timeout=120)
    assert debug.returncode == 1 and "Traceback" in debug.stderr and "PolicyContractError" in debug.stderr


def test_a_sweep_cell_keeps_the_line_in_its_error_file(tmp_path, monkeypatch, capsys):
    """run.py's cell path (fairsim.experiment.task), in process: the cell fails alone, its error.txt holds the one line."""
    from fairsim.experiment.compose import compose_config
    from fairsim.experiment.task import run

    (tmp_path / "brokenpol.py").write_text(BROKEN)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delenv("FAIRSIM_DEBUG", raising=False)
    cell = tmp_path / "sweep" / "seed=0"
    run(compose_config(list(ARGS)), cell, "seed=0", in_sweep=True)
    error = (cell / "error.txt").read_text()
    assert error.startswith("error: policy HalfPolicy at t=0.0 s gave job 0 the type -0.5") and error.count("\n") == 1
    assert "seed=0: FAILED: error: policy HalfPolicy" in capsys.readouterr().err
    assert not (cell / "summary.json").exists()
