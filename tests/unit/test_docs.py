"""The docs stay inside the repository: every relative link of README.md and docs/*.md names a
file that exists, and the README points at nothing outside the repository."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.conftest import REPO

LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")
PAGES = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]


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


def test_the_walkthrough_covers_every_stage_in_order() -> None:
    text = (REPO / "docs" / "cuda-extension.md").read_text()
    commands = [
        "relforge init",
        "relforge matrix check",
        "relforge workflows generate",
        "relforge build",
        "relforge validate",
        "relforge publish",
        "relforge promote",
        "relforge release cut",
    ]
    positions = [text.find(c) for c in commands]
    assert -1 not in positions, dict(zip(commands, positions, strict=True))
    assert positions == sorted(positions)
