"""What a run shows: the summary states which way each metric is better, run.log holds what the
run printed, a single run lands in MLflow's "runs" experiment, and the progress bar counts every
job once (and stays silent off a terminal)."""

import io

import pytest
from omegaconf import OmegaConf

from fairsim.experiment.compose import compose_config
from fairsim.experiment.output import emit, progress_bar
from fairsim.experiment.single import (
    build_cluster,
    build_jobs,
    build_policy,
    format_summary,
    run_config,
)
from fairsim.sim.config import SimConfig
from fairsim.sim.engine import simulate


def test_summary_states_the_direction_of_every_metric():
    out = run_config(compose_config(["num_jobs=12", "policy=fifo"]))
    text = format_summary(out.summary)
    line = {
        key: next(x for x in text.splitlines() if x.strip().startswith(key))
        for key in ("avg JCT", "makespan", "rho (FTF)", "rho < 1", "starvation", "GPU utilization")
    }
    assert "lower is better" in line["avg JCT"] and "lower is better" in line["makespan"]
    assert "lower is fairer; < 1 = better than fair share" in line["rho (FTF)"]
    assert "higher is fairer" in line["rho < 1"]
    assert "higher is better" in line["GPU utilization"] and "lower is better" in line["starvation"]


def test_progress_bar_counts_every_job_and_is_silent_off_a_terminal(capsys):
    steps = []
    with progress_bar(12, "x", enabled=None) as advance:  # pytest's stderr is not a terminal
        assert advance is None
    with progress_bar(12, "fifo", enabled=True) as advance:
        cfg = compose_config(["num_jobs=12", "policy=fifo"])
        cluster = build_cluster(cfg)
        _, jobs = build_jobs(cfg, cluster)
        simulate(
            jobs,
            cluster,
            build_policy(cfg.policy),
            SimConfig.from_config(OmegaConf.to_container(cfg.sim)),
            progress=lambda n: (steps.append(n), advance(n)),
        )
    assert sum(steps) == 12 and all(n > 0 for n in steps)
    err = capsys.readouterr().err
    assert "fifo:" in err and "/12 [" in err  # the bar was drawn on stderr (tqdm throttles its redraws)


def test_emit_appends_to_run_log(tmp_path):
    stream = io.StringIO()
    emit("one", tmp_path, stream)
    emit("two", tmp_path, stream)
    assert (tmp_path / "run.log").read_text() == stream.getvalue() == "one\ntwo\n"


@pytest.mark.slow
def test_single_run_log_and_mlflow(tmp_path, run_py):
    proc = run_py(f"results_dir={tmp_path}", "num_jobs=20", "policy=fifo")
    assert proc.returncode == 0, proc.stderr
    (folder,) = list((tmp_path / "runs").iterdir())
    assert (folder / "run.log").read_text() == proc.stdout  # exactly what the run printed
    assert "lower is fairer" in proc.stdout and 'experiment "runs"' in proc.stdout
    assert f" -m fairsim.experiment.ui {tmp_path.resolve()})" in proc.stdout  # the UI of this store, from any folder
    assert proc.stderr == ""  # no progress bar off a terminal, no warnings
    from fairsim.experiment.tracking import RUNS_EXPERIMENT, logged_cells

    assert logged_cells(tmp_path, RUNS_EXPERIMENT) == [folder.name]


@pytest.mark.slow
def test_track_false_keeps_a_single_run_out_of_mlflow(tmp_path, run_py):
    proc = run_py(f"results_dir={tmp_path}", "num_jobs=10", "policy=fifo", "track=false")
    assert proc.returncode == 0, proc.stderr
    assert "MLflow" not in proc.stdout and not (tmp_path / "mlflow.db").exists()
