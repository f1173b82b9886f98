"""Every log reader fuzzed with near-valid files: each one either runs or ends in one line.

Each reader's sample (tests/data, the shipped traces; a job log also as parquet; a table
catalog's two CSVs with a trace on them) is mutated the ways real files go wrong:
blank and whitespace lines, CRLF line ends, a byte-order mark, quoted cells holding newlines,
ragged rows, non-UTF-8 bytes, cells set to huge, tiny, negative, non-finite or non-numeric
values and to far-off timestamps (year 9999, year 1), repeated rows (duplicate ids), a repeated
header column, deleted, swapped and truncated lines; Philly's JSON log is also mutated as JSON
(values of the wrong kind, missing fields, repeated jobs). Most mutations leave most of the file
valid, so the readers are exercised deep inside, not refused at the first byte.

Each file is loaded, bound to a cluster and simulated (``run_config``: FIFO, a few dozen jobs)
with every warning turned into an error. The outcome must be a run, or an ``InputError`` whose
message is one line naming the file and has no numpy spelling of a value (``np.float64(...)``):
never another exception, never a warning. A few mutated files also go through ``python run.py``
(exit 2, one stderr line). ``pytest -s`` prints how many files of each reader ran and how many
were refused.
"""

from __future__ import annotations

import copy
import functools
import json
import shutil
import warnings
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
import pytest
from conftest import ROOT
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from omegaconf import OmegaConf

from fairsim.errors import InputError
from fairsim.experiment.compose import compose_config
from fairsim.experiment.single import run_config

DATA = ROOT / "tests" / "data"
SHIPPED = ROOT / "fairsim" / "data"
OWN_SCHEMA = "job_id,arrival_s,model,workers,work,weight,tenant\n" + "".join(
    f"{i},{i * 450.0},{m},{w},{wk},1,team{i % 3}\n"
    for i, (m, w, wk) in enumerate(
        [
            ("ResNet50", 1, 2.5),
            ("VGG16", 2, 1.0),
            ("ResNet152", 4, 3.0),
            ("BERT-base", 1, 0.5),
            ("ResNet50", 2, 4.0),
            ("VGG16", 1, 1.5),
        ]
        * 3
    )
)
PAL_TRACE = "job_id,num_gpus,submit_time,duration,model\n" + "".join(  # PAL's artifact format, made up
    f"{i},{g},{98 + i * 300},{d},{m}\n"
    for i, (g, d, m) in enumerate(
        [
            (1, 1481.0, "vgg19"),
            (12, 4037.0, "DCGAN"),
            (6, 1354.0, "PointNet"),
            (4, 2210.0, "resnet50"),
            (8, 900.0, "BERT"),
        ]
        * 4
    )
)
LOG_COLUMNS = "job_id,submit_s,duration_s,gpus,gpu_type,gpu_types,model,tenant,status\n" + "".join(
    f"j{i},{1000 + i * 300},{600 + 97 * i},{g},{t},{a},{m},team{i % 3},{s}\n"
    for i, (g, t, a, m, s) in enumerate(
        [
            (1, "V100", "", "", "Pass"),
            (2, "T4", "T4|A10", "", "Killed"),
            (4, "", "", "ResNet50", "Pass"),
            (1, "A10", "", "VGG16", "Pass"),
            (8, "V100", "V100", "", "Failed"),
        ]
        * 3
    )
)

# the same jobs with start and end timestamps (the csv format's start_time/end_time columns)
LOG_TIMES = "job,submitted,started,ended,gpus,gpu_type\n" + "".join(
    f"j{i},2026-03-02T{8 + i // 6:02d}:{i * 9 % 60:02d}:00,2026-03-02T{8 + i // 6:02d}:{i * 9 % 60:02d}:30,"
    f"2026-03-02T{10 + i // 6:02d}:{i * 7 % 60:02d}:00,{g},{t}\n"
    for i, (g, t) in enumerate([(1, "V100"), (2, "T4"), (4, "A10"), (1, "h100"), (8, "V100")] * 3)
)
# a capacity trace file (fairsim/capacity_timeline.py) for the team_cluster log on the paper cluster
CAPACITY_TRACE = (
    "time_s,gpu_type,hosts,cause\n3600,V100,2,reclaim\n7200,V100,3,reclaim\n9000,T4,1,failure\n"
    "12000,T4,3,failure\n20000,A10,0,maintenance\n24000,A10,3,maintenance\n"
)

# a throughput catalog of the table kind (fairsim/workload/table_catalog.py) and a trace on it
THROUGHPUTS = "model,gpu,workers,placement,throughput\n" + "".join(
    f"{m},{g},{w},{p},{t * w * (0.8 if p == 'spread' else 1):.4f}\n"
    for m in ("netA", "netB")
    for g, t in (("T4", 0.01), ("A10", 0.02), ("V100", 0.03))
    for w in (1, 2, 4)
    for p in (("packed", "spread") if w > 1 else ("packed",))
)
MODELS = 'model,param_count,mem_gb,large,notes\nnetA,1000000,1,false,small\nnetB,50000000,12,true,"a, quoted note"\n'
TABLE_TRACE = "job_id,arrival_s,model,workers,work\n" + "".join(
    f"{i},{i * 300},{'netA' if i % 2 else 'netB'},{(1, 2, 4)[i % 3]},{2 + i % 5}\n" for i in range(12)
)


def _sacct_as_csv() -> str:
    """The sacct example's rows as a quoted CSV (the TRES cells hold commas), 24 rows."""
    lines = (ROOT / "experiments" / "logs" / "sacct_example.txt").read_text().splitlines()[:25]
    table = pd.DataFrame([line.split("|") for line in lines[1:]], columns=lines[0].split("|"))
    return table.to_csv(index=False)


SACCT_CSV = _sacct_as_csv()


@dataclass(frozen=True)
class Target:
    """A reader and its sample: ``files`` are copied into a fresh folder (``{dir}``), one of them
    is mutated, and the run's overrides name the copy."""

    reader: str
    files: tuple[Path | tuple[str, str], ...]  # a sample file, or (name, text) written for the test
    overrides: tuple[str, ...]
    sep: str = ","
    json: bool = False
    parquet: bool = False  # the mutated CSV is run as parquet (pandas' reading of it), typed cells and all

    def write(self, folder: Path) -> list[Path]:
        out = []
        for f in self.files:
            target = folder / (f.name if isinstance(f, Path) else f[0])
            if isinstance(f, Path):
                shutil.copy(f, target)
            else:
                target.write_text(f[1])
            out.append(target)
        return out


QUIET = ("policy=fifo", "track=false")
TARGETS = {
    t.reader: t
    for t in [
        Target(
            "csv",
            (ROOT / "experiments" / "logs" / "team_cluster.csv",),
            ("workload=team_cluster", "workload.path={dir}/team_cluster.csv"),
        ),
        Target("csv_columns", (("log.csv", LOG_COLUMNS),), ("workload=jobs_log", "workload.path={dir}/log.csv")),
        Target(
            "csv_times",
            (("log.csv", LOG_TIMES),),
            (
                "workload=jobs_log",
                "workload.path={dir}/log.csv",
                "workload.columns.job_id=job",
                "workload.columns.submit_time=submitted",
                "workload.columns.start_time=started",
                "workload.columns.end_time=ended",
            ),
        ),
        Target(
            "sacct",
            (ROOT / "experiments" / "logs" / "sacct_example.txt",),
            ("workload=sacct", "workload.path={dir}/sacct_example.txt", "workload.gpu_map={a10g: A10}"),
            sep="|",
        ),
        Target(
            "sacct_csv",
            (("sacct.csv", SACCT_CSV),),
            ("workload=sacct", "workload.path={dir}/sacct.csv"),
        ),
        Target(
            "capacity_trace",
            (("pool.csv", CAPACITY_TRACE),),
            ("workload=team_cluster", "capacity=none", "+capacity.trace={dir}/pool.csv", "workload.max_jobs=20"),
        ),
        Target(
            "openb",
            (DATA / "openb_sample" / "openb_pod_list_sample.csv", DATA / "openb_sample" / "openb_node_list_sample.csv"),
            (
                "workload=openb",
                "workload.path={dir}/openb_pod_list_sample.csv",
                "cluster=openb",
                "cluster.node_list={dir}/openb_node_list_sample.csv",
                "cluster.gpu_map.G2=A100-80GB",
                "cluster.gpu_map.G3=H100-SXM",
            ),
        ),
        Target(
            "helios",
            (DATA / "helios_cluster_log_sample.csv",),
            ("workload=helios", "workload.path={dir}/helios_cluster_log_sample.csv", "workload.gpu_type=V100"),
        ),
        Target(
            "pai2020",
            tuple(
                DATA / "pai2020_sample" / n for n in ("pai_job_table.csv", "pai_task_table.csv", "pai_machine_spec.csv")
            ),
            (
                "workload=pai2020",
                "workload.path={dir}",
                "cluster=pai2020",
                "cluster.node_list={dir}/pai_machine_spec.csv",
                "cluster.gpu_map.MISC=K80",
            ),
        ),
        Target(
            "philly_log",
            (DATA / "philly_cluster_job_log_sample.json",),
            ("workload=philly_log", "workload.path={dir}/philly_cluster_job_log_sample.json"),
            json=True,
        ),
        Target(
            "gavel_msr",
            (SHIPPED / "gavel" / "traces" / "msr" / "seed=0" / "51b7ef.trace",),
            ("workload=gavel_philly", "workload.vc=null", "workload.path={dir}/51b7ef.trace", "cluster=gavel"),
            sep="\t",
        ),
        Target(
            "tiresias_trace",
            (SHIPPED / "tiresias" / "traces" / "60_job.csv",),
            (
                "workload=tiresias_trace",
                "workload.path={dir}/60_job.csv",
                "cluster=tiresias",
                "cluster.counts.V100=16",
                "sim=tiresias_compat",
            ),
        ),
        Target(
            "pal_trace",
            (("pal.csv", PAL_TRACE),),
            ("workload=pal_trace", "workload.path={dir}/pal.csv", "cluster=pal", "sim=pal_compat"),
        ),
        Target(
            "gavel_trace",
            (SHIPPED / "gavel" / "traces" / "small_test.trace",),
            ("workload=gavel_trace", "workload.path={dir}/small_test.trace", "cluster=gavel"),
            sep="\t",
        ),
        Target("trace", (("trace.csv", OWN_SCHEMA),), ("workload=file", "workload.path={dir}/trace.csv")),
        Target(
            "csv_parquet",
            (("log.csv", LOG_COLUMNS),),
            ("workload=jobs_log", "workload.path={dir}/log.parquet"),
            parquet=True,
        ),
        Target(
            "table_catalog",
            (("throughputs.csv", THROUGHPUTS), ("models.csv", MODELS), ("trace.csv", TABLE_TRACE)),
            (
                "workload=file",
                "workload.path={dir}/trace.csv",
                "workload.catalog=table",
                "+workload.throughputs_path={dir}/throughputs.csv",
                "+workload.models_path={dir}/models.csv",
            ),
        ),
        Target(
            "trace_parquet",
            (("trace.csv", OWN_SCHEMA),),
            ("workload=file", "workload.path={dir}/trace.parquet"),
            parquet=True,
        ),
    ]
}

# ---- mutations -------------------------------------------------------------------------------------

NUMBERS = [
    "0",
    "-0",
    "-1",
    "1.5",
    "0.5",
    "1e308",
    "-1e308",
    "1e-300",
    "5e-324",
    "1e15",
    "9e18",
    "1e400",
    "-1e400",
    "9" * 30,
    "nan",
    "NaN",
    "inf",
    "-inf",
    "1_000",
    "0x1A",
    "1e3",
    " 7 ",
    "+3",
]
TIMES = [
    "9999-12-31 23:59:59",
    "0001-01-01 00:00:00",
    "1677-09-21 00:12:43",
    "2262-04-11 23:47:17",
    "2020-02-30 00:00:00",
    "2020-06-09T18:41:27",
    "2020-06-09 18:41:27+05:00",
    "2020-06-09",
    "24:00:00",
]
TEXT = ["", " ", "abc", "None", "null", "V100", "T4|A10", "|", "G2", "MISC", "ResNet50", "é", "\t", ",", '"', "'"]
VALUES = NUMBERS + TIMES + TEXT
JSON_VALUES = [None, True, 0, -1, 1.5, 1e308, "", "None", "abc", [], {}, ["gpu0"], {"ip": "m1"}, *TIMES[:5]]

OPS = (
    "blank_line",
    "crlf",
    "bom",
    "quoted_newline",
    "drop_field",
    "add_field",
    "set_cell",
    "scale_cell",
    "non_utf8",
    "dup_row",
    "dup_column",
    "delete_line",
    "swap_lines",
    "truncate",
    "empty",
)
JSON_OPS = ("json_set", "json_delete", "json_dup_job", "json_set_attempt")
REPEATS = 3  # mutations per file, at most


def mutation(json_ops: bool):
    ops = OPS + JSON_OPS if json_ops else OPS
    return st.tuples(st.sampled_from(ops), st.integers(0, 10_000), st.integers(0, 10_000), st.integers(0, 10_000))


def mutate(data: bytes, op: str, a: int, b: int, c: int, sep: bytes) -> bytes:
    """One mutation of a file; a, b, c pick lines, fields and values (taken modulo their counts)."""
    if op == "crlf":
        return data.replace(b"\r\n", b"\n").replace(b"\n", b"\r\n")
    if op == "bom":
        return b"\xef\xbb\xbf" + data
    if op == "truncate":
        return data[: a % (len(data) + 1)]
    if op == "empty":
        return b"" if c % 4 == 0 else data
    if op.startswith("json_"):
        return _mutate_json(data, op, a, b, c)
    lines = data.split(b"\n")
    i = a % len(lines)
    cells = lines[i].split(sep)
    j = b % len(cells)
    if op == "blank_line":
        lines.insert(i, [b"", b"   ", b"\r", sep * 0][c % 4])
    elif op == "quoted_newline":
        cells[j] = b'"' + cells[j][: len(cells[j]) // 2] + b"\n" + cells[j][len(cells[j]) // 2 :] + b'"'
    elif op == "drop_field" and len(cells) > 1:
        del cells[j]
    elif op == "add_field":
        cells.insert(j, VALUES[c % len(VALUES)].encode())
    elif op == "set_cell":
        cells[j] = VALUES[c % len(VALUES)].encode()
    elif op == "scale_cell":
        cells[j] = _scaled(cells[j], c)
    elif op == "non_utf8":
        cells[j] = cells[j] + [b"\xff", b"\xe9", b"\xc3\x28", b"\x00"][c % 4]
    elif op == "dup_row":
        lines.insert(min(i + 1 + c % 3, len(lines)), lines[i])
    elif op == "dup_column":
        lines = [
            sep.join(row.split(sep) + [row.split(sep)[j % len(row.split(sep))]]) if row.strip() else row
            for row in lines
        ]
        return b"\n".join(lines)
    elif op == "delete_line":
        del lines[i]
    elif op == "swap_lines":
        k = c % len(lines)
        lines[i], lines[k] = lines[k], lines[i]
    if op in ("quoted_newline", "drop_field", "add_field", "set_cell", "scale_cell", "non_utf8"):
        lines[i] = sep.join(cells)
    return b"\n".join(lines)


def _scaled(cell: bytes, c: int) -> bytes:
    """A number cell times a power of ten (1e-12 .. 1e12), or unchanged when it is no number."""
    try:
        x = float(cell)
    except ValueError:
        return cell
    return repr(x * 10.0 ** (c % 25 - 12)).encode()


def _mutate_json(data: bytes, op: str, a: int, b: int, c: int) -> bytes:
    try:
        jobs = json.loads(data)
    except (ValueError, UnicodeDecodeError):
        return data
    if not isinstance(jobs, list) or not jobs:
        return data
    job = jobs[a % len(jobs)]
    if not isinstance(job, dict):
        return data
    keys = sorted(job) or ["jobid"]
    key = keys[b % len(keys)]
    if op == "json_set":
        job[key] = JSON_VALUES[c % len(JSON_VALUES)]
    elif op == "json_delete":
        job.pop(key, None)
    elif op == "json_dup_job":
        jobs.insert(c % len(jobs), copy.deepcopy(job))
    elif op == "json_set_attempt":
        attempts = job.get("attempts")
        if isinstance(attempts, list) and attempts and isinstance(attempts[0], dict):
            attempt = attempts[b % len(attempts)]
            field = ("start_time", "end_time", "detail")[c % 3]
            attempt[field] = JSON_VALUES[(a + c) % len(JSON_VALUES)]
    return json.dumps(jobs, indent=1).encode()


# ---- one file through a run ---------------------------------------------------------------------------


@functools.cache
def base_config(reader: str):
    """The target's config, composed once (the slow part); ``{dir}`` is filled per example."""
    return compose_config([o.replace("{dir}", "/placeholder") for o in TARGETS[reader].overrides] + list(QUIET))


def config_for(reader: str, folder: Path):
    cfg = copy.deepcopy(base_config(reader))
    for o in TARGETS[reader].overrides:
        key, value = o.split("=", 1)
        if "{dir}" in value:
            OmegaConf.update(cfg, key.lstrip("+"), value.replace("{dir}", str(folder)), merge=False)
    return cfg


def outcome(reader: str, folder: Path, mutated: Path) -> str:
    """'ran' or 'refused'; anything else (another exception, a warning) is raised."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        try:
            run_config(config_for(reader, folder))
        except InputError as exc:
            message = f"error: {exc}"
            assert len(message.splitlines()) == 1, message
            assert mutated.name in message or str(folder) in message, f"the refusal names no file: {message}"
            assert "np.float64(" not in message and "np.int64(" not in message and "np.str_(" not in message, message
            return "refused"
    return "ran"


def fuzz_once(reader: str, folder: Path, which: int, mutations) -> tuple[str, Path]:
    target = TARGETS[reader]
    for old in folder.iterdir():
        old.unlink()
    files = target.write(folder)
    mutated = files[which % len(files)]
    data = mutated.read_bytes()
    for op, a, b, c in mutations:
        data = mutate(data, op, a, b, c, target.sep.encode())
    mutated.write_bytes(data)
    if target.parquet:
        mutated = as_parquet(mutated)
    return outcome(reader, folder, mutated), mutated


def as_parquet(csv: Path) -> Path:
    """The CSV as pandas reads it, written as parquet (its bytes as they are when pandas cannot
    read it: an unreadable parquet file)."""
    out = csv.with_suffix(".parquet")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # pandas' own doubts about the CSV are no part of the test
            pd.read_csv(csv).to_parquet(out, index=False)
    except Exception:  # whatever pandas or pyarrow make of a broken CSV
        out.write_bytes(csv.read_bytes())
    return out


# ---- the property ------------------------------------------------------------------------------------

EXAMPLES = 30
OUTCOMES: dict[str, Counter] = {}


@pytest.fixture(scope="module", autouse=True)
def report_outcomes():
    """After the module: every reader both ran and refused some files (the mutations reach past
    the first byte), and the counts are printed (``pytest -s``)."""
    yield
    for reader, counts in sorted(OUTCOMES.items()):
        print(
            f"fuzz {reader}: {sum(counts.values())} files, {counts['ran']} ran, {counts['refused']} refused in one line"
        )


@pytest.mark.slow  # 2-8 s a reader
@pytest.mark.parametrize("reader", sorted(TARGETS))
def test_a_mutated_file_runs_or_is_refused_in_one_line(reader, tmp_path_factory):
    folder = tmp_path_factory.mktemp(f"fuzz_{reader}")
    counts = OUTCOMES.setdefault(reader, Counter())

    @settings(
        max_examples=EXAMPLES,
        deadline=None,
        derandomize=True,
        database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
    )
    @given(which=st.integers(0, 2), mutations=st.lists(mutation(TARGETS[reader].json), min_size=1, max_size=REPEATS))
    def check(which, mutations):
        result, _ = fuzz_once(reader, folder, which, mutations)
        counts[result] += 1

    check()
    assert counts["ran"] > 0 and counts["refused"] > 0, counts


# ---- a few through python run.py -------------------------------------------------------------------

SPOT_CHECKS = {  # reader -> mutations whose file goes through the command line
    "helios": [("non_utf8", 3, 2, 1)],  # a Latin-1 byte on line 4
    "csv_columns": [
        ("blank_line", 2, 0, 0),
        ("set_cell", 5, 2, VALUES.index("1e308")),
    ],  # a 1e308 s job after a blank line
    "philly_log": [("json_set_attempt", 9, 1, 4)],  # the last attempt ends in year 9999
    "trace": [("dup_column", 0, 4, 0)],  # the header names work twice
}


@pytest.mark.slow
def test_a_few_refusals_through_run_py_are_one_line_and_exit_2(tmp_path, run_py):
    from concurrent.futures import ThreadPoolExecutor

    files = {}
    for reader in sorted(
        SPOT_CHECKS
    ):  # in process first (Hydra composes in one thread): the same file is refused there
        folder = tmp_path / reader
        folder.mkdir()
        result, files[reader] = fuzz_once(reader, folder, 0, SPOT_CHECKS[reader])
        assert result == "refused", reader

    def one(reader: str):
        folder = files[reader].parent
        overrides = [o.replace("{dir}", str(folder)) for o in TARGETS[reader].overrides]
        return run_py(*overrides, *QUIET, f"hydra.run.dir={folder / 'run'}", env={"FAIRSIM_DEBUG": None}, timeout=120)

    with ThreadPoolExecutor(max_workers=2) as pool:
        for reader, proc in zip(sorted(SPOT_CHECKS), pool.map(one, sorted(SPOT_CHECKS))):
            lines = [line for line in proc.stderr.splitlines() if line.strip()]
            assert proc.returncode == 2 and len(lines) == 1 and "Traceback" not in proc.stderr, (reader, proc.stderr)
            assert lines[0].startswith("error: ") and files[reader].name in lines[0], (reader, lines[0])
            assert not (files[reader].parent / "run" / "summary.json").exists()


# ---- outage_log: a failure log into a capacity trace, through its command ---------------------------

OUTAGE_LOG = "JobID,Submit,End,GPUType,State\n" + "".join(
    f"{i},2026-03-02T{8 + i // 4:02d}:{i * 13 % 60:02d}:00,2026-03-02T{12 + i // 4:02d}:{i * 11 % 60:02d}:00,{t},{s}\n"
    for i, (t, s) in enumerate(
        [("v100", "COMPLETED"), ("v100", "NODE_FAIL"), ("t4", "NODE_FAIL"), ("a10g", "NODE_FAIL"), ("tpu", "FAILED")]
        * 3
    )
)


@pytest.mark.slow
def test_a_mutated_failure_log_converts_or_is_refused_in_one_line(tmp_path, capsys):
    from fairsim.experiment.outage_log import main

    counts = OUTCOMES.setdefault("outage_log", Counter())
    log, out = tmp_path / "sacct.csv", tmp_path / "failures.csv"
    args = [str(log), "--cluster", "paper", "--time", "End", "--status", "State", "--submit", "Submit"]
    args += ["--type", "GPUType", "--gpu-map", "a10g=A10", "--out", str(out)]

    @settings(
        max_examples=EXAMPLES,
        deadline=None,
        derandomize=True,
        database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
    )
    @given(mutations=st.lists(mutation(False), min_size=1, max_size=REPEATS))
    def check(mutations):
        data = OUTAGE_LOG.encode()
        for op, a, b, c in mutations:
            data = mutate(data, op, a, b, c, b",")
        log.write_bytes(data)
        out.unlink(missing_ok=True)
        capsys.readouterr()
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            code = main(args)
        err = capsys.readouterr().err
        if code == 0:
            counts["ran"] += 1
            from fairsim.capacity_timeline import CapacityConfig
            from fairsim.experiment.outage_log import cluster_of

            CapacityConfig.from_config({"trace": str(out)}, cluster_of("paper"))  # what it wrote is a valid trace
        else:
            assert code == 2 and err.count("\n") == 1 and err.startswith("error: ") and str(log) in err, err
            assert not out.exists()
            counts["refused"] += 1

    check()
    assert counts["ran"] > 0 and counts["refused"] > 0, counts
