"""The documentation site (mkdocs.yml, docs/): it builds in strict mode, so a broken link, a
missing anchor or a page left out of the navigation fails; and the README stays a short page."""

from __future__ import annotations

import os

import pytest
import yaml
from conftest import ROOT

os.environ.setdefault("NO_MKDOCS_2_WARNING", "1")  # Material's banner about its successor, printed on every build


def build(config_file, site_dir) -> None:
    from mkdocs.commands.build import build as mkdocs_build
    from mkdocs.config import load_config

    mkdocs_build(load_config(str(config_file), site_dir=str(site_dir), strict=True))


def test_the_site_builds_strict(tmp_path):
    build(ROOT / "mkdocs.yml", tmp_path / "site")
    api = (tmp_path / "site" / "api" / "index.html").read_text()
    assert "fairsim.api.run" in api or 'id="fairsim.api.run"' in api  # rendered from the docstrings
    assert (tmp_path / "site" / "results" / "index.html").is_file()


def test_a_broken_link_or_a_page_outside_the_nav_fails_the_build(tmp_path):
    """The site's own validation settings, on a two-page site with each fault in turn."""
    from mkdocs.exceptions import Abort

    ours = yaml.safe_load((ROOT / "mkdocs.yml").read_text().replace("!!python", "#"))
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "index.md").write_text("# Home\n\n[the other page](other.md)\n")
    (docs / "other.md").write_text("# Other\n")
    site = {"site_name": "t", "docs_dir": str(docs), "validation": ours["validation"], "nav": ["index.md", "other.md"]}
    config = tmp_path / "mkdocs.yml"
    config.write_text(yaml.safe_dump(site))
    build(config, tmp_path / "site")  # sound as it is
    (docs / "index.md").write_text("# Home\n\n[gone](gone.md) [the other page](other.md#no-such-heading)\n")
    with pytest.raises(Abort):
        build(config, tmp_path / "site")
    (docs / "index.md").write_text("# Home\n")
    config.write_text(yaml.safe_dump({**site, "nav": ["index.md"]}))
    with pytest.raises(Abort):
        build(config, tmp_path / "site")


def test_the_readme_fits_on_a_screen_and_links_pages_that_exist():
    import re

    text = (ROOT / "README.md").read_text()
    assert len(text.splitlines()) <= 150
    links = re.findall(r"\]\((docs/[^)#]+)", text)
    assert links and all((ROOT / link).is_file() for link in links)


def test_toy_view_takes_the_run_time_fields():
    """docs/adding-a-policy.md's test sets run_s and first_start."""
    import math

    from fairsim.testing import toy_view

    view = toy_view([[1.0, 2.0], [1.0, 2.0]], capacity=[1, 1], run_s=[300, 0], first_start=[0, float("nan")])
    assert list(view.run_s) == [300, 0] and view.first_start[0] == 0 and math.isnan(view.first_start[1])
    assert list(toy_view([[1.0]], capacity=[1]).run_s) == [0]
