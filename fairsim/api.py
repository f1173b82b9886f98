"""fairsim as a library: one run, a sweep, and any run or sweep folder read back.

    import fairsim
    r = fairsim.run("policy=themis", "num_jobs=100", track=False)
    r.jobs.shape, r.summary["avg_jct_s"]

Each call is the command line's: ``run`` composes the same config (conf/config.yaml and the
overrides) and runs it through Hydra and the task function ``python run.py`` runs
(fairsim/experiment/task.py), so the run folder, its provenance and its MLflow run are those
``python run.py <overrides>`` makes; ``sweep`` is ``python run.py -m <overrides>`` in a process of
its own (cells, identity, staleness, collection and MLflow as from the command line), and reads
the sweep's tables back. Overrides are Hydra's, as on the command line; keyword arguments are
the same overrides written as Python values (``load=0.8``, ``track=False``,
``**{"cluster.counts.T4": 4}``; in a sweep a list is the values to sweep).

Bad input (a preset or key that does not exist, a bad value, a trace that does not read) raises
``fairsim.errors.InputError`` with the command line's one-line message.
"""

from __future__ import annotations

import functools
import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from fairsim.errors import InputError

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["run", "sweep", "load", "Run", "Sweep", "SweepError"]


class SweepError(RuntimeError):
    """A sweep that ended badly (a failed cell, a dead worker, a full disk): its complete cells are
    kept in ``folder`` (``fairsim.load(folder)`` reads them); the message holds the sweep's lines."""

    def __init__(self, message: str, folder: Path) -> None:
        super().__init__(message)
        self.folder = folder


# ---- results --------------------------------------------------------------------------------------


def _table(path: Path) -> pd.DataFrame | None:
    import pandas as pd

    return pd.read_parquet(path) if path.is_file() else None


@dataclass(frozen=True)
class Run:
    """One run's folder and what it holds ([docs/results.md](results.md): every column and key). Tables are read
    from the folder on first use."""

    folder: Path

    @functools.cached_property
    def jobs(self) -> pd.DataFrame:
        """jobs.parquet: one row per job."""
        return _table(self.folder / "jobs.parquet")

    @functools.cached_property
    def rounds(self) -> pd.DataFrame:
        """rounds.parquet: one row per round (or stretch of identical rounds)."""
        return _table(self.folder / "rounds.parquet")

    @functools.cached_property
    def tenants(self) -> pd.DataFrame | None:
        """tenants.parquet: one row per tenant; None when no job names a tenant."""
        return _table(self.folder / "tenants.parquet")

    @functools.cached_property
    def schedule(self) -> pd.DataFrame | None:
        """schedule.parquet: one row per (round, active job); None unless ``sim.record_schedule=true``."""
        return _table(self.folder / "schedule.parquet")

    @functools.cached_property
    def summary(self) -> dict:
        """summary.json: the run's metrics (None where a metric is not defined for the run)."""
        return json.loads((self.folder / "summary.json").read_text())

    @functools.cached_property
    def provenance(self) -> dict | None:
        """provenance.json: the code, input files and environment that made the run."""
        from fairsim.experiment.provenance import read

        return read(self.folder)

    @functools.cached_property
    def config(self) -> dict:
        """config.yaml: the resolved config the run used."""
        import yaml

        return yaml.safe_load((self.folder / "config.yaml").read_text())

    def __repr__(self) -> str:
        return f"fairsim.Run({str(self.folder)!r})"


@dataclass(frozen=True)
class Sweep:
    """A sweep's folder and its collected tables ([docs/results.md](results.md)). Tables are read on first use."""

    folder: Path

    @functools.cached_property
    def results(self) -> pd.DataFrame:
        """results.parquet: one row per complete cell (labels, varying keys, summary, provenance)."""
        return _table(self.folder / "results.parquet")

    @functools.cached_property
    def jobs(self) -> pd.DataFrame | None:
        """jobs.parquet: every cell's jobs, each row with its cell's identity columns."""
        return _table(self.folder / "jobs.parquet")

    @functools.cached_property
    def tenants(self) -> pd.DataFrame | None:
        """tenants.parquet: every cell's tenants; None when no job names a tenant."""
        return _table(self.folder / "tenants.parquet")

    @property
    def cells(self) -> list[Run]:
        """Each collected cell as a Run, in the order of ``results``' rows."""
        return [Run(self.folder / name) for name in self.results["cell"]]

    def __repr__(self) -> str:
        return f"fairsim.Sweep({str(self.folder)!r})"


def load(path: str | os.PathLike) -> Run | Sweep:
    """A run folder (it has summary.json) as a Run, a sweep folder (results.parquet) as a Sweep.
    Raises InputError for a folder that is neither, or a run that never completed."""
    from fairsim.experiment.run_folder import RESULTS, SUMMARY, why_incomplete

    folder = Path(path)
    if (folder / RESULTS).is_file():
        return Sweep(folder)
    if not folder.is_dir():
        raise InputError("fairsim.load", str(path), "no such folder")
    if not (folder / SUMMARY).is_file() and not any(folder.iterdir()):
        raise InputError(
            "fairsim.load", str(path), "an empty folder: neither a run (summary.json) nor a sweep (results.parquet)"
        )
    why = why_incomplete(folder)
    if why is not None:
        raise InputError(
            "fairsim.load", str(path), f"not a complete run folder ({why}) nor a sweep folder (no {RESULTS})"
        )
    return Run(folder)


# ---- overrides ------------------------------------------------------------------------------------


def _value(value: Any) -> str:
    """A Python value as Hydra's override grammar writes it."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    if isinstance(value, (list, tuple)):
        return "[" + ",".join(_value(v) for v in value) + "]"
    return str(value)


def overrides_of(overrides: Iterable[str | list[str]], keys: dict[str, Any], sweep: bool = False) -> list[str]:
    """The command line's overrides: ``overrides`` as written (a list among them counts as its
    items), then ``keys`` as ``key=value`` (in a sweep a list or tuple is the values to sweep,
    ``key=a,b``)."""
    out = [o for item in overrides for o in (item if isinstance(item, (list, tuple)) else [item])]
    bad = [o for o in out if not isinstance(o, str)]
    if bad:
        raise InputError("fairsim", "overrides", f"each must be a string such as 'load=0.8', got {bad[0]!r}")
    for key, value in keys.items():
        if sweep and isinstance(value, (list, tuple)):
            out.append(f"{key}={','.join(_value(v) for v in value)}")
        else:
            out.append(f"{key}={_value(value)}")
    return out


# ---- one run --------------------------------------------------------------------------------------


def run(*overrides: str, **keys: Any) -> Run:
    """One simulation, as ``python run.py <overrides>``: the result files in a new run folder
    (``results/runs/...``), its summary printed (and kept in its run.log), logged to MLflow unless
    ``track=False``. Returns the run (``.jobs``, ``.rounds``, ``.tenants``, ``.summary``, ``.folder``,
    ``.provenance``). Raises InputError for bad input."""
    args = overrides_of(overrides, keys)
    from fairsim.experiment.cli import check_group_choices
    from fairsim.experiment.compose import CONF_DIR

    args = check_group_choices(args, CONF_DIR)  # policy=FFT is policy=ours, as on the command line
    return Run(_run_with_hydra(args, CONF_DIR))


def _run_with_hydra(args: list[str], conf_dir: Path) -> Path:
    """Hydra's run of the task function over conf/config.yaml and ``args``, as ``python run.py``
    makes it (its run folder, .hydra/ record and callbacks); the Python logging of the caller is
    left as it is. Hydra's config errors become InputError, worded as the command line's."""
    from hydra import initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra
    from hydra.errors import HydraException
    from omegaconf.errors import OmegaConfBaseException

    from fairsim.experiment.cli import hydra_error_line
    from fairsim.experiment.task import task

    started, failed = [], []

    def job(cfg):
        started.append(True)
        try:
            return task(cfg, raise_errors=True)
        except Exception as exc:  # raised below as it is: Hydra's own re-raise first prints a line of its own
            failed.append(exc)

    with initialize_config_dir(config_dir=str(conf_dir), job_name="run", version_base="1.3"):
        try:
            done = GlobalHydra.instance().hydra.run(
                config_name="config", task_function=job, overrides=args, with_log_configuration=False
            )
        except (HydraException, OmegaConfBaseException) as exc:
            if started:
                raise
            raise InputError.from_line(hydra_error_line(exc, args, conf_dir)) from None
    if failed:
        raise failed[0]
    return done.return_value


# ---- a sweep --------------------------------------------------------------------------------------


def sweep(*overrides: str, **keys: Any) -> Sweep:
    """A sweep, as ``python run.py -m <overrides>`` (run in a process of its own, its lines printed
    as they come): every combination of the swept values, complete and fresh cells skipped,
    collected into the sweep's folder and logged to MLflow. Returns the sweep (``.results``,
    ``.jobs``, ``.tenants``, ``.folder``). Raises InputError for bad input, SweepError when a cell
    failed or the sweep could not finish (its complete cells are kept), KeyboardInterrupt on
    Ctrl-C (after the sweep has collected its complete cells)."""
    args = overrides_of(overrides, keys, sweep=True)
    from fairsim.experiment.cli import check_group_choices
    from fairsim.experiment.compose import CONF_DIR

    args = check_group_choices(args, CONF_DIR)  # policy=FFT is policy=ours, as on the command line
    folder = _sweep_folder(args, CONF_DIR)
    code, lines = _run_py(CONF_DIR.parent / "run.py", ["-m", *args])
    if code == 2 and lines:  # bad input: the last line is the command line's one-line error
        raise InputError.from_line(lines[-1])
    if code == 130:  # Ctrl-C (fairsim/experiment/interrupt.py): the sweep collected its complete cells and said so
        raise KeyboardInterrupt
    if code != 0:
        raise SweepError("\n".join(lines) or f"the sweep ended with exit status {code}", folder)
    return Sweep(folder)


def _first_cell(args: list[str]) -> list[str]:
    """``args`` with each swept override at its first value: the grid's first cell."""
    from hydra.core.override_parser.overrides_parser import OverridesParser

    first = []
    for arg, parsed in zip(args, OverridesParser.create().parse_overrides(args)):
        first.append(
            f"{parsed.get_key_element()}={next(iter(parsed.sweep_string_iterator()))}"
            if parsed.is_sweep_override()
            else arg
        )
    return first


def _sweep_folder(args: list[str], conf_dir: Path) -> Path:
    """The sweep's folder (``hydra.sweep.dir``), from the config of the grid's first cell, composed
    here: a config error is raised before any process starts."""
    from hydra.errors import HydraException
    from omegaconf import OmegaConf
    from omegaconf.errors import OmegaConfBaseException

    from fairsim.experiment.cli import hydra_error_line
    from fairsim.experiment.compose import compose_config

    try:
        cfg = compose_config(_first_cell(args), return_hydra_config=True)
        return Path(OmegaConf.select(cfg, "hydra.sweep.dir"))
    except (HydraException, OmegaConfBaseException) as exc:
        raise InputError.from_line(hydra_error_line(exc, args, conf_dir)) from None


def _child_path(repository: Path) -> str:
    """PYTHONPATH for the sweep's process (``python <repository>/run.py``): the folders this
    process imports from (the working folder for ''), and this process's PYTHONPATH, so that a
    policy module of the caller's is found there as it is here. Left out: the interpreter's own
    folders (the child has them), the repository (run.py's folder, first on the child's path
    already) and the folder that holds it, whose files are no module of fairsim's or the
    caller's that a worker needs: a stray ``click.py`` there would shadow a package in every
    worker."""
    repository = repository.resolve()
    skip = {repository, repository.parent}
    own = [Path(p).resolve() for p in (sys.prefix, sys.base_prefix)]
    given = [*sys.path, *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))]
    folders = [Path(p or os.getcwd()).resolve() for p in given]
    keep = [f for f in folders if f.is_dir() and f not in skip and not any(f == o or o in f.parents for o in own)]
    return os.pathsep.join(dict.fromkeys(map(str, keep)))


def _run_py(script: Path, args: list[str], keep: int = 20) -> tuple[int, list[str]]:
    """Run ``python script *args`` from the working folder: its stdout passes through, its stderr
    is printed line by line as it comes; returns its exit status and its last ``keep`` stderr
    lines. Ctrl-C here is passed on to it and waited for (it ends in its own way)."""
    env = {**os.environ, "PYTHONPATH": _child_path(script.parent)}
    lines: list[str] = []
    with subprocess.Popen([sys.executable, str(script), *args], stderr=subprocess.PIPE, text=True, env=env) as proc:
        try:
            for line in proc.stderr:
                sys.stderr.write(line)
                lines = [*lines[-keep + 1 :], line.rstrip("\n")]
            proc.wait()
        except KeyboardInterrupt:
            proc.send_signal(signal.SIGINT)
            proc.wait()
            raise
    return proc.returncode, lines
