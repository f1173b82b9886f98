"""MLflow logging of a sweep, done by one process after the cells ran.

Store: ``sqlite:///<results>/mlflow.db`` (never the file store), artifacts in
``<results>/mlartifacts/<experiment>/``. One MLflow experiment per sweep, holding one parent run
named after the sweep (tag ``fairsim.role`` = ``sweep``) and one child run per cell (MLflow's
``mlflow.parentRunId`` tag names the parent), so the UI shows the cells nested under their
sweep. Single runs go to the experiment "runs", one run per run folder, without a parent.

Run names lead with the policy, then the cell's overrides whose values differ between the
sweep's cells (``ours load=0.8 seed=3``; a single run: the policy, then its folder's name); a
resumed sweep renames its logged runs when a new cell makes another override vary.

A run carries
- params: the cell's resolved config (flattened); metrics: its numeric summary;
- tags from the folder's provenance.json, under MLflow's own names where MLflow has one:
  source name (the script, ``run.py``) and type (LOCAL), git commit and dirty flag (the
  repository's: a tracked file changed or an untracked one), user; fairsim's own:
  ``fairsim.code_digest``, ``fairsim.deterministic``, ``fairsim.dirty`` (the repository dirty, or simulating code from a
  folder outside it that no clean git checkout holds: more than any commit records),
  ``fairsim.cell``, ``fairsim.sweep``, ``fairsim.result_dir``;
- start and end times of the simulation itself (provenance ``started_at``/``finished_at``), so
  MLflow's Duration is the run's, not the logging's;
- artifacts: config.yaml, summary.json, provenance.json, run.log (the small files; the per-job
  tables stay in the folder).
A folder without provenance.json (made before runs recorded it) is logged without those tags,
with the logging's own times.

Each experiment is marked as a classic ML experiment (``mlflow.experimentKind``); the MLflow
3.17 UI, though, picks its GenAI or ML layout from the ``workflowType`` of the address (else the
browser's last choice, GenAI at first: the kind tag is read only when the UI's workflow switch is
off, which 3.17 builds on), so the address to open is ``runs_url``'s. The runs table's default
columns are MLflow's (source, models, dataset: no metric); each experiment also carries a saved
view (the tag ``mlflow.sharedViewState.fairsim``, what the UI's own "Share" button writes: a JSON
UI state) whose columns are the key metrics (``KEY_METRICS``), and ``runs_url`` opens it
(``viewStateShareKey=fairsim``).

Logging is idempotent: a cell whose FINISHED run has the folder's start time is skipped; a
cell recomputed since it was logged (another start time) and a run left unfinished by a crash
are deleted (their artifacts with them) and the cell logged again, so every cell appears
exactly once, with its present results, however often the sweep is resumed. The parent is
found by its tag and reused (a store logged before parents existed gets one, and its runs are
made its children); its end time and ``cells`` metric follow the children. A run is marked
FINISHED only after its artifacts are written. Creating the store and logging a sweep hold
``<results>/mlflow.db.lock``, so two sweeps ending together see each other's runs (check, then
log, under the lock) and never log a cell twice.
"""

from __future__ import annotations

import datetime as dt
import json
import logging
import math
import os
import shutil
import sys
from pathlib import Path
from urllib.parse import urlparse
from urllib.request import url2pathname

import yaml

from fairsim.experiment import provenance
from fairsim.experiment.run_folder import CONFIG, PROVENANCE, RUN_LOG, SUMMARY, flatten

CELL_TAG = "fairsim.cell"
SWEEP_TAG = "fairsim.sweep"
RESULT_DIR_TAG = "fairsim.result_dir"
CODE_DIGEST_TAG = "fairsim.code_digest"
DIRTY_TAG = "fairsim.dirty"
DETERMINISTIC_TAG = "fairsim.deterministic"  # "false": a wall-clock solver limit could have cut decisions
# MLflow's experiment-kind tag and its value for classic ML: what its UI writes when a user picks
# "Machine learning" (mlflow/server/js: setExperimentTag key "mlflow.experimentKind"); MLflow's
# Python package has no constant for it
EXPERIMENT_KIND_TAG = "mlflow.experimentKind"
CUSTOM_MODEL_KIND = "custom_model_development"
ROLE_TAG = "fairsim.role"  # "sweep" on a sweep's parent run
SWEEP_ROLE = "sweep"
# the UI's saved views: its "Share" button writes the UI state as the experiment tag
# mlflow.sharedViewState.<key>, and an address with viewStateShareKey=<key> opens it
# (mlflow/server/js: EXPERIMENT_PAGE_VIEW_STATE_SHARE_TAG_PREFIX, EXPERIMENT_PAGE_VIEW_STATE_SHARE_URL_PARAM_KEY)
VIEW_KEY = "fairsim"
VIEW_TAG = f"mlflow.sharedViewState.{VIEW_KEY}"
RUN_NAME_TAG = "mlflow.runName"  # MLflow's run-name tag (mlflow.utils.mlflow_tags.MLFLOW_RUN_NAME)
KEY_METRICS = (
    "avg_jct_s",
    "rho_fluid_mean",
    "makespan_s",
)  # the columns of fairsim's view: mean JCT, mean rho, makespan
ARTIFACTS = (CONFIG, SUMMARY, PROVENANCE, RUN_LOG)  # small files only: the per-job tables stay in the folder
RUNS_EXPERIMENT = "runs"  # single runs (python run.py without -m), one MLflow run per run folder
STORE_LOCK_WAIT_S = 600  # a sweep's logging takes seconds; past this the other holder is presumed stuck
UI_ADDRESS = "http://127.0.0.1:5000"  # where `make ui` (python -m fairsim.experiment.ui) serves


def tracking_uri(results_dir: Path) -> str:
    return f"sqlite:///{Path(results_dir).resolve() / 'mlflow.db'}"


def ui_command(results_dir: Path) -> str:
    """The command that serves this store's UI, from any folder: this Python with
    ``-m fairsim.experiment.ui`` and the store's folder, absolute (``make ui`` works only in the
    repository)."""
    import shlex

    return shlex.join([sys.executable, "-m", "fairsim.experiment.ui", str(Path(results_dir).resolve())])


def view_state() -> str:
    """The saved view's UI state (JSON, as the UI's Share button writes it): the key metrics as
    the runs table's columns, after the run name, and the runs sorted by name (policy, then the
    varying overrides), which the UI shows as one flat list (sorted by time, its default, it
    folds the cells under their parent); every other setting the UI's default."""
    state = {
        "selectedColumns": [f"metrics.`{m}`" for m in KEY_METRICS],
        "orderByKey": f"tags.`{RUN_NAME_TAG}`",
        "orderByAsc": True,
    }
    return json.dumps(state, separators=(",", ":"))


def _client(results_dir: Path):
    os.environ.setdefault("MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR", "false")
    from mlflow.tracking import MlflowClient

    for name in ("mlflow", "alembic"):  # their INFO lines about creating tables are noise here
        logging.getLogger(name).setLevel(logging.WARNING)
    # MLflow logs each store error with its traceback, then raises it: fairsim says it in one line (store_error_line)
    logging.getLogger("mlflow.store.db.utils").setLevel(logging.CRITICAL)

    Path(results_dir).mkdir(parents=True, exist_ok=True)
    return MlflowClient(tracking_uri=tracking_uri(results_dir))


def store_lock(results_dir: Path):
    from filelock import FileLock

    Path(results_dir).mkdir(parents=True, exist_ok=True)
    return FileLock(Path(results_dir) / "mlflow.db.lock", timeout=STORE_LOCK_WAIT_S)


def store_error_line(
    results_dir: Path,
    exc: BaseException,
    logged: str = "the results files are complete",
    then: str = "rerun the same command to log what was missed",
) -> str:
    """One line naming the store, the cause, what was kept and what to do (the results files are
    unaffected). The cause is the driver's own message (sqlite's "database or disk is full"),
    found through MLflow's and SQLAlchemy's wrappers."""
    cause = exc  # MLflow's exception wraps SQLAlchemy's (its text holds the SQL), which keeps sqlite's in .orig
    while getattr(cause, "orig", None) is not None or (cause.__cause__ is not None and "[SQL:" in str(cause)):
        cause = getattr(cause, "orig", None) or cause.__cause__
    text = str(cause).split("[SQL:")[0]
    text = " ".join(text.split()) or type(exc).__name__
    return (
        f"error: MLflow store {tracking_uri(results_dir)} cannot be opened or written ({text[:200]}); {logged}; "
        f"free space, or repair or move the store away, and {then}"
    )


def ensure_store(results_dir: Path) -> None:
    """Create the database (and its tables) up front, from the parent, before any worker starts."""
    with store_lock(results_dir):
        client = _client(results_dir)
        client.search_experiments(max_results=1)


def _experiment_id(client, name: str, results_dir: Path) -> str:
    exp = client.get_experiment_by_name(name)
    if exp is None:  # artifacts stay beside the database, not in the cwd
        return client.create_experiment(
            name,
            artifact_location=(Path(results_dir).resolve() / "mlartifacts" / name).as_uri(),
            tags={EXPERIMENT_KIND_TAG: CUSTOM_MODEL_KIND, VIEW_TAG: view_state()},
        )
    if exp.lifecycle_stage == "deleted":
        client.restore_experiment(exp.experiment_id)
    _mark(client, exp)
    return exp.experiment_id


def _mark(client, exp) -> None:
    """The kind and the saved view on an experiment made before fairsim set them (or another view)."""
    if EXPERIMENT_KIND_TAG not in exp.tags:
        client.set_experiment_tag(exp.experiment_id, EXPERIMENT_KIND_TAG, CUSTOM_MODEL_KIND)
    if exp.tags.get(VIEW_TAG) != view_state():
        client.set_experiment_tag(exp.experiment_id, VIEW_TAG, view_state())


def mark_experiments(results_dir: Path, lock_wait_s: float = STORE_LOCK_WAIT_S) -> dict[str, str]:
    """Mark every experiment in the store that lacks a kind as classic ML, and give it fairsim's
    saved view (not when another process holds the store for longer than ``lock_wait_s``: its own
    logging marks its experiment); returns name -> id of the active experiments that hold runs."""
    from filelock import Timeout
    from mlflow.entities import ViewType

    client = _client(results_dir)
    experiments = client.search_experiments(view_type=ViewType.ACTIVE_ONLY, max_results=50_000)
    unmarked = [e for e in experiments if EXPERIMENT_KIND_TAG not in e.tags or e.tags.get(VIEW_TAG) != view_state()]
    if unmarked:
        try:
            with store_lock(results_dir).acquire(timeout=lock_wait_s):
                for exp in unmarked:
                    _mark(client, exp)
        except Timeout:
            pass
    return {e.name: e.experiment_id for e in experiments if client.search_runs([e.experiment_id], max_results=1)}


def runs_url(experiment_id: str, address: str = UI_ADDRESS) -> str:
    """The MLflow UI's runs table of an experiment, in fairsim's saved view (the key metrics as
    columns). ``workflowType=machine_learning`` because the 3.17 UI takes its GenAI or ML layout
    from it (else from the browser's last choice, GenAI at first), not from the experiment's kind
    tag."""
    return (
        f"{address.rstrip('/')}/#/experiments/{experiment_id}/runs"
        f"?workflowType=machine_learning&viewStateShareKey={VIEW_KEY}"
    )


def experiment_url(results_dir: Path, name: str, address: str = UI_ADDRESS) -> str | None:
    """``runs_url`` of the experiment ``name``, or None when the store has no such experiment."""
    exp = _client(results_dir).get_experiment_by_name(name)
    return None if exp is None else runs_url(exp.experiment_id, address)


def log_sweep(
    results_dir: Path, sweep_name: str, cells: list[Path], drop: list[str] = (), own_runs_only: bool = False
) -> int:
    """Log every complete cell that is not yet in MLflow, and delete the runs of the folders in
    ``drop`` (another folder holds their config) and, unless ``own_runs_only``, every torn run
    of the experiment. Returns the number of runs logged."""
    with store_lock(results_dir):
        return _log_sweep(results_dir, sweep_name, cells, set(drop), own_runs_only)


def _ms(stamp) -> int | None:
    """Milliseconds since the epoch of an ISO 8601 time with its offset (provenance's), else None."""
    try:
        when = dt.datetime.fromisoformat(stamp)
    except (TypeError, ValueError):
        return None
    return round(when.timestamp() * 1000) if when.tzinfo is not None else None


def _times(record: dict | None) -> tuple[int | None, int | None]:
    """The simulation's (start, end) in ms from its provenance; (None, None) unless both are readable
    and in order, so MLflow then stamps the logging's own times, as for a folder without provenance."""
    start, end = (_ms((record or {}).get(key)) for key in ("started_at", "finished_at"))
    return (start, end) if start is not None and end is not None and end >= start else (None, None)


def run_tags(folder: Path, sweep_name: str, record: dict | None) -> dict[str, str]:
    """The tags of a folder's run: MLflow's own names for what MLflow has a name for."""
    from mlflow.entities import SourceType
    from mlflow.utils import mlflow_tags as mt

    folder = Path(folder)
    tags = {
        CELL_TAG: folder.name,
        SWEEP_TAG: sweep_name,
        RESULT_DIR_TAG: str(folder.resolve()),
        mt.MLFLOW_SOURCE_TYPE: SourceType.to_string(SourceType.LOCAL),
    }
    record = record or {}
    argv = record.get("argv")
    if isinstance(argv, list) and argv and isinstance(argv[0], str) and argv[0]:
        tags[mt.MLFLOW_SOURCE_NAME] = argv[0]
    git = record.get("git")
    if isinstance(git, dict) and isinstance(git.get("commit"), str):
        tags[mt.MLFLOW_GIT_COMMIT] = git["commit"]
        if isinstance(git.get("dirty"), bool):
            tags[mt.MLFLOW_GIT_DIRTY] = str(git["dirty"]).lower()  # MLflow writes its dirty flag as "true"/"false"
    dirty = provenance.dirty(record)  # the repository's, or code from outside it that no clean checkout holds
    if dirty is not None:
        tags[DIRTY_TAG] = str(dirty).lower()
    for key, name in ((mt.MLFLOW_USER, "user"), (CODE_DIGEST_TAG, "code_digest")):
        if isinstance(record.get(name), str) and record[name]:
            tags[key] = record[name]
    if isinstance(record.get("deterministic"), bool):
        tags[DETERMINISTIC_TAG] = str(record["deterministic"]).lower()
    return tags


def _artifact_dir(artifact_uri: str, results_dir: Path) -> Path | None:
    """A run's artifact folder when it lies in this store's artifact root, else None (not ours to remove)."""
    parsed = urlparse(artifact_uri or "")
    if parsed.scheme != "file":
        return None
    path = Path(url2pathname(parsed.path)).resolve()
    return path if path.is_relative_to(Path(results_dir).resolve() / "mlartifacts") else None


def _delete_run(client, run, results_dir: Path) -> None:
    """Delete a run and the artifacts it wrote (a torn run's may be partial; a deleted run's are dead weight)."""
    client.delete_run(run.info.run_id)
    path = _artifact_dir(run.info.artifact_uri, results_dir)
    if path is not None:
        shutil.rmtree(path.parent if path.name == "artifacts" else path, ignore_errors=True)


def _runs_of(cells: list[Path]) -> str:
    """A filter for the runs of these folders alone (a single run's: the experiment "runs" holds
    every single run so far, which a run need not read), or "" (every run) when MLflow's filter
    cannot say it in one condition."""
    if len(cells) != 1 or "'" in cells[0].name:
        return ""
    return f"tags.`{CELL_TAG}` = '{cells[0].name}'"


def cell_overrides(folder: Path) -> list[tuple[str, str]]:
    """A cell's overrides as (key, value), in the order written: those of Hydra's record
    (``.hydra/overrides.yaml``) that name the folder, else the folder's name split at commas."""
    record = Path(folder) / ".hydra" / "overrides.yaml"
    try:
        items = yaml.safe_load(record.read_text())
    except (OSError, yaml.YAMLError):
        items = None
    name = Path(folder).name
    if not isinstance(items, list) or not all(isinstance(i, str) for i in items):
        items = name.split(",")
    else:  # those in the folder's name: not the ones Hydra leaves out of it (sweep_name, results_dir)
        items = [i for i in items if i.replace("/", "%2F") in name]
    pairs = [item.split("=", 1) for item in items if "=" in item]
    return [(key.lstrip("+~"), value) for key, value in pairs]


def run_names(cells: list[Path], policies: dict[str, str], single: bool = False) -> dict[str, str]:
    """Cell folder name -> run name: the policy (``policies``: the cell's, from its summary), then
    each override whose value is not the same in every cell (``ours load=0.8 seed=3``); a single
    run's: the policy, then its folder's name."""
    overrides = {c.name: dict(cell_overrides(c)) for c in cells}
    keys = list(dict.fromkeys(k for o in overrides.values() for k in o if k != "policy"))
    varying = [k for k in keys if len({o.get(k) for o in overrides.values()}) > 1]
    names = {}
    for cell in cells:
        policy = policies.get(cell.name) or overrides[cell.name].get("policy")
        rest = (
            [cell.name] if single else [f"{k}={overrides[cell.name][k]}" for k in varying if k in overrides[cell.name]]
        )
        names[cell.name] = " ".join([*([policy] if policy else []), *rest]) or cell.name
    return names


def _parent(client, exp_id: str, sweep_name: str, parents: list, cells: list[Path], start: int | None):
    """The sweep's parent run: the one logged before (others, left by a race fairsim does not
    make, are deleted once their children point to the first), else a new one."""
    from mlflow.entities import SourceType
    from mlflow.utils import mlflow_tags as mt

    if parents:
        return sorted(parents, key=lambda r: (r.info.start_time or 0, r.info.run_id))[0]
    tags = {
        ROLE_TAG: SWEEP_ROLE,
        SWEEP_TAG: sweep_name,
        mt.MLFLOW_SOURCE_TYPE: SourceType.to_string(SourceType.LOCAL),
    }
    if cells:
        tags[RESULT_DIR_TAG] = str(Path(cells[0]).parent.resolve())
    return client.create_run(exp_id, start_time=start, run_name=sweep_name, tags=tags)


def _log_sweep(results_dir: Path, sweep_name: str, cells: list[Path], drop: set[str], own_runs_only: bool) -> int:
    from mlflow.entities import Metric, Param, RunStatus
    from mlflow.store.artifact.artifact_repository_registry import get_artifact_repository
    from mlflow.utils.mlflow_tags import MLFLOW_PARENT_RUN_ID

    client = _client(results_dir)
    exp_id = _experiment_id(client, sweep_name, results_dir)
    single = sweep_name == RUNS_EXPERIMENT  # single runs: no parent
    finished = RunStatus.to_string(RunStatus.FINISHED)
    logged: dict = {}  # cell -> its FINISHED run
    parents = []
    only = _runs_of(cells) if own_runs_only else ""
    for run in client.search_runs([exp_id], filter_string=only, max_results=50_000):
        if run.data.tags.get(ROLE_TAG) == SWEEP_ROLE:
            parents.append(run)
            continue
        cell = run.data.tags.get(CELL_TAG)
        if cell is None:
            continue
        if run.info.status == finished and cell not in logged and cell not in drop:
            logged[cell] = run
        else:
            _delete_run(
                client, run, results_dir
            )  # torn, duplicate or a dropped folder's: the cell is logged afresh below
    records = {cell.name: provenance.read(cell) for cell in cells}
    summaries = {cell.name: json.loads((cell / SUMMARY).read_text()) for cell in cells}
    names = run_names(cells, {c: str(s.get("policy") or "") for c, s in summaries.items()}, single)
    parent = None
    if not single:
        starts = [t for t in (_times(r)[0] for r in records.values()) if t is not None]
        parent = _parent(client, exp_id, sweep_name, parents, cells, min(starts) if starts else None)
        for extra in parents:  # its children are re-pointed to the parent by _finish_parent
            if extra.info.run_id != parent.info.run_id:
                _delete_run(client, extra, results_dir)
    count = 0
    ends = {run.info.run_id: run.info.end_time for run in logged.values()}  # ms, None: logged at the logging's time
    for cell in cells:
        record = records[cell.name]
        start, end = _times(record)
        if cell.name in logged:
            kept = logged[cell.name]
            if start is None or kept.info.start_time == start:
                if kept.info.run_name != names[cell.name]:  # another override varies now
                    client.update_run(kept.info.run_id, name=names[cell.name])
                continue
            _delete_run(client, kept, results_dir)  # the cell was recomputed since: log its present run
        summary = summaries[cell.name]
        cfg = yaml.safe_load((cell / CONFIG).read_text()) if (cell / CONFIG).exists() else {}
        tags = run_tags(cell, sweep_name, record)
        if parent is not None:
            tags[MLFLOW_PARENT_RUN_ID] = parent.info.run_id
        run = client.create_run(exp_id, start_time=start, run_name=names[cell.name], tags=tags)
        logged[cell.name] = run
        run_id = run.info.run_id
        metrics = [
            Metric(k, float(v), end or 0, 0)
            for k, v in sorted(summary.items())
            if isinstance(v, (int, float)) and not isinstance(v, bool) and v is not None and math.isfinite(float(v))
        ]
        params = [Param(k, str(v)[:500]) for k, v in sorted(flatten(cfg).items())]
        for i in range(0, max(len(params), len(metrics)), 100):  # MLflow caps a batch at 100 params
            client.log_batch(run_id, metrics=metrics[i : i + 100], params=params[i : i + 100])
        # the repository of the run's own artifact URI: client.log_artifact would read the run back first
        artifacts = get_artifact_repository(run.info.artifact_uri, tracking_uri=tracking_uri(results_dir))
        for name in ARTIFACTS:
            if (cell / name).is_file():
                artifacts.log_artifact(str(cell / name))
        client.set_terminated(run_id, "FINISHED", end_time=end)
        ends[run_id] = end
        count += 1
    if parent is not None:
        _finish_parent(client, parent, logged, ends)
    return count


def _finish_parent(client, parent, children: dict, ends: dict) -> None:
    """Every child run points to the parent; the parent ends with the last child (``ends``: run id
    -> end in ms) and counts them."""
    from mlflow.entities import Metric
    from mlflow.utils.mlflow_tags import MLFLOW_PARENT_RUN_ID

    for run in children.values():
        if run.data.tags.get(MLFLOW_PARENT_RUN_ID) != parent.info.run_id:  # logged before parents existed
            client.set_tag(run.info.run_id, MLFLOW_PARENT_RUN_ID, parent.info.run_id)
    known = [t for t in (ends.get(r.info.run_id) for r in children.values()) if t]
    end = max(known) if known else None
    client.log_batch(parent.info.run_id, metrics=[Metric("cells", float(len(children)), end or 0, 0)])
    client.set_terminated(parent.info.run_id, "FINISHED", end_time=end)


def log_single_run(results_dir: Path, folder: Path) -> int:
    """Log one complete single run (its folder) to the "runs" experiment; 0 if already logged."""
    return log_sweep(results_dir, RUNS_EXPERIMENT, [Path(folder)], own_runs_only=True)


def logged_cells(results_dir: Path, sweep_name: str) -> list[str]:
    """Cell names with a FINISHED run in the sweep's experiment (for tests and checks)."""
    client = _client(results_dir)
    exp = client.get_experiment_by_name(sweep_name)
    if exp is None:
        return []
    runs = client.search_runs([exp.experiment_id], filter_string="attributes.status = 'FINISHED'", max_results=50_000)
    return sorted(r.data.tags[CELL_TAG] for r in runs if CELL_TAG in r.data.tags)  # not the sweep's parent


def main(argv: list[str] | None = None) -> int:
    """``make ui``'s first step: mark the store's experiments and print each one's runs table.

    python -m fairsim.experiment.tracking [RESULTS_DIR] [--address http://127.0.0.1:5000]
    """
    import argparse

    parser = argparse.ArgumentParser(
        prog="python -m fairsim.experiment.tracking", description=main.__doc__.splitlines()[0]
    )
    parser.add_argument("results_dir", nargs="?", default="results", type=Path)
    parser.add_argument("--address", default=UI_ADDRESS, help="where the MLflow UI serves (default %(default)s)")
    args = parser.parse_args(argv)
    if not (args.results_dir / "mlflow.db").is_file():
        print(
            f"MLflow: no store at {args.results_dir / 'mlflow.db'} yet; a run or sweep creates it (track=false skips it)"
        )
        return 0
    try:
        experiments = mark_experiments(args.results_dir, lock_wait_s=5)  # a sweep logging now must not hold up the UI
    except Exception as exc:
        print(store_error_line(args.results_dir, exc), file=sys.stderr)
        return 1
    if not experiments:
        print(f"MLflow: {tracking_uri(args.results_dir)} holds no runs yet")
    else:
        width = max(map(len, experiments))
        print(f"MLflow runs tables ({tracking_uri(args.results_dir)}):")
        for name, exp_id in sorted(experiments.items()):
            print(f"  {name:<{width}}  {runs_url(exp_id, args.address)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
