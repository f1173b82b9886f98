"""The documentation site (mkdocs.yml, docs/): it builds in strict mode, so a broken link, a
missing anchor or a page left out of the navigation fails; and the README stays a short page."""

from __future__ import annotations

import os
import re
from html.parser import HTMLParser

import pytest
import yaml
from conftest import ROOT

os.environ.setdefault("NO_MKDOCS_2_WARNING", "1")  # Material's banner about its successor, printed on every build
PLAIN = re.compile(r"docs/[\w/.-]+?\.md")


def build(config_file, site_dir) -> None:
    from mkdocs.commands.build import build as mkdocs_build
    from mkdocs.config import load_config

    mkdocs_build(load_config(str(config_file), site_dir=str(site_dir), strict=True))


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """The site, built strict once for this file's tests."""
    folder = tmp_path_factory.mktemp("docs") / "site"
    build(ROOT / "mkdocs.yml", folder)
    return folder


class _Text(HTMLParser):
    """A page's text outside links and code blocks, and its links' targets."""

    def __init__(self) -> None:
        super().__init__()
        self.open: list[str] = []
        self.text: list[str] = []
        self.hrefs: list[str] = []

    def handle_starttag(self, tag, attrs):
        if tag in ("a", "pre", "script", "style"):
            self.open.append(tag)
        for name, value in attrs:
            if (tag, name) in (("a", "href"), ("link", "href"), ("script", "src"), ("img", "src")) and value:
                self.hrefs.append(value)

    def handle_endtag(self, tag):
        if tag in ("a", "pre", "script", "style") and tag in self.open:
            del self.open[len(self.open) - 1 - self.open[::-1].index(tag)]

    def handle_data(self, data):
        if not self.open:
            self.text.append(data)


def parsed(page) -> _Text:
    parser = _Text()
    parser.feed(page.read_text())
    return parser


def test_the_site_builds_strict(site):
    api = (site / "api.html").read_text()
    assert 'id="fairsim.api.run"' in api  # rendered from the docstrings
    assert (site / "results.html").is_file()


def test_the_api_reference_has_a_heading_and_a_signature_per_object(site):
    api = (site / "api.html").read_text()
    for name in ("run", "sweep", "load", "Run", "Sweep", "SweepError"):
        heading = re.search(rf'<h3 id="fairsim\.api\.{name}"[^>]*>(.*?)</h3>', api, re.DOTALL)
        assert heading and re.search(rf">\s*{name}\s*<", heading.group(1)), name
    signatures = re.findall(r'class="doc-signature[^"]*"', api)
    assert len(signatures) >= 4, "run, sweep, load and SweepError show their signatures"
    assert "run(*overrides" in re.sub(r"<[^>]+>", "", api)


def test_every_link_of_the_site_opens_a_file_from_disk(site):
    """Opened as file://site/index.html, a link to a folder would show the folder's listing: every
    link between pages names its .html file (use_directory_urls: false), and that file exists."""
    pages = sorted(set(site.rglob("*.html")) - {site / "404.html"})  # 404.html: a server's page, absolute links
    assert len(pages) > 20
    broken = []
    for page in pages:
        for href in parsed(page).hrefs:
            if re.match(r"[a-z]+:", href) or href.startswith(("#", "//")):
                continue
            target = (page.parent / href.split("#")[0].split("?")[0]).resolve()
            if not target.is_file():
                broken.append(f"{page.relative_to(site)}: {href}")
    assert not broken, broken[:10]


def test_a_page_names_another_by_a_link_not_as_plain_text(site):
    """A reference to a page, docs/<page>.md, is a Markdown link on the site ([text](page.md)), not
    plain text; code blocks (a file tree, a quoted error) may spell the path."""
    plain = []
    for page in sorted(site.rglob("*.html")):
        for text in parsed(page).text:
            plain += [
                f"{page.relative_to(site)}: ...{text[max(0, m.start() - 40) : m.end()]}" for m in PLAIN.finditer(text)
            ]
    assert not plain, "plain-text page references; make each a link [text](page.md):\n" + "\n".join(plain)


def test_the_link_check_sees_a_plain_reference():
    page = _Text()
    page.feed('<p>see docs/ours.md and <a href="ours.html">docs/ours.md</a></p><pre>docs/api.md</pre>')
    assert [m.group(0) for text in page.text for m in PLAIN.finditer(text)] == ["docs/ours.md"]


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


def _named(text: str) -> set[str]:
    """The `names` a piece of Markdown spells, a range `trace1`..`trace9` as each of its names."""
    names = set(re.findall(r"`([\w-]+)`", text))
    for stem, lo, hi in re.findall(r"`([a-z_]+)(\d+)`\.\.`[a-z_]+(\d+)`", text):
        names |= {f"{stem}{i}" for i in range(int(lo), int(hi) + 1)}
    return names


@pytest.mark.parametrize("group", ["cluster", "workload", "sim", "capacity", "experiment"])
def test_the_command_lines_group_table_names_every_preset(group):
    row = next(
        line for line in (ROOT / "docs" / "commands.md").read_text().splitlines() if line.startswith(f"| `{group}` |")
    )
    presets = {p.stem for p in (ROOT / "conf" / group).glob("*.yaml")}
    assert presets <= _named(row), f"docs/commands.md's {group} row lacks {sorted(presets - _named(row))}"


def test_the_concepts_page_names_every_policy():
    text = (ROOT / "docs" / "concepts.md").read_text()
    paragraph = text[text.index("`policy=` one of:") :].split("\n\n")[0]
    presets = {p.stem for p in (ROOT / "conf" / "policy").glob("*.yaml")}
    assert presets <= _named(paragraph), f"docs/concepts.md lacks {sorted(presets - _named(paragraph))}"
