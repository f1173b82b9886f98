"""refcheck's comparison: a per-job column appended after unchanged ones is listed as new, any
other change of the per-job table fails."""

from __future__ import annotations

import pandas as pd

from fairsim.experiment.refcheck import differences, table_digest

TABLE = pd.DataFrame({"job_id": [0, 1], "jct_s": [1.5, 2.25]})


def fresh(table: pd.DataFrame) -> dict:
    columns = list(table.columns)
    return {
        "jobs": table_digest(table),
        "summary": {},
        "jobs_columns": columns,
        "jobs_leading": [table_digest(table[columns[:k]]) for k in range(1, len(columns))],
    }


def test_an_appended_column_is_new_not_a_difference():
    saved = {"jobs": table_digest(TABLE), "summary": {}}
    assert differences(saved, fresh(TABLE.assign(cost_usd=[1.0, 2.0]))) == ([], ["column cost_usd"])


def test_a_changed_value_or_a_column_put_first_is_a_difference():
    saved = {"jobs": table_digest(TABLE), "summary": {}}
    assert differences(saved, fresh(TABLE.assign(jct_s=[1.5, 2.5])))[0] == ["per-job table"]
    assert differences(saved, fresh(TABLE.assign(cost_usd=[1.0, 2.0])[["cost_usd", "job_id", "jct_s"]]))[0] == [
        "per-job table"
    ]
