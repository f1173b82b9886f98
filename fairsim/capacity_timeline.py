"""A cluster's capacity over time: hosts that leave and come back.

A run may carry a capacity timeline (the ``capacity`` config group, ``conf/capacity/``). Its
sources, any of them together:

- ``failures``: each host fails after a time drawn from an exponential or Weibull distribution
  (mean ``mtbf_h``, per type if ``by_type`` says so) and is repaired after an exponential or
  fixed time (mean ``repair_h``); the next failure's clock starts at the repair. Each host draws
  from its own seeded stream, so a host's history does not depend on the others'.
- ``maintenance``: windows in which some hosts of a type (or of every type) are down, once or
  every ``every_h``.
- ``trace``: a CSV file of ``time_s, gpu_type, hosts``: from ``time_s`` on, only ``hosts`` hosts of
  the type are available (the highest-numbered hosts of the type go first, and come back last),
  e.g. a spot pool that is lent and reclaimed; an optional ``cause`` column names the cause
  (default ``reclaim``).

A host is down while any source holds it down. The engine takes the events in time order
(``CapacityTimeline.pop``): a host that goes down evicts the jobs on it, a host that comes back is
free again, and the policy decides at once with the new capacity. What the timeline counts
(``outage_seconds``): for each cause, the host-seconds its outages covered, and, per type, the
seconds hosts were down for any cause, from which availability follows.

The shipped presets' numbers and their sources are in docs/capacity.md.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from fairsim.cluster import ClusterSpec
from fairsim.errors import InputError, Number, OneOf, check_keys, check_values, require
from fairsim.files import input_path
from fairsim.tables import read_csv_table, shown

CAUSES = ("failure", "maintenance", "reclaim")
DISTRIBUTIONS = ("exponential", "weibull")
REPAIRS = ("exponential", "fixed")
CONFIG_KEYS = (
    "name",
    "checkpoint_interval_s",
    "checkpoint_interval_s_by_model",
    "failures",
    "spot",
    "maintenance",
    "trace",
)
FAILURE_KEYS = ("distribution", "weibull_shape", "gpu_mtbf_h", "repair_h", "repair", "by_type")
SPOT_KEYS = ("gpu_types", "hosts", "up_h", "down_h")
WINDOW_KEYS = ("start_h", "duration_h", "gpu_type", "hosts", "first_host", "every_h")
TRACE_COLUMNS = ("time_s", "gpu_type", "hosts")
HOUR = 3600.0
LATEST_TRACE_S = 1e12  # a trace time, in seconds from the run's start (as a job log's times)
MIN_HOST_UP_H = 1 / 60  # a host's mean time up between failures (or spot reclaims), at the least
MAX_OUTAGES = 100_000  # outages a run may take; more is a rate that would keep the run from ending
MAX_MEAN_H = 1e9  # mean hours up or down, at the most (1e9 hours: no outage in any run)

_POSITIVE_H = Number(lo=0, lo_open=True, hi=MAX_MEAN_H, what=f"a number of hours > 0 and <= {MAX_MEAN_H:g}")
_FAILURE_RULES = {
    "distribution": OneOf(DISTRIBUTIONS),
    "weibull_shape": Number(lo=0.1, hi=10, what="a Weibull shape in [0.1, 10]"),
    "gpu_mtbf_h": _POSITIVE_H,
    "repair_h": _POSITIVE_H,
    "repair": OneOf(REPAIRS),
}
_INTERVAL = Number(lo=0, lo_open=True, what="a number of seconds > 0, or null (no periodic checkpoints)")


@dataclass(frozen=True)
class HostProcess:
    """Hosts that alternate between up and down, each drawing its spans from its own seeded
    stream: failures and repairs (cause ``failure``), or a spot pool's loans and reclaims
    (cause ``reclaim``). ``up_h``: each host's mean hours up (inf: not in the process)."""

    cause: str
    up_h: np.ndarray  # float [hosts], per host of the cluster
    down_h: float
    distribution: str = "exponential"  # of the up spans (DISTRIBUTIONS)
    weibull_shape: float = 1.0
    down: str = "exponential"  # of the down spans (REPAIRS)

    def up_s(self, rng: np.random.Generator, host: int) -> float:
        mean = self.up_h[host] * HOUR
        if self.distribution == "weibull":  # the scale that gives this mean
            return float(mean / math.gamma(1 + 1 / self.weibull_shape) * rng.weibull(self.weibull_shape))
        return float(rng.exponential(mean))

    def down_s(self, rng: np.random.Generator) -> float:
        mean = self.down_h * HOUR
        return mean if self.down == "fixed" else float(rng.exponential(mean))


@dataclass(frozen=True)
class Window:
    """Hosts ``first_host .. first_host + hosts - 1`` of a type (None: of every type) are down for
    ``duration_h`` from ``start_h``, and again every ``every_h`` if set."""

    start_h: float
    duration_h: float
    gpu_type: int | None
    hosts: int | None  # None: every host of the type
    first_host: int = 0
    every_h: float | None = None


@dataclass
class CapacityConfig:
    """The ``capacity`` config group, checked. ``none`` (no source) is a cluster that never changes."""

    checkpoint_interval_s: float = math.inf  # inf: a job's restore point is its last start
    checkpoint_by_model: dict[str, float] = field(default_factory=dict)
    processes: tuple[HostProcess, ...] = ()  # failures, a spot pool
    maintenance: tuple[Window, ...] = ()
    trace: tuple[tuple[float, int, int, str], ...] = ()  # (time_s, type, hosts available, cause), by time

    @property
    def changes(self) -> bool:
        return bool(self.processes) or bool(self.maintenance) or bool(self.trace)

    @classmethod
    def from_config(
        cls, cfg: Mapping[str, Any] | None, cluster: ClusterSpec, source: str = "capacity"
    ) -> CapacityConfig:
        cfg = dict(cfg or {})
        check_keys(cfg, CONFIG_KEYS, source, noun="setting")
        interval = cfg.get("checkpoint_interval_s")
        interval = math.inf if interval is None else _INTERVAL.check(interval, source, "checkpoint_interval_s")
        by_model = cfg.get("checkpoint_interval_s_by_model") or {}
        require(
            isinstance(by_model, Mapping),
            source,
            "checkpoint_interval_s_by_model",
            f"must map model names to seconds, got {by_model!r}",
        )
        by_model = {
            str(m): _INTERVAL.check(v, source, f"checkpoint_interval_s_by_model.{m}") for m, v in by_model.items()
        }
        return cls(
            checkpoint_interval_s=interval,
            checkpoint_by_model=by_model,
            processes=tuple(
                p
                for p in (_failures(cfg.get("failures"), cluster, source), _spot(cfg.get("spot"), cluster, source))
                if p is not None
            ),
            maintenance=_windows(cfg.get("maintenance"), cluster, source),
            trace=_trace(cfg.get("trace"), cluster, source),
        )

    def check_models(self, known: Sequence[str], source: str = "capacity") -> None:
        """Each model of ``checkpoint_interval_s_by_model`` must be one of the run's catalog: a
        misspelt name would silently leave its jobs without checkpoints."""
        for model in self.checkpoint_by_model:
            require(
                model in known,
                source,
                f"checkpoint_interval_s_by_model.{model}",
                f"is not a model of the run's catalog (known: {', '.join(known)})",
            )

    def intervals(self, model_names: np.ndarray) -> np.ndarray:
        """Each job's checkpoint interval in seconds (inf: none between its starts)."""
        out = np.full(len(model_names), self.checkpoint_interval_s)
        for model, seconds in self.checkpoint_by_model.items():
            out[model_names == model] = seconds
        return out


def _failures(raw: Any, cluster: ClusterSpec, source: str) -> HostProcess | None:
    """Failures at a rate per GPU: a host of g GPUs fails g times as often as one GPU's share,
    so one setting serves clusters of any host size (GPU faults dominate, docs/capacity.md)."""
    if raw is None:
        return None
    require(
        isinstance(raw, Mapping), source, "failures", f"must be a mapping of {', '.join(FAILURE_KEYS)}, got {raw!r}"
    )
    check_keys(raw, FAILURE_KEYS, source, noun="setting", prefix="failures.")
    check_values(raw, _FAILURE_RULES, source, prefix="failures.")
    require("gpu_mtbf_h" in raw, source, "failures.gpu_mtbf_h", "is required: mean hours between failures per GPU")
    per_gpu = np.full(cluster.num_types, float(raw["gpu_mtbf_h"]))
    by_type = raw.get("by_type") or {}
    require(
        isinstance(by_type, Mapping),
        source,
        "failures.by_type",
        f"must map GPU types to {{gpu_mtbf_h}}, got {by_type!r}",
    )
    for name, entry in by_type.items():
        k = cluster.type_index(name, source, f"failures.by_type.{name}")
        require(
            isinstance(entry, Mapping) and set(entry) == {"gpu_mtbf_h"},
            source,
            f"failures.by_type.{name}",
            f"must be {{gpu_mtbf_h: <hours>}}, got {entry!r}",
        )
        per_gpu[k] = _POSITIVE_H.check(entry["gpu_mtbf_h"], source, f"failures.by_type.{name}.gpu_mtbf_h")
    up_h = per_gpu[cluster.host_types] / cluster.host_gpus
    if len(up_h) and up_h.min() < MIN_HOST_UP_H:
        h = int(np.argmin(up_h))
        name = cluster.gpu_types[int(cluster.host_types[h])]
        key = f"failures.by_type.{name}.gpu_mtbf_h" if name in by_type else "failures.gpu_mtbf_h"
        raise InputError(
            source,
            key,
            f"{per_gpu[cluster.host_types[h]]:g} h per GPU makes a host of {int(cluster.host_gpus[h])} {name} GPUs "
            f"fail every {up_h[h] * 60:.3g} minutes on average: a host must stay up {MIN_HOST_UP_H * 60:g} minute "
            f"on average (gpu_mtbf_h >= {MIN_HOST_UP_H * int(cluster.host_gpus[h]):.3g} here), or no job could finish",
        )
    return HostProcess(
        cause="failure",
        up_h=up_h,
        down_h=float(raw.get("repair_h", 24.0)),
        distribution=raw.get("distribution", "exponential"),
        weibull_shape=float(raw.get("weibull_shape", 1.0)),
        down=raw.get("repair", "exponential"),
    )


def _spot(raw: Any, cluster: ClusterSpec, source: str) -> HostProcess | None:
    """A spot pool: the last ``hosts`` hosts of each listed type (all of them by default) are
    lent for exponential spans of mean ``up_h`` and reclaimed for spans of mean ``down_h``."""
    if raw is None:
        return None
    require(isinstance(raw, Mapping), source, "spot", f"must be a mapping of {', '.join(SPOT_KEYS)}, got {raw!r}")
    check_keys(raw, SPOT_KEYS, source, noun="setting", prefix="spot.")
    for key in ("up_h", "down_h"):
        require(
            key in raw,
            source,
            f"spot.{key}",
            "is required: mean hours a spot host is lent (up_h) or reclaimed (down_h)",
        )
        _POSITIVE_H.check(raw[key], source, f"spot.{key}")
    require(
        raw["up_h"] >= MIN_HOST_UP_H,
        source,
        "spot.up_h",
        f"must be at least {MIN_HOST_UP_H:.4g} hours (a minute: a host lent for less could run no job), got {raw['up_h']!r}",
    )
    names = raw.get("gpu_types")
    require(
        names is None or (isinstance(names, (list, tuple)) and len(names) > 0),
        source,
        "spot.gpu_types",
        f"must be a list of the cluster's GPU types (or null: every type), got {names!r}",
    )
    kinds = (
        range(cluster.num_types) if names is None else [cluster.type_index(n, source, "spot.gpu_types") for n in names]
    )
    hosts = raw.get("hosts")
    up = np.full(len(cluster.host_types), math.inf)
    offset = cluster.host_offsets
    for k in kinds:
        have = int(cluster.hosts_per_type[k])
        n = have if hosts is None else Number(lo=1, hi=have, integer=True).check(hosts, source, "spot.hosts")
        up[offset[k + 1] - n : offset[k + 1]] = float(raw["up_h"])
    return HostProcess(cause="reclaim", up_h=up, down_h=float(raw["down_h"]))


def _windows(raw: Any, cluster: ClusterSpec, source: str) -> tuple[Window, ...]:
    if raw is None:
        return ()
    require(isinstance(raw, (list, tuple)), source, "maintenance", f"must be a list of windows, got {raw!r}")
    out = []
    for i, w in enumerate(raw):
        where = f"maintenance[{i}]"
        require(isinstance(w, Mapping), source, where, f"must be a mapping of {', '.join(WINDOW_KEYS)}, got {w!r}")
        check_keys(w, WINDOW_KEYS, source, noun="key", prefix=f"{where}.")
        for key in ("start_h", "duration_h"):
            require(key in w, source, f"{where}.{key}", "is required")
        start = Number(lo=0).check(w["start_h"], source, f"{where}.start_h")
        duration = _POSITIVE_H.check(w["duration_h"], source, f"{where}.duration_h")
        kind = None if w.get("gpu_type") is None else cluster.type_index(w["gpu_type"], source, f"{where}.gpu_type")
        most = int(cluster.hosts_per_type.max() if kind is None else cluster.hosts_per_type[kind])
        hosts = w.get("hosts")
        if hosts is not None:
            hosts = Number(lo=1, hi=most, integer=True).check(hosts, source, f"{where}.hosts")
        first = Number(lo=0, hi=most - 1, integer=True).check(w.get("first_host", 0), source, f"{where}.first_host")
        every = w.get("every_h")
        if every is not None:
            every = Number(lo=duration, lo_open=True, what=f"a number of hours > duration_h ({duration:g})").check(
                every, source, f"{where}.every_h"
            )
        out.append(Window(start, duration, kind, hosts, first, every))
    return tuple(out)


def _trace(raw: Any, cluster: ClusterSpec, source: str) -> tuple[tuple[float, int, int, str], ...]:
    """The trace file's rows, read as every table of fairsim is (fairsim.tables): errors name the
    file, the line and the column."""
    if raw is None:
        return ()
    require(isinstance(raw, str) and raw.strip(), source, "trace", f"must be the path of a CSV file, got {raw!r}")
    path = input_path(raw)
    require(path.is_file(), source, "trace", f"no such file: {raw}")
    table = read_csv_table(path, f"{source} trace", required=TRACE_COLUMNS, quoted=True, hint="optional: cause")
    cells = table.cells
    has_cause = "cause" in cells.columns
    rows = []
    for i in range(len(cells)):
        where = table.where(i)
        t = _number(cells["time_s"].iat[i])
        require(
            t is not None and 0 <= t <= LATEST_TRACE_S,
            where,
            "time_s",
            f"must be a time in seconds in [0, {LATEST_TRACE_S:g}], got {shown(cells['time_s'].iat[i])}",
        )
        kind = cluster.type_index(cells["gpu_type"].iat[i].strip(), where, "gpu_type")
        most = int(cluster.hosts_per_type[kind])
        hosts = _number(cells["hosts"].iat[i])
        require(
            hosts is not None and hosts.is_integer() and 0 <= hosts <= most,
            where,
            "hosts",
            f"must be a whole number of hosts in 0..{most} (the cluster's hosts of {cluster.gpu_types[kind]}), "
            f"got {shown(cells['hosts'].iat[i])}",
        )
        cause = (cells["cause"].iat[i].strip() if has_cause else "") or "reclaim"
        require(cause in CAUSES, where, "cause", f"must be one of {', '.join(CAUSES)}, got {shown(cause)}")
        rows.append((t, kind, int(hosts), cause))
    times = [r[0] for r in rows]
    later = next((i for i in range(1, len(times)) if times[i] < times[i - 1]), None)
    if later is not None:
        raise InputError(
            table.where(later),
            "time_s",
            f"rows must be in time order ({times[later]:g} comes after {times[later - 1]:g})",
        )
    return tuple(rows)


def _number(cell: str) -> float | None:
    """A finite float, or None (a cell that is no number)."""
    try:
        value = float(cell.strip().replace("_", "x"))  # Python's 1_000 is no number in a table
    except ValueError:
        return None
    return value if math.isfinite(value) else None


# ---- the timeline the engine reads ------------------------------------------------------------
_DOWN, _UP, _WINDOW_START, _WINDOW_END, _TRACE = range(5)
_RATE_KEYS = {"failure": "failures.gpu_mtbf_h", "maintenance": "maintenance", "reclaim": "spot.up_h"}
_STREAMS = {"failure": 0xFA11, "reclaim": 0x5B07}  # each process's draws, per host, apart from the others


class CapacityTimeline:
    """Host events in time order. ``pop(t)`` applies every event up to ``t`` and returns the hosts
    that went down and came back (global host index: the types' hosts one after another, as
    ``fairsim.sim.placement`` numbers them)."""

    def __init__(self, cfg: CapacityConfig, cluster: ClusterSpec, seed: int):
        self.cfg, self.cluster = cfg, cluster
        self.host_offset, self.host_type, self.host_size = cluster.host_offsets, cluster.host_types, cluster.host_gpus
        n = len(self.host_type)
        self.holds = np.zeros((n, len(CAUSES)), dtype=np.int64)  # how many outages of each cause hold a host down
        self.since = np.full((n, len(CAUSES)), np.nan)  # when the current outage of each cause began
        self.down_since = np.full(n, np.nan)  # when the host went down (any cause)
        self.cause_s = np.zeros(len(CAUSES))  # host-seconds of outage per cause (an overlap counts under each)
        self.cause_gpu_s = np.zeros(len(CAUSES))
        self.down_s_by_type = np.zeros(cluster.num_types)  # GPU-seconds down, any cause
        self.events = np.zeros(len(CAUSES), dtype=np.int64)  # outages begun, per cause
        self._heap: list[tuple[float, int, int, int, int]] = []  # (time, order, kind, host or index, extra)
        self._order = 0
        self._rngs: dict[tuple[int, int], np.random.Generator] = {}
        self._seed = seed
        self._trace_down = [np.zeros(0, dtype=np.int64) for _ in range(cluster.num_types)]  # hosts the trace holds
        self._trace_cause = np.zeros(n, dtype=np.int64)  # the cause the trace holds each of its hosts down for
        for p, process in enumerate(cfg.processes):
            for h in np.flatnonzero(np.isfinite(process.up_h)).tolist():
                self._push(process.up_s(self._rng(p, h), h), _DOWN, h, p)
        for i, w in enumerate(cfg.maintenance):
            self._push(w.start_h * HOUR, _WINDOW_START, i, 0)
        for i, (t, *_rest) in enumerate(cfg.trace):
            self._push(t, _TRACE, i)

    @property
    def next_s(self) -> float:
        return self._heap[0][0] if self._heap else math.inf

    def _rng(self, process: int, host: int) -> np.random.Generator:
        rng = self._rngs.get((process, host))
        if rng is None:
            stream = _STREAMS[self.cfg.processes[process].cause]
            rng = self._rngs[(process, host)] = np.random.default_rng([self._seed, stream, host])
        return rng

    def _push(self, t: float, kind: int, what: int, extra: int = 0) -> None:
        heapq.heappush(self._heap, (t, self._order, kind, what, extra))
        self._order += 1

    def pop(self, t: float) -> tuple[np.ndarray, np.ndarray]:
        """Apply the events at or before ``t``; returns (hosts that went down, hosts that came
        back), each a host whose state changed (a host down for two causes comes back once both end)."""
        was_down = self.holds.any(axis=1)
        touched: set[int] = set()
        while self._heap and self._heap[0][0] <= t:
            at, _, kind, what, extra = heapq.heappop(self._heap)
            touched.update(self._apply(at, kind, what, extra))
        if not touched:
            return np.empty(0, dtype=np.int64), np.empty(0, dtype=np.int64)
        hosts = np.array(sorted(touched), dtype=np.int64)
        now_down = self.holds[hosts].any(axis=1)
        return hosts[now_down & ~was_down[hosts]], hosts[~now_down & was_down[hosts]]

    def _apply(self, at: float, kind: int, what: int, extra: int) -> list[int]:
        if kind in (_DOWN, _UP):  # a host process: ``extra`` is which
            process = self.cfg.processes[extra]
            cause = CAUSES.index(process.cause)
            rng = self._rng(extra, what)
            self._hold(what, cause, at, +1 if kind == _DOWN else -1)
            if kind == _DOWN:
                self._push(at + process.down_s(rng), _UP, what, extra)
            else:
                self._push(at + process.up_s(rng, what), _DOWN, what, extra)
            return [what]
        if kind in (_WINDOW_START, _WINDOW_END):
            w = self.cfg.maintenance[what]
            hosts = self._window_hosts(w)
            for h in hosts:
                self._hold(h, 1, at, +1 if kind == _WINDOW_START else -1)
            if kind == _WINDOW_START:
                self._push(at + w.duration_h * HOUR, _WINDOW_END, what, extra)
            elif w.every_h is not None:
                self._push((w.start_h + (extra + 1) * w.every_h) * HOUR, _WINDOW_START, what, extra + 1)
            return hosts
        _, k, available, cause = self.cfg.trace[what]
        lo, hi = int(self.host_offset[k]), int(self.host_offset[k + 1])
        wanted = np.arange(lo + available, hi)  # the highest-numbered hosts go first
        held = self._trace_down[k]
        c = CAUSES.index(cause)
        for h in np.setdiff1d(held, wanted).tolist():
            self._hold(h, self._trace_cause[h], at, -1)
        for h in np.setdiff1d(wanted, held).tolist():
            self._hold(h, c, at, +1)
            self._trace_cause[h] = c
        self._trace_down[k] = wanted
        return np.union1d(held, wanted).tolist()

    def _window_hosts(self, w: Window) -> list[int]:
        kinds = range(self.cluster.num_types) if w.gpu_type is None else (w.gpu_type,)
        hosts = []
        for k in kinds:
            lo, hi = int(self.host_offset[k]), int(self.host_offset[k + 1])
            first = lo + w.first_host
            last = hi if w.hosts is None else min(hi, first + w.hosts)
            hosts.extend(range(min(first, hi), last))
        return hosts

    def _hold(self, host: int, cause: int, at: float, step: int) -> None:
        was_down = self.holds[host].any()
        before = self.holds[host, cause]
        self.holds[host, cause] = before + step
        if step > 0 and before == 0:
            self.since[host, cause] = at
            self.events[cause] += 1
            if self.events.sum() > MAX_OUTAGES:
                raise InputError(
                    "capacity",
                    _RATE_KEYS[CAUSES[cause]],
                    f"the run's hosts went down more than {MAX_OUTAGES:,} times by {at / HOUR:,.1f} h: outages this "
                    "frequent would keep the run from ending; make them rarer",
                )
        elif step < 0 and before == 1:
            self._count_cause(host, cause, at)
        is_down = self.holds[host].any()
        if is_down and not was_down:
            self.down_since[host] = at
        elif was_down and not is_down:
            self.down_s_by_type[self.host_type[host]] += (at - self.down_since[host]) * self.host_size[host]
            self.down_since[host] = np.nan

    def _count_cause(self, host: int, cause: int, until: float) -> None:
        span = until - self.since[host, cause]
        self.cause_s[cause] += span
        self.cause_gpu_s[cause] += span * self.host_size[host]
        self.since[host, cause] = np.nan

    def down_hosts(self) -> np.ndarray:
        return np.flatnonzero(self.holds.any(axis=1))

    def outage_seconds(self, end: float) -> dict[str, np.ndarray]:
        """What the outages covered up to ``end`` (the run's end; outages still on are cut there):
        GPU-seconds per cause, and GPU-seconds down per type (any cause)."""
        by_cause = self.cause_gpu_s.copy()
        on = np.argwhere(self.holds > 0)
        for h, c in on.tolist():
            by_cause[c] += max(0.0, end - self.since[h, c]) * self.host_size[h]
        by_type = self.down_s_by_type.copy()
        down = self.down_hosts()
        np.add.at(by_type, self.host_type[down], np.maximum(0.0, end - self.down_since[down]) * self.host_size[down])
        return {"by_cause": by_cause, "by_type": by_type}
