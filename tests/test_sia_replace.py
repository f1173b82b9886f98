"""sim.replace=sia: Sia's artifact's per-round re-placement (fairsim.sim.placement), by hand."""

import numpy as np
import pytest

from fairsim.cluster import ClusterSpec
from fairsim.errors import InputError
from fairsim.experiment.compose import compose_config
from fairsim.sim.config import SimConfig
from fairsim.sim.placement import SiaRepacker, pointer_splits


def test_pointer_splits_by_hand():
    # 3 nodes of 8: each gang where the pointer stands, the pointer moving past each node looked at
    assert pointer_splits(8, 3, [8, 4, 2]) == [(8,), (4,), (2,)]
    # the third gang finds 2 free GPUs on each node: split 2 + 2 over two nodes
    assert pointer_splits(8, 2, [6, 6, 4]) == [(6,), (6,), (2, 2)]
    # a whole node is searched from the pointer on, wrapping round; the rest follows the pointer
    assert pointer_splits(4, 3, [4, 2, 4, 2]) == [(4,), (2,), (4,), (2,)]
    # no whole node free: the gang takes the pieces left, in pointer order
    assert pointer_splits(4, 2, [2, 2, 4]) == [(2,), (2,), (2, 2)]
    # a gang over whole nodes then a rest: (8, 2)
    assert pointer_splits(8, 3, [10, 8]) == [(8, 2), (8,)]
    with pytest.raises(RuntimeError, match="17 GPUs asked of 16"):
        pointer_splits(8, 2, [9, 8])


def sia_cluster() -> ClusterSpec:
    return ClusterSpec.from_config(compose_config(["cluster=sia"]).cluster)


def test_repacker_counts_a_changed_split_only():
    cluster = sia_cluster()  # T4 24 on 4-GPU hosts; A100 16 and RTX 24 on Sia's 8-GPU nodes
    rtx = cluster.gpu_types.index("RTX2080Ti")
    r = SiaRepacker(cluster, np.array([4 if name == "T4" else 8 for name in cluster.gpu_types]), 5)
    place = lambda ids, gpus: r.place(np.array(ids), np.full(len(ids), rtx), np.array(gpus))  # noqa: E731
    # biggest first: job 2 (8) on node 0, jobs 0 and 1 (6 each) on nodes 1 and 2; all new
    assert not place([0, 1, 2], [6, 6, 8]).any()
    assert r.split[:3] == [(6,), (6,), (8,)]
    # job 2 leaves: 0 and 1 move to nodes 0 and 1, their splits unchanged: no restart
    assert not place([0, 1], [6, 6]).any()
    assert r.split[2] == ()
    assert not place([0, 1, 3], [6, 6, 4]).any()
    # an 8 arrives: it takes node 0 first, the 6s nodes 1 and 2, and job 3's 4 GPUs split 2 + 2
    changed = place([0, 1, 3, 4], [6, 6, 4, 8])
    assert changed.tolist() == [False, False, True, False]
    assert r.split[3] == (2, 2) and r.split[4] == (8,)
    # rates: job 3 over two of Sia's nodes is spread (2 of fairsim's 4-GPU hosts, one more than packed);
    # a 6 on one node is packed (2 of fairsim's hosts)
    hosts = r.hosts(np.array([3, 0]), np.full(2, rtx), np.array([4, 6]))
    assert hosts.tolist() == [2, 2]


def test_replace_settings_are_checked():
    with pytest.raises(InputError, match="replace"):
        SimConfig.from_config({"replace": "sometimes"})
    with pytest.raises(InputError, match="replace_host_gpus.A100"):
        SimConfig.from_config({"replace": "sia", "replace_host_gpus": {"A100": 0}})
    with pytest.raises(InputError, match="sim.placement=true"):
        SimConfig.from_config({"replace": "sia", "placement": False})
    assert SimConfig.from_config({}).replace == "keep"


def test_gavel_workers_by_hand():
    from fairsim.sim.placement import gavel_workers, node_split

    # 2 nodes of 4 workers: three 2-gangs from the pointer
    assert gavel_workers(4, 2, [(0, 2), (1, 2), (2, 2)], {}) == {0: (0, 1), 1: (2, 3), 2: (4, 5)}
    # a 4-gang is placed before the 2-gangs keep theirs: it takes job 0's workers, job 2 keeps (4, 5)
    # and job 0 takes the next free ones from the pointer
    assert gavel_workers(4, 2, [(3, 4), (0, 2), (2, 2)], {0: (0, 1), 2: (4, 5)}) == {
        3: (0, 1, 2, 3),
        0: (6, 7),
        2: (4, 5),
    }
    # a kept gang that straddles nodes leaves a new 4-gang the pieces around it: split 2 + 2
    got = gavel_workers(4, 3, [(0, 4), (1, 4)], {0: (2, 3, 4, 5)})
    assert got == {0: (2, 3, 4, 5), 1: (0, 1, 6, 7)}
    assert node_split(got[1], 4) == (2, 2) and node_split((0, 1, 2, 3, 4, 5, 6, 7, 8, 9), 8) == (8, 2)
    # the 4-gang goes first and takes the only node
    with pytest.raises(RuntimeError, match="no 2 workers left for job 0"):
        gavel_workers(4, 1, [(0, 2), (1, 4)], {})
