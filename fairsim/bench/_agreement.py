"""Per-job agreement of fairsim with another simulator on the same jobs.

    from fairsim.bench._agreement import agreement, HEADER, format_row
    fig = agreement(their_jct, our_jct, theirs_restarts=r1, ours_restarts=r2,
                    theirs_finish=f1, ours_finish=f2)
    print(HEADER); print(format_row("sia", "saturn/workload-1", fig))

Both sides' arrays hold the same jobs in the same order (seconds; restarts as counts per job).
``agreement`` returns a dict of plain floats:

  n                     jobs compared
  theirs_avg, ours_avg  average JCT (s); avg_dev_pct = 100 (ours - theirs) / theirs
  r                     Pearson correlation of the per-job JCTs (nan when either side is constant)
  within10_pct          % of jobs whose JCT is within +-10% of theirs (|ours - theirs| <= 0.1 theirs)
  median_abs_dev_pct    median over jobs of 100 |ours - theirs| / theirs
  theirs_p99, ours_p99  the sorted JCTs at index int(0.99 n) (Sia's print_run_stats.py's p99);
                        p99_dev_pct their deviation in %
  theirs_restarts, ours_restarts   restarts per job (mean), restarts_dev_pct (nan when either
                        side was not given, or theirs is 0)
  theirs_makespan, ours_makespan   last finish - first submission (s), a side's submissions being
                        ``arrival`` if given, else its finish - JCT; makespan_dev_pct (nan without finishes)

A bad input (different lengths, not finite, negative JCTs) raises ValueError naming the argument.
"""

from __future__ import annotations

import math

import numpy as np

NAN = float("nan")


def _array(name: str, values, n: int | None = None) -> np.ndarray:
    a = np.asarray(values, dtype=np.float64).ravel()
    if n is not None and len(a) != n:
        raise ValueError(f"agreement: {name} has {len(a)} jobs, theirs_jct has {n}")
    if not np.isfinite(a).all():
        bad = int(np.flatnonzero(~np.isfinite(a))[0])
        raise ValueError(f"agreement: {name} is not finite at job position {bad} ({a[bad]!r})")
    return a


def _dev(theirs: float, ours: float) -> float:
    return 100.0 * (ours - theirs) / theirs if theirs != 0 and math.isfinite(theirs) else NAN


def p99(jct: np.ndarray) -> float:
    """Sia's print_run_stats.py's p99: the sorted JCTs at index int(0.99 n)."""
    return float(np.sort(jct)[int(0.99 * len(jct))])


def agreement(
    theirs_jct,
    ours_jct,
    theirs_restarts=None,
    ours_restarts=None,
    theirs_finish=None,
    ours_finish=None,
    arrival=None,
) -> dict[str, float]:
    """The per-job comparison figures of the module docstring, for one (policy, workload)."""
    a = _array("theirs_jct", theirs_jct)
    n = len(a)
    if n == 0:
        raise ValueError("agreement: theirs_jct has no jobs")
    b = _array("ours_jct", ours_jct, n)
    for name, x in (("theirs_jct", a), ("ours_jct", b)):
        if (x < 0).any():
            raise ValueError(f"agreement: {name} is negative at job position {int(np.flatnonzero(x < 0)[0])}")
    r = float(np.corrcoef(a, b)[0, 1]) if a.std() > 0 and b.std() > 0 else NAN
    gap = np.abs(b - a)
    within = gap <= 0.1 * a  # a job whose JCT is 0 on their side agrees only at 0
    rel = np.divide(100.0 * gap, a, out=np.full(n, np.inf), where=a > 0)
    rel[(a == 0) & (gap == 0)] = 0.0
    out = {
        "n": float(n),
        "theirs_avg": float(a.mean()),
        "ours_avg": float(b.mean()),
        "avg_dev_pct": _dev(float(a.mean()), float(b.mean())),
        "r": r,
        "within10_pct": 100.0 * float(np.count_nonzero(within)) / n,
        "median_abs_dev_pct": float(np.median(rel)),
        "theirs_p99": p99(a),
        "ours_p99": p99(b),
    }
    out["p99_dev_pct"] = _dev(out["theirs_p99"], out["ours_p99"])
    tr = NAN if theirs_restarts is None else float(_array("theirs_restarts", theirs_restarts, n).mean())
    orr = NAN if ours_restarts is None else float(_array("ours_restarts", ours_restarts, n).mean())
    out.update(theirs_restarts=tr, ours_restarts=orr, restarts_dev_pct=_dev(tr, orr))
    sub = None if arrival is None else _array("arrival", arrival, n)
    for side, finish, jct in (("theirs", theirs_finish, a), ("ours", ours_finish, b)):
        if finish is None:
            out[f"{side}_makespan"] = NAN
            continue
        f = _array(f"{side}_finish", finish, n)
        out[f"{side}_makespan"] = float(f.max() - (f - jct if sub is None else sub).min())
    out["makespan_dev_pct"] = _dev(out["theirs_makespan"], out["ours_makespan"])
    return out


HEADER = (
    f"{'policy':>8} {'workload':>18} {'S avg h':>7} {'F avg h':>7} {'dev %':>7} {'r':>6} {'±10% %':>6} "
    f"{'S rst/j':>7} {'F rst/j':>7} {'p99 %':>7} {'S mk h':>7} {'F mk h':>7}"
)


def format_row(policy: str, workload: str, fig: dict[str, float]) -> str:
    """One line of ``agreement``'s figures under ``HEADER`` (S = the other simulator, F = fairsim;
    hours, %, restarts per job; nan where a figure was not computed)."""
    return (
        f"{policy:>8} {workload:>18} {fig['theirs_avg'] / 3600:7.3f} {fig['ours_avg'] / 3600:7.3f} "
        f"{fig['avg_dev_pct']:+7.2f} {fig['r']:6.3f} {fig['within10_pct']:6.1f} "
        f"{fig['theirs_restarts']:7.2f} {fig['ours_restarts']:7.2f} {fig['p99_dev_pct']:+7.2f} "
        f"{fig['theirs_makespan'] / 3600:7.2f} {fig['ours_makespan'] / 3600:7.2f}"
    )
