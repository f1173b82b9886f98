"""``lp_dive`` (FFT's default solver): the LP, a dive and a short branch and bound on gang columns,
checked against brute force, the exact MILP and its own warm start."""

import numpy as np
import pytest
from test_solvers import brute_force, busy_cluster_problem, random_problem

from fairsim.bench.solver import ChurnedRounds, start_policy
from fairsim.solve.budget import Budget
from fairsim.solve.lp_dive import solve_lp_dive
from fairsim.solve.milp import solve_milp
from fairsim.solve.packing import max_packing
from fairsim.solve.program import AssignmentProblem, prune_dominated
from fairsim.solve.warm import WarmStart

ALWAYS_DIVE = {"exact_columns": 0}  # never hand a small program to the exact MILP


@pytest.mark.parametrize("seed", range(12))
def test_an_exhausted_search_is_the_optimum(seed):
    # gap 0 and no node limit: the branch and bound must end at the brute-force optimum
    rng = np.random.default_rng(300 + seed)
    p = random_problem(rng, 7, 3)
    best, _ = brute_force(p)
    sol = solve_lp_dive(p, gap=0.0, max_nodes=10_000, **ALWAYS_DIVE)
    assert p.is_valid(sol.assignment) and p.gpus_used(sol.assignment) >= p.min_gpus
    assert sol.objective == pytest.approx(best, abs=1e-6)
    assert sol.lower_bound <= best + 1e-9 and not sol.fallback


@pytest.mark.parametrize("seed", range(6))
def test_any_answer_is_valid_and_bounded(seed):
    rng = np.random.default_rng(400 + seed)
    p = random_problem(rng, 7, 3)
    best, _ = brute_force(p)
    for nodes in (0, 3):
        sol = solve_lp_dive(p, max_nodes=nodes, **ALWAYS_DIVE)
        assert p.is_valid(sol.assignment) and p.gpus_used(sol.assignment) >= p.min_gpus
        assert sol.lower_bound <= best + 1e-9 <= sol.objective + 2e-9


def test_single_gpu_jobs_need_no_branching():
    # no gangs: the program is a transportation problem, the LP vertex is integral and optimal
    rng = np.random.default_rng(5)
    n, t = 400, 5
    workers = np.ones(n, dtype=np.int64)
    capacity = np.array([40, 30, 30, 20, 20])
    feasible = rng.random((n, t)) > 0.1
    p = AssignmentProblem(
        rng.normal(3, 4, (n, t)), feasible, workers, capacity, max_packing(workers, feasible, capacity)
    )
    sol = solve_lp_dive(p, **ALWAYS_DIVE)
    assert sol.info["dive_lps"] == 0 and sol.info["fractional_jobs"] == 0
    assert sol.objective == pytest.approx(solve_milp(p).objective, rel=1e-9)


def test_gangs_on_a_busy_cluster_are_near_the_exact_optimum():
    p = busy_cluster_problem()
    exact = solve_milp(p)
    sol = solve_lp_dive(p, **ALWAYS_DIVE)
    assert sol.info["fractional_jobs"] > 0  # the dive had work to do
    assert p.is_valid(sol.assignment) and p.gpus_used(sol.assignment) >= p.min_gpus
    assert sol.objective <= exact.objective + 1e-3 * abs(exact.objective)  # within 0.1%


def test_small_programs_go_to_the_exact_milp():
    rng = np.random.default_rng(9)
    p = random_problem(rng, 7, 3)
    sol = solve_lp_dive(p)  # 7 jobs x 3 types: far below exact_columns
    assert "dive_lps" not in sol.info
    assert sol.objective == pytest.approx(brute_force(p)[0], abs=1e-6)


def churned(num_jobs=300, seed=0, divide=4, **options):
    seq = ChurnedRounds(num_jobs, seed, divide=divide)
    cold = start_policy(seq, seed, 10 * num_jobs, warm_start=False, **options)
    warm = start_policy(seq, seed, 10 * num_jobs, warm_start=True, **options)
    return seq, cold, warm


@pytest.mark.parametrize("seed", [0, 1])
def test_warm_and_cold_dives_decide_the_same(seed):
    # the dive reads only the primal LP optimum, unique for generic costs: warm = cold, job for job
    seq, cold, warm = churned(seed=seed, exact_columns=0)
    dived = 0
    for _ in range(8):
        view = seq.view()
        decided = cold.decide(view)
        assert np.array_equal(warm.decide(view), decided)
        assert warm.last_solution.objective == pytest.approx(cold.last_solution.objective, rel=1e-12)
        dived += cold.last_solution.info.get("dive_lps", 0) > 0
        seq.advance(decided)
    assert dived > 0
    counts = warm._solver_options["warm"].counts
    assert counts["cold"] == 1 and counts["fell_back"] == 0


def test_the_warm_model_gets_its_bounds_back():
    seq, _, warm = churned(seed=3, exact_columns=0)
    for _ in range(3):
        view = seq.view()
        seq.advance(warm.decide(view))
    model = warm._solver_options["warm"].model().getLp()
    assert np.all(np.asarray(model.col_lower_) == 0.0) and np.all(np.asarray(model.col_upper_) == 1.0)


def test_dive_options_are_checked():
    from fairsim.errors import InputError
    from fairsim.policies.fft import FFTPolicy

    for bad in (
        {"dive_gap": -1},
        {"dive_nodes": -1},
        {"exact_columns": 1.5},
        {"solver": "dive"},
        {"quick_dive": "yes"},
    ):
        with pytest.raises(InputError, match=next(iter(bad))):
            FFTPolicy(**bad)


def test_pruning_is_what_the_dive_sees():
    # the dive solves the pruned program; pruning is exact, so the optimum is the unpruned one
    rng = np.random.default_rng(12)
    p = random_problem(rng, 7, 2)
    sol = solve_lp_dive(prune_dominated(p), gap=0.0, max_nodes=10_000, **ALWAYS_DIVE)
    assert sol.objective == pytest.approx(brute_force(p)[0], abs=1e-6)


def test_warm_state_is_one_per_run():
    warm = WarmStart()
    assert warm.model() is None  # nothing solved yet


def test_a_dive_that_reaches_no_leaf_takes_the_repair_route(monkeypatch):
    import fairsim.solve.lp_dive as lp_dive

    monkeypatch.setattr(lp_dive, "_branch", lambda *args: (None, np.inf, 7, False))  # as when K is too tight to dive
    rng = np.random.default_rng(21)
    p = random_problem(rng, 7, 3)
    sol = solve_lp_dive(p, **ALWAYS_DIVE)
    assert sol.info["repaired"] and not sol.fallback and "escalated" not in sol.info
    assert p.is_valid(sol.assignment) and p.gpus_used(sol.assignment) >= p.min_gpus
    assert sol.objective == pytest.approx(brute_force(p)[0], abs=1e-6)  # a core of every job: exact


def gang_heavy(seed, n=120):
    """Mostly 4- and 8-GPU gangs of similar cost on 4 types, K = every GPU: the full dive walks
    chains (each gang it fixes pushes another one out to a fraction)."""
    rng = np.random.default_rng(seed)
    workers = rng.choice([1, 2, 4, 8], size=n, p=[0.15, 0.15, 0.3, 0.4])
    capacity = np.array([40, 48, 32, 40])
    feasible = rng.random((n, 4)) > 0.2
    feasible[np.arange(n), rng.integers(0, 4, n)] = True
    cost = 1000 * workers[:, None] + rng.uniform(50, 100, n)[:, None] * workers[:, None] * rng.uniform(0.9, 1.1, (n, 4))
    return AssignmentProblem(cost, feasible, workers, capacity, max_packing(workers, feasible, capacity))


@pytest.mark.parametrize("seed", range(6))
def test_the_quick_dive_answer_is_certified_or_no_worse_than_the_full_dive(seed):
    p = gang_heavy(seed)
    exact = solve_milp(p, mip_gap=0.0)
    full = solve_lp_dive(p, quick=False, **ALWAYS_DIVE)
    quick = solve_lp_dive(p, quick=True, **ALWAYS_DIVE)
    for sol in (full, quick):
        assert p.is_valid(sol.assignment) and p.gpus_used(sol.assignment) >= p.min_gpus
        assert sol.lower_bound <= exact.objective + 1e-6 <= sol.objective + 2e-6
    certified = quick.objective - quick.lower_bound <= 1e-3 * abs(quick.objective)
    assert certified or quick.objective <= full.objective + 1e-9


def test_the_quick_dive_cuts_a_chain_short():
    # seed 0: the full dive fixes gangs one LP at a time (22 solves); locking the gangs the LP
    # already runs whole ends in one solve, certified within 0.1%
    p = gang_heavy(0)
    full = solve_lp_dive(p, quick=False, **ALWAYS_DIVE)
    quick = solve_lp_dive(p, quick=True, **ALWAYS_DIVE)
    assert full.info["dive_lps"] >= 10 and quick.info["dive_lps"] <= 2
    assert quick.objective - quick.lower_bound <= 1e-3 * abs(quick.objective)


@pytest.mark.parametrize("seed", range(3))
def test_the_dive_answer_admits_no_improving_gang_exchange(seed):
    # every leaf goes through gang_exchange, so the answer handed back is a local optimum of its moves
    from fairsim.solve.exchange import improve_by_exchanges

    p = gang_heavy(seed)
    sol = solve_lp_dive(p, **ALWAYS_DIVE)
    assert sol.info["dive_lps"] > 0
    _, moves = improve_by_exchanges(prune_dominated(p), sol.assignment)
    assert moves == 0


@pytest.mark.parametrize("seed", [1, 3, 4])  # seeds whose quick leaf is not certified
def test_the_next_pass_starts_from_the_root_vertex_itself(seed):
    # after a dive, the root LP's basis is set back: the same vertex, no simplex pivots (a re-solve
    # from the leaf's basis pivots back, and in a degenerate LP may stop at another optimal vertex)
    from fairsim.solve import lp_dive
    from fairsim.solve.program import columns

    q = prune_dominated(gang_heavy(seed))
    cols = columns(q)
    h = lp_dive._root(q, cols, Budget(), None)
    basis, x_root = h.getBasis(), np.array(h.getSolution().col_value)
    _, _, solves = lp_dive._dive_to_leaf(h, q, cols, Budget(), lock_whole=True)
    assert solves > 0
    lp_dive._back_to_root(h, basis, Budget())
    assert h.getInfo().simplex_iteration_count == 0
    assert np.array_equal(np.array(h.getSolution().col_value), x_root)


class _BoundsRecorder:
    """A HiGHS model that counts the re-solves asked for while the columns fixed at 1 alone
    overfill some type (infeasible whatever the rest does)."""

    def __init__(self, h, cols, capacity):
        self._h, self._cols, self._capacity = h, cols, capacity
        self._lower = np.zeros(len(cols.rows))
        self.runs = self.overfilled_runs = 0

    def __getattr__(self, name):
        return getattr(self._h, name)

    def changeColsBounds(self, n, index, lower, upper):
        self._lower[index] = lower
        return self._h.changeColsBounds(n, index, lower, upper)

    def changeColBounds(self, column, lower, upper):
        self._lower[column] = lower
        return self._h.changeColBounds(column, lower, upper)

    def run(self):
        one = self._lower > 0.5
        used = np.bincount(self._cols.types[one], weights=self._cols.width[one], minlength=len(self._capacity))
        self.runs += 1
        self.overfilled_runs += int((used > self._capacity + 0.5).any())
        return self._h.run()


@pytest.mark.parametrize("seed", [0, 1, 3, 4, 7])  # before: 1-16 such solves in 6 of these 10 dives
@pytest.mark.parametrize("quick", [True, False])
def test_a_step_that_overfills_a_type_is_not_solved(seed, quick):
    # the step's columns at 1 need more GPUs of a type than it has: infeasible without HiGHS, so
    # the dive goes straight to fixing them at 0, and still ends at a valid leaf
    from fairsim.solve import lp_dive
    from fairsim.solve.program import columns

    q = prune_dominated(gang_heavy(seed))
    cols = columns(q)
    h = _BoundsRecorder(lp_dive._root(q, cols, Budget(), None), cols, q.capacity)
    a, value, solves = lp_dive._dive_to_leaf(h, q, cols, Budget(), lock_whole=quick)
    assert h.overfilled_runs == 0
    assert solves == h.runs
    assert a is not None and q.is_valid(a) and q.gpus_used(a) >= q.min_gpus
