"""What `relforge matrix docs` prints, read back from its Markdown: the independent oracle the site
tests compare every selector combination with (pip commands; uv has its own hand-written rule)."""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass

_RELEASE_CELL = re.compile(r"`([^`]+)` \(([^)]*)\); elsewhere `([^`]+)`\Z")


@dataclass(frozen=True)
class DocsRow:
    label: str
    platforms: tuple[str, ...]
    commands: dict[str, str]  # channel → command from the project's index
    # the PyPI command, the platforms it is for and its dependency-axis values ("numpy 2.x")
    pypi: tuple[str, tuple[str, ...], str] | None


def docs_rows(markdown: str, title: str, release: str) -> dict[str, DocsRow]:
    """The install table of one release, keyed by its variant label."""
    lines = markdown.splitlines()
    start = lines.index(f"### {title} {release}")
    head = [c.strip() for c in lines[start + 2].strip("|").split("|")]
    rows: dict[str, DocsRow] = {}
    for line in lines[start + 4 :]:
        if not line.startswith("|"):
            break
        cells = dict(
            zip(head, (c.strip() for c in line.strip().strip("|").split("|")), strict=True)
        )
        commands: dict[str, str] = {}
        pypi = None
        for channel in ("nightly", "test", "release"):
            text = cells[channel]
            found = _RELEASE_CELL.match(text)
            if found:
                where, _, axes = found[2].partition("; ")
                pypi = (found[1], tuple(p.strip() for p in where.split(",")), axes)
                commands[channel] = found[3]
            else:
                assert text.startswith("`") and text.endswith("`"), text
                commands[channel] = text.strip("`")
        rows[cells["Variant"]] = DocsRow(
            label=cells["Variant"],
            platforms=tuple(p.strip() for p in cells["Platforms"].split(",")),
            commands=commands,
            pypi=pypi,
        )
    return rows


def expected_command(
    rows: dict[str, DocsRow],
    label: str,
    platform: str,
    channel: str,
    installer: str,
    axes: str = "",
) -> str | None:
    """The command the docs give for this selection (`axes`: its dependency-axis values as
    "numpy 2.x, torch 2.9"), or None when the docs list no such build."""
    row = rows.get(label)
    if row is None or platform not in row.platforms:
        return None
    pip = row.commands[channel]
    if channel == "release" and row.pypi and platform in row.pypi[1] and row.pypi[2] == axes:
        pip = row.pypi[0]
    if installer == "pip":
        return pip
    return uv_from_pip(pip)


def uv_from_pip(pip: str) -> str:
    """uv's spelling of a pip3 command: `uv pip install`, `--prerelease allow` for `--pre`,
    `--default-index` for `--index-url` (uv deprecates `--index-url`)."""
    words = shlex.split(pip)
    assert words[:2] == ["pip3", "install"], pip
    out = ["uv", "pip", "install"]
    for word in words[2:]:
        if word == "--pre":
            out += ["--prerelease", "allow"]
        elif word == "--index-url":
            out.append("--default-index")
        else:
            out.append(shlex.quote(word))
    return " ".join(out)
