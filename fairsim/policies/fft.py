"""FFT, the paper's policy (``policy=ours``): each round, a min-cost, work-conserving assignment
of jobs to GPU types with a fairness compensation (see docs/ours.md for the full derivation).

Cost of running job j on type i this round (paper eq. 6):

    c = phi + s - rho_j * theta_j^i,   phi = (t - a_j) theta_j^i / W_j + d_j W_j / theta_j^i

Units (the paper leaves them open; each is a constructor option with the default below):
- time is counted in rounds: t - a_j, tau_j - a_j and the per-round throughput theta. The two phi
  terms only use the ratio W/theta (rounds to finish), so they do not depend on the work unit.
- ``work_units="best_rounds"``: for the rho term, work is measured in rounds of the job's fastest
  feasible type, so theta' = theta / theta_best is the share of the job's best speed (<= 1) and
  rho (eq. 5) is a deficit in those rounds. Then rho * theta' is in rounds like d W / theta, and a
  starved job overtakes the cheapest job after roughly sqrt(2 d) fair completion times, for any
  catalog unit (epochs, steps). ``native`` uses the catalog unit (scale-dependent).
- ``switch_units="gpu_rounds"``: the switching penalty is the overhead the engine would charge,
  in rounds, times the gang size: the GPU-rounds the switch wastes, the unit of d W / theta.

rho_j follows eq. 5 each round with mu_j = (t - a_j) / (tau_j - a_j); tau_j is re-estimated for all
active jobs whenever the set of active jobs changes (``fairsim.fairness.share``).
"""

from __future__ import annotations

import time

import numpy as np

from fairsim.cluster import ClusterSpec
from fairsim.errors import require
from fairsim.fairness.share import TAU_MODES, fair_finish, fair_rate
from fairsim.policies.base import Policy, PolicyView
from fairsim.solve.budget import (
    DEFAULT_LIMITS,
    DIVE_LPS,
    DIVE_NODES,
    LP_ITERATIONS,
    MIP_NODES,
    PACKING_NODES,
    WALL_CLOCK,
    Budget,
    Limits,
    check_limits,
)
from fairsim.solve.lp_dive import solve_lp_dive
from fairsim.solve.lp_repair import solve_lp_repair
from fairsim.solve.milp import solve_milp
from fairsim.solve.packing import max_packing
from fairsim.solve.program import (
    AssignmentProblem,
    Solution,
    bound_gap,
    is_certified,
    solve_greedy,
)
from fairsim.solve.warm import WarmStart

SOLVERS = {
    "lp_dive": solve_lp_dive,
    "lp_repair": solve_lp_repair,
    "milp": solve_milp,
}  # docs/ours.md, "Solving the program"

WORK_TERMS = ("total", "remaining")
WORK_UNITS = ("best_rounds", "native")
SWITCH_UNITS = ("gpu_rounds", "rounds", "seconds")
SWITCH_WHEN_IDLE = ("engine", "zero")
MU_MODES = ("adaptive", "constant")
TAU_FROM = ("arrival", "now")
LIMIT_KINDS = (LP_ITERATIONS, MIP_NODES, PACKING_NODES, DIVE_LPS, DIVE_NODES, WALL_CLOCK)  # counted in the summary


class FFTPolicy(Policy):
    event_driven = False  # rho changes every round

    def __init__(
        self,
        solver: str = "lp_dive",
        time_limit_s: float | None = None,
        lp_iterations: int | None = DEFAULT_LIMITS.lp_iterations,
        mip_nodes: int | None = DEFAULT_LIMITS.mip_nodes,
        packing_nodes: int | None = DEFAULT_LIMITS.packing_nodes,
        dive_lps: int | None = DEFAULT_LIMITS.dive_lps,
        mip_gap: float = 1e-4,
        warm_start: bool = True,
        dive_gap: float = 1e-3,
        dive_nodes: int = 0,
        exact_columns: int = 512,
        quick_dive: bool = True,
        repair_core: int = 256,
        repair_keep_types: int = 2,
        work_term: str = "total",
        work_units: str = "best_rounds",
        switch_units: str = "gpu_rounds",
        switch_when_idle: str = "engine",
        switch_penalty: bool = True,
        fairness: bool = True,
        mu: str = "adaptive",
        mu_const: float = 1.0,
        tau_multiworker: str = "gpu_share",
        tau_from: str = "arrival",
        work_conserving: bool = True,
        keep_tie_break: float = 1e-6,
        rho_weight: float = 1.0,
        age_weight: float = 1.0,
    ):
        src = "policy"  # build_policy names the preset (ours, ours_nofair, ...)
        for key, value, allowed in (
            ("solver", solver, tuple(SOLVERS)),
            ("work_term", work_term, WORK_TERMS),
            ("work_units", work_units, WORK_UNITS),
            ("switch_units", switch_units, SWITCH_UNITS),
            ("switch_when_idle", switch_when_idle, SWITCH_WHEN_IDLE),
            ("mu", mu, MU_MODES),
            ("tau_multiworker", tau_multiworker, TAU_MODES),
            ("tau_from", tau_from, TAU_FROM),
        ):
            require(value in allowed, src, key, f"{value!r} is not one of {', '.join(allowed)}")
        for key, value in (
            ("mip_gap", mip_gap),
            ("dive_gap", dive_gap),
            ("mu_const", mu_const),
            ("keep_tie_break", keep_tie_break),
            ("rho_weight", rho_weight),
        ):
            require(
                isinstance(value, (int, float)) and not isinstance(value, bool) and value >= 0,
                src,
                key,
                f"must be a number >= 0, got {value!r}",
            )
        # the age term's sign is an open reading of eq. 6: < 0 makes age a priority (docs/ours.md, age_weight)
        require(
            isinstance(age_weight, (int, float)) and not isinstance(age_weight, bool) and np.isfinite(age_weight),
            src,
            "age_weight",
            f"must be a finite number (< 0: age as priority), got {age_weight!r}",
        )
        require(
            time_limit_s is None
            or (isinstance(time_limit_s, (int, float)) and not isinstance(time_limit_s, bool) and time_limit_s > 0),
            src,
            "time_limit_s",
            f"must be null (no wall-clock limit) or a number of seconds > 0, got {time_limit_s!r}",
        )
        check_limits(
            src, lp_iterations=lp_iterations, mip_nodes=mip_nodes, packing_nodes=packing_nodes, dive_lps=dive_lps
        )
        for key, value in (("warm_start", warm_start), ("quick_dive", quick_dive)):
            require(isinstance(value, bool), src, key, f"must be true or false, got {value!r}")
        for key, value, least in (
            ("repair_core", repair_core, 1),
            ("repair_keep_types", repair_keep_types, 1),
            ("dive_nodes", dive_nodes, 0),
            ("exact_columns", exact_columns, 0),
        ):
            require(
                isinstance(value, int) and not isinstance(value, bool) and value >= least,
                src,
                key,
                f"must be an integer >= {least}, got {value!r}",
            )
        self.solver, self.mip_gap = solver, float(mip_gap)
        self.limits = Limits(
            lp_iterations, mip_nodes, packing_nodes, dive_lps, None if time_limit_s is None else float(time_limit_s)
        )
        self.certify_gap = (
            float(dive_gap) if solver == "lp_dive" else float(mip_gap)
        )  # what a round's answer is checked against
        self._solver_options = {
            "lp_dive": {
                "gap": float(dive_gap),
                "max_nodes": dive_nodes,
                "exact_columns": exact_columns,
                "quick": quick_dive,
                "repair_core": repair_core,
                "repair_keep_types": repair_keep_types,
            },
            "lp_repair": {"core": repair_core, "keep_types": repair_keep_types},
            "milp": {},
        }[solver]
        self.warm_start = warm_start and solver != "milp"  # the exact MILP has no relaxation to keep
        self.work_term, self.work_units, self.switch_units = work_term, work_units, switch_units
        self.switch_when_idle, self.switch_penalty, self.fairness = (
            switch_when_idle,
            bool(switch_penalty),
            bool(fairness),
        )
        self.mu_mode, self.mu_const, self.tau_mode, self.tau_from = mu, float(mu_const), tau_multiworker, tau_from
        self.work_conserving, self.keep_tie_break = bool(work_conserving), float(keep_tie_break)
        self.rho_weight, self.age_weight = float(rho_weight), float(age_weight)
        self.reset(None, 0, 0)

    # ---- per-run state -------------------------------------------------------------------------
    def reset(self, cluster: ClusterSpec | None, num_jobs: int, seed: int) -> None:
        self.rho = np.zeros(num_jobs)  # fairness compensation, by engine job index
        self.tau = np.full(num_jobs, np.inf)  # fair finish estimate, seconds
        self._mu = np.zeros(num_jobs)  # mu used in the last round
        self._fair = np.zeros(num_jobs)  # fair work per round (work' units) promised in the last round
        self._seen = np.zeros(num_jobs, dtype=bool)
        self._last_now = np.nan
        self._last_ids = np.empty(0, dtype=np.int64)
        self._k_cache: tuple[bytes, int] | None = None
        self._stats = {
            "solver_calls": 0,
            "solver_time_s": 0.0,
            "solver_fallbacks": 0,
            "solver_escalations": 0,
            "solver_max_fractional_jobs": 0,
            "k_shortfall_rounds": 0,
            "solver_uncertified_rounds": 0,
            "solver_max_bound_gap": 0.0,
        }
        self.budget = Budget(self.limits)  # the run's work limits and every hit of them
        self.last_solution: Solution | None = None
        self.last_problem: AssignmentProblem | None = None
        if self.warm_start:  # a new run starts from scratch
            self._solver_options["warm"] = WarmStart()

    @property
    def deterministic(self) -> bool:
        return self.limits.wall_s is None

    def stats(self) -> dict[str, float]:
        return {**self._stats, **self.budget.stats(LIMIT_KINDS)}

    def rho_of(self, job_ids) -> np.ndarray:
        return self.rho[np.asarray(job_ids, dtype=np.int64)].copy()

    def schedule_columns(self, job_ids: np.ndarray) -> dict[str, np.ndarray]:
        return {"rho": self.rho_of(job_ids)}  # as of this round's decision (eq. 5 applied for the last round)

    # ---- the decision ----------------------------------------------------------------------------
    def decide(self, view: PolicyView) -> np.ndarray:
        if view.num_jobs == 0:
            self._remember(view)
            return view.empty_assignment()
        self.budget.start()  # K(t) and the program: one decision's wall clock, when one is set
        problem = self.build_problem(view)
        sol = self._solve(problem)
        self._count(sol, problem)
        return sol.assignment

    def _solve(self, problem: AssignmentProblem) -> Solution:
        """The configured solver; if it raises (a HiGHS error, a numerical failure), the greedy
        fallback answers instead and is counted, so one bad round never ends the run."""
        tick = time.perf_counter()
        try:
            return SOLVERS[self.solver](problem, self.budget, self.mip_gap, **self._solver_options)
        except Exception as exc:  # noqa: BLE001 - any solver crash falls back
            sol = solve_greedy(problem)
            sol.fallback = True
            sol.time_s = time.perf_counter() - tick
            sol.info = {"failed": self.solver, "reason": f"{type(exc).__name__}: {exc}"}
            return sol

    def build_problem(self, view: PolicyView) -> AssignmentProblem:
        """Advance rho and tau to this round and return the round's program (costs, K)."""
        ids = view.job_id
        rl = view.round_len
        theta = view.throughput * rl  # native work units per round [n, T]
        best = theta.max(axis=1)
        scale = 1.0 / np.where(best > 0, best, 1.0) if self.work_units == "best_rounds" else np.ones(len(ids))
        theta_u = theta * scale[:, None]  # the rho term's units
        self._update_rho(view, theta_u)
        self._update_tau(view)
        self._set_round_targets(view, scale)
        cost = self._cost(view, theta, theta_u)
        k = self._min_gpus(view) if self.work_conserving else 0
        self._remember(view)
        return AssignmentProblem(cost, view.feasible, view.workers, view.capacity, k, ids)

    def _update_rho(self, view: PolicyView, theta_u: np.ndarray) -> None:
        """Eq. 5 for last round: rho += mu (W / (tau - a) - theta x), floored at 0."""
        if not self.fairness or not np.isfinite(self._last_now):
            return
        ids = view.job_id
        rows = np.flatnonzero(self._seen[ids])
        if not len(rows):
            return
        elapsed = (view.now - self._last_now) / view.round_len  # 1 in a normal round
        last = view.last_type[rows]
        gained = np.where(last >= 0, theta_u[rows, np.maximum(last, 0)], 0.0)
        j = ids[rows]
        self.rho[j] = np.maximum(0.0, self.rho[j] + self._mu[j] * (self._fair[j] - gained) * elapsed)

    def _update_tau(self, view: PolicyView) -> None:
        ids = view.job_id
        if not view.changed and np.array_equal(ids, self._last_ids):
            return
        rate = fair_rate(view.throughput, view.workers, view.capacity, view.num_jobs, self.tau_mode)
        if self.tau_from == "arrival":  # the whole job at the fair rate since it arrived
            self.tau[ids] = fair_finish(view.arrival, view.work, rate)
        else:  # what is left, at the fair rate from now on
            self.tau[ids] = fair_finish(view.now, view.remaining, rate)

    def _set_round_targets(self, view: PolicyView, scale: np.ndarray) -> None:
        """mu_j(t) and the fair work per round W_j / (tau_j - a_j), kept for next round's rho update."""
        ids = view.job_id
        span_rounds = np.maximum(self.tau[ids] - view.arrival, 1e-9) / view.round_len
        age_rounds = (view.now - view.arrival) / view.round_len
        self._mu[ids] = age_rounds / span_rounds if self.mu_mode == "adaptive" else self.mu_const
        self._fair[ids] = view.work * scale / span_rounds

    def _cost(self, view: PolicyView, theta: np.ndarray, theta_u: np.ndarray) -> np.ndarray:
        feasible = view.feasible
        safe_theta = np.where(feasible, theta, 1.0)
        w = view.work if self.work_term == "total" else view.remaining
        w = np.maximum(w, 1e-12)[:, None]
        age = ((view.now - view.arrival) / view.round_len)[:, None]
        phi = self.age_weight * age * theta / w + view.workers[:, None] * w / safe_theta
        cost = phi + self._switch_term(view) - self.rho_weight * self.rho[view.job_id][:, None] * theta_u
        running = np.flatnonzero(view.last_type >= 0)
        cost[running, view.last_type[running]] -= self.keep_tie_break  # ties: stay where you are
        return np.where(feasible, cost, 0.0)

    def _switch_term(self, view: PolicyView) -> np.ndarray:
        if not self.switch_penalty:
            return np.zeros(view.throughput.shape)
        s = np.array(view.switch_cost_s, dtype=np.float64)
        if self.switch_when_idle == "zero":
            s[view.last_type < 0] = 0.0
        if self.switch_units == "gpu_rounds":
            return s * view.workers[:, None] / view.round_len
        if self.switch_units == "rounds":
            return s / view.round_len
        return s

    def _min_gpus(self, view: PolicyView) -> int:
        """K(t), exact; it only changes with the set of active jobs, so it is cached on it."""
        key = view.job_id.tobytes() + view.capacity.tobytes()
        if self._k_cache is None or self._k_cache[0] != key:
            self._k_cache = (key, max_packing(view.workers, view.feasible, view.capacity, self.budget))
        return self._k_cache[1]

    def _remember(self, view: PolicyView) -> None:
        self._seen[view.job_id] = True
        self._last_now = view.now
        self._last_ids = view.job_id.copy()

    def _count(self, sol: Solution, problem: AssignmentProblem) -> None:
        st = self._stats
        st["solver_calls"] += 1
        st["solver_time_s"] += sol.time_s
        st["solver_fallbacks"] += int(sol.fallback)
        st["solver_escalations"] += int("escalated" in sol.info)
        st["solver_max_fractional_jobs"] = max(
            st["solver_max_fractional_jobs"], int(sol.info.get("fractional_jobs", 0))
        )
        st["k_shortfall_rounds"] += int(problem.gpus_used(sol.assignment) < problem.min_gpus)
        certified = is_certified(sol, self.certify_gap) or bool(
            sol.info.get("dive_proven", False)
        )  # a finished search proves it
        st["solver_uncertified_rounds"] += int(not certified)
        gap = bound_gap(sol)  # how far the answer may be from the optimum, by its own lower bound
        st["solver_max_bound_gap"] = max(st["solver_max_bound_gap"], gap if np.isfinite(gap) else 0.0)
        self.last_solution, self.last_problem = sol, problem
