"""The docs stay inside the repository: every relative link of README.md and docs/**/*.md names
a file that exists; the README is the short page a newcomer needs first, points at the docs and
at nothing outside the repository; the site builds with `mkdocs build --strict`."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.conftest import REPO

LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")
PAGES = [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.relative_to(REPO).as_posix())
def test_relative_links_resolve_inside_the_repository(page: Path) -> None:
    links = [t for t in LINK.findall(page.read_text()) if "://" not in t]
    for target in links:
        resolved = (page.parent / target).resolve()
        assert resolved.is_relative_to(REPO), f"{page.name} links outside the repository: {target}"
        assert resolved.exists(), f"{page.name} links to a missing file: {target}"


def test_the_readme_links_the_docs_and_nothing_outside() -> None:
    readme = (REPO / "README.md").read_text()
    assert "../shared" not in readme
    assert "(docs/architecture.md)" in readme and "(docs/cuda-extension.md)" in readme
    assert (REPO / "docs" / "architecture.md").is_file()
    assert "`make docs`" in readme and "(docs/reference/matrix.md)" in readme


def test_the_readme_is_short_and_starts_with_the_two_commands() -> None:
    lines = (REPO / "README.md").read_text().splitlines()
    assert len(lines) <= 200
    assert lines[:6] == [
        "# relforge",
        "",
        "```sh",
        "make demo    # the main job on embedded defaults (no server, no credentials)",
        "make test    # ruff, mypy --strict and every test; installs what it needs into .venv",
        "```",
    ]


def _nav_pages(nav: object) -> list[str]:
    if isinstance(nav, str):
        return [nav]
    if isinstance(nav, list):
        return [p for item in nav for p in _nav_pages(item)]
    if isinstance(nav, dict):
        return [p for value in nav.values() for p in _nav_pages(value)]
    return []


def test_every_docs_page_is_in_the_site_nav() -> None:
    config = yaml.safe_load((REPO / "mkdocs.yml").read_text())
    pages = {p.relative_to(REPO / "docs").as_posix() for p in (REPO / "docs").rglob("*.md")}
    assert pages == set(_nav_pages(config["nav"]))


def _mkdocs(config: Path, site: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        # not --quiet: it hides the very warnings --strict counts
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(config), "-d", str(site)],
        capture_output=True,
        text=True,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
        check=False,
    )


def test_the_site_builds_strictly(tmp_path: Path) -> None:
    done = _mkdocs(REPO / "mkdocs.yml", tmp_path / "site")
    assert done.returncode == 0, done.stderr
    built = tmp_path / "site"
    assert (built / "reference" / "checks" / "index.html").is_file()
    assert (built / "reference" / "matrix.schema.json").is_file()  # served beside the pages
    assert 'id="rf-v043"' in (built / "reference" / "checks" / "index.html").read_text()


def test_a_broken_anchor_fails_the_build(tmp_path: Path) -> None:
    shutil.copytree(REPO / "docs", tmp_path / "docs")
    shutil.copy(REPO / "mkdocs.yml", tmp_path / "mkdocs.yml")
    page = tmp_path / "docs" / "index.md"
    page.write_text(page.read_text() + "\n[gone](reference/checks.md#rf-v999)\n")
    done = _mkdocs(tmp_path / "mkdocs.yml", tmp_path / "site")
    assert done.returncode != 0
    assert "#rf-v999" in done.stderr


def test_the_walkthrough_covers_every_stage_in_order() -> None:
    text = (REPO / "docs" / "cuda-extension.md").read_text()
    commands = [
        "relforge init",
        "relforge matrix check",
        "relforge workflows generate",
        "relforge build",
        "relforge validate",
        "relforge release cut",
        "relforge release tag",
        "relforge publish",
        "relforge promote",
        "relforge pypi upload",
    ]
    positions = [text.find(c) for c in commands]
    assert -1 not in positions, dict(zip(commands, positions, strict=True))
    assert positions == sorted(positions)
