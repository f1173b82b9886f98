"""The on-disk cache of the fluid fair-share reference: same bytes as a fresh computation, keyed
on the exact inputs, robust to damaged entries and unwritable folders."""

import numpy as np

from fairsim.experiment.compose import compose_config
from fairsim.experiment.fluid_cache import FluidCache
from fairsim.experiment.single import run_config
from fairsim.fairness.fluid import fluid_finish_times


def trace(seed=0, jobs=40):
    rng = np.random.default_rng(seed)
    arrival = np.sort(rng.uniform(0, 3600, jobs))
    work = rng.uniform(100, 5000, jobs)
    workers = rng.choice([1, 2, 4], jobs).astype(float)
    tput = rng.uniform(0.5, 3.0, (jobs, 3))
    return arrival, work, workers, tput, np.array([8.0, 8.0, 4.0])


def test_a_hit_is_the_fresh_computation_bit_for_bit(tmp_path):
    cache = FluidCache(tmp_path)
    fresh = fluid_finish_times(*trace())
    first, second = cache(*trace()), cache(*trace())
    assert cache.hits == 1 and len(list(tmp_path.glob("*.npy"))) == 1
    assert fresh.tobytes() == first.tobytes() == second.tobytes()


def test_other_inputs_are_other_entries(tmp_path):
    cache = FluidCache(tmp_path)
    arrival, work, workers, tput, counts = trace()
    cache(arrival, work, workers, tput, counts)
    work = work.copy()
    work[0] *= 1.0 + 1e-12  # the smallest change of one job is a new key
    assert (
        cache(arrival, work, workers, tput, counts).tobytes()
        == fluid_finish_times(arrival, work, workers, tput, counts).tobytes()
    )
    counts = counts + [0.0, 0.0, 4.0]
    cache(arrival, work, workers, tput, counts)
    assert cache.hits == 0 and len(list(tmp_path.glob("*.npy"))) == 3


def test_a_damaged_entry_is_recomputed_and_replaced(tmp_path):
    FluidCache(tmp_path)(*trace())
    entry = next(tmp_path.glob("*.npy"))
    entry.write_bytes(entry.read_bytes()[:50])  # cut off mid-write by a crash of another tool
    cache = FluidCache(tmp_path)
    assert cache(*trace()).tobytes() == fluid_finish_times(*trace()).tobytes()
    assert cache.hits == 0
    assert FluidCache(tmp_path)(*trace()).tobytes() == fluid_finish_times(*trace()).tobytes()
    assert not list(tmp_path.glob(".*.tmp"))


def test_an_unwritable_folder_costs_only_the_saving(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    cache = FluidCache(blocker / "cache")
    assert cache(*trace()).tobytes() == fluid_finish_times(*trace()).tobytes()


def test_runs_through_the_cache_equal_runs_without_it(tmp_path):
    for policy in ("fifo", "srtf"):
        cfg = compose_config([f"policy={policy}", "num_jobs=40"])
        plain = run_config(cfg).jobs
        cached = run_config(cfg, fluid_cache=tmp_path).jobs
        assert plain.equals(cached)
    assert len(list(tmp_path.glob("*.npy"))) == 1  # one trace, one cluster: one entry for both policies
