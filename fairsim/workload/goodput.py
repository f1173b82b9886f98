"""Pollux's goodput model (Qiao et al., OSDI'21), written for fairsim: the step time of
data-parallel SGD from seven fitted performance parameters, the statistical efficiency of a batch
size from the gradient noise, the batch size and gradient accumulation that maximise their
product, and the fit of the parameters to profiled step times. docs/elastic.md gives the
equations, the sources and what is left out.

Per job on ``nodes`` hosts with ``replicas`` GPUs, each running ``atomic`` examples per
forward/backward pass and ``accum`` extra passes before each optimizer step:

    T_compute = alpha_c + beta_c * atomic                 (one forward/backward pass)
    T_network = alpha_n + beta_n * max(replicas - 2, 0)   if nodes > 1
              = alpha_r + beta_r * max(replicas - 2, 0)   if nodes == 1 and replicas > 1
              = 0                                         if replicas == 1
    T_sync    = (T_compute^gamma + T_network^gamma)^(1/gamma)   (the last pass overlaps the all-reduce)
    T_step    = accum * T_compute + T_sync
    batch     = replicas * atomic * (accum + 1)
    throughput = batch / T_step                                  (examples/s)
    scale = batch / init_batch;  gain = (var + sqr) / (var / scale + sqr);  efficiency = gain / scale
    goodput = throughput * efficiency        (examples/s at the efficiency of the initial batch)

``PolluxGoodput`` applies it to jobs of the six applications of Pollux's artifact
(``fairsim/data/pollux``), whose step times were profiled on T4 GPUs.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

import numpy as np
import pandas as pd

from fairsim.errors import InputError, require
from fairsim.files import note_input
from fairsim.workload.elastic import rate_arrays

PERF_FIELDS = ("alpha_c", "beta_c", "alpha_n", "beta_n", "alpha_r", "beta_r", "gamma")
GAMMA_RANGE = (1.0, 10.0)  # 1: compute and network add up; 10: close to max(compute, network)
BATCH_CANDIDATES = 50  # total batch sizes tried, geometrically spaced from the smallest to the largest allowed
PROFILED_GPU = "T4"  # Pollux's testbed: AWS g4dn.12xlarge hosts, 4 NVIDIA T4 each
_STATS = ("progress", "grad_sqr", "grad_var")
_EPS = 1e-8  # slack of ceilings, so a batch that divides exactly is not rounded up


@dataclass(frozen=True)
class PerfParams:
    """One model's step-time parameters on one GPU type (seconds; gamma dimensionless)."""

    alpha_c: float  # fixed time of a forward/backward pass
    beta_c: float  # time per example of a forward/backward pass
    alpha_n: float  # all-reduce across hosts: fixed time
    beta_n: float  # all-reduce across hosts: time per replica beyond two
    alpha_r: float  # all-reduce within one host: fixed time
    beta_r: float  # all-reduce within one host: time per replica beyond two
    gamma: float  # overlap of compute and network, in [1, 10]

    def as_array(self) -> np.ndarray:
        return np.array([getattr(self, f) for f in PERF_FIELDS], dtype=np.float64)

    @classmethod
    def of(cls, values: Sequence[float]) -> PerfParams:
        return cls(*(float(v) for v in values))


@dataclass(frozen=True)
class BatchLimits:
    """A model's batch-size rules, in examples."""

    init_batch: int  # the batch size training starts at and efficiency is measured against
    max_batch: int  # the largest total batch size it may use
    min_local: int  # fewest examples per GPU per pass
    max_local: int  # most examples per GPU per pass (GPU memory); beyond it, passes are accumulated


@dataclass(frozen=True)
class BatchChoice:
    """The goodput-maximising configuration, arrays over the queries (goodput 0: cannot run)."""

    goodput: np.ndarray  # float, examples/s at the efficiency of the initial batch
    throughput: np.ndarray  # float, examples/s
    efficiency: np.ndarray  # float, in (0, 1]
    batch: np.ndarray  # int, replicas * atomic * (accum + 1)
    atomic: np.ndarray  # int, examples per GPU per pass
    accum: np.ndarray  # int, extra passes accumulated before each optimizer step


# --- the performance model --------------------------------------------------------------


def compute_time(p: PerfParams, atomic) -> np.ndarray:
    """Seconds of one forward/backward pass of ``atomic`` examples on one GPU."""
    return p.alpha_c + p.beta_c * np.asarray(atomic, dtype=np.float64)


def network_time(p: PerfParams, nodes, replicas) -> np.ndarray:
    """Seconds of the gradient all-reduce: the slowest link's (hosts if more than one host, else
    the GPUs of one host) fixed time plus a time per replica beyond two (ring all-reduce); 0 for
    one replica."""
    nodes, replicas = np.asarray(nodes), np.asarray(replicas)
    extra = np.maximum(replicas - 2, 0).astype(np.float64)
    across = p.alpha_n + p.beta_n * extra
    within = p.alpha_r + p.beta_r * extra
    return np.where(nodes > 1, across, np.where(replicas > 1, within, 0.0))


def sync_time(p: PerfParams, t_compute, t_network) -> np.ndarray:
    """Seconds of the pass that ends in the all-reduce: the gamma-norm of compute and network."""
    g = p.gamma
    # scaled by the larger term so that t^gamma neither under- nor overflows
    big = np.maximum(np.maximum(t_compute, t_network), 1e-300)
    return big * ((t_compute / big) ** g + (t_network / big) ** g) ** (1.0 / g)


def step_time(p: PerfParams, nodes, replicas, atomic, accum) -> np.ndarray:
    """Seconds of one optimizer step: ``accum`` passes alone, then one overlapping the all-reduce."""
    t_c = compute_time(p, atomic)
    return np.asarray(accum) * t_c + sync_time(p, t_c, network_time(p, nodes, replicas))


def throughput(p: PerfParams, nodes, replicas, atomic, accum) -> np.ndarray:
    """Examples per second."""
    batch = np.asarray(replicas) * np.asarray(atomic) * (np.asarray(accum) + 1)
    return batch / step_time(p, nodes, replicas, atomic, accum)


# --- statistical efficiency --------------------------------------------------------------


def efficiency(grad_sqr, grad_var, batch, init_batch) -> np.ndarray:
    """Progress per example at ``batch`` relative to ``init_batch``, from the squared norm of the
    gradient (``grad_sqr``) and its variance (``grad_var``, at the initial batch): gain / scale.
    var / sqr * init_batch is the gradient noise scale; with no gradient signal left (both 0)
    the gain is 1."""
    scale = np.asarray(batch, dtype=np.float64) / init_batch
    sqr, var = np.asarray(grad_sqr, dtype=np.float64), np.asarray(grad_var, dtype=np.float64)
    denom = var / scale + sqr
    gain = np.where(denom > 0, (var + sqr) / np.where(denom > 0, denom, 1.0), 1.0)
    return gain / scale


# --- the batch-size choice ---------------------------------------------------------------


def batch_candidates(limits: BatchLimits, replicas) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Configurations to try per query: (batch, atomic, accum, valid), each [Q, BATCH_CANDIDATES].

    Total batch sizes run geometrically from the smallest allowed (the initial batch, or
    min_local per replica if that is more) to max_batch. Each is split over the replicas; a
    local batch above max_local is split into passes (accumulation), and a single replica
    above the initial batch accumulates at least once (its gradient statistics need two
    passes). The per-pass batch is rounded up, then cut so the total stays <= max_batch. A
    candidate is valid when its per-pass batch is within [min_local, max_local]."""
    replicas = np.asarray(replicas, dtype=np.int64).reshape(-1, 1)
    lo = np.maximum(limits.init_batch, limits.min_local * replicas).astype(np.float64)
    hi = float(limits.max_batch)
    frac = np.linspace(0.0, 1.0, BATCH_CANDIDATES)[None, :]
    wanted = lo * (np.maximum(hi, lo) / lo) ** frac
    local = wanted / replicas
    accum = np.ceil(local / limits.max_local - _EPS) - 1
    accum = np.where((replicas == 1) & (local > limits.init_batch + _EPS), np.maximum(accum, 1), accum)
    accum = accum.astype(np.int64)
    atomic = np.ceil(local / (accum + 1) - _EPS).astype(np.int64)
    atomic = np.minimum(atomic, limits.max_batch // (replicas * (accum + 1)))
    batch = replicas * atomic * (accum + 1)
    valid = (atomic >= limits.min_local) & (atomic <= limits.max_local) & (batch >= limits.init_batch)
    return batch, atomic, accum, valid


def best_batch(p: PerfParams, limits: BatchLimits, nodes, replicas, grad_sqr, grad_var) -> BatchChoice:
    """The batch size and accumulation with the highest goodput for each (nodes, replicas).

    ``grad_sqr``/``grad_var``: scalars, 1-D arrays (one per query) or [Q, BATCH_CANDIDATES]
    arrays; or ``grad_sqr`` a callable ``(batch [Q, K]) -> (sqr, var)`` giving the statistics at
    each candidate's batch size (``PolluxCatalog.grad_stats``), ``grad_var`` then unused. Of
    equal goodputs the first (smallest) candidate wins."""
    nodes = np.asarray(nodes, dtype=np.int64).reshape(-1, 1)
    replicas_col = np.asarray(replicas, dtype=np.int64).reshape(-1, 1)
    batch, atomic, accum, valid = batch_candidates(limits, replicas_col)
    if callable(grad_sqr):
        sqr, var = grad_sqr(batch)
    else:
        sqr, var = _per_query(grad_sqr), _per_query(grad_var)
    tput = throughput(p, nodes, replicas_col, atomic, accum)
    eff = efficiency(sqr, var, batch, limits.init_batch)
    goodput = np.where(valid, tput * eff, 0.0)
    k = np.argmax(goodput, axis=1)[:, None]  # the first best: candidates run from small to large

    def pick(a: np.ndarray) -> np.ndarray:
        return np.take_along_axis(np.broadcast_to(a, goodput.shape), k, axis=1)[:, 0]

    return BatchChoice(
        goodput=pick(goodput),
        throughput=np.where(pick(valid), pick(tput), 0.0),
        efficiency=np.where(pick(valid), pick(eff), 0.0),
        batch=pick(batch),
        atomic=pick(atomic),
        accum=pick(accum),
    )


def _per_query(x) -> np.ndarray:
    a = np.asarray(x, dtype=np.float64)
    return a.reshape(-1, 1) if a.ndim == 1 else a


# --- the fit -----------------------------------------------------------------------------


@dataclass(frozen=True)
class FitResult:
    params: PerfParams
    rmsle_compute: float  # root mean squared log error of the predicted pass times
    rmsle_step: float  # ... and of the predicted sync-pass (step) times
    median_abs_rel_error: float  # median |predicted / measured - 1| of the step times
    rows: int


def fit_perf_params(
    nodes,
    replicas,
    atomic,
    compute_s,
    step_s,
    *,
    gamma_weight: float = 1e-3,
    retrogression_weight: float = 1e-2,
) -> FitResult:
    """Fit PerfParams to profiled times: ``compute_s`` is a pass without the all-reduce (step
    time minus sync wait), ``step_s`` the whole step of a pass that ends in the all-reduce (no
    accumulation). Minimises the RMS log error of both predictions plus two small penalties, as
    Pollux does: ``gamma_weight * (gamma - 1)^2`` (prefer little overlap, which is easier to fit)
    and ``retrogression_weight * ((beta_n/alpha_n)^2 + (beta_r/alpha_r)^2)`` (prefer the
    optimistic model that scales). Parameters the rows cannot identify are pinned at their lower
    bound: the network terms without multi-host rows (across) or single-host multi-GPU rows
    (within), the per-replica terms without rows of more than two replicas, and alpha_c at half
    the mean pass time when only one per-pass batch size was profiled.

    Deterministic: L-BFGS-B from a fixed start, over the logarithm of the six times (they span
    orders of magnitude) and gamma itself."""
    nodes, replicas = np.asarray(nodes, dtype=np.int64), np.asarray(replicas, dtype=np.int64)
    atomic = np.asarray(atomic, dtype=np.float64)
    compute_s, step_s = np.asarray(compute_s, dtype=np.float64), np.asarray(step_s, dtype=np.float64)
    require(len(nodes) > 0, "fit", "rows", "needs at least one profiled step")
    require(
        bool((compute_s > 0).all() and (step_s > 0).all()), "fit", "times", "every profiled time must be > 0 seconds"
    )
    floor = 1e-8
    start = np.array([1e-1, 1e-2] * 3 + [1.0 + 1e-3])
    fixed: dict[int, float] = {}
    if len(np.unique(atomic)) == 1:
        fixed[0] = float(np.mean(compute_s)) / 2
    if not (nodes > 1).any():
        fixed[2] = fixed[3] = floor
    if not ((nodes == 1) & (replicas > 1)).any():
        fixed[4] = fixed[5] = floor
    if not (replicas > 2).any():
        fixed[3] = fixed[5] = floor
    free = [i for i in range(7) if i not in fixed]
    log_compute, log_step = np.log(compute_s), np.log(step_s)
    extra = np.maximum(replicas - 2, 0).astype(np.float64)
    across, within = nodes > 1, (nodes == 1) & (replicas > 1)

    def full(x: np.ndarray) -> np.ndarray:
        v = start.copy()
        for i, val in fixed.items():
            v[i] = val
        for j, i in enumerate(free):
            v[i] = x[j] if i == 6 else np.exp(x[j])
        return v

    def objective(x: np.ndarray) -> float:
        a_c, b_c, a_n, b_n, a_r, b_r, g = full(x)
        t_c = a_c + b_c * atomic
        t_n = np.where(across, a_n + b_n * extra, np.where(within, a_r + b_r * extra, 0.0))
        big = np.maximum(t_c, t_n)
        log_sync = np.log(big) + np.log((t_c / big) ** g + (t_n / big) ** g) / g
        err_c = np.sqrt(np.mean((np.log(t_c) - log_compute) ** 2))
        err_s = np.sqrt(np.mean((log_sync - log_step) ** 2))
        reg = gamma_weight * (g - 1.0) ** 2 + retrogression_weight * ((b_n / a_n) ** 2 + (b_r / a_r) ** 2)
        return float(err_c + err_s + reg)

    import scipy.optimize  # only a fit needs it: a run reads the fitted parameters

    x0 = np.array([start[i] if i == 6 else np.log(start[i]) for i in free])
    bounds = [GAMMA_RANGE if i == 6 else (np.log(floor), np.log(1e4)) for i in free]
    result = scipy.optimize.minimize(
        objective, x0, method="L-BFGS-B", bounds=bounds, options={"maxiter": 5000, "ftol": 1e-15, "gtol": 1e-12}
    )
    params = PerfParams.of(full(result.x))
    t_c = compute_time(params, atomic)
    t_s = sync_time(params, t_c, network_time(params, nodes, replicas))
    return FitResult(
        params=params,
        rmsle_compute=float(np.sqrt(np.mean((np.log(t_c) - log_compute) ** 2))),
        rmsle_step=float(np.sqrt(np.mean((np.log(t_s) - log_step) ** 2))),
        median_abs_rel_error=float(np.median(np.abs(t_s / step_s - 1.0))),
        rows=len(nodes),
    )


# --- Pollux's applications ---------------------------------------------------------------


def pollux_dir() -> Path:
    return Path(str(resources.files("fairsim.data").joinpath("pollux")))


@dataclass(frozen=True, eq=False)
class PolluxCatalog:
    """The six applications of Pollux's artifact: batch limits, fitted step-time parameters
    (T4) and gradient statistics by epoch and batch size. Progress is counted in examples at
    the efficiency of the initial batch (Pollux's simulator counts the same in steps of the
    initial batch: divide by ``init_batch``)."""

    models: tuple[str, ...]
    limits: tuple[BatchLimits, ...]
    perf: tuple[PerfParams, ...]
    max_epochs: np.ndarray  # int [M]
    batch_sizes: tuple[np.ndarray, ...]  # per model: validated batch sizes, ascending [B]
    grad_sqr: tuple[np.ndarray, ...]  # per model: [B, E]
    grad_var: tuple[np.ndarray, ...]  # per model: [B, E]
    epoch_ends: tuple[np.ndarray, ...]  # per model: examples done at the end of each epoch [max_epochs]

    @property
    def target_examples(self) -> np.ndarray:
        """float [M]: examples (at the initial batch's efficiency) to finish training."""
        return np.array([ends[-1] for ends in self.epoch_ends])

    def index(self, name: str, source: str = "pollux", field: str = "model") -> int:
        if name not in self.models:
            raise InputError(source, field, f"unknown Pollux model {name!r} (allowed: {', '.join(self.models)})")
        return self.models.index(name)

    def epoch(self, m: int, done) -> np.ndarray:
        """int: the epoch a job of model m is in after ``done`` examples (epochs completed),
        capped at the last epoch."""
        ends = self.epoch_ends[m]
        return np.minimum(np.searchsorted(ends, np.asarray(done, dtype=np.float64), side="right"), len(ends) - 1)

    def grad_stats(self, m: int, epoch, batch) -> tuple[np.ndarray, np.ndarray]:
        """(sqr, var) of model m during ``epoch`` at total batch ``batch``: the profiled values
        of that epoch, linear in the batch size between the validated batch sizes (clamped to
        the smallest and largest). ``epoch`` and ``batch`` broadcast."""
        sizes = self.batch_sizes[m].astype(np.float64)
        epoch, batch = np.broadcast_arrays(np.asarray(epoch, dtype=np.int64), np.asarray(batch, dtype=np.float64))
        sqr, var = self.grad_sqr[m], self.grad_var[m]
        if len(sizes) == 1:
            return sqr[0, epoch], var[0, epoch]
        b = np.clip(batch, sizes[0], sizes[-1])
        hi = np.clip(np.searchsorted(sizes, b, side="left"), 1, len(sizes) - 1)
        lo = hi - 1
        w = (b - sizes[lo]) / (sizes[hi] - sizes[lo])
        return (1 - w) * sqr[lo, epoch] + w * sqr[hi, epoch], (1 - w) * var[lo, epoch] + w * var[hi, epoch]

    def choose(self, m: int, nodes, replicas, done) -> BatchChoice:
        """Goodput-maximising batch of model m on (nodes, replicas) after ``done`` examples,
        judged with the gradient statistics at each candidate batch size."""
        nodes, replicas, done = np.broadcast_arrays(np.asarray(nodes), np.asarray(replicas), np.asarray(done))
        epoch = self.epoch(m, done).reshape(-1, 1)
        return best_batch(
            self.perf[m],
            self.limits[m],
            nodes.reshape(-1),
            replicas.reshape(-1),
            lambda batch: self.grad_stats(m, epoch, batch),
            None,
        )

    def mean_rate(self, m: int, nodes, replicas) -> np.ndarray:
        """float: the average goodput of model m held at (nodes, replicas) from start to finish,
        re-choosing its batch each epoch: target_examples / the time it takes (0 where it cannot
        run). A rigid job at that allocation finishes in the same time as an elastic one."""
        nodes, replicas = np.broadcast_arrays(np.asarray(nodes, dtype=np.int64), np.asarray(replicas, dtype=np.int64))
        ends = self.epoch_ends[m]
        starts = np.concatenate([[0.0], ends[:-1]])
        q = nodes.size
        rate = self.choose(
            m, np.repeat(nodes.reshape(-1), len(ends)), np.repeat(replicas.reshape(-1), len(ends)), np.tile(starts, q)
        ).goodput.reshape(q, len(ends))
        runs = (rate > 0).all(axis=1)
        seconds = ((ends - starts) / np.where(rate > 0, rate, 1.0)).sum(axis=1)
        return np.where(runs, ends[-1] / seconds, 0.0).reshape(nodes.shape)

    @classmethod
    def load(cls, folder: str | Path | None = None, perf: str | Path | None = None) -> PolluxCatalog:
        """The shipped catalog (``fairsim/data/pollux``); ``perf``: a perf_params CSV of one's own."""
        folder = Path(folder) if folder is not None else pollux_dir()
        meta = pd.read_csv(folder / "models.csv")
        params = pd.read_csv(perf if perf is not None else folder / "perf_params.csv")
        val = pd.read_csv(folder / "validation.csv")
        for path in (
            folder / "models.csv",
            perf if perf is not None else folder / "perf_params.csv",
            folder / "validation.csv",
        ):
            note_input(path)
        _require(
            meta, ("model", "init_batch", "max_batch", "min_local", "max_local", "max_epochs"), folder / "models.csv"
        )
        _require(params, ("model", "gpu", *PERF_FIELDS), folder / "perf_params.csv")
        _require(val, ("model", "batch_size", "epoch", "progress", "grad_sqr", "grad_var"), folder / "validation.csv")
        models, limits, perfs, sizes, sqrs, vars_, ends, epochs = [], [], [], [], [], [], [], []
        for row in meta.itertuples(index=False):
            name = str(row.model)
            models.append(name)
            limits.append(BatchLimits(int(row.init_batch), int(row.max_batch), int(row.min_local), int(row.max_local)))
            prow = params[(params.model == name) & (params.gpu == PROFILED_GPU)]
            require(len(prow) == 1, str(folder), "perf_params", f"needs one {PROFILED_GPU} row for {name}")
            perfs.append(PerfParams.of(prow[list(PERF_FIELDS)].to_numpy()[0]))
            v = val[val.model == name]
            n_ep = int(row.max_epochs)
            stats = {col: v.pivot(index="batch_size", columns="epoch", values=col).sort_index() for col in _STATS}
            require(
                stats["progress"].shape[1] >= n_ep and not stats["progress"].iloc[:, :n_ep].isna().any(axis=None),
                str(folder / "validation.csv"),
                "epoch",
                f"{name}: every batch size needs max_epochs={n_ep} epochs",
            )
            sizes.append(stats["progress"].index.to_numpy(np.int64))
            sqrs.append(stats["grad_sqr"].to_numpy()[:, :n_ep])
            vars_.append(stats["grad_var"].to_numpy()[:, :n_ep])
            # an epoch ends when every validated batch size's run has made that much progress,
            # as Pollux's simulator counts it (the least of the runs' progress at that epoch);
            # its progress is in steps of the initial batch, ours in examples
            ends.append(stats["progress"].to_numpy()[:, :n_ep].min(axis=0) * int(row.init_batch))
            epochs.append(n_ep)
        return cls(
            models=tuple(models),
            limits=tuple(limits),
            perf=tuple(perfs),
            max_epochs=np.array(epochs),
            batch_sizes=tuple(sizes),
            grad_sqr=tuple(sqrs),
            grad_var=tuple(vars_),
            epoch_ends=tuple(ends),
        )


def _require(df: pd.DataFrame, columns: Sequence[str], path: Path) -> None:
    missing = [c for c in columns if c not in df.columns]
    require(not missing, str(path), "columns", f"missing {', '.join(missing)}")


def load_profiles(folder: str | Path | None = None) -> pd.DataFrame:
    """Pollux's profiled step times (``profiles.csv``): model, source, placement, num_nodes,
    num_replicas, local_bsz, step_time, sync_time (seconds, T4)."""
    folder = Path(folder) if folder is not None else pollux_dir()
    return pd.read_csv(folder / "profiles.csv", dtype={"placement": str}, keep_default_na=False)


def fit_profiles(profiles: pd.DataFrame) -> dict[str, FitResult]:
    """PerfParams per model fitted to all of its profiled rows (placements and scalability)."""
    out = {}
    for name, rows in profiles.groupby("model", sort=True):
        out[str(name)] = fit_perf_params(
            rows.num_nodes,
            rows.num_replicas,
            rows.local_bsz,
            rows.step_time - rows.sync_time,
            rows.step_time,
        )
    return out


class PolluxGoodput:
    """GoodputModel for jobs of Pollux's applications: a JobSet row's model name is one of
    ``PolluxCatalog.models``; it runs on ``PROFILED_GPU`` only (rate 0 on any other cluster
    type). Rates are examples/s at the initial batch's efficiency; a job finishes after
    ``PolluxCatalog.target_examples`` of its model."""

    def __init__(self, catalog: PolluxCatalog, model_names: Sequence[str], gpu_types: Sequence[str]):
        self.catalog = catalog
        self.job_model = np.array([catalog.index(str(n), "jobs") for n in model_names], dtype=np.int64)
        self.profiled = np.array([t == PROFILED_GPU for t in gpu_types], dtype=bool)

    def rate(
        self, jobs: np.ndarray, types: np.ndarray, gpus: np.ndarray, hosts: np.ndarray, done: np.ndarray
    ) -> np.ndarray:
        jobs, types, gpus, hosts, done = rate_arrays(jobs, types, gpus, hosts, done)
        out = np.zeros(len(jobs))
        ok = self.profiled[types] & (gpus >= 1) & (hosts >= 1) & (hosts <= gpus)
        model = self.job_model[jobs]
        for m in np.unique(model[ok]):
            sel = ok & (model == m)
            out[sel] = self.catalog.choose(int(m), hosts[sel], gpus[sel], done[sel]).goodput
        return out


def perf_params_table(profiles: pd.DataFrame) -> pd.DataFrame:
    """The perf_params.csv rows: the fit of each model's profiles, and how well it fits."""
    rows = []
    for name, fit in fit_profiles(profiles).items():
        rows.append(
            {
                "model": name,
                "gpu": PROFILED_GPU,
                **{f: getattr(fit.params, f) for f in PERF_FIELDS},
                "rows": fit.rows,
                "rmsle_compute": fit.rmsle_compute,
                "rmsle_step": fit.rmsle_step,
                "median_abs_rel_error": fit.median_abs_rel_error,
            }
        )
    return pd.DataFrame(rows)


if __name__ == "__main__":  # python -m fairsim.workload.goodput [out.csv]: refit the shipped perf_params.csv
    import sys

    out = Path(sys.argv[1]) if len(sys.argv) > 1 else pollux_dir() / "perf_params.csv"
    perf_params_table(load_profiles()).to_csv(out, index=False, float_format="%.10g")
    print(f"wrote {out}")
