"""Limits on the solvers' work (``Limits``), and a run's account of them (``Budget``).

A limit that binds changes the answer, so where it binds must not depend on the machine. The
limits are therefore counts of work that HiGHS and our own loops count the same way on any
machine at any load: simplex iterations per LP solve (HiGHS' ``simplex_iteration_limit``,
linprog's ``maxiter``), branch-and-bound nodes per MILP (``mip_max_nodes``, milp's
``node_limit``), LP solves per dive. A wall-clock limit per decision remains only as an opt-in
(``wall_s``): a budget with one is not deterministic and says so.

Every hit is counted by kind, beside the most work one solve of that kind used (its peak), so a
run's summary shows both whether a limit bound and how close the run came to it.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

from fairsim.errors import Integer
from fairsim.solve.highs import is_optimal, load_highspy, set_round_time_limit

# The kinds of limit. A hit is counted per solve a limit stopped: an LP, a MILP, one call's dives
# (their LP solves are one budget), one branch and bound; the wall clock once per decision.
LP_ITERATIONS = "lp_iterations"  # simplex iterations of one LP solve
MIP_NODES = "mip_nodes"  # branch-and-bound nodes of one MILP
PACKING_NODES = "packing_nodes"  # branch-and-bound nodes of one K(t) packing ILP
DIVE_LPS = "dive_lps"  # LP solves of one call's dives (the quick and the full dive)
DIVE_NODES = "dive_nodes"  # LP solves of one branch and bound after a dive (the caller's own limit)
WALL_CLOCK = "wall_clock"  # seconds of one decision (opt-in)


@dataclass(frozen=True)
class Limits:
    """The work limits (None: no limit), each field named as its kind above. ``wall_s``: seconds
    per decision, opt-in."""

    lp_iterations: int | None = None
    mip_nodes: int | None = None
    packing_nodes: int | None = None
    dive_lps: int | None = None
    wall_s: float | None = None


# The defaults: 10x the most any one solve used over the paper's cells, rounded up (docs/ours.md,
# "Work limits"), so they do not bind there; the policies' constructors and conf/policy/ use them.
DEFAULT_LIMITS = Limits(lp_iterations=50_000, mip_nodes=10_000, packing_nodes=1_000, dive_lps=10_000)

_WORK_LIMIT = Integer(lo=1, what="null (no limit) or an integer >= 1")


def check_limits(source: str, **limits) -> None:
    """Refuse a work limit option that is neither null nor an integer >= 1 (one line naming it)."""
    for key, value in limits.items():
        if value is not None:
            _WORK_LIMIT.check(value, source, key)


def hits_key(kind: str) -> str:
    """The summary key counting a kind's hits. The wall clock keeps the key it always had."""
    return "solver_time_limit_hits" if kind == WALL_CLOCK else f"solver_limit_hits_{kind}"


def peak_key(kind: str) -> str:
    """The summary key of the most work one solve of a kind used."""
    return f"solver_max_{kind}"


class Budget:
    """One run's limits, the current decision's clock, and the hits and peaks so far.

    ``start()`` begins a decision (its wall-clock deadline), ``new_dive()`` a call's count of
    dive LP solves. The solvers run every LP and MILP through it (``run``,
    ``linprog_options``/``note_linprog``, ``milp_options``/``note_milp``), which applies the
    limits and records what each used."""

    def __init__(self, limits: Limits | None = None):
        self.limits = limits or Limits()
        self.hits: dict[str, int] = {}
        self.peaks: dict[str, int] = {}
        self._dive_lps = 0
        self._cut: set[str] = set()  # the kinds counted once per decision (or dive) that this one hit
        self.start()  # a budget made for one solve needs no start of its own

    @property
    def deterministic(self) -> bool:
        """Whether every limit is a count of work (no wall clock): the same answers anywhere."""
        return self.limits.wall_s is None

    def start(self) -> None:
        """A decision begins: its own wall-clock deadline (if any)."""
        wall = self.limits.wall_s
        self._deadline = math.inf if wall is None else time.perf_counter() + wall
        self._cut.discard(WALL_CLOCK)

    def new_dive(self) -> None:
        """A call's dives begin: their own count of LP solves."""
        self._dive_lps = 0
        self._cut.discard(DIVE_LPS)

    def seconds_left(self) -> float:
        """Of this decision's wall-clock limit (inf without one; 0 once it has passed)."""
        return math.inf if math.isinf(self._deadline) else max(0.0, self._deadline - time.perf_counter())

    def note(self, kind: str, used: int, hit: bool) -> None:
        """Record what one solve of ``kind`` used, and whether its limit stopped it."""
        self.peaks[kind] = max(self.peaks.get(kind, 0), int(used))
        if hit:
            self._hit(kind)

    def _hit(self, kind: str) -> None:
        self.hits[kind] = self.hits.get(kind, 0) + 1

    def _cut_short(self, kind: str) -> None:
        """A hit of the wall clock (once a decision) or of the dives' LP solves (once a call)."""
        if kind not in self._cut:
            self._cut.add(kind)
            self._hit(kind)

    def out_of_time(self) -> bool:
        """Whether this decision's wall clock has run out (the decision counts as cut short)."""
        if self._deadline == math.inf or time.perf_counter() < self._deadline:
            return False
        self._cut_short(WALL_CLOCK)
        return True

    def dive_lp(self) -> bool:
        """Whether one more LP solve of this call's dives fits the budget; a refusal (or the wall
        clock running out) ends the dive and counts as a hit."""
        limit = self.limits.dive_lps
        if limit is not None and self._dive_lps >= limit:
            self._cut_short(DIVE_LPS)
            return False
        if self.out_of_time():
            return False
        self._dive_lps += 1
        self.note(DIVE_LPS, self._dive_lps, False)
        return True

    # ---- HiGHS through highspy -----------------------------------------------------------------

    def run(self, h) -> bool:
        """Solve the LP ``h`` holds within the limits; whether it ended at an optimum. The
        iteration limit applies to this ``run`` alone (HiGHS counts each run's iterations anew)."""
        highspy = load_highspy()
        limit = self.limits.lp_iterations
        h.setOptionValue("simplex_iteration_limit", highspy.kHighsIInf if limit is None else int(limit))
        if self.limits.wall_s is not None:
            set_round_time_limit(h, self.seconds_left())
        h.run()
        status = h.getModelStatus()
        self.note(
            LP_ITERATIONS, h.getInfo().simplex_iteration_count, status == highspy.HighsModelStatus.kIterationLimit
        )
        if status == highspy.HighsModelStatus.kTimeLimit:
            self._cut_short(WALL_CLOCK)
        return is_optimal(h)

    # ---- scipy's linprog and milp (HiGHS inside) ------------------------------------------------

    def linprog_options(self) -> dict:
        return {
            **({"maxiter": int(self.limits.lp_iterations)} if self.limits.lp_iterations is not None else {}),
            **self._time_option(),
        }

    def note_linprog(self, res) -> None:
        """Record a linprog result: its iterations; status 1 is a limit (iterations or time)."""
        iterations = int(getattr(res, "nit", 0) or 0)
        limit = self.limits.lp_iterations
        by_iterations = res.status == 1 and limit is not None and iterations >= limit
        self.note(LP_ITERATIONS, iterations, by_iterations)
        if res.status == 1 and not by_iterations:
            self._cut_short(WALL_CLOCK)

    def milp_options(self, kind: str = MIP_NODES) -> dict:
        nodes = getattr(self.limits, kind)
        return {**({"node_limit": int(nodes)} if nodes is not None else {}), **self._time_option()}

    def note_milp(self, res, kind: str = MIP_NODES) -> None:
        """Record a milp result. Status 1 is the time limit (no other limit that reports it is
        set). scipy reports HiGHS' node limit (its model status kSolutionLimit) as status 4, the
        code it gives solver errors too, and without the node count when there is no incumbent;
        with a node limit set, that limit is the one a sound solve stops at."""
        nodes = getattr(self.limits, kind)
        by_nodes = res.status == 4 and nodes is not None
        counted = getattr(res, "mip_node_count", None)
        used = counted if counted is not None else (nodes if by_nodes else 0)
        self.note(kind, used, by_nodes)
        if res.status == 1:
            self._cut_short(WALL_CLOCK)

    def _time_option(self) -> dict:
        return {} if self.limits.wall_s is None else {"time_limit": self.seconds_left()}

    # ---- the run's account --------------------------------------------------------------------

    def stats(self, kinds: tuple[str, ...]) -> dict[str, int]:
        """Hits and peak of each of ``kinds`` (the ones the policy's solvers have), zeros included."""
        out = {}
        for kind in kinds:
            out[hits_key(kind)] = self.hits.get(kind, 0)
            if kind != WALL_CLOCK:
                out[peak_key(kind)] = self.peaks.get(kind, 0)
        return out
