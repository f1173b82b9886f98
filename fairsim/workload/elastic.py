"""Elastic jobs: a job whose GPU count is the scheduler's choice, and whose progress rate is its
goodput (throughput times statistical efficiency), as in Pollux (OSDI'21) and Sia (SOSP'23).

A rigid job runs on exactly ``JobSet.workers`` GPUs of one type at the catalog's rate. An
elastic job may run on any count from ``min_gpus`` to ``max_gpus`` GPUs of one type; its rate,
in the JobSet's work units per second, is what its ``GoodputModel`` says for that type, count,
number of hosts spanned and the progress made so far (statistical efficiency changes as training
goes on). ``JobSet.workers`` stays its requested count: a policy that knows nothing of elasticity
runs it there, as a rigid gang.

The engine asks the model for a running elastic job's rate when the job starts or changes its
allocation and again at the start of every step, so goodput follows progress step by step. A
policy reads ``estimate`` where the jobs tell it something other than the truth.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import numpy as np


class GoodputModel(Protocol):
    """How fast elastic jobs progress. Arrays are parallel, one entry per (job, allocation) asked."""

    def rate(
        self, jobs: np.ndarray, types: np.ndarray, gpus: np.ndarray, hosts: np.ndarray, done: np.ndarray
    ) -> np.ndarray:
        """float: work units per second of job ``jobs[i]`` (JobSet row) on ``gpus[i]`` GPUs of
        cluster type ``types[i]`` spread over ``hosts[i]`` hosts, having done ``done[i]`` units
        of its work; 0 where it cannot run so (memory, or the type is not profiled)."""
        ...


def rate_arrays(jobs, types, gpus, hosts, done) -> tuple[np.ndarray, ...]:
    """A ``GoodputModel.rate`` call's arguments as arrays of their kinds (indices and counts as
    int64, progress as float64), for a model that indexes with them."""
    jobs, types, gpus, hosts = (np.asarray(a, dtype=np.int64) for a in (jobs, types, gpus, hosts))
    return jobs, types, gpus, hosts, np.asarray(done, dtype=np.float64)


@dataclass(frozen=True, eq=False)
class ElasticJobs:
    """The elastic attributes of a JobSet's jobs, arrays over its rows."""

    elastic: np.ndarray  # bool [J]: the scheduler chooses the GPU count
    min_gpus: np.ndarray  # int [J]: fewest GPUs it may run on (its requested count if rigid)
    max_gpus: np.ndarray  # int [J]: most GPUs it may run on (its requested count if rigid)
    model: GoodputModel
    # what the jobs tell the scheduler their goodput is (PolicyView.goodput), where it is not the
    # truth they progress at; None: the truth (e.g. Sia's jobs judged at their submitted batch)
    estimate: GoodputModel | None = None

    @property
    def told(self) -> GoodputModel:
        """The goodput model a policy reads."""
        return self.model if self.estimate is None else self.estimate

    def __post_init__(self) -> None:
        for name in ("elastic", "min_gpus", "max_gpus"):
            getattr(self, name).setflags(write=False)
