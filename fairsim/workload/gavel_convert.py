"""Convert Gavel's measured throughputs (``simulation_throughputs.json``) into the tidy table
the throughput-table catalog reads. Run once; the output ships in ``fairsim/data/gavel/``:

    python -m fairsim.workload.gavel_convert /path/to/simulation_throughputs.json fairsim/data/gavel/throughputs.csv

The JSON maps a worker type (``v100``, ``v100_unconsolidated``, ...) to keys like
``"('ResNet-50 (batch size 64)', 4)"`` whose ``"null"`` entry is the job's throughput in steps/s
when it runs alone; the other entries are space-sharing pairs, which fairsim does not model and
this converter skips. ``_unconsolidated`` (workers spread over servers) becomes placement
``spread``, the plain entry ``packed``. Zero throughputs (the job did not run, e.g. out of
memory) are left out, so the catalog treats that configuration as unavailable.
"""

from __future__ import annotations

import ast
import json
import sys
from pathlib import Path

import pandas as pd

from fairsim.cluster import canonical_gpu_name
from fairsim.errors import InputError

SPREAD_SUFFIX = "_unconsolidated"
COLUMNS = ["model", "gpu", "workers", "placement", "throughput"]


def gavel_throughput_rows(raw: dict, source: str = "simulation_throughputs.json") -> pd.DataFrame:
    rows = []
    for worker_type, jobs in raw.items():
        spread = worker_type.endswith(SPREAD_SUFFIX)
        gpu = canonical_gpu_name(worker_type.removesuffix(SPREAD_SUFFIX), source, "worker type")
        for key, entry in jobs.items():
            try:
                model, workers = ast.literal_eval(key)
            except (ValueError, SyntaxError) as exc:
                raise InputError(source, f"{worker_type}.{key}", "is not a ('model', workers) key") from exc
            tput = float(entry["null"])
            if tput > 0:
                rows.append((model, gpu, int(workers), "spread" if spread else "packed", tput))
    df = pd.DataFrame(rows, columns=COLUMNS)
    return df.sort_values(["model", "gpu", "workers", "placement"], kind="stable").reset_index(drop=True)


def convert(json_path: str | Path, out_csv: str | Path) -> pd.DataFrame:
    raw = json.loads(Path(json_path).read_text())
    df = gavel_throughput_rows(raw, str(json_path))
    df.to_csv(out_csv, index=False, float_format="%.17g")
    return df


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print("usage: python -m fairsim.workload.gavel_convert SIMULATION_THROUGHPUTS_JSON OUT_CSV", file=sys.stderr)
        return 2
    df = convert(argv[0], argv[1])
    print(f"wrote {len(df)} rows ({df['model'].nunique()} models, {df['gpu'].nunique()} GPU types) to {argv[1]}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
