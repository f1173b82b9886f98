"""The openb reader (Alibaba's cluster-trace-gpu-v2023) on a hand-made sample in its format:
the kept pods' values, each drop reason, refused rows, and the cluster built from a node list."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest
from conftest import ROOT

from fairsim.cluster import ClusterSpec
from fairsim.errors import InputError
from fairsim.files import recording_inputs
from fairsim.workload.formats import LOG_COLUMNS, openb

SAMPLE = ROOT / "tests" / "data" / "openb_sample"
PODS = SAMPLE / "openb_pod_list_sample.csv"
NODES = SAMPLE / "openb_node_list_sample.csv"
MAPPED = {"G2": "A100-80GB", "G3": "H100-SXM"}

# Which sample pods each reason drops (the first reason that applies; see the sample's rows).
DROPS = {
    "cpu_only": {"openb-pod-0001", "openb-pod-0011", "openb-pod-0018"},  # 0011 is also unscheduled
    "gpu_sharing": {"openb-pod-0002", "openb-pod-0007", "openb-pod-0009", "openb-pod-0014"},
    "never_scheduled": {"openb-pod-0006"},
    "running_at_end": {"openb-pod-0008", "openb-pod-0016"},  # deleted at the last deletion time, 100000
    "nonpositive_duration": {"openb-pod-0010"},
}
# With gpu_sharing: whole, the sharing pods fall to the later reasons or are kept.
DROPS_WHOLE = {
    **DROPS,
    "gpu_sharing": set(),
    "never_scheduled": {"openb-pod-0006", "openb-pod-0007"},
    "running_at_end": {"openb-pod-0008", "openb-pod-0009", "openb-pod-0016"},
}


def raw_rows(path: Path = PODS) -> dict[str, dict[str, str]]:
    with open(path, newline="") as f:
        return {row["name"]: row for row in csv.DictReader(f)}


def write_variant(tmp_path: Path, name: str, column: str, value: str) -> Path:
    """The sample with one cell changed."""
    rows = raw_rows()
    rows[name][column] = value
    out = tmp_path / "pods.csv"
    with open(out, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(next(iter(rows.values()))))
        writer.writeheader()
        writer.writerows(rows.values())
    return out


@pytest.mark.parametrize("sharing,drops", [("drop", DROPS), ("whole", DROPS_WHOLE)])
def test_each_pod_is_kept_or_dropped_for_its_first_reason(sharing, drops):
    got = openb.read(PODS, {"gpu_sharing": sharing}, "w")
    rows = raw_rows()
    assert got.dropped == {reason: len(names) for reason, names in drops.items() if names}  # reasons that dropped a pod
    dropped = set().union(*drops.values())
    assert set(got.log["job_id"]) == set(rows) - dropped
    assert got.meta["rows"] == len(rows) and got.meta["kept"] == len(rows) - len(dropped)
    assert got.meta["trace_end_s"] == max(float(r["deletion_time"]) for r in rows.values())


def test_kept_pods_carry_the_trace_values():
    log = openb.read(PODS, {}, "w").log
    assert list(log.columns) == list(LOG_COLUMNS)
    rows = raw_rows()
    for job in log.itertuples():
        raw = rows[job.job_id]
        assert job.submit_s == float(raw["creation_time"])
        assert job.duration_s == float(raw["deletion_time"]) - float(raw["scheduled_time"]) > 0
        assert job.gpus == int(raw["num_gpu"]) >= 1
        assert job.status == raw["pod_phase"]
    assert log["tenant"].isna().all() and log["gpu_type"].isna().all() and log["model"].isna().all()
    assert list(log["job_id"]) == sorted(log["job_id"])  # the file's order
    by_id = log.set_index("job_id")
    assert by_id.loc["openb-pod-0000", "submit_s"] == 0 and by_id.loc["openb-pod-0000", "duration_s"] == 5000
    assert by_id.loc["openb-pod-0003", "gpu_types"] == "V100M16|V100M32"
    assert by_id.loc["openb-pod-0019", "gpu_types"] == "G2|P100|T4|V100M16|V100M32"  # the repeated V100M32 once
    assert by_id["gpu_types"].isna().sum() == sum(1 for j in log["job_id"] if not rows[j]["gpu_spec"])


def test_gpu_sharing_whole_keeps_a_slice_as_one_gpu():
    got = openb.read(PODS, {"gpu_sharing": "whole"}, "w")
    by_id = got.log.set_index("job_id")
    assert by_id.loc["openb-pod-0014", "gpus"] == 1 and by_id.loc["openb-pod-0014", "gpu_types"] == "A10"
    assert by_id.loc["openb-pod-0002", "duration_s"] == 2800
    assert got.meta["gpu_sharing_kept_whole"] == 2


def test_the_reader_notes_its_input():
    with recording_inputs() as seen:
        openb.read(PODS, {}, "w")
    assert PODS.resolve() in seen


def test_a_bad_option_is_refused():
    with pytest.raises(InputError, match=r"gpu_sharing: must be one of drop, whole, got 'round'"):
        openb.read(PODS, {"gpu_sharing": "round"}, "w")


@pytest.mark.parametrize(
    "column,value,problem",
    [
        ("num_gpu", "two", "must be a whole number >= 0, got 'two'"),
        ("num_gpu", "1.5", "must be a whole number >= 0, got '1.5'"),
        ("gpu_milli", "1200", "must be a number >= 0 and <= 1000, got '1200'"),
        ("creation_time", "", "is empty (must be a number >= 0)"),
        ("scheduled_time", "soon", "must be a number >= 0, got 'soon'"),
        ("deletion_time", "-5", "must be a number >= 0, got '-5'"),
    ],
)
def test_a_bad_cell_is_refused_naming_its_line_and_column(tmp_path, column, value, problem):
    path = write_variant(tmp_path, "openb-pod-0004", column, value)
    with pytest.raises(InputError) as err:
        openb.read(path, {}, "w")
    assert err.value.field == column
    assert err.value.source == f"w: {path}:6"  # the header is line 1, pod 0004 the fifth data line
    assert err.value.problem == problem
    assert "\n" not in str(err.value)


def test_a_repeated_pod_name_is_refused(tmp_path):
    path = write_variant(tmp_path, "openb-pod-0004", "name", "openb-pod-0001")
    with pytest.raises(InputError, match=r":6: name: 'openb-pod-0001' repeats \(line 3\)"):
        openb.read(path, {}, "w")


def test_a_pod_list_without_times_is_refused(tmp_path):
    path = tmp_path / "openb_pod_list_multigpu20.csv"
    path.write_text("name,cpu_milli,memory_mib,num_gpu,gpu_milli\nopenb-pod-0000,12000,16384,1,1000\n")
    with pytest.raises(
        InputError, match=r"misses the column\(s\) creation_time, deletion_time, scheduled_time .*multigpu"
    ):
        openb.read(path, {}, "w")


# ---- the cluster -------------------------------------------------------------------------------------


def test_unmapped_models_are_refused_in_one_line_naming_them():
    with pytest.raises(InputError) as err:
        openb.cluster_config(NODES, None, "cluster openb")
    text = str(err.value)
    assert "\n" not in text and err.value.field == "gpu_map"
    assert "GPU name(s) G2, G3 (" in text  # only the models the node list has: not G1
    assert "A100-80GB" in text  # the allowed datasheet types are listed
    with pytest.raises(InputError, match=r"name\(s\) G3 "):
        openb.cluster_config(NODES, {"G2": "A100-80GB", "G3": None}, "cluster openb")


def test_a_mapped_node_list_gives_the_cluster():
    cfg = openb.cluster_config(NODES, MAPPED, "cluster openb")
    assert cfg["counts"] == {"P100": 4, "T4": 6, "V100": 8, "V100-32GB": 8, "A10": 1, "A100-80GB": 16, "H100-SXM": 8}
    assert list(cfg["counts"]) == ["P100", "T4", "V100", "V100-32GB", "A10", "A100-80GB", "H100-SXM"]  # datasheet order
    assert cfg["gpus_per_host"] == 8  # 8-GPU nodes hold 40 of the 51 GPUs
    assert cfg["node_sizes"]["T4"] == {2: 1, 4: 1} and cfg["node_sizes"]["A100-80GB"] == {8: 2}
    assert cfg["cpu_only_nodes"] == 2
    cluster = ClusterSpec.from_config(cfg, "cluster openb")
    assert cluster.total_gpus == 51 and cluster.gpus_per_host == 8


def test_the_map_can_merge_types_and_override_known_ones():
    cfg = openb.cluster_config(NODES, {"G2": "a100-80gb", "G3": "A100-80GB", "V100M32": "V100"}, "c", gpus_per_host=4)
    assert cfg["counts"]["A100-80GB"] == 24 and cfg["counts"]["V100"] == 16 and "V100-32GB" not in cfg["counts"]
    assert cfg["gpus_per_host"] == 4


def test_a_mapping_to_an_unknown_type_is_refused():
    with pytest.raises(InputError, match=r"gpu_map.G2: unknown GPU type 'A1000' \(allowed: K80, "):
        openb.cluster_config(NODES, {"G2": "A1000", "G3": "H100-SXM"}, "c")


@pytest.mark.parametrize(
    "sizes,expected", [([2, 2, 4], 4), ([1, 1, 1, 2], 1), ([8, 2, 2, 2, 2], 8), ([8, 2, 2, 2, 2, 2], 2)]
)
def test_the_host_size_is_the_node_size_holding_most_gpus(sizes, expected):
    assert openb.host_size(sizes) == expected


def test_a_gpu_node_without_a_model_is_refused(tmp_path):
    path = tmp_path / "nodes.csv"
    path.write_text("sn,cpu_milli,memory_mib,gpu,model\nopenb-node-0000,1,1,2,T4\nopenb-node-0001,1,1,4,\n")
    with pytest.raises(InputError, match=r"nodes.csv:3: model: node openb-node-0001 has 4 GPUs but no model"):
        openb.cluster_config(path, MAPPED, "c")


def test_pod_types_map_the_same_way_as_node_models():
    log = openb.read(PODS, {}, "w").log
    types = openb.canonical_types(log["gpu_types"], MAPPED, "w")
    assert types == {
        "A10": "A10",
        "G2": "A100-80GB",
        "G3": "H100-SXM",
        "P100": "P100",
        "T4": "T4",
        "V100M16": "V100",
        "V100M32": "V100-32GB",
    }
    with pytest.raises(InputError, match=r"name\(s\) G2, G3 "):
        openb.canonical_types(log["gpu_types"], None, "w")


def test_workload_openb_on_cluster_openb_runs_the_kept_pods_on_their_allowed_types():
    from fairsim.experiment.compose import compose_config
    from fairsim.experiment.single import run_config

    cfg = compose_config(
        [
            "cluster=openb",
            f"cluster.node_list={NODES}",
            "cluster.gpu_map.G2=A100-80GB",
            "cluster.gpu_map.G3=H100-SXM",
            "workload=openb",
            f"workload.path={PODS}",
            "policy=fifo",
            "track=false",
        ]
    )
    out = run_config(cfg)
    kept = openb.read(PODS, {}, "sample")
    assert out.summary["log_rows"] == kept.meta["rows"] and out.summary["log_jobs"] == len(kept.log)
    for reason, n in kept.dropped.items():
        assert out.summary[f"log_dropped_{reason}"] == n
    assert out.summary["finished_jobs"] == len(kept.log)
    # a pod restricted by gpu_spec used GPU-seconds only on its allowed (mapped) types
    mapping = openb.type_map(MAPPED, "sample")
    ordered = kept.log.sort_values("submit_s", kind="stable")["gpu_types"]  # job ids number the pods by submission
    rows = out.jobs.sort_values("job_id").to_dict("records")
    restricted = 0
    for spec, row in zip(ordered, rows):
        if isinstance(spec, str) and spec:
            allowed = {mapping[s] for s in spec.split("|")}
            used = {c[len("gpu_s_") :] for c in out.jobs.columns if c.startswith("gpu_s_") and row[c] > 0}
            assert used and used <= allowed
            restricted += 1
    assert restricted > 0


def test_a_datasheet_name_in_the_trace_needs_no_mapping():
    """openb and PAI 2020 map names alike (formats/_gpu_names.py): a datasheet name, any case, is itself."""
    assert openb.canonical_types(["T4|a100-80gb"], None, "w") == {"T4": "T4", "a100-80gb": "A100-80GB"}
    with pytest.raises(
        InputError, match=r"gpu_map: no datasheet type for openb's GPU name\(s\) G2 \(G1-G3 are undisclosed\)"
    ):
        openb.canonical_types(["G2|T4"], {"G3": "H100-SXM"}, "w")
