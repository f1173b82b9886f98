"""workload=sia_trace on a tiny folder in the format of Sia's artifact (written here, made up),
its goodput on hand-checked numbers, and python -m fairsim.bench sia against a stub of their results."""

import json

import numpy as np
import pytest

from fairsim.bench import sia as bench
from fairsim.cluster import ClusterSpec
from fairsim.errors import InputError
from fairsim.experiment.compose import compose_config
from fairsim.workload.loader import bind_jobs, load_workload
from fairsim.workload.sia_trace import SiaApps, _split, placement_id

SUFFIXES = {"T4": "aws", "A100-40GB": "dgx-ext", "RTX2080Ti": "rtx"}


def write_artifact(root, category=False):
    """One application 'toy': per-GPU batch 8..32; 1 GPU: 0.1 s at 8, 0.4 s at 32, no sync; 2
    GPUs on one host: 0.2 s at 8, 0.05 s of it sync. Validation at batch 8 and 32, 2 epochs of
    10 progress each (at 32 the first ends at 12): the epochs end at 10 and 20 steps of batch 8."""
    toy = root / "traces" / "toy"
    toy.mkdir(parents=True)
    for suffix in SUFFIXES.values():
        (toy / f"placements-{suffix}.csv").write_text(
            "placement,local_bsz,step_time,sync_time\n1,8,0.1,0.0\n1,32,0.4,0.0\n2,8,0.2,0.05\n2,32,0.5,0.05\n"
        )
        (toy / f"scalability-{suffix}.csv").write_text(
            "num_nodes,num_replicas,local_bsz,step_time,sync_time\n2,2,8,0.3,0.15\n2,2,32,0.6,0.15\n"
        )
    (toy / "validation-8.csv").write_text(
        "progress,iteration,metric,grad_sqr,grad_var\n10,10,0.5,1.0,1.0\n20,20,0.6,2.0,6.0\n"
    )
    (toy / "validation-32.csv").write_text(
        "progress,iteration,metric,grad_sqr,grad_var\n12,3,0.5,1.0,1.0\n24,6,0.6,2.0,6.0\n"
    )
    wl = root / "workloads" / "set"
    wl.mkdir(parents=True)
    head = "name,time,application,num_replicas,batch_size" + (",category" if category else "")
    rows = ["toy-0,0.0,toy,1,8", "toy-1,30.5,toy,2,16"]
    if category:
        rows = [rows[0] + ",rigid", rows[1] + ",adaptive"]
    (wl / "workload-1.csv").write_text("\n".join([head, *rows]) + "\n")
    return root


def overrides(root, *extra):
    return [
        "workload=sia_trace",
        f"workload.dir={root}",
        "workload.path=set/workload-1",
        "+workload.epochs.toy=2",
        "+workload.slowdown.toy=2.0",
        "+workload.restart_s.toy=10",
        "cluster=sia",
        "sim=sia_compat",
        "policy=sia",
        "seed=0",
        *extra,
    ]


def load(root, *extra):
    cfg = compose_config(overrides(root, *extra))
    cluster = ClusterSpec.from_config(cfg.cluster)
    workload = load_workload(cfg.workload, cluster, 0)
    return workload, bind_jobs(workload, cluster), cluster


def test_reader_maps_rows_and_counts_work_as_the_artifact_does(tmp_path):
    workload, jobs, cluster = load(write_artifact(tmp_path))
    trace = workload.trace.sort_values("job_id")
    assert trace.arrival_s.tolist() == [0.0, 30.5]
    assert trace.workers.tolist() == [1, 2]
    # the last epoch ends at the least progress of the validated batches (20, not 24), in steps
    # of the initial batch 8: 160 examples
    assert trace.work.tolist() == [160.0, 160.0]
    assert workload.catalog.work_unit == "examples"
    # restart seconds as state crossing the inter-host link: 10 s of cluster=sia's 50 Gb/s
    assert jobs.state_bytes.tolist() == [10 * 50e9 / 8] * 2
    assert jobs.elastic.elastic.tolist() == [True, True]


def test_category_rigid_rows_are_rigid(tmp_path):
    _, jobs, _ = load(write_artifact(tmp_path, category=True))
    assert jobs.elastic.elastic.tolist() == [False, True]
    assert jobs.elastic.min_gpus[0] == jobs.elastic.max_gpus[0] == 1


def test_fixed_batch_goodput_by_hand(tmp_path):
    _, jobs, _ = load(write_artifact(tmp_path), "workload.batch=fixed")
    model = jobs.elastic.model
    rate = lambda job, gpus, done: model.rate(  # noqa: E731
        np.array([job]), np.array([1]), np.array([gpus]), np.array([1]), np.array([done])
    )[0]
    # a fixed-batch job counts its work in steps of its own batch
    assert jobs.work_unit == "steps"
    # job 0: batch 8 on 1 GPU: 8 per pass, no accumulation, 0.1 s; 1 / 0.1 s / slowdown 2 = 5
    # steps/s in either epoch; scale 1, gain 1: a step is 8 examples, 160 examples are 20 steps
    assert rate(0, 1, 1.0) == pytest.approx(5.0)
    assert rate(0, 1, 19.0) == pytest.approx(5.0)
    # job 1: batch 16 on 1 GPU accumulates once (one GPU above the initial batch): 2 passes of
    # 8, 0.1 + 0.1 s: 1 / 0.2 / 2 = 2.5 steps/s. Its steps: scale 2; epoch 0 stats at batch 16
    # (1/3 of the way from 8 to 32) sqr 1, var 1: gain 2 / 1.5, a step 8 x 4/3 examples, the
    # first 80 examples 7.5 steps; epoch 1 sqr 2, var 6: gain 8 / 5, 80 examples 6.25 steps
    assert rate(1, 1, 1.0) == pytest.approx(2.5)
    assert rate(1, 1, 8.0) == pytest.approx(2.5)
    assert model.step_ends(0, 16).tolist() == pytest.approx([7.5, 13.75])
    # on 2 GPUs of one host: 8 each, 0.2 s a step
    assert rate(1, 2, 1.0) == pytest.approx(2.5)
    # the view's throughput is the job's own rate at its gang (what Gavel plans with), its work
    # the steps above: not its model's average goodput in examples/s
    assert jobs.work.tolist() == pytest.approx([20.0, 13.75])
    assert jobs.tput_packed[0].tolist() == pytest.approx([5.0] * 3)
    assert jobs.tput_packed[1].tolist() == pytest.approx([2.5] * 3)
    # spread over two hosts (the scalability rows: 0.3 s a step at 8 per GPU on 2 hosts of 1)
    assert jobs.tput_spread[1].tolist() == pytest.approx([1 / 0.3 / 2] * 3)


def test_fixed_batch_rate_follows_the_epochs_gain(tmp_path):
    """A step's progress follows its epoch's statistics: a batch whose gain changes between
    epochs takes a different number of steps per epoch, at the same steps/s."""
    _, jobs, _ = load(write_artifact(tmp_path), "workload.batch=fixed")
    model = jobs.elastic.model
    apps = model.apps
    # batch 32 (scale 4): epoch 0 sqr 1, var 1 (the batch-32 file): gain 2 / 1.25 = 1.6;
    # epoch 1 sqr 2, var 6: gain 8 / 3.5
    assert apps.step_progress(0, 32).tolist() == pytest.approx([8 * 1.6, 8 * 8 / 3.5])
    assert apps.epoch_steps(0, 32).tolist() == pytest.approx([80 / 12.8, 80 / (64 / 3.5)])


def test_tuned_goodput_starts_at_the_initial_batch_and_then_chooses(tmp_path):
    _, jobs, _ = load(write_artifact(tmp_path))
    model = jobs.elastic.model
    one = lambda done: model.rate(np.array([0]), np.array([0]), np.array([1]), np.array([1]), np.array([done]))[0]  # noqa: E731
    # before any progress the artifact runs the initial batch: 8 on 1 GPU, 40 examples/s
    assert one(0.0) == pytest.approx(40.0)
    # afterwards the batch with the best fitted goodput: a batch the profiles allow, a goodput
    # at least that of some allowed configuration (never more than the best true one by much)
    later = one(1.0)
    candidates = []
    for batch in range(8, 33):
        atomic, accum = _split(batch, 1, 32, 8)
        step = 0.1 + (atomic - 8) * 0.3 / 24
        gain = 2 / (8 / batch + 1)
        candidates.append(gain * 8 / (step * (accum + 1)) / 2)
    assert min(candidates) - 1e-9 <= later <= max(candidates) + 1e-9


def test_the_scheduler_is_told_goodput_at_batches_up_to_the_submitted_one(tmp_path):
    # job 0 submitted batch 8 (the initial batch): the scheduler judges it at batch 8 on 1 GPU,
    # 40 examples/s in every epoch (gain 1), while the job itself tunes up to 32
    _, jobs, _ = load(write_artifact(tmp_path))
    args = lambda done: (np.array([0]), np.array([0]), np.array([1]), np.array([1]), np.array([done]))  # noqa: E731
    assert jobs.elastic.estimate.rate(*args(1.0))[0] == pytest.approx(40.0)
    assert jobs.elastic.estimate.rate(*args(100.0))[0] == pytest.approx(40.0)
    assert jobs.elastic.told is jobs.elastic.estimate
    # scheduler_batch=tuned: the scheduler reads the truth
    _, jobs, _ = load(write_artifact(tmp_path / "tuned"), "workload.scheduler_batch=tuned")
    assert jobs.elastic.estimate is None and jobs.elastic.told is jobs.elastic.model


def test_placement_on_sia_hosts():
    apps = SiaApps.__new__(SiaApps)
    object.__setattr__(apps, "host_gpus", np.array([4, 8]))
    object.__setattr__(apps, "counts", np.array([24, 16]))
    # 8 A100s packed on fairsim's 4-GPU hosts are one of Sia's 8-GPU hosts; 12 are (8, 4)
    assert apps.placement(1, 8, 2, 4) == (8,)
    assert apps.placement(1, 12, 3, 4) == (8, 4)
    assert apps.placement(0, 12, 3, 4) == (4, 4, 4)
    # spread beyond the fewest fairsim hosts: over as many of Sia's (the type has 2), evenly
    assert apps.placement(1, 4, 2, 4) == (2, 2)
    assert apps.placement(1, 8, 4, 4) == (4, 4)
    assert placement_id((4, 8)) == "48" and placement_id((8, 4)) == "48"


def test_missing_dir_names_the_key(tmp_path):
    with pytest.raises(InputError, match="dir"):
        load_workload(
            compose_config(["workload=sia_trace", "cluster=sia"]).workload,
            ClusterSpec.from_config(compose_config(["cluster=sia"]).cluster),
            0,
        )
    write_artifact(tmp_path)
    with pytest.raises(InputError, match="path"):
        load(tmp_path, "workload.path=set/workload-9")


def test_a_run_finishes_every_job(tmp_path):
    from fairsim.experiment.single import run_config

    out = run_config(compose_config(overrides(write_artifact(tmp_path), "policy.growth_cap=2")))
    assert np.isfinite(out.jobs.finish_s).all()


# --- the bench ---------------------------------------------------------------------------


def stub_results(root, policy, finishes):
    folder = root / f"{policy}-set-1"
    folder.mkdir(parents=True)
    jobs = [
        {"name": "toy-0", "submission_time": 0.0, "completion_time": finishes[0], "num_restarts": 1},
        {"name": "toy-1", "submission_time": 30.5, "completion_time": finishes[1], "num_restarts": 2},
    ]
    lines = [{"timestamp": 60, "submitted_jobs": []}, {"timestamp": 120, "submitted_jobs": jobs}]
    (folder / "workload-1.log").write_text("\n".join(json.dumps(r) for r in lines) + "\n")
    (folder / "wall_s.txt").write_text("12.5\n")
    return folder


def test_compare_arithmetic():
    theirs = bench.TheirRun(["a", "b"], np.array([0.0, 10.0]), np.array([100.0, 310.0]), 1.0, np.array([0.0, 2.0]))
    ours = bench.OurRun(np.array([0.0, 10.0]), np.array([110.0, 340.0]), np.array([1.0, 2.0]), 0.1)
    c = bench.compare(theirs, ours)
    # JCTs 100, 300 against 110, 330: averages 200 and 220, +10 %; p99 = the larger: 300 vs 330
    assert (c["theirs_avg"], c["ours_avg"], c["avg_dev_pct"]) == pytest.approx((200.0, 220.0, 10.0))
    assert (c["theirs_p99"], c["ours_p99"], c["p99_dev_pct"]) == pytest.approx((300.0, 330.0, 10.0))
    assert (c["theirs_makespan"], c["ours_makespan"]) == (310.0, 340.0)
    assert c["r"] == pytest.approx(1.0) and c["within10_pct"] == 100.0
    assert (c["theirs_restarts"], c["ours_restarts"]) == (1.0, 1.5)
    # only the second job (a partial run of theirs)
    c = bench.compare(theirs, ours, np.array([1]))
    assert c["n"] == 1 and c["theirs_avg"] == 300.0


def test_bench_against_stub_results(tmp_path, capsys):
    root = write_artifact(tmp_path / "sia-simulator")
    (root / "multi_simulator.py").write_text("")  # the checkout check looks for it
    (root / "applications.py").write_text("")
    runs = tmp_path / "runs"
    stub_results(runs, "sia", [600.0, 1230.5])
    extra = ["+workload.epochs.toy=2", "+workload.slowdown.toy=2.0", "+workload.restart_s.toy=10"]
    args = ["--sia", str(root), "--their-results", str(runs), "--workloads", "set/workload-1", "--no-command"]
    assert bench.main(args + [a for e in extra for a in ("--set", e)]) == 0
    row = capsys.readouterr().out.strip().splitlines()[-1].split()
    # their average (600 + 1200) / 2 s = 0.25 h, p99 the larger (1200 s), makespan 1230.5 s, wall 12.5 s
    assert row[:3] == ["sia", "set/workload-1", "0.250"]
    assert row[7] == "1.50"  # their restarts per job
    assert row[10] == f"{1230.5 / 3600:.2f}"
    assert row[12] == "12.5"
    ours = float(row[3]) * 3600
    assert float(row[4]) == pytest.approx(100 * (ours - 900) / 900, abs=0.05 + 100 * 1.8 / 900)


@pytest.mark.parametrize(
    "args, message",
    [
        (["--workloads", "saturn-1"], "--workloads: 'saturn-1' is not <set>/workload-<N>"),
        (["--workloads", "set/workload-7"], "--workloads: 'set/workload-7': no "),
        (["--workloads", "set/workload-1", "--their-results", "/no/such"], "--their-results /no/such: no such folder"),
        (["--workloads", "set/workload-1", "--python", "/no/such/py"], "--python /no/such/py: no such program"),
    ],
)
def test_bench_argument_errors(tmp_path, args, message):
    root = write_artifact(tmp_path / "sia-simulator")
    (root / "multi_simulator.py").write_text("")
    (root / "applications.py").write_text("")
    with pytest.raises(SystemExit, match=message.replace("(", r"\(")):
        bench.main(["--sia", str(root), *args])


def test_bench_refuses_a_folder_that_is_not_theirs(tmp_path):
    with pytest.raises(SystemExit, match="--sia .*: no multi_simulator.py"):
        bench.main(["--sia", str(tmp_path)])


def test_bench_refuses_a_log_with_unfinished_jobs(tmp_path):
    folder = stub_results(tmp_path, "sia", [600.0, 1230.5])
    with pytest.raises(SystemExit, match="not finished in its last record: toy-2"):
        bench.read_their_log(folder / "workload-1.log", ["toy-0", "toy-2"])


def test_bench_runs_their_simulator_as_run_experiment_does(tmp_path, capsys):
    # a stand-in for their multi_simulator.py: records its arguments, writes a log whose last
    # record finishes both jobs
    import sys

    root = write_artifact(tmp_path / "sia-simulator")
    (root / "applications.py").write_text("")
    (root / "multi_simulator.py").write_text(
        "import json, sys\n"
        "open('argv.json', 'w').write(json.dumps(sys.argv[1:]))\n"
        "out = [a.split('=', 1)[1] for a in sys.argv if a.startswith('--output=')][0]\n"
        "jobs = [{'name': 'toy-0', 'submission_time': 0.0, 'completion_time': 900.0},\n"
        "        {'name': 'toy-1', 'submission_time': 30.5, 'completion_time': 930.5}]\n"
        "open(out, 'w').write(json.dumps({'timestamp': 60, 'submitted_jobs': jobs}) + '\\n')\n"
    )
    keep = tmp_path / "kept"
    extra = ["+workload.epochs.toy=2", "+workload.slowdown.toy=2.0", "+workload.restart_s.toy=10"]
    args = ["--sia", str(root), "--python", sys.executable, "--workloads", "set/workload-1", "--no-command"]
    assert bench.main([*args, "--keep-results", str(keep), *[a for e in extra for a in ("--set", e)]]) == 0
    argv = json.loads((root / "argv.json").read_text())
    assert argv[0] == str(root / "workloads" / "set" / "workload-1.csv")
    assert argv[1:-1] == bench.THEIR_COMMANDS["sia"][1]
    assert argv[-1] == f"--output={keep / 'sia-set-1' / 'workload-1.log'}"
    assert float((keep / "sia-set-1" / "wall_s.txt").read_text()) > 0
    assert capsys.readouterr().out.strip().splitlines()[-1].split()[2] == "0.250"  # (900 + 900) / 2 s


def bench_root(tmp_path):
    root = write_artifact(tmp_path / "sia-simulator")
    (root / "multi_simulator.py").write_text("")
    (root / "applications.py").write_text("")
    return root


TOY = ["+workload.epochs.toy=2", "+workload.slowdown.toy=2.0", "+workload.restart_s.toy=10"]


def test_bench_fairsim_only(tmp_path, capsys):
    root = bench_root(tmp_path)
    args = ["--sia", str(root), "--fairsim-only", "--workloads", "set/workload-1", "--no-command"]
    assert bench.main(args + [a for e in TOY for a in ("--set", e)]) == 0
    row = capsys.readouterr().out.strip().splitlines()[-1].split()
    assert row[:2] == ["sia", "set/workload-1"]
    assert float(row[2]) > 0 and float(row[5]) >= 0  # an average JCT, and restarts per job (sim.replace=sia)


def test_bench_partial_run_of_theirs(tmp_path, capsys):
    root = bench_root(tmp_path)
    folder = tmp_path / "runs" / "sia-set-1"
    folder.mkdir(parents=True)
    # their stdout so far: toy-0 finished after 600 s, toy-1 not yet
    (folder / "stdout.txt").write_text("Completed jobs:\n{}\nCompleted jobs:\n{'toy-0': 600.0}\nAverage JCT: 600.0\n")
    args = ["--sia", str(root), "--their-results", str(tmp_path / "runs"), "--partial", "--workloads", "set/workload-1"]
    assert bench.main([*args, "--no-command", *[a for e in TOY for a in ("--set", e)]]) == 0
    row = capsys.readouterr().out.strip().splitlines()[-1].split()
    assert row[:3] == ["sia", "set/workload-1:1", f"{600 / 3600:.3f}"]
    with pytest.raises(SystemExit, match="--partial: give --their-results"):
        bench.main(["--sia", str(root), "--partial", "--workloads", "set/workload-1"])


def test_sia_replace_run_counts_restarts(tmp_path):
    from fairsim.experiment.single import run_config

    root = write_artifact(tmp_path)
    keep = run_config(compose_config(overrides(root, "policy.growth_cap=2"))).jobs
    sia = run_config(compose_config(overrides(root, "policy.growth_cap=2", "sim.replace=sia"))).jobs
    for jobs in (keep, sia):
        assert np.isfinite(jobs.finish_s).all()
        # restarts: every start after the first, plus host moves and (sim.replace=sia) changed splits
        assert (jobs.restarts >= jobs.preemptions).all()
