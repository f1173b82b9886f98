"""Throughput-table catalogs: Gavel's shipped measurements, the converter, and bad tables."""

import json
import math

import numpy as np
import pandas as pd
import pytest

from fairsim.errors import InputError
from fairsim.workload.gavel_convert import convert, gavel_throughput_rows
from fairsim.workload.table_catalog import gavel_catalog, gavel_files, table_catalog


@pytest.fixture(scope="module")
def gavel():
    return gavel_catalog()


def cell(cat, model, gpu, workers, table="packed"):
    return getattr(cat, table)[cat.models.index(model), cat.gpu_types.index(gpu), cat.worker_counts.index(workers)]


def test_gavel_shapes(gavel):
    assert len(gavel.models) == 26 and gavel.work_unit == "steps"
    assert set(gavel.gpu_types) == {"V100", "P100", "K80"}
    assert gavel.worker_counts == (1, 2, 4, 8)
    assert np.all(gavel.mem_per_worker_gb == 0)
    assert not gavel.large.any()


def test_gavel_values_match_the_json(gavel):
    # simulation_throughputs.json: v100 / v100_unconsolidated "('ResNet-50 (batch size 64)', 4)" null
    assert cell(gavel, "ResNet-50 (batch size 64)", "V100", 4) == 9.451949566394442
    assert cell(gavel, "ResNet-50 (batch size 64)", "V100", 4, "spread") == 11.136430014818272
    assert cell(gavel, "ResNet-18 (batch size 16)", "K80", 1) == 4.795294551566172
    # zero in the JSON (did not run) -> not available
    assert math.isnan(cell(gavel, "ResNet-50 (batch size 128)", "K80", 2))
    # no unconsolidated entry in the JSON -> spread falls back to packed
    assert cell(gavel, "ResNet-50 (batch size 64)", "K80", 4, "spread") == cell(
        gavel, "ResNet-50 (batch size 64)", "K80", 4
    )


def test_gavel_non_distributed_templates_are_single_worker(gavel):
    allowed = dict(zip(gavel.models, gavel.allowed_workers.tolist()))
    for name in ("A3C", "CycleGAN", "Recommendation (batch size 512)"):
        assert allowed[name] == [True, False, False, False]
    assert allowed["Transformer (batch size 128)"] == [True, True, True, True]
    assert gavel.allowed_workers[:, 1].sum() == 19  # ResNet-18 x5, ResNet-50 x4, Transformer x5, LM x5


def test_gavel_state_sizes(gavel):
    m = gavel.models.index("ResNet-50 (batch size 64)")
    assert gavel.param_count[m] == 25.6e6 and gavel.state_bytes[m] == 16 * 25.6e6


def test_converter_on_a_small_json(tmp_path):
    raw = {
        "v100": {"('A', 1)": {"null": 2.5, "('B', 1)": [1.0, 1.0]}, "('A', 2)": {"null": 0.0}},
        "v100_unconsolidated": {"('A', 1)": {"null": 2.5}},
        "k80": {"('B', 4)": {"null": 0.125}},
    }
    src = tmp_path / "t.json"
    src.write_text(json.dumps(raw))
    out = convert(src, tmp_path / "t.csv")
    assert out.values.tolist() == [
        ["A", "V100", 1, "packed", 2.5],
        ["A", "V100", 1, "spread", 2.5],
        ["B", "K80", 4, "packed", 0.125],
    ]
    again = pd.read_csv(tmp_path / "t.csv")
    pd.testing.assert_frame_equal(again, out)


def test_converter_rejects_unknown_worker_type():
    with pytest.raises(InputError, match="unknown GPU type"):
        gavel_throughput_rows({"z80": {"('A', 1)": {"null": 1.0}}})


def test_shipped_csv_reproduces_from_the_shared_json():
    shared = __import__("pathlib").Path("/work/shared/data/gavel/simulation_throughputs.json")
    if not shared.is_file():
        pytest.skip("shared Gavel JSON not available")
    fresh = gavel_throughput_rows(json.loads(shared.read_text()))
    shipped = pd.read_csv(gavel_files()[0])
    pd.testing.assert_frame_equal(fresh, shipped)


def write(tmp_path, tput_rows, model_rows):
    t, m = tmp_path / "tput.csv", tmp_path / "models.csv"
    pd.DataFrame(tput_rows).to_csv(t, index=False)
    pd.DataFrame(model_rows).to_csv(m, index=False)
    return t, m


GOOD_T = [
    dict(model="a", gpu="t4", workers=1, placement="packed", throughput=2.0),
    dict(model="a", gpu="A10", workers=2, placement="packed", throughput=5.0),
    dict(model="a", gpu="A10", workers=2, placement="spread", throughput=4.0),
]
GOOD_M = [dict(model="a", param_count=1e6, mem_gb=3.0, large="true")]


def test_user_table(tmp_path):
    cat = table_catalog(*write(tmp_path, GOOD_T, GOOD_M), name="mine", work_unit="epochs")
    assert cat.gpu_types == ("T4", "A10") and cat.worker_counts == (1, 2)
    assert cell(cat, "a", "T4", 1) == 2.0 and math.isnan(cell(cat, "a", "T4", 2))
    assert cell(cat, "a", "A10", 2, "spread") == 4.0 and cell(cat, "a", "T4", 1, "spread") == 2.0
    assert cat.large.tolist() == [True] and cat.mem_per_worker_gb.tolist() == [[3.0, 3.0]]
    assert cat.state_bytes.tolist() == [16e6]


@pytest.mark.parametrize(
    "tput, models, field",
    [
        ([{k: v for k, v in GOOD_T[0].items() if k != "placement"}], GOOD_M, "columns"),
        ([GOOD_T[0] | {"gpu": "Z80"}], GOOD_M, "gpu"),
        ([GOOD_T[0] | {"model": "zzz"}], GOOD_M, "model"),
        ([GOOD_T[0] | {"throughput": -1.0}], GOOD_M, "throughput"),
        ([GOOD_T[0] | {"workers": 1.5}], GOOD_M, "workers"),
        ([GOOD_T[0] | {"placement": "scattered"}], GOOD_M, "placement"),
        ([GOOD_T[0], GOOD_T[0]], GOOD_M, "rows"),
        ([GOOD_T[2]], GOOD_M, "placement"),  # spread without packed
        (GOOD_T, [GOOD_M[0] | {"param_count": 0}], "param_count"),
        (GOOD_T, [{"model": "a"}], "columns"),
        (GOOD_T, [GOOD_M[0] | {"large": "maybe"}], "large"),
    ],
)
def test_bad_tables_name_the_field(tmp_path, tput, models, field):
    with pytest.raises(InputError) as err:
        table_catalog(*write(tmp_path, tput, models))
    assert err.value.field == field
