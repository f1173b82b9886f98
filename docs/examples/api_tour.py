"""A tour of fairsim's Python API, one step per cell of a notebook (docs/api.md).

Run it from any folder: ``python docs/examples/api_tour.py`` (its results go to ./results).
The test suite runs it (tests/test_api.py), so every line here works.
"""

# %% One run: overrides as on the command line, or keywords; track=False keeps it out of MLflow
import fairsim

print(fairsim.__version__)
r = fairsim.run("policy=themis", num_jobs=50, load=0.8, track=False)
print(r.folder)  # results/runs/<time>-themis-philly-seed0
print(r.summary["avg_jct_s"] / 3600, "h mean JCT;", r.summary["rho_fluid_max"], "worst rho")

# %% The tables are pandas DataFrames (docs/results.md lists every column)
slowest = r.jobs.nlargest(3, "jct_s")[["job_id", "model", "workers", "jct_s", "rho_fluid"]]
print(slowest)
print(r.rounds[["t_s", "active_jobs", "running_jobs", "busy_gpus"]].tail(3))
print(r.tenants[["tenant", "jobs", "rho_fluid_mean"]] if r.tenants is not None else "no tenants")

# %% Where it came from: the code digest, the inputs, the commit
print(r.provenance["code_digest"][:12], sorted(r.provenance["inputs"])[:2], r.provenance["git"])

# %% Any run or sweep folder reads back the same way
again = fairsim.load(r.folder)
assert again.summary == r.summary

# %% Bad input raises InputError with the command line's one-line message
try:
    fairsim.run("policy=ourss")
except fairsim.InputError as exc:
    print("refused:", exc)

# %% A sweep: every combination, run as `python run.py -m ...`; a list is the values to sweep.
# Run it again and its complete cells are found, not recomputed.
s = fairsim.sweep("num_jobs=20", policy=["fifo", "srtf"], sweep_name="tour")
print(s.results[["cell", "policy", "avg_jct_s", "rho_fluid_mean"]])
print(s.jobs.groupby("policy", observed=True)["jct_s"].median())
