"""The compatibility page's data: the RELEASE.md-style table (`matrix docs`'s own rows), a grid per
release and platform (Python × variant: stable / experimental / not built, with the reason), and
the `matrix diff` of the newest release against the one before it."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from relforge.matrix.describe import python_label
from relforge.matrix.diff import diff_releases, render_markdown
from relforge.matrix.docs import compatibility_rows
from relforge.matrix.expand import candidates
from relforge.matrix.schema import Matrix, Release
from relforge.site.publishedversions import folder_label, platform_label

GridState = Literal["stable", "experimental", "not built"]


@dataclass(frozen=True, kw_only=True)
class GridCell:
    state: GridState
    reason: str = ""


@dataclass(frozen=True, kw_only=True)
class PlatformGrid:
    """One platform of one release: rows are Pythons, columns the wheel folders."""

    release: str
    platform: str
    label: str
    columns: tuple[str, ...]
    rows: tuple[tuple[str, tuple[GridCell, ...]], ...]


@dataclass(frozen=True, kw_only=True)
class CompatibilityPage:
    head: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]
    grids: tuple[PlatformGrid, ...]
    diff_markdown: str
    diff_title: str


def platform_grids(matrix: Matrix, release: Release) -> list[PlatformGrid]:
    wheels = [c for c in candidates(matrix, release) if c.cell.package_type == "wheel"]
    cells = [c.cell for c in wheels]
    grids = []
    for platform in release.platforms:
        # Only the folders offered on this platform (built or excluded by a rule) get a column.
        folders = list(dict.fromkeys(c.upload_subfolder for c in cells if c.platform == platform))
        rows = []
        for python in release.python:
            row = []
            for folder in folders:
                found = [
                    c
                    for c in wheels
                    if c.cell.platform == platform
                    and str(python) in c.cell.pythons  # an abi3 wheel serves several
                    and c.cell.upload_subfolder == folder
                ]
                if any(c.built for c in found):
                    row.append(GridCell(state=next(c.cell.status for c in found if c.built)))
                elif found and found[0].excluded_by is not None:
                    row.append(GridCell(state="not built", reason=found[0].excluded_by.reason))
                else:  # an include rule's folder exists for one Python only
                    row.append(GridCell(state="not built", reason="no cell for this Python"))
            rows.append((python_label(python), tuple(row)))
        grids.append(
            PlatformGrid(
                release=release.name,
                platform=platform,
                label=platform_label(release, platform),
                columns=tuple(folder_label(release, f, cells) for f in folders),
                rows=tuple(rows),
            )
        )
    return grids


def compatibility_page(matrix: Matrix, releases: Sequence[Release]) -> CompatibilityPage:
    """`releases` in file order; the diff compares the newest with the release before it in the
    matrix (so `--release 2.9` still shows what changed since 2.8)."""
    head, rows = compatibility_rows(matrix)
    newest = releases[-1]
    names = list(matrix.releases)
    at = names.index(newest.name)
    if at == 0:
        diff_md, diff_title = "", f"{newest.name} is the first release of the matrix."
    else:
        old = names[at - 1]
        diff = diff_releases(matrix, old, matrix, newest.name)
        diff_md, diff_title = render_markdown(diff), f"What changed from {old} to {newest.name}"
    grids = [g for r in reversed(releases) for g in platform_grids(matrix, r)]
    return CompatibilityPage(
        head=tuple(head),
        rows=tuple(tuple(r) for r in rows),  # every release, as `matrix docs` prints it
        grids=tuple(grids),
        diff_markdown=diff_md,
        diff_title=diff_title,
    )
