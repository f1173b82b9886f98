"""Bad input is refused clearly.

A table of malformed configs, trace files and catalog files. Every case must end with one line
naming the source (file or config group), the field and the allowed values, as an ``InputError``
in process, and through ``python run.py`` with exit status 2, no Python traceback and no result
file that looks complete. All cases run in process (fast); a representative subset, plus the
command-line-only cases, also runs as subprocesses (two at a time).

Arrival times out of order are *accepted*: a trace is sorted by (arrival_s, job_id) on reading,
and the run is identical to the sorted trace's (docs/reliability.md).
"""

from __future__ import annotations

import copy
import functools
import subprocess
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
import pytest
from hydra.core.override_parser.overrides_parser import OverridesParser
from omegaconf import DictConfig, OmegaConf

from fairsim.errors import InputError
from fairsim.experiment.compose import CONF_DIR, compose_config
from fairsim.experiment.single import run_config

HEAD = "job_id,arrival_s,model,workers,work\n"
TPUT = "model,gpu,workers,placement,throughput\n"
MODELS = "model,param_count,mem_gb\nnetA,1000000,1\n"
GOOD_TPUT = TPUT + "netA,T4,1,packed,0.01\nnetA,A10,1,packed,0.02\nnetA,V100,1,packed,0.03\n"

# files the cases refer to as {d}/<name>
FILES: dict[str, str | bytes] = {
    "no_work.csv": "job_id,arrival_s,model,workers\n0,0,ResNet50,1\n",
    "no_model.csv": "job_id,arrival_s,workers,work\n0,0,1,3\n",
    "workers_text.csv": HEAD + "0,0,ResNet50,two,3\n",
    "arrival_text.csv": HEAD + "0,soon,ResNet50,1,3\n",
    "work_neg.csv": HEAD + "0,0,ResNet50,1,-3\n",
    "work_zero.csv": HEAD + "0,0,ResNet50,1,0\n",
    "work_blank.csv": HEAD + "0,0,ResNet50,1,\n",
    "work_nan.csv": HEAD + "0,0,ResNet50,1,NaN\n",
    "work_inf.csv": HEAD + "0,0,ResNet50,1,inf\n",
    "arrival_neg.csv": HEAD + "0,-5,ResNet50,1,3\n",
    "arrival_nan.csv": HEAD + "0,nan,ResNet50,1,3\n",
    "dup_id.csv": HEAD + "0,0,ResNet50,1,3\n0,5,ResNet50,1,3\n",
    "id_neg.csv": HEAD + "-1,0,ResNet50,1,3\n",
    "workers_frac.csv": HEAD + "0,0,ResNet50,1.5,3\n",
    "workers_zero.csv": HEAD + "0,0,ResNet50,0,3\n",
    "too_wide.csv": HEAD + "0,0,ResNet50,64,3\n",
    "unknown_model.csv": HEAD + "0,0,NoSuchNet,1,3\n",
    "empty_model.csv": HEAD + '0,0,"",1,3\n',
    "weight_neg.csv": "job_id,arrival_s,model,workers,work,weight\n0,0,ResNet50,1,3,-1\n",
    "empty.csv": "",
    "header_only.csv": HEAD,
    "binary.csv": bytes(range(256)) * 8,
    "binary.parquet": bytes(range(256)) * 8,
    "empty.parquet": b"",
    "trace.txt": HEAD + "0,0,ResNet50,1,3\n",
    "binary.trace": bytes(range(256)) * 4,
    "short.trace": "ResNet-18 (batch size 16)\t1\t100\t0\t0\n",
    "binary.yaml": bytes(range(256)) * 4,
    "no_constants.yaml": "models: 3\n",
    # table catalog: a good trace and models file, and broken throughput tables
    "table_trace.csv": HEAD + "0,0,netA,1,5\n",
    "table_trace_resnet.csv": HEAD + "0,0,ResNet50,1,5\n",
    "models.csv": MODELS,
    "models_param_neg.csv": "model,param_count\nnetA,-5\n",
    "models_huge_mem.csv": "model,param_count,mem_gb\nnetA,1000,100\n",
    "models_no_params.csv": "model\nnetA\n",
    "tp_good.csv": GOOD_TPUT,
    "tp_unknown_model.csv": GOOD_TPUT + "netB,T4,1,packed,0.01\n",
    "tp_zero.csv": TPUT + "netA,T4,1,packed,0\nnetA,A10,1,packed,0.02\nnetA,V100,1,packed,0.03\n",
    "tp_neg.csv": TPUT + "netA,T4,1,packed,-0.01\nnetA,A10,1,packed,0.02\nnetA,V100,1,packed,0.03\n",
    "tp_blank.csv": TPUT + "netA,T4,1,packed,\nnetA,A10,1,packed,0.02\nnetA,V100,1,packed,0.03\n",
    "tp_unknown_gpu.csv": GOOD_TPUT + "netA,H900,1,packed,0.01\n",
    "tp_missing_gpu.csv": TPUT + "netA,T4,1,packed,0.01\nnetA,A10,1,packed,0.02\n",
    "tp_no_placement.csv": "model,gpu,workers,throughput\nnetA,T4,1,0.01\n",
    "tp_bad_placement.csv": TPUT + "netA,T4,1,diagonal,0.01\n",
    "tp_dup.csv": GOOD_TPUT + "netA,T4,1,packed,0.05\n",
    "tp_workers_zero.csv": GOOD_TPUT + "netA,T4,0,packed,0.05\n",
    "tp_binary.csv": bytes(range(256)) * 8,
    # found by the fuzzer (tests/test_fuzz_readers.py)
    "work_huge.csv": HEAD + "0,0,ResNet50,1,1e308\n",
    "work_tiny.csv": HEAD + "0,0,ResNet50,1,1e-300\n",
    "arrival_huge.csv": HEAD + "0,0,ResNet50,1,3\n1,1e15,ResNet50,1,3\n",
    "workers_huge.csv": HEAD + "0,0,ResNet50,1e308,3\n",
    "ragged.csv": HEAD + "0,0,ResNet50,1,3\n\n1,0,ResNet50,1,3,9\n",
    "header_twice.csv": "job_id,arrival_s,model,workers,work,work\n0,0,ResNet50,1,3,4\n",
    "models_number_twice.csv": "model,param_count\n1.5,1000\n1.5,1000\n",
    "models_param_huge.csv": "model,param_count\nnetA,1e308\n",
}


def trace(name: str) -> list[str]:
    return ["workload=file", f"workload.path={{d}}/{name}"]


def table(tput: str, models: str = "models.csv", trace_file: str = "table_trace.csv") -> list[str]:
    return [
        "workload=file",
        f"workload.path={{d}}/{trace_file}",
        "workload.catalog=table",
        f"+workload.throughputs_path={{d}}/{tput}",
        f"+workload.models_path={{d}}/{models}",
    ]


@dataclass(frozen=True)
class Case:
    id: str
    overrides: tuple[str, ...]
    needles: tuple[str, ...]  # the source (file or config group), the field, the allowed values


def case(id: str, overrides: list[str], *needles: str) -> Case:
    return Case(id, tuple(overrides), needles)


CASES = [
    # ---- configs ----------------------------------------------------------------------------
    case("gpu_unknown", ["+cluster.counts.H900=4"], "cluster paper", "counts.H900", "allowed: K80, P100, T4"),
    case("count_negative", ["cluster.counts.T4=-2"], "cluster paper", "counts.T4", ">= 0"),
    case("count_text", ["cluster.counts.T4=many"], "cluster paper", "counts.T4", "an integer"),
    case(
        "cluster_no_gpus",
        ["cluster.counts.T4=0", "cluster.counts.A10=0", "cluster.counts.V100=0"],
        "cluster paper",
        "counts",
        "at least one GPU",
    ),
    case("gpus_per_host_zero", ["cluster.gpus_per_host=0"], "cluster paper", "gpus_per_host", ">= 1"),
    case("bandwidth_negative", ["cluster.inter_host_gbps=-1"], "cluster paper", "inter_host_gbps", "> 0"),
    case("gpu_memory_zero", ["+cluster.memory_gb.T4=0"], "cluster paper", "memory_gb.T4", "> 0"),
    case("num_jobs_zero", ["num_jobs=0"], "workload philly", "num_jobs", ">= 1"),
    case("num_jobs_negative", ["num_jobs=-5"], "workload philly", "num_jobs", ">= 1"),
    case("load_zero", ["load=0"], "config", "load", "(0, 10]"),
    case("load_negative", ["load=-1"], "config", "load", "(0, 10]"),
    case("load_above_10", ["load=11"], "config", "load", "(0, 10]"),
    case("load_text", ["load=high"], "config", "load", "(0, 10]"),
    case("load_nan", ["load=nan"], "config", "load", "(0, 10]"),
    case("round_zero", ["sim.round_len_s=0"], "sim", "round_len_s", "in [1, 86400]"),
    case("round_negative", ["sim.round_len_s=-300"], "sim", "round_len_s", "in [1, 86400]"),
    case("round_tiny", ["sim.round_len_s=1e-9"], "sim", "round_len_s", "in [1, 86400]"),  # would spin to max_rounds
    case("round_above_a_day", ["sim.round_len_s=100000"], "sim", "round_len_s", "in [1, 86400]"),
    case(
        "restart_as_long_as_a_round",
        ["sim.overheads.restart_s=300"],
        "sim",
        "overheads.restart_s",
        "shorter than a round",
    ),
    case(
        "max_rounds_before_last_arrival",
        ["+sim.max_rounds=3"],
        "sim",
        "max_rounds",
        "end before workload philly can finish",
    ),
    case(
        "max_rounds_bool", ["+sim.max_rounds=true"], "sim", "max_rounds", "an integer in [1, 1e+12]"
    ),  # true is no round count
    case("round_end_unknown", ["sim.round_end=bogus"], "sim", "round_end", "fixed, latest_finish"),
    case("until_unknown", ["sim.until=forever"], "sim", "until", "all, window"),
    case("restart_negative", ["sim.overheads.restart_s=-1"], "sim", "overheads.restart_s", ">= 0"),
    case("profile_error_1_5", ["sim.profile_error=1.5"], "sim", "profile_error", "[0, 1)"),
    case("sim_bool_text", ["sim.integer_steps=maybe"], "sim", "integer_steps", "true or false"),
    case("sim_key_unknown", ["+sim.foo=1"], "sim", "foo", "allowed: check"),
    case("integer_steps_epochs", ["sim.integer_steps=true"], "sim", "integer_steps", ">= 1 per round"),
    case("seed_float", ["seed=1.5"], "config", "seed", "integer >= 0"),
    case("seed_text", ["seed=abc"], "config", "seed", "integer >= 0"),
    case("seed_negative", ["seed=-1"], "config", "seed", "integer >= 0"),
    case("policy_option_unknown", ["+policy.foo=1"], "policy ours", "foo", "allowed: solver"),
    case("policy_option_type", ["policy=fifo", "policy.backfill=maybe"], "policy fifo", "backfill", "must be bool"),
    case("policy_time_limit_zero", ["policy.time_limit_s=0"], "policy ours", "time_limit_s", "> 0"),
    case("policy_solver_unknown", ["policy.solver=cplex"], "policy ours", "solver", "lp_dive, lp_repair, milp"),
    case(
        "ablation_names_its_preset",
        ["policy=ours_nofair", "policy.dive_gap=-1"],
        "policy ours_nofair",
        "dive_gap",
        ">= 0",
    ),
    case(
        "policy_lp_iterations_zero",
        ["policy.lp_iterations=0"],
        "policy ours",
        "lp_iterations",
        "null (no limit) or an integer >= 1",
    ),
    case(
        "themis_mip_nodes_zero", ["policy=themis", "policy.mip_nodes=0"], "policy themis", "mip_nodes", "integer >= 1"
    ),
    case(
        "gavel_lp_iterations_negative",
        ["policy=gavel_mmf", "policy.lp_iterations=-3"],
        "policy gavel_mmf",
        "lp_iterations",
        "integer >= 1",
    ),
    case(
        "policy_target_missing",
        ["policy._target_=fairsim.policies.nosuch.X"],
        "policy ours",
        "_target_",
        "cannot import",
    ),
    case("themis_knob", ["policy=themis", "policy.fairness_knob=1.5"], "policy themis", "fairness_knob", "[0, 1)"),
    case(
        "gavel_mechanism",
        ["policy=gavel", "policy.mechanism.unallocated=maybe"],
        "policy gavel",
        "mechanism.unallocated",
        "reserve, skip",
    ),
    case("workload_kind", ["workload.kind=bogus"], "workload philly", "kind", "philly, gavel_generated, file"),
    case("workload_catalog", ["workload.catalog=bogus"], "workload philly", "catalog", "paper, gavel, table"),
    case("workload_option", ["+workload.foo=1"], "workload philly", "foo", "allowed: arrivals, catalog"),
    case("workload_worker_mix", ["+workload.workers={3: 0.5}"], "workload philly", "workers", "sum to 1"),
    case(
        "arrivals_unknown",
        ["workload=trace2", "workload.arrivals=bursty"],
        "workload trace2",
        "arrivals",
        "poisson, philly",
    ),
    case("span_negative", ["workload=trace2", "workload.span_h=-1"], "workload trace2", "span_h", "> 0"),
    case(
        "span_with_duration_scale",
        ["workload=trace2", "+workload.duration_scale=0.05"],
        "workload trace2",
        "duration_scale",
        "span_h",
    ),
    case(
        "span_load_unreachable",
        ["workload=trace2", "workload.max_duration_s=61", "load=3"],
        "workload trace2",
        "load",
        "span_h",
    ),
    case(
        "philly_window_too_long",
        ["+workload.arrivals=philly", "num_jobs=90000"],
        "workload philly",
        "num_jobs",
        "at most 82247",
    ),
    case("trace_path_missing", ["workload=file"], "workload file", "path", "workload.path="),
    case(
        "trace_path_nonexistent",
        ["workload=file", "workload.path={d}/nope.csv"],
        "nope.csv",
        "path",
        ".csv or .parquet",
    ),
    case("trace_path_directory", ["workload=file", "workload.path={d}"], "path", "no such file", ".csv or .parquet"),
    # ---- trace files -------------------------------------------------------------------------
    case(
        "trace_no_work",
        trace("no_work.csv"),
        "no_work.csv",
        "columns",
        "required: job_id, arrival_s, model, workers, work",
    ),
    case("trace_no_model", trace("no_model.csv"), "no_model.csv", "columns", "required: job_id"),
    case("trace_workers_text", trace("workers_text.csv"), "workers_text.csv", "workers", "finite number"),
    case("trace_arrival_text", trace("arrival_text.csv"), "arrival_text.csv", "arrival_s", "finite number"),
    case("trace_work_negative", trace("work_neg.csv"), "work_neg.csv", "work", "> 0 (line 2 has -3.0)"),
    case("trace_work_zero", trace("work_zero.csv"), "work_zero.csv", "work", "> 0"),
    case("trace_work_blank", trace("work_blank.csv"), "work_blank.csv", "work", "finite number"),
    case("trace_work_nan", trace("work_nan.csv"), "work_nan.csv", "work", "finite number"),
    case("trace_work_inf", trace("work_inf.csv"), "work_inf.csv", "work", "finite number"),
    case("trace_arrival_negative", trace("arrival_neg.csv"), "arrival_neg.csv", "arrival_s", ">= 0"),
    case("trace_arrival_nan", trace("arrival_nan.csv"), "arrival_nan.csv", "arrival_s", "finite number"),
    case("trace_duplicate_id", trace("dup_id.csv"), "dup_id.csv", "job_id", "unique"),
    case("trace_negative_id", trace("id_neg.csv"), "id_neg.csv", "job_id", ">= 0"),
    case("trace_workers_fraction", trace("workers_frac.csv"), "workers_frac.csv", "workers", "integer"),
    case("trace_workers_zero", trace("workers_zero.csv"), "workers_zero.csv", "workers", ">= 1"),
    case("trace_wider_than_any_type", trace("too_wide.csv"), "too_wide.csv", "workers", "allowed: 1..12"),
    case("trace_unknown_model", trace("unknown_model.csv"), "unknown_model.csv", "model", "allowed: VGG16"),
    case("trace_empty_model", trace("empty_model.csv"), "empty_model.csv", "model", "non-empty string"),
    case("trace_weight_negative", trace("weight_neg.csv"), "weight_neg.csv", "weight", "> 0"),
    case("trace_empty_file", trace("empty.csv"), "empty.csv", "path", "is empty"),
    case("trace_header_only", trace("header_only.csv"), "header_only.csv", "rows", "no jobs"),
    case("trace_binary_csv", trace("binary.csv"), "binary.csv:2", "file", "not a text file (byte 0x80"),
    case("trace_binary_parquet", trace("binary.parquet"), "binary.parquet", "file", "cannot be read as parquet"),
    case("trace_empty_parquet", trace("empty.parquet"), "empty.parquet", "file", "cannot be read as parquet"),
    case("trace_unknown_suffix", trace("trace.txt"), "trace.txt", "path", "allowed: .csv, .parquet"),
    case(
        "gavel_trace_binary",
        ["workload=gavel_trace", "workload.path={d}/binary.trace"],
        "binary.trace",
        "file",
        "not a text file",
    ),
    case(
        "gavel_trace_short_line",
        ["workload=gavel_trace", "workload.path={d}/short.trace"],
        "short.trace:1",
        "fields",
        "expected 10",
    ),
    # ---- catalog and throughput files ---------------------------------------------------------------
    case(
        "catalog_yaml_missing", ["+workload.catalog_path={d}/nope.yaml"], "nope.yaml", "path", "performance-model YAML"
    ),
    case("catalog_yaml_binary", ["+workload.catalog_path={d}/binary.yaml"], "binary.yaml", "file", "not a text file"),
    case(
        "catalog_yaml_incomplete",
        ["+workload.catalog_path={d}/no_constants.yaml"],
        "no_constants.yaml",
        "state_bytes_per_param",
        "> 0",
    ),
    case("tput_unknown_model", table("tp_unknown_model.csv"), "tp_unknown_model.csv", "model", "'netB' is not in"),
    case("tput_zero", table("tp_zero.csv"), "tp_zero.csv", "throughput", "> 0"),
    case("tput_negative", table("tp_neg.csv"), "tp_neg.csv", "throughput", "> 0 (leave a configuration out"),
    case("tput_blank", table("tp_blank.csv"), "tp_blank.csv", "throughput", "> 0"),
    case("tput_unknown_gpu", table("tp_unknown_gpu.csv"), "tp_unknown_gpu.csv", "gpu", "allowed: K80"),
    case("tput_missing_gpu_type", table("tp_missing_gpu.csv"), "tp_missing_gpu.csv", "gpu", "has: T4, A10"),
    case(
        "tput_no_placement_column",
        table("tp_no_placement.csv"),
        "tp_no_placement.csv",
        "columns",
        "required: model, gpu",
    ),
    case("tput_bad_placement", table("tp_bad_placement.csv"), "tp_bad_placement.csv", "placement", "packed, spread"),
    case("tput_duplicate_row", table("tp_dup.csv"), "tp_dup.csv", "rows", "repeats"),
    case("tput_workers_zero", table("tp_workers_zero.csv"), "tp_workers_zero.csv", "workers", "integer >= 1"),
    case("tput_binary", table("tp_binary.csv"), "tp_binary.csv:2", "file", "not a text file (byte 0x80"),
    case("tput_file_missing", table("nope.csv"), "nope.csv", "path", "no such file"),
    case(
        "models_param_negative",
        table("tp_good.csv", "models_param_neg.csv"),
        "models_param_neg.csv",
        "param_count",
        "> 0",
    ),
    case(
        "models_no_param_column",
        table("tp_good.csv", "models_no_params.csv"),
        "models_no_params.csv",
        "columns",
        "required: model, param_count",
    ),
    case(
        "memory_fits_no_type", table("tp_good.csv", "models_huge_mem.csv"), "table_trace.csv", "model", "largest: 24 GB"
    ),
    case(
        "trace_model_not_in_table",
        table("tp_good.csv", trace_file="table_trace_resnet.csv"),
        "table_trace_resnet.csv",
        "model",
        "allowed: netA",
    ),
    case(
        "table_paths_missing",
        ["workload=file", "workload.path={d}/table_trace.csv", "workload.catalog=table"],
        "workload file",
        "throughputs_path",
        "is required",
    ),
    # ---- found by the fuzzers (tests/test_fuzz_readers.py, tests/test_fuzz_config.py) ----------------
    case(
        "trace_work_huge",
        trace("work_huge.csv"),
        "work_huge.csv",
        "work",
        "job 0 (1e+308 epochs) runs beyond any number of seconds at its fastest; a job runs 0.001 to 1e+09 s",
    ),  # overflowed the engine's fast-forward
    case("trace_work_tiny", trace("work_tiny.csv"), "work_tiny.csv", "work", "0.001 to 1e+09 s"),  # ran with a NaN rho
    case(
        "trace_arrival_huge", trace("arrival_huge.csv"), "arrival_huge.csv", "arrival_s", "<= 1e+12 seconds (line 3 has"
    ),
    case(
        "trace_workers_huge",
        trace("workers_huge.csv"),
        "workers_huge.csv",
        "workers",
        "an integer of at most 9007199254740992 in size (line 2 has '1e308')",
    ),  # cast to INT64_MIN
    case(
        "trace_ragged_after_a_blank_line", trace("ragged.csv"), "ragged.csv:4", "fields", "has 6 comma-separated fields"
    ),
    case("trace_header_twice", trace("header_twice.csv"), "header_twice.csv:1", "header", "'work' more than once"),
    case("max_rounds_huge", ["+sim.max_rounds=10000000000000"], "sim", "max_rounds", "an integer in [1, 1e+12]"),
    case(
        "count_huge", ["cluster.counts.T4=10000000"], "cluster paper", "counts.T4", "<= 1000000"
    ),  # overflowed int64 past 2**63
    case("count_nan", ["cluster.counts.T4=nan"], "cluster paper", "counts.T4", "must be an integer, got nan"),
    case("gpu_memory_inf", ["+cluster.memory_gb.T4=inf"], "cluster paper", "memory_gb.T4", "a number of GB > 0"),
    case(
        "pal_class_edges_text",
        ["policy=pal", "policy.class_edges=abc"],
        "policy pal",
        "class_edges",
        "a list of increasing throughput ratios, got 'abc'",
    ),  # list('abc') reached numpy
    case(
        "tiresias_thresholds_number",
        ["policy=tiresias_las", "policy.thresholds_gpu_s=5"],
        "policy tiresias_las",
        "thresholds_gpu_s",
        "a list of increasing GPU-second values > 0, got 5",
    ),
    case(
        "workload_kind_mapping", ["workload.kind={a: 1}"], "workload philly", "kind", "is not one of philly"
    ),  # unhashable
    case(
        "models_number_twice",
        table("tp_good.csv", "models_number_twice.csv"),
        "models_number_twice.csv",
        "model",
        "'1.5' is listed twice (line 3)",
    ),  # shown as np.float64(1.5)
    case(
        "models_param_huge",
        table("tp_good.csv", "models_param_huge.csv"),
        "models_param_huge.csv",
        "param_count",
        "<= 1e+15 (line 2 has '1e308')",
    ),  # 16 x 1e308 overflowed the state size
    case(
        "num_jobs_huge",
        ["workload=trace2", "workload.num_jobs=1000000000000000"],
        "workload trace2",
        "num_jobs",
        "<= 1e+07",
    ),  # allocated 7 PiB
]
BY_ID = {c.id: c for c in CASES}

# through `python run.py` too: one of each kind of failure (tests/test_cli.py has a few more)
SUBPROCESS_IDS = [
    "gpu_unknown",
    "sim_bool_text",
    "seed_text",
    "trace_path_nonexistent",
    "trace_work_nan",
    "trace_binary_csv",
    "gavel_trace_binary",
    "memory_fits_no_type",
    "tput_missing_gpu_type",
]
# caught on the command line before Hydra starts
GROUP_CASES = [
    case("policy_unknown", ["policy=nosuch"], "command line", "policy", "allowed: allox, fifo"),
    case(
        "cluster_unknown",
        ["cluster=nosuch"],
        "command line",
        "cluster",
        "allowed: gavel, openb, pai2020, pal, paper, pollux, scale8, sia, tiresias",
    ),
    case("workload_unknown", ["workload=nosuch"], "command line", "workload", "allowed: file"),
    case("sim_unknown", ["sim=nosuch"], "command line", "sim", "allowed: default, gavel_compat"),
]


@pytest.fixture(scope="module")
def files(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("bad_inputs")
    for name, content in FILES.items():
        (d / name).write_bytes(content if isinstance(content, bytes) else content.encode())
    return d


def resolve(c: Case, d: Path) -> list[str]:
    return [o.replace("{d}", str(d)) for o in c.overrides]


def test_the_table_is_large_and_distinct():
    assert len(CASES) + len(GROUP_CASES) >= 30
    assert len(BY_ID) == len(CASES)
    assert set(SUBPROCESS_IDS) <= set(BY_ID)


GROUPS = {p.name for p in CONF_DIR.iterdir() if p.is_dir()}


@functools.cache
def base_config(group_choices: tuple[str, ...]) -> DictConfig:
    return compose_config(["num_jobs=20", *group_choices])


def config_for(overrides: list[str]) -> DictConfig:
    """Hydra composes once per set of group choices (the slow part); the other overrides are
    parsed by Hydra's own override parser and set on a copy, as Hydra would."""
    groups = tuple(o for o in overrides if o.split("=", 1)[0] in GROUPS)
    cfg = copy.deepcopy(base_config(groups))
    for o in OverridesParser.create().parse_overrides([o for o in overrides if o not in groups]):
        OmegaConf.update(cfg, o.key_or_group, o.value(), merge=False, force_add=True)
    return cfg


@pytest.mark.parametrize("c", CASES, ids=lambda c: c.id)
def test_refused_in_process_with_one_line(c, files):
    with pytest.raises(InputError) as info:
        run_config(config_for(resolve(c, files)))
    message = str(info.value)
    assert "\n" not in message
    for needle in c.needles:
        assert needle in message, (needle, message)
    assert "np.float64(" not in message and "np.int64(" not in message  # values as the user wrote them


# ---- through run.py -----------------------------------------------------------------------------


def run_cli(run_py, args: list[str], results: Path, debug: bool = False) -> subprocess.CompletedProcess:
    env = {"FAIRSIM_DEBUG": "1" if debug else None}  # None: not inherited from the caller either
    return run_py(f"results_dir={results}", "num_jobs=20", *args, timeout=120, env=env)


@pytest.fixture(scope="module")
def cli_results(files, tmp_path_factory, run_py):
    """Every subprocess case, two at a time: {case id: (process, its results_dir)}."""
    base = tmp_path_factory.mktemp("bad_cli")
    cases = [BY_ID[i] for i in SUBPROCESS_IDS] + GROUP_CASES

    def one(c: Case):
        results = base / c.id
        return c.id, (run_cli(run_py, resolve(c, files), results), results)

    with ThreadPoolExecutor(max_workers=2) as pool:
        return dict(pool.map(one, cases))


def assert_refused(proc: subprocess.CompletedProcess, results: Path, needles: tuple[str, ...]) -> None:
    assert proc.returncode == 2, proc.stdout + proc.stderr
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), proc.stderr
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])
    assert "Traceback" not in proc.stderr + proc.stdout
    # nothing that looks like a result: no summary (the completeness marker), no tables
    for name in ("summary.json", "jobs.parquet", "rounds.parquet", "results.parquet"):
        assert not list(results.rglob(name)), name


@pytest.mark.slow
@pytest.mark.parametrize("case_id", SUBPROCESS_IDS + [c.id for c in GROUP_CASES])
def test_refused_by_run_py(case_id, cli_results):
    proc, results = cli_results[case_id]
    c = BY_ID.get(case_id) or next(g for g in GROUP_CASES if g.id == case_id)
    assert_refused(proc, results, c.needles)


@pytest.mark.slow
def test_debug_flag_shows_the_traceback(files, tmp_path, run_py):
    proc = run_cli(run_py, resolve(BY_ID["trace_work_nan"], files), tmp_path, debug=True)
    assert proc.returncode != 0
    assert "Traceback" in proc.stderr and "InputError" in proc.stderr and "work_nan.csv" in proc.stderr
    assert not list(tmp_path.rglob("summary.json"))


@pytest.mark.slow
def test_unknown_config_key_is_one_line(tmp_path, run_py):
    """A key that is in no config (``sim.max_round=5`` without ``+``) is refused by Hydra before
    fairsim runs; run.py prints Hydra's error as one line with the keys sim has and how to add
    one, exit 2 (tests/test_user_config.py has the other Hydra errors)."""
    proc = run_cli(run_py, ["sim.max_round=5"], tmp_path)
    assert_refused(
        proc, tmp_path, ("command line: sim.max_round: no such key", "sim has: check, clock,", "+sim.max_round=5")
    )


def test_an_option_past_int64_is_checked_without_numpy():
    """Gavel's mechanism checked numbers with np.isfinite, which raises TypeError on 10**30."""
    from fairsim.experiment.single import build_policy

    assert build_policy(
        config_for(["policy=gavel", "policy.mechanism.initial_time_rounds=1000000000000000000000000000000"]).policy
    )
    with pytest.raises(InputError, match="mechanism.initial_time_rounds: must be a number >= 0"):
        build_policy(
            config_for(["policy=gavel", "policy.mechanism.initial_time_rounds=-1000000000000000000000000000000"]).policy
        )


# ---- the run's horizon -------------------------------------------------------------------------------


def test_an_idle_gap_longer_than_max_rounds_runs(tmp_path):
    """The horizon check counts the rounds jobs keep the cluster busy (an idle cluster jumps to the
    next arrival without a round); it once counted every round up to the last arrival and refused
    this trace, which runs in a few rounds."""
    path = tmp_path / "gap.csv"
    path.write_text(HEAD + "0,0,ResNet50,1,3\n1,1e11,ResNet50,1,3\n")
    out = run_config(compose_config(["workload=file", f"workload.path={path}", "policy=fifo", "+sim.max_rounds=50"]))
    assert out.summary["finished_jobs"] == 2 and out.summary["rounds"] < 50


def test_a_run_that_cannot_finish_within_max_rounds_is_refused_up_front(tmp_path):
    path = tmp_path / "long.csv"
    path.write_text(HEAD + "0,0,ResNet50,1,3\n1,0,ResNet50,1,30000\n")
    with pytest.raises(InputError) as caught:
        run_config(compose_config(["workload=file", f"workload.path={path}", "policy=fifo", "+sim.max_rounds=1000"]))
    assert str(caught.value).startswith(
        f"sim: max_rounds: 1000 rounds of 300 s end before workload file ({path}) can finish: "
        "its jobs keep the cluster busy for at least"
    )


def test_a_message_quoting_a_line_break_stays_one_line(tmp_path):
    """A quoted header cell holding a line break was printed as two lines."""
    path = tmp_path / "log.csv"
    path.write_text('"sub\nmit_s",duration_s,gpus\n0,60,1\n')
    with pytest.raises(InputError) as caught:
        run_config(compose_config(["workload=jobs_log", f"workload.path={path}", "policy=fifo"]))
    message = str(caught.value)
    assert len(message.splitlines()) == 1 and "(sub\\nmit_s, duration_s, gpus)" in message
    for brk in "\r\v\f\x1c\x85\u2028":
        assert len(str(InputError(f"a{brk}b", "f", f"c{brk}d")).splitlines()) == 1


# ---- the run's own failures: a read-only results_dir, a store that fills up --------------------------

SITE_READ_ONLY = """
import errno, os, pathlib
_prefix = os.environ["FAIRSIM_TEST_READ_ONLY"]
_mkdir = pathlib.Path.mkdir
def _read_only(self, *args, **kwargs):  # what a read-only file system says to mkdir
    if str(self).startswith(_prefix):
        raise OSError(errno.EROFS, "Read-only file system", str(self))
    return _mkdir(self, *args, **kwargs)
pathlib.Path.mkdir = _read_only
"""
SITE_STORE_FULL = """
import sqlite3
from sqlalchemy.engine import default
_executemany = default.DefaultDialect.do_executemany
def _full(self, cursor, statement, parameters, context=None):  # sqlite's own error when the disk fills mid-logging
    if statement.startswith("INSERT INTO params"):
        raise sqlite3.OperationalError("database or disk is full")
    return _executemany(self, cursor, statement, parameters, context)
default.DefaultDialect.do_executemany = _full
"""


def site(tmp_path, text: str) -> dict[str, str]:
    """A sitecustomize.py that every Python process started with this PYTHONPATH runs first."""
    from conftest import ROOT

    folder = tmp_path / "site"
    folder.mkdir()
    (folder / "sitecustomize.py").write_text(text)
    return {"PYTHONPATH": f"{folder}:{ROOT}", "FAIRSIM_DEBUG": None}


def one_line_on_stderr(proc: subprocess.CompletedProcess) -> str:
    assert proc.returncode == 1, proc.stdout + proc.stderr
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "Traceback" not in proc.stderr, proc.stderr
    return lines[0]


@pytest.mark.slow
def test_a_read_only_results_dir_is_one_line(tmp_path, run_py):
    """Hydra creates the run folder before fairsim runs (its traceback was 34 lines)."""
    results = tmp_path / "ro"
    env = {**site(tmp_path, SITE_READ_ONLY), "FAIRSIM_TEST_READ_ONLY": str(results)}
    line = one_line_on_stderr(run_py(f"results_dir={results}", "num_jobs=5", "policy=fifo", env=env, timeout=120))
    assert line.startswith(f"error: read-only file system: {results}/runs/") and line.endswith(
        ": choose a writable results_dir=, then rerun the same command"
    )


@pytest.mark.slow
def test_a_store_that_fills_up_while_logging_is_one_line(tmp_path, run_py):
    """MLflow logged the SQLAlchemy error with its traceback and Hydra printed another (201 lines)."""
    results = tmp_path / "results"
    proc = run_py(
        f"results_dir={results}",
        "num_jobs=5",
        "policy=fifo",
        f"hydra.run.dir={tmp_path / 'run'}",
        env=site(tmp_path, SITE_STORE_FULL),
        timeout=120,
    )
    line = one_line_on_stderr(proc)
    assert line == (
        f"error: MLflow store sqlite:///{results.resolve()}/mlflow.db cannot be opened or written (database or disk "
        f"is full); the run is complete in {tmp_path / 'run'}; free space, or repair or move the store away, and "
        "rerun the same command"
    )
    assert (tmp_path / "run" / "summary.json").exists()


# ---- arrival times out of order: accepted, sorted, same run ------------------------------------------


def test_out_of_order_arrivals_are_sorted_and_give_the_same_run(tmp_path):
    rows = [
        (0, 0.0, "ResNet50", 1, 2.0),
        (1, 400.0, "VGG16", 2, 1.5),
        (2, 400.0, "ResNet50", 1, 0.5),
        (3, 900.0, "DenseNet121", 4, 3.0),
        (4, 1200.0, "ResNet50", 1, 1.0),
    ]
    sorted_df = pd.DataFrame(rows, columns=["job_id", "arrival_s", "model", "workers", "work"])
    shuffled = sorted_df.iloc[[3, 0, 4, 2, 1]]
    assert not shuffled["arrival_s"].is_monotonic_increasing
    tables = []
    for name, df in (("sorted.csv", sorted_df), ("shuffled.csv", shuffled)):
        df.to_csv(tmp_path / name, index=False)
        out = run_config(compose_config(["workload=file", f"workload.path={tmp_path / name}", "policy=srtf"]))
        tables.append(out.jobs)
    a, b = tables
    assert a["arrival_s"].is_monotonic_increasing
    assert a["job_id"].tolist() == [0, 1, 2, 3, 4]  # ties in arrival: by job_id
    assert a["finish_s"].notna().all()
    pd.testing.assert_frame_equal(a, b)
