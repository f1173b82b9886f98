"""Generate traces in the CSV format of Tiresias' simulator, for replaying the same jobs in both
simulators (docs/tiresias_compat.md). The traces shipped in ``fairsim/data/tiresias/traces/``
were made with:

    python -m fairsim.workload.tiresias_gen --jobs 120 --gpus 16 --load 0.9 --seed 1 --out fairsim/data/tiresias/traces/las_120.csv
    python -m fairsim.workload.tiresias_gen --jobs 480 --gpus 32 --load 0.9 --seed 2 --out fairsim/data/tiresias/traces/480_job.csv

Each job: a gang of 1, 2, 4 or 8 GPUs (probabilities 0.5, 0.2, 0.2, 0.1, the mix of the 60-job
trace Tiresias ships has about half single-GPU jobs), a GPU-time log-uniform in
[300, 60000] GPU-seconds, so that jobs of every width sit on both sides of the 2D-LAS thresholds
(3250 and 7200 GPU-seconds in Tiresias' simulator), and a duration of GPU-time / width seconds,
at least 60. Submit gaps are exponential, at the rate that offers ``load`` times the cluster's
GPU-seconds. Every number is a whole second, because Tiresias' simulator reads only digit
strings as numbers. ``iterations`` equals ``duration`` (neither simulator reads it); ``interval``
is the gap to the next job's submit (0 for the last), as in Tiresias' own traces. Same
arguments, same file.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import pandas as pd

from fairsim.files import atomic_write

COLUMNS = ["job_id", "num_gpu", "submit_time", "iterations", "model_name", "duration", "interval"]
WIDTHS = (1, 2, 4, 8)
WIDTH_P = (0.5, 0.2, 0.2, 0.1)
GPU_TIME_S = (300.0, 60_000.0)
MIN_DURATION_S = 60
# the ten CNNs the 60-job trace names (a label only: durations are given, not derived from models)
MODELS = (
    "vgg19",
    "vgg16",
    "vgg11",
    "alexnet",
    "resnet152",
    "resnet101",
    "resnet50",
    "inception4",
    "inception3",
    "googlenet",
)


def generate(num_jobs: int, gpus: int, load: float, seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    width = rng.choice(np.asarray(WIDTHS), size=num_jobs, p=np.asarray(WIDTH_P))
    lo, hi = np.log(GPU_TIME_S[0]), np.log(GPU_TIME_S[1])
    gpu_time = np.exp(rng.uniform(lo, hi, size=num_jobs))
    duration = np.maximum(np.rint(gpu_time / width), MIN_DURATION_S).astype(np.int64)
    rate = load * gpus / float(np.mean(duration * width))  # jobs per second
    gaps = rng.exponential(1.0 / rate, size=num_jobs)
    submit = np.floor(np.concatenate([[0.0], np.cumsum(gaps[:-1])])).astype(np.int64)
    model = np.asarray(MODELS, dtype=object)[rng.integers(0, len(MODELS), size=num_jobs)]
    return pd.DataFrame(
        {
            "job_id": np.arange(num_jobs),
            "num_gpu": width,
            "submit_time": submit,
            "iterations": duration,
            "model_name": model,
            "duration": duration,
            "interval": np.append(np.diff(submit), 0),
        },
        columns=COLUMNS,
    )


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="python -m fairsim.workload.tiresias_gen", description=__doc__.splitlines()[0])
    ap.add_argument("--jobs", type=int, required=True)
    ap.add_argument("--gpus", type=int, required=True, help="GPUs of the cluster the load is offered to")
    ap.add_argument("--load", type=float, default=0.9, help="offered GPU-seconds / cluster GPU-seconds")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args(argv)
    if args.jobs < 1 or args.gpus < 1 or not args.load > 0:
        ap.error("--jobs and --gpus must be >= 1 and --load > 0")
    df = generate(args.jobs, args.gpus, args.load, args.seed)
    atomic_write(args.out, lambda tmp: df.to_csv(tmp, index=False))
    over = df["duration"] * df["num_gpu"]
    print(
        f"wrote {len(df)} jobs to {args.out}: last submit {df['submit_time'].iloc[-1]} s, GPU-time "
        f"{over.min()}-{over.max()} GPU-s, {(over >= 3250).mean():.0%} past 3250, {(over >= 7200).mean():.0%} past 7200"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
