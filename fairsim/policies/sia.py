"""Sia (Jayaram Subramanya et al., "Sia: Heterogeneity-aware, goodput-optimized ML-cluster
scheduling", SOSP'23): every round, a 0/1 program picks for each job at most one configuration,
a GPU type and a GPU count, maximising the jobs' normalised goodputs raised to a fairness power.

As the authors' simulator does it (siasosp23/artifacts, sia-simulator/sia.py; facts in
docs/baselines.md "Sia"):

- Configurations per type: 1, 2, 4, ... GPUs below a host's size, then whole hosts (one host,
  two, ... up to the type's hosts), each on as few hosts as hold it. An elastic job may take
  those within its GPU-count range; a rigid job only its own gang on each type.
- Goodput of each (job, configuration) from the view (``PolicyView.goodput``), normalised per job
  by its smallest positive goodput over all its configurations, so its worst is 1.
- Bootstrap (``bootstrap``): ``profiled`` (default): before an elastic job first runs, Sia knows
  it only as 1 GPU of any type, every type alike; once it has run on a type, its goodput there
  is known at every count and projected to the other types from its 1-GPU profiles (scaled by
  the two types' 1-GPU ratio). Rigid jobs are known on every type. ``oracle``: goodput known
  everywhere from the start.
- Restarts: a job that held a configuration in the previous round has every other
  configuration scaled by Pollux's re-allocation factor (age - restarts x penalty) / (age +
  penalty), 1 while the job is younger than the penalty; a job that holds nothing is not scaled
  (the artifact's ``if prev_config_idx is not None``; ``realloc_scaled=all`` scales every
  configuration but the current one of every job). A job in
  the middle of a restart keeps its configuration. The penalty is
  ``restart_penalty_s``, or per model ``restart_penalty_by_model`` {model name: seconds}; the
  default is the artifact's table (sia.py: imagenet 250, bert 120, yolov3 45, deepspeech2 25,
  cifar10 30, others ``restart_penalty_s``), which names Sia's models only; null: one penalty.
- Objective: coefficients round(speedup^p, 2), clipped at ``clip``; with p < 0 the program
  minimises sum(coefficient x chosen) + lambda_n x (jobs left without an allocation); with p > 0
  it maximises. ``lambda_a`` adds to every configuration other than the job's current one (the
  artifact passes 0.01 but its program never reads it: 0 reproduces it).
- ``growth_cap`` (default 2, the artifact's max_replicas): an elastic job takes at most twice
  the most GPUs it has been given (1 before its first run); null lifts the cap.
- For replaying Sia's simulator (off by default): ``host_gpus`` {type: GPUs per host} builds a
  type's configurations on hosts of that size (fairsim's cluster has one host size).
- Solved exactly by HiGHS within ``mip_gap`` (the artifact: CBC or GLPK, gap 1e-4), under a
  node budget, so the same run gives the same decisions on any machine.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

import numpy as np

from fairsim.cluster import ClusterSpec
from fairsim.errors import InputError
from fairsim.policies.base import Allocation, Policy, PolicyView
from fairsim.policies.pollux import realloc_factor
from fairsim.solve.budget import Budget, Limits
from fairsim.solve.choice import choose_options

BOOTSTRAPS = ("profiled", "oracle")
REALLOC_SCALED = ("held", "all")  # which jobs' other configurations the re-allocation factor scales
# the artifact's per-model restart penalties in the re-allocation factor (sia.py; others: restart_penalty_s, 30)
ARTIFACT_RESTART_PENALTIES = MappingProxyType(
    {"deepspeech2": 25.0, "imagenet": 250.0, "cifar10": 30.0, "bert": 120.0, "yolov3": 45.0}
)
TINY_GAIN = 1e-4  # a normalised goodput at or below this is no configuration at all (the artifact's floor)


def gpu_counts(gpus_per_host: int, hosts: int) -> np.ndarray:
    """Sia's configurations of one type: powers of two below a host's size, then whole hosts."""
    small = [g for g in (1 << i for i in range(max(gpus_per_host, 1).bit_length())) if g < gpus_per_host]
    return np.array(small + [gpus_per_host * m for m in range(1, hosts + 1)], dtype=np.int64)


class SiaPolicy(Policy):
    def __init__(
        self,
        p: float = -0.5,
        lambda_n: float = 1.1,
        lambda_a: float = 0.0,
        clip: float = 3000.0,
        restart_penalty_s: float = 30.0,
        restart_penalty_by_model: Mapping | None = ARTIFACT_RESTART_PENALTIES,
        bootstrap: str = "profiled",
        mip_gap: float = 1e-4,
        mip_nodes: int = 10000,
        host_gpus: dict | None = None,
        growth_cap: float | None = 2.0,
        realloc_scaled: str = "held",
    ):
        if bootstrap not in BOOTSTRAPS:
            raise InputError(
                "policy", "bootstrap", f"unknown bootstrap {bootstrap!r} (allowed: {', '.join(BOOTSTRAPS)})"
            )
        if realloc_scaled not in REALLOC_SCALED:
            raise InputError(
                "policy",
                "realloc_scaled",
                f"unknown value {realloc_scaled!r} (allowed: {', '.join(REALLOC_SCALED)})",
            )
        self.realloc_scaled = realloc_scaled
        if p == 0:
            raise InputError("policy", "p", "p must be non-zero (allowed: p < 0, Sia's -0.5, or p > 0)")
        for name, value in (("clip", clip), ("restart_penalty_s", restart_penalty_s), ("mip_gap", mip_gap)):
            if not value >= 0:
                raise InputError("policy", name, f"{value!r} must be a number >= 0")
        self.p, self.lambda_n, self.lambda_a, self.clip = float(p), float(lambda_n), float(lambda_a), float(clip)
        self.restart_penalty_s, self.bootstrap, self.mip_gap = float(restart_penalty_s), bootstrap, float(mip_gap)
        self.penalty_by_model = {}
        for name, seconds in dict(restart_penalty_by_model or {}).items():
            if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or not seconds >= 0:
                raise InputError("policy", f"restart_penalty_by_model.{name}", f"must be seconds >= 0, got {seconds!r}")
            self.penalty_by_model[str(name)] = float(seconds)
        self.limits = Limits(mip_nodes=int(mip_nodes))
        self.host_gpus = dict(host_gpus or {})
        for name, size in self.host_gpus.items():
            if isinstance(size, bool) or not isinstance(size, int) or size < 1:
                raise InputError("policy", f"host_gpus.{name}", f"must be a GPU count >= 1, got {size!r}")
        if growth_cap is not None and not (
            isinstance(growth_cap, (int, float)) and not isinstance(growth_cap, bool) and growth_cap >= 1
        ):
            raise InputError("policy", "growth_cap", f"must be null or a number >= 1, got {growth_cap!r}")
        self.growth_cap = None if growth_cap is None else float(growth_cap)

    def reset(self, cluster: ClusterSpec, num_jobs: int, seed: int) -> None:
        self.budget = Budget(self.limits)
        sizes = {}
        for name, n in self.host_gpus.items():
            match = [t for t in cluster.gpu_types if t.lower() == str(name).lower()]
            if not match:
                raise InputError(
                    "policy",
                    f"host_gpus.{name}",
                    f"is not a GPU type of this cluster (has: {', '.join(cluster.gpu_types)})",
                )
            sizes[match[0]] = n
        self.counts = []
        for name, count, hosts in zip(cluster.gpu_types, cluster.counts, cluster.hosts_per_type):
            size = sizes.get(name, cluster.gpus_per_host)  # Sia's host size of the type, if not the cluster's
            self.counts.append(
                gpu_counts(size, int(hosts) if size == cluster.gpus_per_host else -(-int(count) // size))
            )
        self.most_gpus = np.zeros(num_jobs, dtype=np.int64)  # most GPUs a job has been given (growth_cap)
        self.ran_on = np.zeros((num_jobs, cluster.num_types), dtype=bool)  # types a job has run on (profiled there)
        self.restarts = np.zeros(num_jobs, dtype=np.int64)  # allocation changes after its first start
        self.suboptimal = 0

    # ---- the candidates -------------------------------------------------------------------------
    def _options(self, view: PolicyView):
        """Every (row, type, GPU count) a job may take, with its goodput now (the bootstrap's
        estimate where the job has not run)."""
        rows, kinds, gpus = [], [], []
        gph = view.cluster.gpus_per_host
        for k, counts in enumerate(self.counts):
            fits = counts <= view.capacity[k]
            ok = view.feasible[:, k][:, None] & fits[None, :]
            ok &= (counts[None, :] >= view.min_gpus[:, None]) & (counts[None, :] <= view.max_gpus[:, None])
            if self.growth_cap is not None:  # Sia: at most growth_cap x the most GPUs it ran on (1 before)
                # never below the job's own floor: the artifact's jobs start at 1 GPU, their floor;
                # a job whose memory needs 2 would otherwise never start (a stall)
                grown = np.maximum(self.growth_cap * self.most_gpus[view.job_id], view.min_gpus)
                ok &= ~view.elastic[:, None] | (counts[None, :] <= grown[:, None])
            r, c = np.nonzero(ok)
            rows.append(r)
            kinds.append(np.full(len(r), k))
            gpus.append(counts[c])
            # a job's smallest count (a rigid job's gang), when it is not one of Sia's counts
            own = np.flatnonzero(
                view.feasible[:, k] & (view.min_gpus <= view.capacity[k]) & ~np.isin(view.min_gpus, counts)
            )
            rows.append(own)
            kinds.append(np.full(len(own), k))
            gpus.append(view.min_gpus[own])
        rows, kinds, gpus = (np.concatenate(a).astype(np.int64) for a in (rows, kinds, gpus))
        rate = view.goodput(rows, kinds, gpus, -(-gpus // gph))
        if self.bootstrap == "profiled":
            rate = self._as_profiled(view, rows, kinds, gpus, rate)
        keep = rate > 0
        return rows[keep], kinds[keep], gpus[keep], rate[keep]

    def _as_profiled(self, view, rows, kinds, gpus, rate):
        """What Sia knows of an elastic job: exact goodput on the types it ran on; elsewhere its
        profile at the smallest count it runs on (the artifact: 1 GPU), and more GPUs projected
        from its best-known type by the two profiles' ratio; before its first run, the smallest
        count it runs on of each type, all alike. A rigid job's throughput on every type."""
        n, num_types = view.num_jobs, view.num_types
        ids = view.job_id[rows]
        known = self.ran_on[ids, kinds]
        ran_any = self.ran_on[view.job_id].any(axis=1)
        rigid = ~view.elastic[rows]  # known at its gang on every type (the artifact's rigid throughputs)
        # each (job, type)'s smallest count it can run on, and each job's smallest over its types:
        # its profile (the artifact: 1 GPU, a data-parallel job's smallest)
        key = rows * num_types + kinds
        runnable = rate > 0
        floor = np.full(n * num_types, np.iinfo(np.int64).max)
        np.minimum.at(floor, key[runnable], gpus[runnable])
        smallest = runnable & (gpus == floor[key])
        profile_gpus = floor.reshape(n, num_types).min(axis=1)
        out = np.where(known | rigid | ((gpus == profile_gpus[rows]) & ran_any[rows]), rate, 0.0)
        # before its first run: the smallest count of every type it can run on, alike (the
        # artifact gives each type's 1-GPU configuration the same normalised value)
        out[~rigid & ~ran_any[rows] & smallest] = 1.0
        guess = ~rigid & ~known & ran_any[rows] & (gpus > profile_gpus[rows])
        if guess.any():
            profile = view.goodput(
                np.repeat(np.arange(n), num_types),
                np.tile(np.arange(num_types), n),
                np.repeat(np.minimum(profile_gpus, view.max_gpus), num_types),
            ).reshape(n, num_types)
            g_rows, g_kinds, g_gpus = rows[guess], kinds[guess], gpus[guess]
            # the best type it ran on (by its profile) stands in; its goodput there at this count
            ran = self.ran_on[view.job_id[g_rows]]
            base = np.argmax(np.where(ran, profile[g_rows], -1.0), axis=1)
            there = view.goodput(g_rows, base, g_gpus, -(-g_gpus // view.cluster.gpus_per_host))
            with np.errstate(divide="ignore", invalid="ignore"):
                ratio = np.where(profile[g_rows, base] > 0, profile[g_rows, g_kinds] / profile[g_rows, base], 0.0)
            out[guess] = there * ratio
        return out

    # ---- the decision ---------------------------------------------------------------------------
    def decide(self, view: PolicyView) -> Allocation:
        n = view.num_jobs
        types, counts = view.empty_assignment(), view.workers.copy()
        if n == 0:
            return Allocation(types, counts)
        rows, kinds, gpus, rate = self._options(view)
        floor = np.full(n, np.inf)
        np.minimum.at(floor, rows, rate)
        speedup = np.maximum(rate / floor[rows], TINY_GAIN)
        running = view.last_type >= 0
        current = running[rows] & (kinds == view.last_type[rows]) & (gpus == view.gpus[rows])
        factor = self._realloc_factor(view)
        scaled = ~current if self.realloc_scaled == "all" else running[rows] & ~current
        speedup = np.where(scaled, speedup * factor[rows], speedup)
        with np.errstate(divide="ignore"):  # a factor of 0 (restarts ate its life) makes 0^p: inf, clipped
            coefficient = np.minimum(np.round(np.power(speedup, self.p), 2), self.clip)
        coefficient = coefficient + np.where(current, 0.0, self.lambda_a)
        # lambda_n x (n - chosen): each chosen option takes lambda_n off; the constant is left out
        cost = coefficient - self.lambda_n
        # a job in the middle of a restart keeps its configuration
        frozen = running & (view.owed_s > 0)
        forced = current & frozen[rows]
        choice = choose_options(
            cost,
            rows,
            kinds,
            gpus,
            view.capacity,
            n,
            forced=np.flatnonzero(forced),
            maximize=self.p > 0,
            mip_gap=self.mip_gap,
            budget=self.budget,
        )
        self.suboptimal += not choice.optimal
        chosen = choice.option >= 0
        types[chosen] = kinds[choice.option[chosen]]
        counts[chosen] = gpus[choice.option[chosen]]
        self._remember(view, types, counts)
        return Allocation(types, counts)

    def _realloc_factor(self, view: PolicyView) -> np.ndarray:
        """Pollux's re-allocation factor, as Sia's simulator applies it (sia_use_pollux_realloc_factor)."""
        age = view.now - view.arrival
        penalty = self._penalty(view)
        factor = realloc_factor(age, self.restarts[view.job_id], penalty)
        return np.where(age < penalty, 1.0, factor)

    def _penalty(self, view: PolicyView) -> np.ndarray | float:
        """Each job's restart penalty in seconds: its model's, else ``restart_penalty_s``."""
        if not self.penalty_by_model:
            return self.restart_penalty_s
        return np.array([self.penalty_by_model.get(m, self.restart_penalty_s) for m in view.model_name])

    def _remember(self, view: PolicyView, types: np.ndarray, counts: np.ndarray) -> None:
        ids = view.job_id
        running = view.last_type >= 0
        changed = running & (types >= 0) & ((types != view.last_type) | (counts != view.gpus))
        resumed = ~running & (types >= 0) & ~np.isnan(view.first_start)
        self.restarts[ids[changed | resumed]] += 1
        run = types >= 0
        self.ran_on[ids[run], types[run]] = True
        np.maximum.at(self.most_gpus, ids[run], counts[run])

    def stats(self) -> dict[str, float]:
        return {"sia_suboptimal_solves": float(self.suboptimal), **self.budget.stats(("mip_nodes",))}
