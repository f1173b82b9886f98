"""``lp_dive``: FFT's per-round program (``fairsim.solve.program``) by its LP relaxation and a
short depth-first branch and bound in HiGHS, the LP kept alive between the nodes.

Why it is cheap: only gangs make the program hard. With every multi-GPU column fixed at 0 or 1,
what is left is a transportation problem over the single-GPU jobs (job rows, capacity rows and
the K row form a network matrix) with integral right-hand sides, so the simplex method's vertex
is integral there. Branching is needed only on gangs' columns, and an LP vertex has few
fractional ones (about one per capacity row and the K row).

The search. (0) The quick dive (``quick``, the default): the dive below, except that each step
also locks at 1 the gang columns the LP already runs whole. Its leaf stands if it is certified
within ``gap`` of the root LP bound; it takes a few LP solves where the full dive often takes
dozens, as each fix would otherwise push a whole gang out to a fraction, one gang a step.
(1) The dive: solve the LP; while a gang's column is fractional, fix to 1 each
fractional gang job's column of value >= 1/2 (or the largest fractional gang column if none is)
and re-solve from the current basis (dual simplex, a few pivots); where that leaves the LP
infeasible (K near every GPU, and the gangs placed leave holes no remaining job fills), those
columns are fixed to 0 instead. Every leaf is then improved by exchanges among gangs that keep
each type's used GPUs (``exchange``: an idle gang for a running one of the same size, two
gangs trading types, a gang for two of half its size or back), which the dive cannot see, as it
fixes gangs one step at a time. The better of the two leaves is the incumbent. Each pass starts
from the root LP's optimal basis, set back in HiGHS rather than re-solved from the last leaf's
basis, so the full dive after a quick one starts from the root's own vertex (its later steps can
still pivot differently from a full dive alone: HiGHS keeps pricing state between solves). (2) If that is not
certified within ``gap`` of the root LP bound (or the dive ended infeasible), the bounds are released and a depth-first branch and bound over single columns
(fix to 1 first, then to 0) runs from the root, pruning every node whose LP value cannot improve
the incumbent by more than ``gap``, for at most ``max_nodes`` LP solves. An exhausted search
proves the incumbent within ``gap`` of the optimum. Every answer carries the root LP value as
its lower bound (``Solution.lower_bound``); ``info`` has the LP solves and whether it was proven.
(3) If neither reaches an integral leaf (a packing so tight, K near every GPU, that fixing gangs
one after another leaves holes no remaining job fills), the round takes ``lp_repair``'s route
from the root LP: keep its integral part, re-solve a core of ``repair_core`` jobs exactly.

``max_jobs`` adds a valid cut to the root LP, "at most this many jobs run" (Themis' winner count:
no allocation violates it, so it only tightens the bound the leaves are certified against); the
model is then built cold, never taken from a ``WarmStart``.

Work limits (``Budget``): every LP solve has the budget's simplex iteration limit, the dives of
one call share its ``dive_lps`` LP solves, and the branch and bound has ``max_nodes``. A
dive stopped by a limit ends without a leaf (never read as infeasible), and the round goes on as
when no dive reaches one.

A program of at most ``exact_columns`` columns (after the exact pruning of dominated columns) goes
to ``lp_repair`` with a core of every job: the LP, then the exact MILP if the LP is fractional.
Small clusters (the 36-GPU testbed) get the exact optimum, the same answers ``solver=lp_repair`` gives.
"""

from __future__ import annotations

import time

import numpy as np

from fairsim.solve.budget import DIVE_NODES, Budget
from fairsim.solve.exchange import improve_by_exchanges
from fairsim.solve.highs import is_optimal, new_highs, pass_lp, stopped_at_limit
from fairsim.solve.lp_repair import escalate, lp_repair_pruned, repair
from fairsim.solve.program import (
    NOT_RUN,
    AssignmentProblem,
    Solution,
    columns,
    prune_dominated,
    row_bounds,
    to_assignment,
    within_gap,
)
from fairsim.solve.relaxation import relaxation_in
from fairsim.solve.warm import WarmStart

_TOL = 1e-6


def solve_lp_dive(
    p: AssignmentProblem,
    budget: Budget | None = None,
    mip_gap: float = 1e-4,
    gap: float = 1e-3,
    max_nodes: int = 32,
    exact_columns: int = 512,
    repair_core: int = 256,
    repair_keep_types: int = 2,
    warm: WarmStart | None = None,
    quick: bool = True,
    max_jobs: int | None = None,
) -> Solution:
    tick = time.perf_counter()
    budget = budget or Budget()
    if p.num_jobs == 0 or not p.feasible.any():
        return Solution(np.full(p.num_jobs, NOT_RUN, dtype=np.int64), 0.0, "lp_dive", True, False, 0.0)
    q = prune_dominated(p)
    cols = columns(q)
    if len(cols.rows) <= exact_columns:  # small: the LP, then the exact MILP if it is fractional
        return lp_repair_pruned(p, q, cols, tick, budget, mip_gap, p.num_jobs, repair_keep_types, warm)
    h = _root(q, cols, budget, warm, max_jobs)
    lp_s = time.perf_counter() - tick
    if h is None:
        return escalate(p, tick, budget, mip_gap, "LP relaxation not solved", np.nan, 0)
    root = float(h.getInfo().objective_function_value)
    x = np.asarray(h.getSolution().col_value)
    info = {"fractional_jobs": int(len(np.unique(cols.rows[(x > _TOL) & (x < 1 - _TOL)]))), "lp_s": lp_s}
    assignment, best, lps, proven = _branch(h, q, cols, root, gap, max_nodes, budget, quick)
    info.update({"dive_lps": lps, "dive_proven": proven})
    if (
        assignment is None
    ):  # a tight packing the dive boxed itself out of (or a limit cut it): lp_repair's route from the root LP
        if not is_optimal(h):
            return escalate(p, tick, budget, mip_gap, "the root LP was lost", root, info["fractional_jobs"])
        sol = repair(
            p,
            q,
            cols,
            relaxation_in(h, cols, q.num_jobs, len(q.capacity)),
            tick,
            budget,
            mip_gap,
            repair_core,
            repair_keep_types,
            "lp_dive",
        )
        sol.info.update(info, repaired=True)
        return sol
    if not (q.is_valid(assignment) and q.gpus_used(assignment) >= q.min_gpus):  # never hand over a broken answer
        return escalate(p, tick, budget, mip_gap, "a dive leaf broke a constraint", root, info["fractional_jobs"])
    obj = p.objective(assignment)
    return Solution(
        assignment,
        obj,
        "lp_dive",
        proven or within_gap(obj, root, mip_gap),
        False,
        time.perf_counter() - tick,
        root,
        info,
    )


def _root(q: AssignmentProblem, cols, budget: Budget, warm: WarmStart | None, max_jobs: int | None = None):
    """HiGHS holding the solved relaxation, or None. Warm: the run's model, re-solved from last
    round's basis (``WarmStart``); cold, or if that fails: a fresh model solved from scratch."""
    if warm is not None and max_jobs is None and warm.solve(q, cols, budget):
        return warm.model()
    h = new_highs()
    lo, hi = row_bounds(q)
    pass_lp(h, cols, q.num_jobs, len(q.capacity), lo, hi)
    if max_jobs is not None:
        m = len(cols.rows)
        h.addRow(-np.inf, float(max_jobs), m, np.arange(m, dtype=np.int32), np.ones(m))
    if not budget.run(h):
        return None
    h.setOptionValue("presolve", "off")  # the nodes restart from the basis
    return h


def _branch(
    h, q: AssignmentProblem, cols, root: float, gap: float, max_nodes: int, budget: Budget, quick: bool = False
):
    """The quick dive (if ``quick``; its leaf stands if certified within ``gap``), the full dive,
    then (if the better leaf is not certified) the depth-first search, each from the root LP's
    optimal basis in ``h`` (module docstring); every leaf is improved by ``improve_by_exchanges``
    before it is judged. Returns (the best leaf's assignment or None, its value, LP solves, whether
    the search was exhausted). The column bounds and the root basis are restored before
    returning, so a warm model goes on to the next round from the root, and ``h`` holds the root
    optimum when no leaf was found (``lp_repair``'s route reads it)."""
    root_basis = h.getBasis()
    budget.new_dive()
    best_a, best, lps, proven = _passes(h, q, cols, root, gap, max_nodes, budget, quick, root_basis)
    if best_a is None:
        _back_to_root(h, root_basis, budget)
        lps += 1
    else:
        h.setBasis(root_basis)
    return best_a, best, lps, proven


def _passes(
    h, q: AssignmentProblem, cols, root: float, gap: float, max_nodes: int, budget: Budget, quick: bool, root_basis
):
    """``_branch``'s passes, each after the first from ``root_basis``; the state of ``h`` after
    the last one is left to ``_branch``."""
    best_a, best, lps = None, np.inf, 0
    if quick:
        best_a, best, lps = _dive_to_leaf(h, q, cols, budget, lock_whole=True)
        if best_a is not None and within_gap(best, root, gap):
            return best_a, best, lps, False
        _back_to_root(h, root_basis, budget)
        lps += 1
    a, value, solves = _dive_to_leaf(h, q, cols, budget)
    lps += solves
    if a is not None and value < best:  # ties: the quick dive's leaf
        best_a, best = a, value
    if max_nodes == 0 or (best_a is not None and within_gap(best, root, gap)):
        return best_a, best, lps, False
    _back_to_root(h, root_basis, budget)
    best_a, best, searched, proven = _search(h, q, cols, best_a, best, gap, max_nodes, budget)
    return best_a, best, lps + 1 + searched, proven


def _back_to_root(h, root_basis, budget: Budget) -> None:
    """The root LP's optimum again (bounds already released): its basis set back and re-solved,
    which only refactorizes (a re-solve from a leaf's basis takes about 120 pivots, 4 times as
    long, and may end at another optimal vertex of this degenerate LP)."""
    h.setBasis(root_basis)
    budget.run(h)


def _dive_to_leaf(h, q: AssignmentProblem, cols, budget: Budget, lock_whole: bool = False):
    """One dive and its improved leaf, the bounds it fixed released again: (assignment or None,
    value, LP solves)."""
    fixed, solves = _dive(h, cols, q.capacity, budget, lock_whole)
    a, value = _improved_leaf(h, q, cols)
    _set_bounds(h, fixed, 0.0, 1.0)
    return a, value, solves


def _dive(h, cols, capacity: np.ndarray, budget: Budget, lock_whole: bool = False) -> tuple[list[int], int]:
    """Fix, while a gang's column is fractional, each fractional gang job's column of value >= 1/2
    (or the largest fractional one) to 1 and re-solve; if that makes the LP infeasible, fix them
    to 0 instead. Stops at an integral node or a dead end. ``lock_whole`` (the quick dive): each
    step also fixes at 1 the gang columns the LP already runs whole, so that the next LP cannot
    push one of them out to make room (the full dive often walks such a chain, one gang a step);
    if a step is infeasible either way, that step's locks are lifted. A step whose columns at 1
    alone overfill a type is infeasible without asking HiGHS (in the quick dive, about 4 steps
    in 10 on hard rounds: two halves of gangs rounded up onto a type the locks fill). A solve the
    budget refuses or a limit stops ends the dive where it is, without a leaf. Returns (the
    columns fixed, the LP solves)."""
    gang = cols.width > 1
    fixed: list[int] = []
    locked = np.zeros(len(gang), dtype=bool)
    at_one = np.zeros(len(gang), dtype=bool)  # the columns fixed at 1
    solves = 0
    while is_optimal(h):
        x = np.asarray(h.getSolution().col_value)
        pick = _to_branch_on(x, gang)
        if not len(pick):
            break
        major = pick[x[pick] >= 0.5]
        if len(major):
            _, first = np.unique(
                cols.rows[major], return_index=True
            )  # one column per job (ties at 1/2: the lower type)
            major = major[first]
        else:
            major = pick[[np.argmax(x[pick])]]
        whole = np.flatnonzero(gang & (x > 1 - _TOL) & ~locked) if lock_whole else major[:0]
        locked[whole] = True
        fixed.extend(whole.tolist())
        fixed.extend(major.tolist())
        _set_bounds(h, whole, 1.0, 1.0)
        _set_bounds(h, major, 1.0, 1.0)
        at_one[whole] = True
        at_one[major] = True
        overfilled = _overfills(cols, at_one, capacity)
        solved = False if overfilled else _dive_solve(h, budget)
        solves += not overfilled and solved is not None
        if solved is False:  # too tight to place them (K at nearly every GPU): exclude them instead
            _set_bounds(h, major, 0.0, 0.0)
            at_one[major] = False
            solved = _dive_solve(h, budget)
            solves += solved is not None
            if solved is False and len(whole):  # the locks boxed it in: lift this step's
                _set_bounds(h, whole, 0.0, 1.0)
                locked[whole] = False
                at_one[whole] = False
                solved = _dive_solve(h, budget)
                solves += solved is not None
        if solved is None:
            break
    return fixed, solves


def _dive_solve(h, budget: Budget) -> bool | None:
    """One LP solve of a dive: True at an optimum, False when there is none (infeasible), None
    when the budget refused it or a limit stopped it (the dive ends there)."""
    if not budget.dive_lp():
        return None
    if budget.run(h):
        return True
    return None if stopped_at_limit(h) else False


def _overfills(cols, at_one: np.ndarray, capacity: np.ndarray) -> bool:
    """Whether the columns fixed at 1 alone need more GPUs of some type than it has."""
    used = np.bincount(cols.types[at_one], weights=cols.width[at_one], minlength=len(capacity))
    return bool((used > capacity + 0.5).any())


def _set_bounds(h, columns, lower: float, upper: float) -> None:
    """Bound each of ``columns`` (ints or an index array) to [lower, upper]; [0, 1] releases them.
    One call for the lot (HiGHS wants the set ascending, without repeats): a quick dive locks and
    releases a few hundred columns, one call each cost about 3 us."""
    index = np.unique(np.asarray(columns, dtype=np.int32))
    if len(index):
        h.changeColsBounds(len(index), index, np.full(len(index), float(lower)), np.full(len(index), float(upper)))


def _search(h, q: AssignmentProblem, cols, best_a, best: float, gap: float, max_nodes: int, budget: Budget):
    """Depth-first branch and bound over single columns (1 first, then 0) with ``best`` as the
    incumbent, pruning nodes that cannot improve it by more than ``gap``; at most ``max_nodes``
    LP solves (counted in the budget as ``dive_nodes``). Returns (best assignment, value, LP
    solves, exhausted)."""
    gang = cols.width > 1
    stack: list[list] = []  # [column, tried both ways]
    nodes = 0
    exhausted = stopped = False  # stopped: a node's LP ended at a limit, so its subtree was not searched
    while True:
        slack = gap * max(abs(best), 1e-9) if best_a is not None else 0.0
        value = float(h.getInfo().objective_function_value) if is_optimal(h) else np.inf
        if value < best - slack:
            x = np.asarray(h.getSolution().col_value)
            pick = _to_branch_on(x, gang)
            if not len(pick):
                a, leaf_value = _improved_leaf(h, q, cols)
                if (
                    leaf_value < best
                ):  # the leaf's LP value beat the incumbent; after the exchanges it can only be lower
                    best_a, best = a, leaf_value
            elif nodes < max_nodes and not budget.out_of_time():
                column = int(pick[np.argmax(x[pick])])  # ties: the lowest column
                stack.append([column, False])
                h.changeColBounds(column, 1.0, 1.0)
                stopped |= _node_stopped(h, budget)
                nodes += 1
                continue
        while stack and stack[-1][1]:
            h.changeColBounds(stack.pop()[0], 0.0, 1.0)
        if not stack:
            exhausted = nodes < max_nodes and not budget.out_of_time()
            break
        if nodes >= max_nodes or budget.out_of_time():
            break
        stack[-1][1] = True
        h.changeColBounds(stack[-1][0], 0.0, 0.0)
        stopped |= _node_stopped(h, budget)
        nodes += 1
    _set_bounds(h, [column for column, _ in stack], 0.0, 1.0)
    budget.note(DIVE_NODES, nodes, not exhausted and nodes >= max_nodes)
    return best_a, best, nodes, exhausted and not stopped and best_a is not None


def _node_stopped(h, budget: Budget) -> bool:
    """Solve a node's LP; whether a limit stopped it (the node then counts as pruned, so the
    search can no longer prove its incumbent)."""
    return not budget.run(h) and stopped_at_limit(h)


def _to_branch_on(x: np.ndarray, gang: np.ndarray) -> np.ndarray:
    """The fractional gang columns, or if none, any fractional column (none at a vertex, as
    single-GPU columns come out integral; kept so that an odd vertex still ends as a leaf)."""
    frac = (x > _TOL) & (x < 1 - _TOL)
    return np.flatnonzero(frac & gang if (frac & gang).any() else frac)


def _improved_leaf(h, q: AssignmentProblem, cols):
    """(assignment, value) if ``h`` holds an optimal, integral point, improved by exchanges among
    gangs (``exchange``); else (None, inf)."""
    if not is_optimal(h):
        return None, np.inf
    x = np.asarray(h.getSolution().col_value)
    if ((x > _TOL) & (x < 1 - _TOL)).any():
        return None, np.inf
    a, _ = improve_by_exchanges(q, to_assignment(q, cols, x))
    return a, q.objective(a)
