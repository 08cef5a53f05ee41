"""Which artifact belongs to which cell: expected file names, missing, extra and duplicates."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from packaging.utils import InvalidWheelFilename, canonicalize_name, parse_wheel_filename
from packaging.version import Version

from relforge.matrix.cell import Cell
from relforge.matrix.wheeltags import cell_tags
from relforge.validate.archive import archive_filename


def expected_filename(cell: Cell, project: str) -> str:
    """`{name}-{version}-{python}-{abi}-{platform}.whl` as the binary distribution format
    spells it: the name normalized with underscores, the version normalized (local part kept);
    a native archive's name for an archive cell."""
    assert cell.version is not None, "cells must be stamped for a channel"
    if cell.package_type == "archive":
        return archive_filename(cell, project)
    name = canonicalize_name(project).replace("-", "_")
    version = Version(cell.version)
    return f"{name}-{version}-{cell.python_tag}-{cell.abi_tag}-{cell.platform_tag}.whl"


@dataclass(frozen=True, kw_only=True)
class Artifact:
    """A file to validate; `cell_id` when a manifest says which cell it was built for;
    from an index: the link's `#sha256=` (None: the link had none) and the downloaded bytes'."""

    path: Path
    cell_id: str | None = None
    from_index: bool = False
    index_sha256: str | None = None
    sha256: str | None = None


@dataclass(kw_only=True)
class Binding:
    """Cells with their artifacts, and the artifacts no cell claims."""

    by_cell: dict[str, list[Artifact]] = field(default_factory=dict)
    extra: list[Artifact] = field(default_factory=list)

    def missing(self, cells: Sequence[Cell]) -> list[Cell]:
        return [c for c in cells if not self.by_cell.get(c.id)]


def bind(cells: Sequence[Cell], artifacts: Sequence[Artifact], project: str) -> Binding:
    """Manifest artifacts go to their cell; the others by expected file name, then — so a wrong
    tag is reported on the right cell — to the one cell still without a file that has the same
    name, version, python and ABI tags."""
    known = {c.id: c for c in cells}
    names = {expected_filename(c, project): c for c in cells}
    out = Binding(by_cell={c.id: [] for c in cells})
    loose: list[Artifact] = []
    for artifact in artifacts:
        if artifact.cell_id is not None:
            if artifact.cell_id in known:
                out.by_cell[artifact.cell_id].append(artifact)
            else:
                out.extra.append(artifact)
        elif artifact.path.name in names:
            out.by_cell[names[artifact.path.name].id].append(artifact)
        else:
            loose.append(artifact)
    for artifact in loose:
        cell = _same_tags(artifact.path.name, cells, project) or _near_cell(
            artifact.path.name, [c for c in cells if not out.by_cell[c.id]], project
        )
        if cell is None:
            out.extra.append(artifact)
        else:
            out.by_cell[cell.id].append(artifact)
    return out


def _same_tags(file_name: str, cells: Sequence[Cell], project: str) -> Cell | None:
    """The cell whose name, version and tags the file has (it differs only by a build tag)."""
    try:
        name, version, _, tags = parse_wheel_filename(file_name)
    except InvalidWheelFilename:
        return None
    for c in cells:
        want = cell_tags(c)
        same = c.version is not None and Version(c.version) == version
        if same and name == canonicalize_name(project) and {str(t) for t in tags} == want:
            return c
    return None


def _near_cell(file_name: str, free: Sequence[Cell], project: str) -> Cell | None:
    try:
        name, version, _, tags = parse_wheel_filename(file_name)
    except InvalidWheelFilename:
        return None
    interpreters = {(t.interpreter, t.abi) for t in tags}
    near = [
        c
        for c in free
        if c.version is not None
        and name == canonicalize_name(project)
        and Version(c.version) == version
        and interpreters == {(c.python_tag, c.abi_tag)}
    ]
    return near[0] if len(near) == 1 else None
