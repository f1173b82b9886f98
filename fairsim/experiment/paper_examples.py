"""The paper's worked examples as small simulations (Table 1 / Fig. 3, Fig. 2, Fig. 5, Fig. 6).

The tests that check these numbers and the figure modules that draw them both call the
functions here, so what a figure shows is what the tests assert. Each instance is documented
where the paper leaves numbers open (docs/ours.md, docs/reproduce.md); nothing here is tuned to
hit a paper number.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from fairsim.cluster import ClusterSpec
from fairsim.policies.base import Policy
from fairsim.policies.fifo import FifoPolicy
from fairsim.policies.gavel import GavelSjf
from fairsim.policies.mechanism import GavelMechanism
from fairsim.policies.ours import FFTPolicy
from fairsim.policies.srtf_agnostic import OverheadAgnosticSRTF
from fairsim.sim.config import Overheads, SimConfig
from fairsim.sim.engine import SimResult, simulate
from fairsim.testing import fractions_on, toy_cluster, toy_jobs, toy_view
from fairsim.workload.jobs import JobSet

NO_OVERHEADS = Overheads(migration=False, preemption=False)
LAN_BYTES_PER_S = 1.25e9  # the default 10 Gbit/s inter-host link


@dataclasses.dataclass
class Example:
    """One instance: jobs, cluster, engine settings and a display name per job."""

    jobs: JobSet
    cluster: ClusterSpec
    config: SimConfig
    labels: dict[int, str]
    type_labels: dict[str, str] = dataclasses.field(default_factory=dict)  # display name per GPU type

    def run(self, policy: Policy, record: bool = True) -> SimResult:
        cfg = dataclasses.replace(self.config, record_schedule=record)
        return simulate(self.jobs, self.cluster, policy, cfg)


# ---- Table 1 and Fig. 3 ------------------------------------------------------------------------
TABLE1_EPOCHS = 16.0
TABLE1_RATES = (8.0, 1.0)  # epochs per minute on the fast and the slow GPU


def table1_example(round_len_s: float = 60.0, epochs=(TABLE1_EPOCHS, TABLE1_EPOCHS)) -> Example:
    """Two identical jobs of 16 epochs (``epochs``), one fast GPU (8 epochs/min) and one slow
    (1 epoch/min), no overheads. Work is counted in epochs; throughputs are per second. The paper names no GPU
    models; a V100 and a K80 stand in (only their rates matter here)."""
    fast, slow = (r / 60 for r in TABLE1_RATES)
    jobs = toy_jobs([[fast, slow], [fast, slow]], work=list(epochs), work_unit="epochs")
    cfg = SimConfig(round_len_s=round_len_s, placement=False, fast_forward=False, check=True, overheads=NO_OVERHEADS)
    return Example(jobs, toy_cluster({"V100": 1, "K80": 1}), cfg, {0: "A", 1: "B"},
                   {"V100": "fast GPU (8 epochs/min)", "K80": "slow GPU (1 epoch/min)"})


def table1_gavel_fractions() -> np.ndarray:
    """Gavel's time-fraction matrix X [job, (fast, slow)] for Table 1 (its LP, one shot)."""
    return fractions_on(GavelSjf(), toy_view([list(TABLE1_RATES)] * 2, [1, 1], work=[TABLE1_EPOCHS] * 2))


def table1_fluid_jct_min(x: np.ndarray) -> np.ndarray:
    """Each job's JCT in minutes when it runs at its time-averaged rate X . rates."""
    return TABLE1_EPOCHS / (x @ np.asarray(TABLE1_RATES))


def gavel_policy() -> GavelSjf:
    """Gavel with its allocation recomputed every round (the paper's round-based mechanism)."""
    return GavelSjf(mechanism=GavelMechanism(recompute_min_interval_s=0))


GAVEL_ROUND_S = 6.0  # short rounds: the round mechanism realizes the fluid split closely


# ---- Fig. 2 -------------------------------------------------------------------------------------
def fig2_example() -> Example:
    """Paper Fig. 2, reconstructed (the paper's text gives J1, J2, J4 arriving at 0, 10, 0 min,
    J4 needing 14.4 min on a T4 and 2 min to migrate; the rest is ours, docs/ours.md): one T4
    (1 unit/s) and one A10 (1.125 unit/s), 5-minute rounds, a migration costs 2 min (150 GB of
    state over 10 Gbit/s, restart 0). J1: 5 min on the A10, does not fit the T4's memory. J4:
    864 units (14.4 min on the T4). J2: arrives at 10 min, 2 min on the A10."""
    jobs = toy_jobs([[0.0, 1.125], [1.0, 1.125], [1.0, 1.125]], work=[337.5, 864, 135], arrival=[0, 0, 600],
                    state_bytes=[120 * LAN_BYTES_PER_S] * 3)
    cfg = SimConfig(round_len_s=300, check=True, overheads=Overheads(restart_s=0))
    return Example(jobs, toy_cluster({"T4": 1, "A10": 1}), cfg, {0: "J1", 1: "J4", 2: "J2"})


FIG2_POLICIES = {"srtf_agnostic": OverheadAgnosticSRTF, "ours": FFTPolicy}


# ---- Fig. 5 -------------------------------------------------------------------------------------
def fig5_example(stream_rounds: int = 80) -> Example:
    """Starvation: 2 GPUs; a 2-worker job of 4 rounds at t=0 (job 0), then 2 single-GPU jobs of
    one round arriving every round. FFT's rho lets the big job in after 33 rounds (docs/ours.md)."""
    r = 300.0
    arrival = [0.0] + [r * k for k in range(stream_rounds) for _ in range(2)]
    work = [4 * r] + [r] * (2 * stream_rounds)
    workers = [2] + [1] * (2 * stream_rounds)
    jobs = toy_jobs(np.ones((len(arrival), 1)), work=work, arrival=arrival, workers=workers)
    return Example(jobs, toy_cluster({"T4": 2}), SimConfig(round_len_s=r, overheads=NO_OVERHEADS), {0: "big job"})


# ---- Fig. 6 -------------------------------------------------------------------------------------
def fig6_example() -> Example:
    """Placement inside one type (paper sec. 4.3): five 4-GPU hosts of A10s, 20 GPUs, FIFO order,
    every job arriving at once and the cluster exactly full. The four 3-worker jobs J1-J4 each
    pack onto a host of their own (biggest gang first); the 2-worker J5 and J6 share host 4; J7
    (20 GB of state) and J8 (4 GB) find one free GPU per host only and run spread over two hosts
    each, at 70% speed (their all-reduce crosses the LAN). When the short J5 finishes (a churn
    event) its 2 GPUs take one of them: J8, the smaller state, is consolidated first (a migration:
    restart + 4 GB over the LAN); J7 stays spread until it finishes."""
    r = 300.0
    rounds = np.array([12, 12, 12, 12, 3, 10, 5, 10])
    workers = [3, 3, 3, 3, 2, 2, 2, 2]
    state_gb = np.array([2, 2, 2, 2, 2, 2, 20, 4])
    jobs = toy_jobs(np.ones((8, 1)), work=rounds * r, workers=workers, spread=np.full((8, 1), 0.7), state_bytes=state_gb * 1e9)
    cfg = SimConfig(round_len_s=r, overheads=Overheads(restart_s=30))
    return Example(jobs, toy_cluster({"A10": 20}, gpus_per_host=4), cfg, {i: f"J{i + 1}" for i in range(8)})


def fig6_policy() -> FifoPolicy:
    return FifoPolicy()
