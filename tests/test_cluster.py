import pytest

from fairsim.cluster import ClusterSpec
from fairsim.errors import InputError
from fairsim.sim.config import SimConfig


def test_paper_cluster_hosts_and_memory():
    c = ClusterSpec.from_config({"name": "paper", "counts": {"t4": 12, "A10": 12, "v100": 12}})
    assert c.gpu_types == ("T4", "A10", "V100")
    assert c.total_gpus == 36
    assert c.hosts_per_type.tolist() == [3, 3, 3]
    assert c.memory_gb.tolist() == [16.0, 24.0, 16.0]
    assert c.inter_host_bytes_per_s == pytest.approx(1.25e9)


def test_uneven_count_gets_a_partial_last_host():
    c = ClusterSpec.from_config({"counts": {"K80": 10}, "gpus_per_host": 4})
    assert c.host_sizes(0).tolist() == [4, 4, 2]


def test_memory_override():
    c = ClusterSpec.from_config({"counts": {"V100": 4}, "memory_gb": {"v100": 32}})
    assert c.memory_gb.tolist() == [32.0]


@pytest.mark.parametrize(
    "cfg, field",
    [
        ({"counts": {"H900": 4}}, "counts.H900"),
        ({"counts": {"T4": -1}}, "counts.T4"),
        ({"counts": {"T4": 1.5}}, "counts.T4"),
        ({"counts": {"T4": 0}}, "counts"),
        ({"counts": {}}, "counts"),
        ({"counts": {"T4": 4}, "gpus_per_host": 0}, "gpus_per_host"),
        ({"counts": {"T4": 4}, "inter_host_gbps": -10}, "inter_host_gbps"),
        ({"counts": {"T4": 4}, "memory_gb": {"T4": 0}}, "memory_gb.T4"),
    ],
)
def test_bad_cluster_names_the_field(cfg, field):
    with pytest.raises(InputError) as err:
        ClusterSpec.from_config(cfg)
    assert err.value.field == field
    assert "\n" not in str(err.value)


def test_unknown_gpu_lists_allowed_types():
    with pytest.raises(InputError, match="allowed: .*A10"):
        ClusterSpec.from_config({"counts": {"H900": 4}})


@pytest.mark.parametrize(
    "cfg, field",
    [
        ({"round_len_s": 0}, "round_len_s"),
        ({"round_len_s": -5}, "round_len_s"),
        ({"round_end": "sometimes"}, "round_end"),
        ({"rounds": 3}, "rounds"),
        ({"overheads": {"restart_s": -1}}, "overheads.restart_s"),
        ({"overheads": {"teleport": True}}, "overheads.teleport"),
    ],
)
def test_bad_sim_config_names_the_field(cfg, field):
    with pytest.raises(InputError) as err:
        SimConfig.from_config(cfg)
    assert err.value.field == field


def test_sim_config_defaults_and_overrides():
    cfg = SimConfig.from_config({"name": "x", "round_len_s": 360, "overheads": {"migration": False}})
    assert cfg.round_len_s == 360 and not cfg.overheads.migration and cfg.overheads.preemption
