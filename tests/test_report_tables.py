"""Every number REPORT.md shows has a CSV under data/ behind it (fairsim.paper.report_table): the
committed reports are read back table by table, and the check itself is tried on reports that
break the rule."""

import re

import pandas as pd
import pytest
from conftest import ROOT, sweep_inputs

from fairsim.paper.figures import field
from fairsim.paper.report_table import ReportTable, check_report, expand, tables

# the small-scale report always; the full-scale one where it is committed (make reproduce SCALE=full)
COMMITTED = [
    ROOT / "paper_figs" / "REPORT.md",
    *[p for p in [ROOT / "paper_figs" / "full" / "REPORT.md"] if p.is_file()],
]


@pytest.mark.parametrize("report", COMMITTED, ids=lambda p: p.parent.name)
def test_every_number_of_the_committed_report_has_its_csv(report):
    assert len(tables(report.read_text())) >= 3
    assert check_report(report) == []


@pytest.mark.parametrize("report", COMMITTED, ids=lambda p: p.parent.name)
def test_the_headline_count_is_the_count_of_its_csv(report):
    line = re.search(r"Direction reproduced: (\d+) yes, (\d+) weak, (\d+) no, of (\d+) numbers", report.read_text())
    verdicts = pd.read_csv(report.parent / "data" / "headlines.csv")["verdict"]
    assert [int(g) for g in line.groups()] == [
        int((verdicts == "yes").sum()),
        int((verdicts == "weak").sum()),
        int((verdicts == "no").sum()),
        len(verdicts),
    ]


def table(text: str = "1.61 [1.16, 2.25]") -> ReportTable:
    frame = pd.DataFrame(
        [{"policy": "ours", "avg_jct_h_mean": 1.6139, "avg_jct_h_lo": 1.15569, "avg_jct_h_hi": 2.25379}]
    )
    return ReportTable("jct", ["policy", "avg JCT (h)"], [["ours", text]], frame)


def write(tmp_path, items) -> object:
    report = tmp_path / "REPORT.md"
    report.write_text("\n".join(expand(["# a report", "", *items, ""], tmp_path)))
    return report


def test_a_table_reads_back_from_the_csv_it_wrote(tmp_path):
    report = write(tmp_path, [table()])
    assert (tmp_path / "data" / "jct.csv").is_file()
    assert check_report(report) == []


def test_a_number_its_csv_row_does_not_hold_is_named_with_its_line(tmp_path):
    report = write(tmp_path, [table("1.71 [1.16, 2.25]")])  # 1.6139 is printed as 1.61, not 1.71
    assert check_report(report) == ["REPORT.md:7: 1.71 not in row 1 of data/jct.csv"]


def test_a_table_without_a_csv_is_named(tmp_path):
    report = write(tmp_path, ["| policy | n |", "|---|---|", "| ours | 5 |"])
    assert check_report(report) == ["REPORT.md:3: a table without a 'Data: [data/<name>.csv]' line above it"]


def test_a_csv_with_another_number_of_rows_is_named(tmp_path):
    report = write(tmp_path, [table()])
    pd.concat([table().frame] * 2).to_csv(tmp_path / "data" / "jct.csv", index=False)
    assert check_report(report) == ["REPORT.md:5: 1 rows shown, data/jct.csv has 2"]


def test_a_report_table_refuses_rows_its_frame_does_not_have():
    with pytest.raises(ValueError, match="2 rows shown, 1 in its frame"):
        ReportTable("x", ["a"], [["1"], ["2"]], pd.DataFrame({"a": [1]}))


# ---- the field section: one row per distinct comparison ------------------------------------------


def cells(policies_over_fft: dict[str, float]) -> pd.DataFrame:
    rows = []
    for workload in ("trace1", "trace2"):
        for seed in range(3):
            base = 3600.0 * (1 + seed)
            for policy, factor in policies_over_fft.items():
                rows.append(
                    {
                        "cell": f"{workload}-{seed}-{policy}",
                        "policy": policy,
                        "workload": workload,
                        "cluster": "paper",
                        "seed": seed,
                        "num_jobs": 800,
                        "avg_jct_s": base * factor * (1 + 0.01 * seed),
                        "makespan_s": 10 * base * factor,
                        "rho_fluid_mean": factor * (1 + 0.02 * seed),
                        "rho_fluid_max": 4 * factor,
                        "starvation_max_s": base * factor,
                        "type_switches": 10 * factor + seed,
                    }
                )
    return pd.DataFrame(rows)


def test_the_field_section_has_one_row_per_comparison_and_names_only_what_ran(tmp_path):
    testbed = cells({"ours": 1.0, "gavel": 1.5, "themis": 1.2, "tiresias": 1.1})
    inputs = sweep_inputs(tmp_path, {"testbed": testbed, "field": cells({"sia": 2.0})})
    lines = expand(field.report_section(inputs, []), tmp_path / "out")
    assert lines[0] == "## FFT against the field's newer baselines (Sia)"  # Pollux did not run: not in the title
    comparisons = pd.read_csv(tmp_path / "out" / "data" / "field_comparisons.csv")
    assert list(comparisons["newcomer"]) == ["sia (rigid)"] * len(field.COMPARISONS)
    assert not comparisons.duplicated(["newcomer", "metric"]).any()
    by_metric = comparisons.set_index("metric")
    # Sia takes twice FFT's time on every (trace, seed): the ratio is 2, and FFT is better
    assert by_metric.at["avg_jct_ratio", "mean"] == pytest.approx(2.0)
    assert by_metric.at["avg_jct_ratio", "fft_better_verdict"] == "yes"
    # max starvation: Sia - FFT = base hours (1, 2, 3 per seed): mean 2 h
    assert by_metric.at["starvation_max_h_difference", "mean"] == pytest.approx(2.0)
    assert (
        lines[-2]
        == f"FFT better in {len(field.COMPARISONS)} of {len(field.COMPARISONS)} comparisons (yes), 0 weak, 0 no."
    )
    values = pd.read_csv(tmp_path / "out" / "data" / "field_values.csv")
    assert list(values["policy"]) == ["ours", "gavel", "themis", "tiresias", "sia (rigid)"]
    assert values.set_index("policy").at["ours", "avg_jct_h_mean"] == pytest.approx((1 + 2.02 + 3.06) / 3)
