"""The config fuzzed: any value of any key either runs or ends in one line.

Each example takes a small run (20 jobs, or a shipped trace) of one of several policy and workload
presets and sets one or two of its keys (the policy's options, the cluster's, the workload's, the
engine's, seed, load) to a value near or far from a valid one: zero, negative, fractional, huge
(1e308, 2**63), tiny, NaN, infinite, of the wrong kind (text, a list, a mapping, true, null),
or a new key. It is then built and simulated (``run_config``) with warnings turned into errors:
the outcome is a run, or an ``InputError`` whose message is one line with no numpy spelling of
a value (or, for options that keep a policy from ever starting a waiting job, the engine's one
line saying so); never another exception or a warning.
"""

from __future__ import annotations

import copy
import functools
import math
import warnings
from collections import Counter

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from omegaconf import OmegaConf

from fairsim.errors import InputError
from fairsim.experiment.compose import compose_config
from fairsim.experiment.single import run_config
from fairsim.sim.engine import PolicyContractError

# (preset overrides, the sections whose keys are fuzzed). Round-based solver policies fuzz only
# their own options: a valid but tiny sim.round_len_s would make them decide thousands of times.
BASES = {
    "fifo_philly": (("policy=fifo", "num_jobs=20"), ("policy", "cluster", "workload", "sim", "")),
    "srtf_trace": (("policy=srtf", "workload=trace2", "num_jobs=20"), ("policy", "workload", "sim", "")),
    "fifo_gavel": (
        (
            "policy=fifo",
            "workload=gavel_generated",
            "cluster=gavel",
            "sim=gavel_compat",
            "num_jobs=30",
            "workload.window=[10,20]",
        ),
        ("workload", "sim"),
    ),
    "las_tiresias": (
        (
            "policy=tiresias_las",
            "workload=tiresias_trace",
            "cluster=tiresias",
            "cluster.counts.V100=16",
            "sim=tiresias_compat",
        ),
        ("policy", "workload", "cluster", "sim"),
    ),
    "ours": (("policy=ours", "num_jobs=20"), ("policy",)),
    "themis": (("policy=themis", "num_jobs=20"), ("policy",)),
    "gavel": (("policy=gavel", "num_jobs=20"), ("policy",)),
    "pal": (("policy=pal", "num_jobs=20"), ("policy",)),
    "allox": (("policy=allox", "num_jobs=20"), ("policy",)),
    "team_log": (("policy=fifo", "workload=team_cluster"), ("workload",)),
}
SKIP = {
    "results_dir",
    "sweep_name",
    "track",
    "reuse_stale",
    "name",
    "_target_",
    "path",
}  # bookkeeping, and files (the reader fuzz)

NUMBERS = [0, -1, 1, 2, 0.5, -0.5, 1e-300, 1e308, -1e308, 1e15, 2**63, 10**30, math.nan, math.inf, -math.inf]
OTHERS = [True, False, None, "", "abc", "1", "nan", [], [1], [1, 2], {}, {"a": 1}]


@functools.cache
def base_config(base: str):
    return compose_config([*BASES[base][0], "track=false"])


@functools.cache
def fuzzed_keys(base: str) -> tuple[str, ...]:
    """Every leaf key of the base's fuzzed sections, dotted ("sim.overheads.restart_s")."""
    cfg = OmegaConf.to_container(base_config(base), resolve=False)
    keys = []

    def walk(node, prefix):
        for key, value in node.items():
            if key in SKIP:
                continue
            name = f"{prefix}{key}"
            if isinstance(value, dict) and value:
                walk(value, f"{name}.")
            else:
                keys.append(name)

    for section in BASES[base][1]:
        if section:
            walk(cfg[section], f"{section}.")
        else:
            walk({k: v for k, v in cfg.items() if not isinstance(v, dict)}, "")
    return tuple(sorted(keys))


def near(value, pick: int):
    """Two times in three a value near ``value`` (doubled, halved, one more, a million times, negated,
    off by a half; for text: upper case, a letter more or less), else one far from it (NUMBERS, OTHERS)."""
    if isinstance(value, (int, float)) and not isinstance(value, bool) and pick % 3:
        return [value * 2, value / 2, value + 1, value * 1e6, value * 1e-6, -value, value + 0.5, value - 1][
            pick // 3 % 8
        ]
    if isinstance(value, str) and pick % 3:
        return [value.upper(), f"{value}x", f" {value}", value[:-1]][pick // 3 % 4]
    pool = NUMBERS + OTHERS
    return pool[pick % len(pool)]


@st.composite
def settings_(draw):
    base = draw(st.sampled_from(sorted(BASES)))
    keys = fuzzed_keys(base)
    changes = []
    for _ in range(draw(st.integers(1, 2))):
        if draw(st.integers(0, 9)) == 0:  # a key the section lacks
            section = draw(st.sampled_from([s for s in BASES[base][1] if s] or ["sim"]))
            changes.append((f"{section}.no_such_key", 1))
        else:
            key = draw(st.sampled_from(keys))
            changes.append((key, draw(st.integers(0, 10_000))))
    return base, changes


def configured(base: str, changes):
    cfg = copy.deepcopy(base_config(base))
    for key, pick in changes:
        current = OmegaConf.select(cfg, key, default=None, throw_on_missing=False)
        value = pick if key.endswith("no_such_key") else near(current, pick)
        OmegaConf.update(cfg, key, value, merge=False, force_add=True)
    return cfg


def outcome(cfg) -> str:
    """'ran', 'refused' (one InputError line) or 'stalled' (options that keep a policy from ever
    starting a waiting job: one line from the engine, exit 1 through run.py); anything else raises."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        try:
            run_config(cfg)
        except InputError as exc:
            message = f"error: {exc}"
            assert len(message.splitlines()) == 1, message
            assert "np.float64(" not in message and "np.int64(" not in message, message
            return "refused"
        except PolicyContractError as exc:
            assert "ran no job in" in str(exc) and len(str(exc).splitlines()) == 1, (
                exc
            )  # any other breach is a policy's bug
            return "stalled"
    return "ran"


EXAMPLES = 120
COUNTS: Counter = Counter()


@pytest.mark.slow  # about 15 s
@settings(
    max_examples=EXAMPLES, deadline=None, derandomize=True, database=None, suppress_health_check=[HealthCheck.too_slow]
)
@given(example=settings_())
def test_a_config_value_runs_or_is_refused_in_one_line(example):
    base, changes = example
    COUNTS[outcome(configured(base, changes))] += 1


@pytest.mark.slow
def test_the_config_fuzz_reached_both_outcomes():
    """Runs after the property (same module, in order): the values were near enough to valid to
    run some, and far enough to refuse some."""
    if not COUNTS:
        pytest.skip("the property did not run in this session")
    print(
        f"fuzz config: {sum(COUNTS.values())} configs, {COUNTS['ran']} ran, {COUNTS['refused']} refused in one line, "
        f"{COUNTS['stalled']} stalled in one line"
    )
    assert COUNTS["ran"] > 0 and COUNTS["refused"] > 0, COUNTS
