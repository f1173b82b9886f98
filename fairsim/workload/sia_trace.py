"""Sia's workloads and its applications' profiles, read from Sia's artifact (siasosp23/artifacts,
``sia-simulator/``; it has no licence, so nothing of it ships: ``workload.dir`` names a copy).

A workload is ``<dir>/workloads/<set>/workload-N.csv``, one job a row:

    name,time,application,num_replicas,batch_size[,category]

Mapping: job_id = the row's position (Sia's names end in it: ``cifar10-3``), arrival_s = time,
model = application, workers = num_replicas, work = the application's whole training in examples
at the initial batch's efficiency (``SiaApps.target_examples``). A job is elastic unless the row's
``category`` (if the file has that column) is ``rigid``, as Sia's simulator reads it. ``batch_size``
is each job's fixed batch under ``batch: fixed`` (what Sia's simulator runs Gavel with), unread
under ``batch: tuned`` (Sia and Pollux tune it).

The profiles of a model on a GPU type, as Sia's ``applications.py`` reads them from
``<dir>/traces/<model>/``:

- ``placements-<suffix>.csv`` (placement, local_bsz, step_time, sync_time): the placement is the
  GPUs per host as digits (``48``: 4 on one host, 8 on another);
- ``scalability-<suffix>.csv`` (num_nodes, num_replicas, local_bsz, step_time, sync_time);
- ``validation-<batch>.csv`` (progress, iteration, metric, grad_sqr, grad_var per epoch), shared
  by every type. The smallest batch is the initial batch, the largest the most a job may use;
  the smallest and largest ``local_bsz`` of a type's placements bound the per-GPU batch.

``<suffix>`` is the artifact's name of a cluster type (``aws``, ``dgx-ext``, ``rtx``), mapped
from fairsim's type names by ``workload.profiles``. docs/elastic.md "Sia's workloads" gives the
model's arithmetic and where it differs from Sia's simulator.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from fairsim.cluster import ClusterSpec
from fairsim.errors import InputError, require
from fairsim.files import note_input
from fairsim.workload.catalog import Catalog
from fairsim.workload.elastic import rate_arrays
from fairsim.workload.goodput import BatchLimits, PerfParams, PolluxCatalog, best_batch, fit_perf_params
from fairsim.workload.jobs import JobSet

FORMAT = "name,time,application,num_replicas,batch_size[,category]"
REQUIRED = ("time", "application", "num_replicas")
BATCHES = ("tuned", "fixed")
SCHEDULER_BATCHES = ("submitted", "tuned")
MAX_NODES_INTERPOLATED = 16  # the artifact caps the host count it interpolates at


@dataclass(frozen=True)
class SiaOptions:
    """workload.* keys of kind sia_trace (conf/workload/sia_trace.yaml gives the artifact's values)."""

    dir: Path  # the artifact's sia-simulator folder
    profiles: tuple[tuple[str, str], ...]  # (fairsim GPU type, the artifact's file suffix)
    host_gpus: tuple[tuple[str, int], ...]  # (fairsim GPU type, GPUs per host in Sia's cluster)
    epochs: tuple[tuple[str, int], ...]  # (model, epochs to train)
    slowdown: tuple[tuple[str, float], ...]  # (model, the artifact's calibration SLOWDOWNS)
    restart_s: tuple[tuple[str, float], ...]  # (model, checkpoint-restore seconds the simulator charges)
    max_local: tuple[tuple[str, str, int], ...]  # (model, suffix, per-GPU batch cap that overrides the profile's)
    batch: str  # tuned | fixed
    scheduler_batch: str  # submitted | tuned: the largest batch a job's goodput is judged at by the scheduler

    @classmethod
    def from_config(cls, cfg: Mapping[str, Any], src: str) -> SiaOptions:
        raw = cfg.get("dir")
        require(
            isinstance(raw, str) and raw.strip() != "",
            src,
            "dir",
            "is required: set workload.dir=/path/to/sia-simulator (Sia's artifact, not shipped: it has no licence)",
        )
        folder = Path(raw).expanduser()
        require(
            (folder / "traces").is_dir() and (folder / "workloads").is_dir(),
            src,
            "dir",
            f"{folder} has no traces/ and workloads/ folders (give the artifact's sia-simulator folder)",
        )
        batch = cfg.get("batch", "tuned")
        require(batch in BATCHES, src, "batch", f"{batch!r} is not one of {', '.join(BATCHES)}")
        told = cfg.get("scheduler_batch", "submitted")
        require(
            told in SCHEDULER_BATCHES,
            src,
            "scheduler_batch",
            f"{told!r} is not one of {', '.join(SCHEDULER_BATCHES)}",
        )

        def table(key: str, kind: type, positive: bool = True) -> tuple:
            entries = cfg.get(key) or {}
            require(isinstance(entries, Mapping), src, key, f"must map names to values, got {entries!r}")
            out = []
            for name, value in entries.items():
                ok = isinstance(value, (int, float, str)) and not isinstance(value, bool)
                if kind is not str:
                    ok = ok and not isinstance(value, str) and (value > 0 if positive else value >= 0)
                    ok = ok and (kind is not int or float(value).is_integer())
                require(
                    ok,
                    src,
                    f"{key}.{name}",
                    f"must be a {'positive ' if positive else ''}{kind.__name__}, got {value!r}",
                )
                out.append((str(name), kind(value)))
            return tuple(out)

        caps = cfg.get("max_local") or {}
        require(isinstance(caps, Mapping), src, "max_local", f"must map model -> {{suffix: cap}}, got {caps!r}")
        max_local = []
        for model, per in caps.items():
            require(isinstance(per, Mapping), src, f"max_local.{model}", f"must map suffix -> cap, got {per!r}")
            for suffix, cap in per.items():
                require(
                    isinstance(cap, int) and not isinstance(cap, bool) and cap > 0,
                    src,
                    f"max_local.{model}.{suffix}",
                    f"must be a positive integer, got {cap!r}",
                )
                max_local.append((str(model), str(suffix), int(cap)))
        return cls(
            dir=folder,
            profiles=table("profiles", str),
            host_gpus=table("host_gpus", int),
            epochs=table("epochs", int),
            slowdown=table("slowdown", float),
            restart_s=table("restart_s", float, positive=False),
            max_local=tuple(max_local),
            batch=str(batch),
            scheduler_batch=str(told),
        )


# --- one model's step times on one GPU type ----------------------------------------------


def placement_id(placement: Sequence[int]) -> str:
    """The artifact's key of a placement: GPUs per host as digits, rotated to the smallest."""
    p = tuple(int(g) for g in placement if g)
    return "".join(map(str, min(p[i:] + p[:i] for i in range(len(p)))))


@dataclass(eq=False)
class StepTimes:
    """(step_time, sync_time) of a model on a type at a placement and per-GPU batch, as the
    artifact's ``get_throughput`` interpolates its profiles: linear in the per-GPU batch within a
    profiled placement, else linear over (hosts capped at 16, GPUs, per-GPU batch) across the
    placements' means per (hosts, GPUs, batch) and the scalability rows. NaN outside the data."""

    placements: pd.DataFrame  # placement (str), local_bsz, step_time, sync_time, num_nodes, num_replicas
    scalability: pd.DataFrame  # num_nodes, num_replicas, local_bsz, step_time, sync_time
    _nd: Any = field(default=None, repr=False)

    def __post_init__(self) -> None:
        self._memo: dict[tuple[str, float], tuple[float, float]] = {}
        self._cap = self.placements.groupby("num_replicas").local_bsz.max().to_dict()
        self.by_placement = {
            str(pid): (rows.local_bsz.to_numpy(np.float64), rows[["step_time", "sync_time"]].to_numpy(np.float64))
            for pid, rows in self.placements.groupby("placement", sort=False)
        }

    def __call__(self, placement: Sequence[int], atomic: float) -> tuple[float, float]:
        key = (placement_id(placement), float(atomic))
        if key not in self._memo:
            self._memo[key] = self._lookup(placement, key[0], key[1])
        return self._memo[key]

    def prepare(self, placement: Sequence[int], atomics: Sequence[float]) -> None:
        """Look up many per-GPU batches at one placement at once (one interpolator query)."""
        pid = placement_id(placement)
        todo = [float(a) for a in atomics if (pid, float(a)) not in self._memo]
        if not todo or pid in self.by_placement:
            return
        nodes = min(sum(1 for g in placement if g), MAX_NODES_INTERPOLATED)
        found = self._interpolator()([[nodes, sum(placement), a] for a in todo])
        for a, (step, sync) in zip(todo, found):
            self._memo[(pid, a)] = (float(step), float(sync))

    def _interpolator(self):
        if self._nd is None:
            from scipy.interpolate import LinearNDInterpolator

            xs, ys = ["num_nodes", "num_replicas", "local_bsz"], ["step_time", "sync_time"]
            means = self.placements.groupby(xs)[xs + ys].mean()
            rows = pd.concat([means, self.scalability[xs + ys]], ignore_index=True)
            self._nd = LinearNDInterpolator(rows[xs].to_numpy(np.float64), rows[ys].to_numpy(np.float64))
        return self._nd

    def _lookup(self, placement: Sequence[int], pid: str, atomic: float) -> tuple[float, float]:
        if pid in self.by_placement:
            x, y = self.by_placement[pid]
            if not x.min() <= atomic <= x.max():
                return math.nan, math.nan
            return float(np.interp(atomic, x, y[:, 0])), float(np.interp(atomic, x, y[:, 1]))
        nodes = min(sum(1 for g in placement if g), MAX_NODES_INTERPOLATED)
        step, sync = self._interpolator()([[nodes, sum(placement), atomic]])[0]
        return float(step), float(sync)

    def max_local(self, placement: Sequence[int]) -> float:
        """The largest per-GPU batch profiled at this placement (else at any at least as wide)."""
        pid = placement_id(placement)
        if pid in self.by_placement:
            return float(self.by_placement[pid][0].max())
        s = self.scalability
        wide = s[(s.num_nodes >= sum(1 for g in placement if g)) & (s.num_replicas >= sum(placement))]
        return float(wide.local_bsz.max()) if len(wide) else math.nan

    def memory_cap(self, replicas: int) -> float:
        """The largest per-GPU batch profiled at any placement of this many GPUs (inf if none)."""
        return float(self._cap.get(replicas, math.inf))


@dataclass(frozen=True, eq=False)
class SiaApps:
    """Sia's applications on the cluster's types: step times, fitted Pollux parameters and batch
    limits per (model, type), and the gradient statistics per epoch (``stats``: a PolluxCatalog
    whose epoch_ends and grad_stats are the validation files'; its limits and perf are unused)."""

    models: tuple[str, ...]
    gpu_types: tuple[str, ...]  # fairsim's names, the cluster's order
    suffixes: tuple[str, ...]  # per type: the artifact's file suffix
    host_gpus: np.ndarray  # int [T]: GPUs per host in Sia's cluster
    counts: np.ndarray  # int [T]: GPUs of each type
    steps: tuple[tuple[StepTimes, ...], ...]  # [M][T]
    limits: tuple[tuple[BatchLimits, ...], ...]  # [M][T]
    perf: tuple[tuple[PerfParams, ...], ...]  # [M][T]
    stats: PolluxCatalog
    slowdown: np.ndarray  # float [M]
    restart_s: np.ndarray  # float [M]

    @property
    def target_examples(self) -> np.ndarray:
        return self.stats.target_examples

    def index(self, name: str, source: str, field: str = "application") -> int:
        if name not in self.models:
            raise InputError(source, field, f"unknown application {name!r} (profiled: {', '.join(self.models)})")
        return self.models.index(name)

    def placement(self, t: int, gpus: int, hosts: int, gpus_per_host: int) -> tuple[int, ...]:
        """The GPUs per host in Sia's cluster of a job fairsim runs on ``gpus`` GPUs of type t over
        ``hosts`` of its own hosts (``gpus_per_host`` each): packed there, packed on Sia's hosts
        (whole hosts, then the rest on one); spread, over as many of Sia's hosts (at most the
        type's), evenly. Which of fairsim's hosts share one of Sia's is not known here."""
        size = int(self.host_gpus[t])
        fewest = -(-gpus // size)
        own = -(-int(self.counts[t]) // size)  # Sia's hosts of the type
        nodes = fewest if hosts <= -(-gpus // gpus_per_host) else max(fewest, min(hosts, gpus, own))
        if nodes == fewest:
            return (size,) * (gpus // size) + ((gpus % size,) if gpus % size else ())
        base, extra = divmod(gpus, nodes)
        return tuple(base + (i < extra) for i in range(nodes))

    def epoch_rates(
        self, m: int, t: int, placement: tuple[int, ...], fixed_batch: int | None = None, batch_cap: int = 0
    ) -> np.ndarray:
        """float [max_epochs + 1]: the job's true goodput (examples/s at the initial batch's
        efficiency) during each epoch at this placement, and last the rate before its first
        measurement (the artifact's initial batch: its goodput model is not fitted yet). 0 where
        it cannot run. ``batch_cap`` > 0: its batch tuned up to that, not the model's largest."""
        limits, steps = self.limits[m][t], self.steps[m][t]
        if batch_cap > 0:
            limits = dataclasses.replace(limits, max_batch=max(min(limits.max_batch, batch_cap), limits.init_batch))
        gpus, nodes = sum(placement), len(placement)
        n_ep = len(self.stats.epoch_ends[m])
        epochs = np.arange(n_ep)
        cap_local = steps.max_local(placement)
        if not math.isfinite(cap_local) or gpus * limits.min_local > limits.max_batch:
            return np.zeros(n_ep + 1)
        if fixed_batch is None:
            lim = BatchLimits(limits.init_batch, limits.max_batch, limits.min_local, int(cap_local))
            choice = best_batch(
                self.perf[m][t],
                lim,
                np.full(n_ep, nodes),
                np.full(n_ep, gpus),
                lambda batch: self.stats.grad_stats(m, epochs[:, None], batch),
                None,
            )
            atomic = [int(a) if g > 0 else 0 for a, g in zip(choice.atomic, choice.goodput)]
            accum = [int(a) for a in choice.accum]
            first = _split(max(limits.init_batch, limits.min_local * gpus), gpus, cap_local, limits.init_batch)
        else:
            atomic, accum = zip(*[_split(fixed_batch, gpus, cap_local, limits.init_batch)] * n_ep)
            first = (atomic[0], accum[0])
        out = np.zeros(n_ep + 1)
        pairs = [
            (int(min(a, steps.memory_cap(gpus), limits.max_batch // (gpus * (acc + 1)))), acc) if a > 0 else (0, acc)
            for a, acc in [*zip(atomic, accum), first]
        ]
        steps.prepare(placement, sorted({a for a, _ in pairs if a > 0}))
        for k, (a, acc) in enumerate(pairs):
            if a <= 0:
                continue
            step, sync = steps(placement, a)
            if not (step > 0 and math.isfinite(step)):
                continue
            batch = gpus * a * (acc + 1)
            epoch = k if k < n_ep else 0
            sqr, var = self.stats.grad_stats(m, epoch, batch)
            scale = batch / limits.init_batch
            gain = (var + sqr) / (var / scale + sqr) if var / scale + sqr > 0 else 1.0
            out[k] = gain * limits.init_batch / (step + (step - sync) * acc) / self.slowdown[m]
        return out

    def step_progress(self, m: int, batch: int) -> np.ndarray:
        """float [max_epochs]: the progress (examples at the initial batch's efficiency) one step
        of total batch ``batch`` makes in each epoch: initial batch x the statistical gain
        ``(var + sqr) / (var / scale + sqr)`` at that epoch's gradient statistics, scale = batch
        / initial batch (the artifact's progress per step, ``job.py``)."""
        init = self.limits[m][0].init_batch
        epochs = np.arange(len(self.stats.epoch_ends[m]))
        sqr, var = self.stats.grad_stats(m, epochs, batch)
        denom = var / (batch / init) + sqr
        gain = np.where(denom > 0, (var + sqr) / np.where(denom > 0, denom, 1.0), 1.0)
        return init * gain

    def epoch_steps(self, m: int, batch: int) -> np.ndarray:
        """float [max_epochs]: steps of total batch ``batch`` each epoch of model m takes (its
        length in examples at the initial batch's efficiency over ``step_progress``)."""
        lengths = np.diff(np.concatenate([[0.0], self.stats.epoch_ends[m]]))
        return lengths / self.step_progress(m, batch)

    @classmethod
    def load(cls, o: SiaOptions, models: Sequence[str], cluster: ClusterSpec, src: str) -> SiaApps:
        suffix = dict(o.profiles)
        host = dict(o.host_gpus)
        epochs, slow, restart = dict(o.epochs), dict(o.slowdown), dict(o.restart_s)
        caps = {(m, s): c for m, s, c in o.max_local}
        for t in cluster.gpu_types:
            require(t in suffix, src, f"profiles.{t}", "names no profile suffix for this cluster type (e.g. aws)")
            require(t in host, src, f"host_gpus.{t}", "gives no GPUs per host for this cluster type")
        for m in models:
            for key, tab in (("epochs", epochs), ("slowdown", slow), ("restart_s", restart)):
                require(m in tab, src, f"{key}.{m}", f"is not given for application {m!r}")
        steps, limits, perfs, sizes, sqrs, vars_, ends = [], [], [], [], [], [], []
        for m in models:
            folder = o.dir / "traces" / m
            require(folder.is_dir(), src, "application", f"{m!r}: no profiles at {folder}")
            val = _validation(folder, epochs[m], src)
            init, most = min(val), max(val)
            st, lt, pt = [], [], []
            for t in cluster.gpu_types:
                times = _step_times(folder, suffix[t], src)
                lo = int(times.placements.local_bsz.min())
                hi = caps.get((m, suffix[t]), int(times.placements.local_bsz.max()))
                st.append(times)
                lt.append(BatchLimits(init, most, lo, hi))
                rows = pd.concat(
                    [
                        times.placements[["num_nodes", "num_replicas", "local_bsz", "step_time", "sync_time"]],
                        times.scalability,
                    ],
                    ignore_index=True,
                )
                fit = fit_perf_params(
                    rows.num_nodes, rows.num_replicas, rows.local_bsz, rows.step_time - rows.sync_time, rows.step_time
                )
                pt.append(fit.params)
            steps.append(tuple(st))
            limits.append(tuple(lt))
            perfs.append(tuple(pt))
            sizes.append(np.array(sorted(val), dtype=np.int64))
            sqrs.append(np.stack([val[b].grad_sqr.to_numpy()[: epochs[m]] for b in sorted(val)]))
            vars_.append(np.stack([val[b].grad_var.to_numpy()[: epochs[m]] for b in sorted(val)]))
            # epoch e ends at the least progress any validated batch made by its end (the
            # artifact's get_progress); its progress is in steps of the initial batch, ours in examples
            ends.append(np.min([val[b].progress.to_numpy()[: epochs[m]] for b in val], axis=0) * init)
        stats = PolluxCatalog(
            models=tuple(models),
            limits=tuple(lt[0] for lt in limits),
            perf=tuple(p[0] for p in perfs),
            max_epochs=np.array([epochs[m] for m in models]),
            batch_sizes=tuple(sizes),
            grad_sqr=tuple(sqrs),
            grad_var=tuple(vars_),
            epoch_ends=tuple(ends),
        )
        return cls(
            models=tuple(models),
            gpu_types=cluster.gpu_types,
            suffixes=tuple(suffix[t] for t in cluster.gpu_types),
            host_gpus=np.array([host[t] for t in cluster.gpu_types], dtype=np.int64),
            counts=np.asarray(cluster.counts, dtype=np.int64),
            steps=tuple(steps),
            limits=tuple(limits),
            perf=tuple(perfs),
            stats=stats,
            slowdown=np.array([slow[m] for m in models]),
            restart_s=np.array([restart[m] for m in models]),
        )


def _split(batch: int, gpus: int, max_local: float, init: int) -> tuple[int, int]:
    """(per-GPU batch per pass, extra passes) of a given total batch, as the artifact splits it."""
    local = math.ceil(batch / gpus - 1e-8)
    accum = math.ceil(local / max_local - 1e-8) - 1
    if gpus == 1 and batch > init:
        accum = max(1, accum)
    return math.ceil(local / (accum + 1) - 1e-8), accum


def _validation(folder: Path, epochs: int, src: str) -> dict[int, pd.DataFrame]:
    out = {}
    for path in sorted(folder.glob("validation-*.csv")):
        size = path.stem.split("-")[-1]
        require(size.isdigit(), str(path), "name", "must be validation-<batch size>.csv")
        note_input(path)
        df = pd.read_csv(path)
        missing = [c for c in ("progress", "grad_sqr", "grad_var") if c not in df.columns]
        require(not missing, str(path), "columns", f"missing {', '.join(missing)}")
        require(len(df) >= epochs, str(path), "epoch", f"has {len(df)} epochs, the application trains {epochs}")
        out[int(size)] = df
    require(bool(out), str(folder), "validation", "no validation-<batch size>.csv files")
    return out


def _step_times(folder: Path, suffix: str, src: str) -> StepTimes:
    paths = [folder / f"placements-{suffix}.csv", folder / f"scalability-{suffix}.csv"]
    for path in paths:
        require(path.is_file(), src, "profiles", f"no {path}")
        note_input(path)
    pl = pd.read_csv(paths[0], dtype={"placement": str})
    sc = pd.read_csv(paths[1])
    for df, cols, path in (
        (pl, ("placement", "local_bsz", "step_time", "sync_time"), paths[0]),
        (sc, ("num_nodes", "num_replicas", "local_bsz", "step_time", "sync_time"), paths[1]),
    ):
        missing = [c for c in cols if c not in df.columns]
        require(not missing, str(path), "columns", f"missing {', '.join(missing)}")
    pl["placement"] = pl.placement.str.strip()
    pl["num_nodes"] = pl.placement.str.len()
    pl["num_replicas"] = pl.placement.map(lambda p: sum(int(c) for c in p))
    return StepTimes(pl, sc)


# --- the workload ------------------------------------------------------------------------


def workload_path(o: SiaOptions, raw: str) -> Path:
    """``saturn/workload-1`` (a workload of the artifact's) or a CSV path."""
    path = Path(raw).expanduser()
    if path.is_file():
        return path
    inside = o.dir / "workloads" / (raw if raw.endswith(".csv") else f"{raw}.csv")
    if inside.is_file():
        return inside
    sets = sorted(p.name for p in (o.dir / "workloads").iterdir() if p.is_dir())
    raise InputError(
        "workload sia_trace", "path", f"{raw!r}: no such file, nor {inside} (sets there: {', '.join(sets)})"
    )


def read_sia_table(path: Path) -> pd.DataFrame:
    note_input(path)
    df = pd.read_csv(path, skipinitialspace=True)
    df.columns = [str(c).strip() for c in df.columns]
    missing = [c for c in REQUIRED if c not in df.columns]
    require(not missing, str(path), "columns", f"missing {', '.join(missing)} (Sia's format: {FORMAT})")
    df["application"] = df["application"].astype(str).str.strip()
    return df


def read_sia_trace(path: Path, apps: SiaApps) -> pd.DataFrame:
    """The workload in fairsim's schema (values checked by validate_trace)."""
    df = read_sia_table(path)
    for row, name in enumerate(df["application"]):
        apps.index(name, f"{path}:{row + 2}")
    target = dict(zip(apps.models, apps.target_examples))
    return pd.DataFrame(
        {
            "job_id": np.arange(len(df), dtype=np.int64),
            "arrival_s": df["time"],
            "model": df["application"],
            "workers": df["num_replicas"],
            "work": df["application"].map(target).astype(np.float64),
        }
    )


def submitted_batches(path: Path) -> np.ndarray:
    """int [J]: each row's ``batch_size``, the batch its job was submitted with (what a
    fixed-batch job trains at, and the most a tuned one tells the scheduler it tunes up to)."""
    df = read_sia_table(path)
    require(
        "batch_size" in df.columns,
        str(path),
        "columns",
        f"missing batch_size (batch: fixed and scheduler_batch: submitted read it; {FORMAT})",
    )
    batches = pd.to_numeric(df["batch_size"], errors="coerce").to_numpy(np.float64)
    bad = ~(np.isfinite(batches) & (batches >= 1) & (batches == np.round(batches)))
    if bad.any():
        row = int(np.flatnonzero(bad)[0])
        raise InputError(
            f"{path}:{row + 2}", "batch_size", f"must be a positive integer, got {df['batch_size'][row]!r}"
        )
    return batches.astype(np.int64)


def rigid_rows(path: Path) -> np.ndarray:
    """bool [J]: the rows whose ``category`` says rigid (none without that column)."""
    df = read_sia_table(path)
    if "category" not in df.columns:
        return np.zeros(len(df), dtype=bool)
    return df["category"].astype(str).str.strip().str.lower().eq("rigid").to_numpy()


class SiaGoodput:
    """GoodputModel of Sia's jobs: the true goodput Sia's simulator advances a job with, at the
    batch its job chooses, per epoch (``SiaApps.epoch_rates``); ``batches``: per job, its fixed
    batch (``batch: fixed``) or 0 (tuned); ``caps``: per job, the largest batch a tuned job is
    tuned up to (0: the model's largest). A tuned job's rates are in examples/s at the initial
    batch's efficiency; a fixed-batch job's in steps of its batch per second (its work counted in
    those steps, ``SiaApps.epoch_steps``): the same progress, in the unit Gavel's throughputs
    are counted in."""

    def __init__(
        self,
        apps: SiaApps,
        model_of_job: np.ndarray,
        batches: np.ndarray,
        gpus_per_host: int,
        caps: np.ndarray | None = None,
    ):
        self.apps, self.model, self.batches = apps, np.asarray(model_of_job), np.asarray(batches)
        self.caps = np.zeros(len(self.model), dtype=np.int64) if caps is None else np.asarray(caps, dtype=np.int64)
        self.gpus_per_host = int(gpus_per_host)
        self._table: dict[tuple, np.ndarray] = {}
        self._step_ends: dict[tuple[int, int], np.ndarray] = {}

    def step_ends(self, m: int, batch: int) -> np.ndarray:
        """float [max_epochs]: steps of ``batch`` done at the end of each epoch of model m."""
        key = (m, batch)
        if key not in self._step_ends:
            self._step_ends[key] = np.cumsum(self.apps.epoch_steps(m, batch))
        return self._step_ends[key]

    def rates_at(self, m: int, t: int, gpus: int, hosts: int, batch: int, cap: int = 0) -> np.ndarray:
        """float [max_epochs + 1]: the rate in each epoch, and last before the first measurement
        (``SiaApps.epoch_rates``); at a fixed ``batch`` (> 0) in its steps per second; a tuned
        batch at most ``cap`` (> 0)."""
        placement = self.apps.placement(t, gpus, hosts, self.gpus_per_host)
        key = (m, t, placement, batch, cap)
        if key not in self._table:
            rates = self.apps.epoch_rates(m, t, placement, batch or None, cap)
            if batch:
                per_step = self.apps.step_progress(m, batch)
                rates = rates / np.concatenate([per_step, per_step[:1]])  # the last entry is epoch 0's
            packed = self.apps.placement(t, gpus, 1, self.gpus_per_host)
            if placement != packed and not (rates > 0).all():  # no profile spans Sia's hosts so: as packed
                rates = np.where(rates > 0, rates, self.rates_at(m, t, gpus, 1, batch, cap))
            self._table[key] = rates
        return self._table[key]

    def epoch(self, m: int, batch: int, done: float) -> int:
        """The epoch a job of model m (at ``batch``, 0: tuned) is in after ``done`` of its work."""
        if not batch:
            return int(self.apps.stats.epoch(m, done))
        ends = self.step_ends(m, batch)
        return int(min(np.searchsorted(ends, done, side="right"), len(ends) - 1))

    def rate(
        self, jobs: np.ndarray, types: np.ndarray, gpus: np.ndarray, hosts: np.ndarray, done: np.ndarray
    ) -> np.ndarray:
        jobs, types, gpus, hosts, done = rate_arrays(jobs, types, gpus, hosts, done)
        out = np.zeros(len(jobs))
        for i in range(len(jobs)):
            if gpus[i] < 1 or types[i] < 0:
                continue
            j = jobs[i]
            m, batch = int(self.model[j]), int(self.batches[j])
            table = self.rates_at(m, int(types[i]), int(gpus[i]), int(max(hosts[i], 1)), batch, int(self.caps[j]))
            # before any progress: the initial batch (the job has no fitted model yet)
            out[i] = table[-1] if done[i] <= 0 else table[self.epoch(m, batch, done[i])]
        return out

    def mean_rate(self, m: int, t: int, gpus: int, hosts: int, batch: int) -> float:
        """The job's average rate over its whole training on this allocation (work over the sum
        of the epochs' times); NaN if it cannot run there in some epoch."""
        rate = self.rates_at(m, t, gpus, hosts, batch)[:-1]
        if not (rate > 0).all():
            return math.nan
        ends = self.step_ends(m, batch) if batch else self.apps.stats.epoch_ends[m]
        lengths = np.diff(np.concatenate([[0.0], ends]))
        return float(ends[-1] / (lengths / rate).sum())


def gang_rates(model: SiaGoodput, m: int, t: int, gpus: int, gpus_per_host: int, batch: int) -> tuple[float, float]:
    """(packed, spread): a gang's average rate over its training (``SiaGoodput.mean_rate``) on
    the fewest of fairsim's hosts, and spread over more (two hosts if it fits on one)."""
    fewest = -(-gpus // gpus_per_host)
    wider = fewest if gpus > gpus_per_host else min(gpus, 2)
    return model.mean_rate(m, t, gpus, fewest, batch), model.mean_rate(m, t, gpus, wider, batch)


def sia_catalog(apps: SiaApps, cluster: ClusterSpec, source: str) -> Catalog:
    """Sia's applications at 1..(largest type) GPUs: a rigid job's rate is its average goodput
    over its whole training there (the batch tuned each epoch), packed on the fewest of fairsim's
    hosts or spread over more. NaN where it cannot run. Work unit: examples at the initial
    batch's efficiency. Training state: the bytes that cross the inter-host link in the model's
    restart seconds, so that fairsim's restart overhead (restart_s + state / link, sim=sia_compat
    sets restart_s 0) is Sia's per-model checkpoint-restore delay."""
    counts = np.arange(1, int(cluster.counts.max()) + 1)
    gph = cluster.gpus_per_host
    model = SiaGoodput(apps, np.arange(len(apps.models)), np.zeros(len(apps.models), dtype=np.int64), gph)
    packed = np.full((len(apps.models), len(apps.gpu_types), len(counts)), np.nan)
    spread = packed.copy()
    for m in range(len(apps.models)):
        for t in range(len(apps.gpu_types)):
            for i, n in enumerate(counts):
                if n <= cluster.counts[t]:
                    packed[m, t, i], spread[m, t, i] = gang_rates(model, m, t, int(n), gph, 0)
    spread = np.where(np.isfinite(packed), np.where(np.isfinite(spread), spread, packed), np.nan)
    return Catalog(
        name="sia",
        work_unit="examples",
        models=apps.models,
        gpu_types=apps.gpu_types,
        worker_counts=tuple(int(c) for c in counts),
        packed=packed,
        spread=spread,
        mem_per_worker_gb=np.zeros((len(apps.models), len(counts))),  # the per-GPU batch limits stand for memory
        state_bytes=apps.restart_s * cluster.inter_host_bytes_per_s,
        param_count=np.zeros(len(apps.models)),
        large=np.zeros(len(apps.models), dtype=bool),
        source=source,
    )


@dataclass(frozen=True, eq=False)
class SiaCatalog(Catalog):
    """``sia_catalog``'s catalog, carrying what the trace and the goodput model read."""

    apps: Any = None  # SiaApps
    options: Any = None  # SiaOptions
    path: Any = None  # Path of the workload CSV

    def bind_jobs(self, jobs: JobSet, cluster: ClusterSpec) -> JobSet:
        """Under ``batch: fixed`` each job trains at its own CSV batch, so its rate is its own,
        not its model's: work in steps of that batch (``SiaApps.epoch_steps``), and on each type
        its average steps/s over training at its gang (``gang_rates``), i.e. the iterations/s
        the artifact's Gavel plans with. Under ``batch: tuned`` the jobs as JobSet.build made them."""
        if self.options.batch != "fixed":
            return jobs
        batches = submitted_batches(self.path)[np.asarray(jobs.job_id, dtype=np.int64)]
        model = SiaGoodput(self.apps, np.asarray(jobs.model), batches, cluster.gpus_per_host)
        gph = cluster.gpus_per_host
        work = np.array([model.step_ends(int(m), int(b))[-1] for m, b in zip(jobs.model, batches)])
        packed = np.zeros((len(jobs), cluster.num_types))
        spread = packed.copy()
        memo: dict[tuple[int, int, int, int], tuple[float, float]] = {}  # (model, gpus, batch, type)
        for j, (m, n, b) in enumerate(zip(jobs.model.tolist(), jobs.workers.tolist(), batches.tolist())):
            for t in np.flatnonzero(jobs.feasible[j]).tolist():
                if (m, n, b, t) not in memo:
                    memo[(m, n, b, t)] = gang_rates(model, m, t, n, gph, b)
                packed[j, t], spread[j, t] = memo[(m, n, b, t)]
        spread = np.where(np.isfinite(spread), spread, packed)
        feasible = jobs.feasible & np.isfinite(packed)
        if not feasible.any(axis=1).all():
            j = int(np.flatnonzero(~feasible.any(axis=1))[0])
            raise InputError(
                str(self.path),
                "batch_size",
                f"job {int(jobs.job_id[j])} ({jobs.model_name[j]}) cannot train at batch {int(batches[j])} on "
                f"{int(jobs.workers[j])} GPUs of any type",
            )
        arrays = dict(
            work=work,
            tput_packed=np.where(feasible, packed, 0.0),
            tput_spread=np.where(feasible, spread, 0.0),
            feasible=feasible,
        )
        for a in arrays.values():
            a.setflags(write=False)
        return dataclasses.replace(jobs, work_unit="steps", **arrays)


def load_sia(cfg: Mapping[str, Any], cluster: ClusterSpec, src: str) -> SiaCatalog:
    """catalog=sia: the profiles of the applications the workload names, on the cluster's types."""
    o = SiaOptions.from_config(cfg, src)
    raw = cfg.get("path")
    require(
        isinstance(raw, str) and raw.strip() != "", src, "path", "is required: e.g. workload.path=saturn/workload-1"
    )
    path = workload_path(o, raw)
    models = tuple(dict.fromkeys(read_sia_table(path)["application"]))
    apps = SiaApps.load(o, models, cluster, src)
    base = sia_catalog(apps, cluster, str(o.dir))
    return SiaCatalog(
        **{f.name: getattr(base, f.name) for f in dataclasses.fields(Catalog)}, apps=apps, options=o, path=path
    )


def sia_elastic(jobs, catalog: SiaCatalog, cluster: ClusterSpec, chosen: np.ndarray, lo: np.ndarray, hi: np.ndarray):
    """ElasticJobs of Sia's jobs: elastic unless chosen out or ``category`` rigid, at SiaGoodput's
    rate; under ``batch: fixed`` every job a rigid gang at its CSV batch (the artifact's Gavel).
    Under ``scheduler_batch: submitted`` a tuned job tells the scheduler its goodput with the batch
    tuned only up to its CSV batch, as the artifact's jobs do (job.py get_speedup_fn), while it
    trains tuning up to its model's largest."""
    from fairsim.workload.elastic import ElasticJobs

    rows = np.asarray(jobs.job_id, dtype=np.int64)
    fixed = catalog.options.batch == "fixed"
    batches = submitted_batches(catalog.path)[rows] if fixed else np.zeros(len(rows), dtype=np.int64)
    elastic = np.asarray(chosen, dtype=bool) & ~rigid_rows(catalog.path)[rows]
    sized = elastic & (not fixed)
    model = SiaGoodput(catalog.apps, np.asarray(jobs.model), batches, cluster.gpus_per_host)
    estimate = None
    if not fixed and catalog.options.scheduler_batch == "submitted":
        submitted = submitted_batches(catalog.path)[rows]
        estimate = SiaGoodput(catalog.apps, np.asarray(jobs.model), batches, cluster.gpus_per_host, caps=submitted)
    return ElasticJobs(
        elastic=elastic if fixed else sized,
        min_gpus=np.where(sized, lo, jobs.workers).astype(np.int64),
        max_gpus=np.where(sized, hi, jobs.workers).astype(np.int64),
        model=model,
        estimate=estimate,
    )
