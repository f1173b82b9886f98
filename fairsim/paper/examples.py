"""The paper's worked examples as small simulations (Table 1 / Fig. 3, Fig. 2, Fig. 5, Fig. 6),
built from experiments/paper_examples.yaml.

The tests that check these numbers and the figure modules that draw them both call the
functions here, so what a figure shows is what the tests assert.
"""

from __future__ import annotations

import copy
import dataclasses
from pathlib import Path

import numpy as np
import yaml

from fairsim.cluster import ClusterSpec
from fairsim.errors import require
from fairsim.experiment.compose import preset as compose_preset
from fairsim.experiment.single import build_policy
from fairsim.policies.base import Policy
from fairsim.sim.config import SimConfig
from fairsim.sim.engine import SimResult, simulate
from fairsim.testing import fractions_on, toy_jobs, toy_view
from fairsim.workload.jobs import JobSet

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "experiments" / "paper_examples.yaml"


@dataclasses.dataclass
class Example:
    """One instance: jobs, cluster, engine settings, a display name per job and per GPU type, and
    the policies its figure compares (name -> config)."""

    name: str
    jobs: JobSet
    cluster: ClusterSpec
    config: SimConfig
    labels: dict[int, str]
    type_labels: dict[str, str]
    policy_configs: dict[str, dict]
    spec: dict  # the example's YAML entry, for example-specific numbers

    def policy(self, name: str) -> Policy:
        """The named policy: conf/policy/<preset>.yaml with the example's overrides."""
        require(
            name in self.policy_configs,
            f"{EXAMPLES.name} {self.name}",
            "policies",
            f"no policy {name!r} (allowed: {', '.join(self.policy_configs)})",
        )
        cfg = copy.deepcopy(self.policy_configs[name])
        preset = cfg.pop("preset", name)
        base = compose_preset("policy", preset)  # its defaults list applied (conf/policy/gavel.yaml: the mechanism)
        return build_policy(_merge(base, cfg))

    def policies(self) -> dict[str, Policy]:
        return {name: self.policy(name) for name in self.policy_configs}

    def run(self, policy: Policy, record: bool = True, **sim_changes) -> SimResult:
        cfg = dataclasses.replace(self.config, record_schedule=record, **sim_changes)
        return simulate(self.jobs, self.cluster, policy, cfg)


def _merge(base: dict, over: dict) -> dict:
    out = dict(base)
    for key, value in over.items():
        out[key] = _merge(out[key], value) if isinstance(value, dict) and isinstance(out.get(key), dict) else value
    return out


def load_spec(name: str, path: Path = EXAMPLES) -> dict:
    specs = yaml.safe_load(Path(path).read_text())
    require(name in specs, str(path), name, f"no such example (allowed: {', '.join(specs)})")
    return specs[name]


def build(name: str, spec: dict | None = None, jobs: dict | None = None) -> Example:
    """The example ``name`` of experiments/paper_examples.yaml (or ``spec``); ``jobs`` replaces
    its job lists (used by generated instances such as Fig. 5's stream)."""
    spec = copy.deepcopy(spec if spec is not None else load_spec(name))
    src = f"{EXAMPLES.name} {name}"
    cluster = ClusterSpec.from_config({"name": name, **spec["cluster"]}, source=f"{src} cluster")
    sim = SimConfig.from_config(spec["sim"], source=f"{src} sim")
    j = jobs if jobs is not None else spec["jobs"]
    n = len(j["work"]) if "work" in j else len(j["work_rounds"])
    work = (
        np.asarray(j["work"], dtype=np.float64)
        if "work" in j
        else np.asarray(j["work_rounds"], dtype=np.float64) * sim.round_len_s
    )
    tput = np.asarray(j.get("throughput", np.ones((n, cluster.num_types))), dtype=np.float64) / spec.get(
        "rate_unit_s", 1
    )
    require(
        tput.shape == (n, cluster.num_types),
        src,
        "jobs.throughput",
        f"must be {n} rows of {cluster.num_types} numbers (one per cluster type)",
    )
    spread = tput * j["spread_speed"] if "spread_speed" in j else None
    state = np.asarray(j.get("state_gb", np.zeros(n)), dtype=np.float64) * 1e9
    jobset = toy_jobs(
        tput,
        work=work,
        arrival=j.get("arrival_s"),
        workers=j.get("workers"),
        state_bytes=state,
        spread=spread,
        work_unit=spec.get("work_unit", "unit"),
    )
    labels = {k: str(label) for k, label in enumerate(j.get("labels", []))}
    return Example(
        name, jobset, cluster, sim, labels, dict(spec.get("type_labels") or {}), dict(spec.get("policies") or {}), spec
    )


# ---- Table 1 and Fig. 3 ------------------------------------------------------------------------
def table1_example(round_len_s: float | None = None, epochs=None) -> Example:
    """Table 1's two jobs; ``round_len_s`` and ``epochs`` (work per job) replace the YAML's."""
    spec = load_spec("table1")
    if round_len_s is not None:
        spec["sim"]["round_len_s"] = round_len_s
    if epochs is not None:
        spec["jobs"]["work"] = list(epochs)
    return build("table1", spec)


def table1_gavel_fractions(example: Example | None = None) -> np.ndarray:
    """Gavel's time-fraction matrix X [job, type] for Table 1 (its LP, one shot)."""
    ex = example or table1_example()
    return fractions_on(ex.policy("gavel"), toy_view(ex.jobs.tput_packed, ex.cluster.counts, work=ex.jobs.work))


def table1_fluid_jct_min(x: np.ndarray, example: Example | None = None) -> np.ndarray:
    """Each job's JCT in minutes when it runs at its time-averaged rate X . rates."""
    ex = example or table1_example()
    rate = (x * ex.jobs.tput_packed).sum(axis=1)  # work units per second
    return ex.jobs.work / rate / 60


def gavel_round_len_s() -> float:
    return float(load_spec("table1")["gavel_round_len_s"])


# ---- Fig. 2, Fig. 5, Fig. 6 -----------------------------------------------------------------------
def fig2_example() -> Example:
    return build("fig2")


def fig5_example() -> Example:
    """Job 0 is the big job; the stream's jobs follow in arrival order."""
    spec = load_spec("fig5")
    big, stream = spec["big"], spec["stream"]
    r = float(spec["sim"]["round_len_s"])
    per = int(stream["jobs_per_round"])
    arrival = [0.0] + [r * k for k in range(int(stream["rounds"])) for _ in range(per)]
    rounds = [big["work_rounds"]] + [stream["work_rounds"]] * (len(arrival) - 1)
    workers = [big["workers"]] + [1] * (len(arrival) - 1)
    return build(
        "fig5", spec, {"work_rounds": rounds, "arrival_s": arrival, "workers": workers, "labels": [big["label"]]}
    )


def fig6_example() -> Example:
    return build("fig6")
