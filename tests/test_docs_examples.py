"""The docs' examples that state their output, run and compared with what they state: the shape
docs/api.md says its one-liner prints, the README's `fairsim.run(...)` example (its comment says
what it prints), and the one-line errors docs/api.md and docs/clusters.md quote. A count, shape
or message that changes fails here until the page says the new one.

A quoted output may elide with "...": the parts between the dots must appear in order."""

from __future__ import annotations

import contextlib
import io
import re
import shlex

import pytest
from conftest import ROOT

from fairsim.errors import InputError


def same_but_elided(stated: str, actual: str) -> bool:
    """``actual`` reads as ``stated``, where each "..." of ``stated`` stands for any text."""
    return re.fullmatch(".*?".join(re.escape(part) for part in stated.split("...")), actual, re.DOTALL) is not None


def test_elision_matches_in_order_only():
    assert same_but_elided("a (b, ..., z)", "a (b, c, d, z)")
    assert not same_but_elided("a (b, ..., z)", "a (b, c, d, y)") and not same_but_elided("z ... a", "a b z")


def api_page() -> str:
    return (ROOT / "docs" / "api.md").read_text()


def stated_shape(text: str, after: str) -> tuple[int, int]:
    """The ``(rows, columns)`` a page states for its example: the first shape after ``after``."""
    m = re.search(r"\((\d+), (\d+)\)", text[text.index(after) :])
    assert m, f"no shape stated after {after!r}"
    return int(m.group(1)), int(m.group(2))


def run_printing(code: str, tmp_path, monkeypatch) -> str:
    """Run ``code`` (a reader's example) from a folder of its own with tracking off (the examples
    that track leave it to MLflow: track=False keeps the run to its folder); its stdout."""
    monkeypatch.chdir(tmp_path)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, "<docs example>", "exec"), {})
    return out.getvalue()


@pytest.mark.slow
def test_the_api_pages_one_liner_prints_the_shape_it_states(tmp_path, monkeypatch):
    text = api_page()
    command = next(line.strip() for line in text.splitlines() if line.strip().startswith("python -c "))
    code = shlex.split(command)[2]
    assert "track=False" in code  # so this test leaves no MLflow run behind
    printed = run_printing(code, tmp_path, monkeypatch).strip().splitlines()[-1]
    shape = stated_shape(text, "prints")
    assert printed.startswith(str(shape)), f"docs/api.md states {shape}, the example printed {printed!r}"
    # the README's example is the same run: its comment states the same output
    readme = (ROOT / "README.md").read_text()
    block = readme[readme.index("## From Python") :].split("\n\n")[1]
    code = "\n".join(line[4:] for line in block.splitlines())
    assert "fairsim.run(" in code and "track=False" in code
    printed = run_printing(code, tmp_path, monkeypatch)
    assert printed.strip().splitlines()[-1].startswith(str(stated_shape(block, "print(")))
    assert stated_shape(block, "print(") == shape


def test_the_api_pages_error_is_the_one_a_bad_preset_gets(tmp_path, monkeypatch):
    import fairsim

    text = api_page()
    call, stated = re.search(r">>> (fairsim\.run\(.*\))\n\s+fairsim\.errors\.InputError: (.*)", text).groups()
    monkeypatch.chdir(tmp_path)
    with pytest.raises(InputError) as err:
        eval(call, {"fairsim": fairsim})
    assert same_but_elided(stated, str(err.value)), f"docs/api.md: {stated}\nactual: {err.value}"


def test_the_cluster_pages_unknown_type_error_is_the_one_a_run_gets():
    from fairsim.experiment.compose import compose_config
    from fairsim.experiment.single import build_cluster

    text = (ROOT / "docs" / "clusters.md").read_text()
    stated = re.search(r"^\s+error: (cluster paper: counts\.H100: .*)$", text, re.MULTILINE).group(1)
    with pytest.raises(InputError) as err:
        build_cluster(compose_config(["+cluster.counts.H100=4"]))
    assert same_but_elided(stated, str(err.value)), f"docs/clusters.md: {stated}\nactual: {err.value}"
