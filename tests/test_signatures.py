"""The digest cache kept by file signature (fairsim/experiment/signatures.py): a hit only for a
file unchanged since it was digested, never for one changed in any way, and no entry for a file
changed too recently to tell by its signature."""

from __future__ import annotations

import hashlib
import os
import time

from fairsim.experiment import provenance, signatures
from fairsim.experiment.signatures import cache_file, file_digest, kept_in


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


SHORT_S = 0.05  # a settling time the tests can wait out; longer than any kernel clock tick


def settle(monkeypatch) -> None:
    """Let the files written so far settle, with a short settling time in place of SETTLED_S."""
    monkeypatch.setattr(signatures, "SETTLED_S", SHORT_S)
    time.sleep(SHORT_S * 1.5)


def test_a_kept_digest_is_reused_and_a_changed_file_always_misses(tmp_path, monkeypatch):
    results, data = tmp_path / "results", tmp_path / "data.csv"
    data.write_bytes(b"a,b\n1,2\n")
    settle(monkeypatch)
    with kept_in(results) as cache:
        assert file_digest(data) == sha(b"a,b\n1,2\n") and cache.added == 1
    assert cache_file(results).is_file()
    with kept_in(results) as cache:
        assert file_digest(data) == sha(b"a,b\n1,2\n") and cache.hits == 1
    stat = os.stat(data)
    data.write_bytes(b"a,b\n1,3\n")  # same size
    os.utime(data, ns=(stat.st_atime_ns, stat.st_mtime_ns))  # and the old mtime: only the ctime tells
    with kept_in(results) as cache:
        assert file_digest(data) == sha(b"a,b\n1,3\n") and cache.hits == 0
    replaced = tmp_path / "new.csv"
    replaced.write_bytes(b"a,b\n1,4\n")
    replaced.replace(data)  # a rename: another inode
    with kept_in(results):
        assert file_digest(data) == sha(b"a,b\n1,4\n")


def test_a_file_changed_within_the_settling_time_is_not_kept(tmp_path):
    results, data = tmp_path / "results", tmp_path / "data.csv"
    data.write_bytes(b"fresh\n")
    with kept_in(results) as cache:  # read right after the write: its signature cannot be trusted yet
        assert file_digest(data) == sha(b"fresh\n")
        assert cache.added == 0 and str(data.resolve()) not in cache.entries
    assert not cache_file(results).exists()


def test_a_damaged_cache_is_an_empty_one(tmp_path, monkeypatch):
    results, data = tmp_path / "results", tmp_path / "data.csv"
    data.write_bytes(b"x\n")
    cache_file(results).parent.mkdir(parents=True)
    cache_file(results).write_text("{not json")
    settle(monkeypatch)
    with kept_in(results):
        assert file_digest(data) == sha(b"x\n")
    with kept_in(results) as cache:
        assert file_digest(data) == sha(b"x\n") and cache.hits == 1


def test_a_kept_entry_for_another_signature_is_never_returned(tmp_path, monkeypatch):
    """A cache file that names the file with a signature it does not have (copied from another
    machine, or the file restored with its old mtime) is not believed."""
    results, data = tmp_path / "results", tmp_path / "data.csv"
    data.write_bytes(b"real\n")
    settle(monkeypatch)
    with kept_in(results) as cache:
        file_digest(data)
        entry = cache.entries[str(data.resolve())]
        entry["sha256"] = sha(b"forged\n")
        entry["signature"][2] -= 1  # another ctime
    with kept_in(results):
        assert file_digest(data) == sha(b"real\n")


def test_provenance_with_the_cache_records_what_it_records_without(tmp_path, monkeypatch):
    """The code digest and file list of a run, from kept import statements and digests, are the
    ones a cold computation gives."""
    cfg = {"policy": {"_target_": "fairsim.policies.fft.FFTPolicy"}, "workload": {}, "cluster": {}}
    cold = provenance.run_code(cfg).digests()
    settle(monkeypatch)
    with kept_in(tmp_path) as first:
        assert provenance.run_code(cfg).digests() == cold
    assert first.added > 0
    with kept_in(tmp_path) as second:
        assert provenance.run_code(cfg).digests() == cold
    assert second.hits >= first.added and second.added == 0
