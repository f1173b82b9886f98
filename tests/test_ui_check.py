"""In headless Chromium, the address fairsim prints for an experiment opens MLflow's runs table
(the experiment's run names, no GenAI navigation), and the check can fail: MLflow's bare
experiment address opens the GenAI overview. Skipped without Chromium."""

from __future__ import annotations

import pytest

from fairsim.experiment import tracking, ui_check


@pytest.mark.slow
def test_the_printed_address_shows_the_runs_table_and_the_bare_one_does_not(tmp_path):
    browser = ui_check.find_chromium()
    if browser is None:
        pytest.skip("no Chromium installed (chromium on PATH, or FAIRSIM_CHROMIUM)")
    ui_check.tiny_store(tmp_path, "ui_check")
    client = tracking._client(tmp_path)
    exp = client.get_experiment_by_name("ui_check")
    names = sorted(r.info.run_name for r in client.search_runs([exp.experiment_id]))
    assert names == ["seed=0", "seed=1"]
    with ui_check.mlflow_ui(tmp_path, ui_check.free_port(), tmp_path / "ui.log") as address:
        found, budget = ui_check.load(browser, tracking.runs_url(exp.experiment_id, address), names)
        assert found == []
        bare = ui_check.chromium(
            browser, f"{address}/#/experiments/{exp.experiment_id}", "--dump-dom", budget_ms=budget
        ).stdout
        assert any("GenAI layout" in p for p in ui_check.problems(bare, names))
