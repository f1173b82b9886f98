"""``python -m fairsim.bench solver`` over churned rounds: the table, its CSV, and the churn itself."""

import numpy as np
import pandas as pd

from fairsim.bench.solver import ChurnedRounds, main
from fairsim.paper.reproduce import parse_bench_table


def test_churned_rounds_keep_ids_stable_and_jobs_moving():
    seq = ChurnedRounds(300, seed=4, divide=4)
    view = seq.view()
    assert view.changed and len(np.unique(view.job_id)) == 300
    placed = view.last_type >= 0
    used = np.bincount(view.last_type[placed], weights=view.workers[placed], minlength=view.num_types)
    assert (used <= view.capacity).all() and used.sum() > 0  # round 0's placement is a real packing
    seen = set(view.job_id.tolist())
    done_before = dict(zip(view.job_id.tolist(), view.done.tolist()))
    departed = arrived = 0
    for _ in range(6):
        seq.advance(view.last_type)  # keep everyone where they are
        view = seq.view()
        ids = view.job_id.tolist()
        arrived += sum(i not in seen for i in ids)
        departed += len(seen - set(ids))
        seen |= set(ids)
        for i, done in zip(ids, view.done.tolist()):
            assert done >= done_before.get(i, 0.0)
        done_before = dict(zip(ids, view.done.tolist()))
        assert (view.done < view.work).all()  # finished jobs left
    assert arrived > 0 and departed > 0
    assert len(np.unique(view.job_id)) == len(view.job_id)


def test_solver_bench_prints_a_table_and_writes_csv(tmp_path, capsys):
    path = tmp_path / "solver.csv"
    assert main(["--jobs", "150", "--reps", "1", "--rounds", "3", "--no-cvxpy", "--csv", str(path)]) == 0
    table = parse_bench_table(capsys.readouterr().out)
    written = pd.read_csv(path)
    assert list(table.columns) == list(written.columns)
    assert {"jobs", "ours_s", "cold_s", "warm_s", "same", "gap_vs_LP"} <= set(written.columns)
    assert written["jobs"].tolist() == [150] and (written[["ours_s", "cold_s", "warm_s"]] > 0).all(axis=None)
    assert 0.0 <= written["same"].iloc[0] <= 1.0
    assert table["ours_s"].iloc[0] == round(written["ours_s"].iloc[0], 3)
