"""How cells become GitHub Actions jobs: one workflow per (OS, package type), each split into
job matrices of at most 256 entries (GitHub's limit), and the condensed set pull requests build.

Matrix entries are a projection of the Cell JSON contract (`Cell.to_json()`): the same field
names and values, limited to what a job needs to route and name itself.  Everything else the
build needs, `relforge build --cell ID` reads from the matrix file, so no fact is copied twice.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from relforge.matrix.cell import Cell
from relforge.matrix.values import PythonVersion
from relforge.workflows.runners import cell_builder

MAX_MATRIX_JOBS = 256  # GitHub Actions: "a matrix can generate a maximum of 256 jobs per run"

ENTRY_FIELDS: tuple[str, ...] = (
    "id",
    "package_type",
    "platform",
    "os",
    "arch",
    "python",
    "accelerator",
    "variant",
    "build_runner",
    "test_runner",
)

T = TypeVar("T")


@dataclass(frozen=True, kw_only=True)
class Shard:
    """One job matrix: `job_id` is the job's key in the workflow."""

    job_id: str
    entries: tuple[Mapping[str, Any], ...]


@dataclass(frozen=True, kw_only=True)
class CellGroup:
    """The cells of one OS and package type: one generated workflow file."""

    os: str
    package_type: str
    cells: tuple[Cell, ...]
    shards: tuple[Shard, ...]
    pr_shards: tuple[Shard, ...]

    @property
    def name(self) -> str:
        return f"{self.os}-{self.package_type}"

    @property
    def pr_cells(self) -> int:
        return sum(len(s.entries) for s in self.pr_shards)


def matrix_entry(cell: Cell, *extra: str) -> dict[str, Any]:
    """A job-matrix entry: contract fields of the cell, plus where it builds (`builder`: docker
    in its image, or the runner's host).  A cell whose platform names no test
    runner for its accelerator is tested on its build runner (static checks need no device).
    GitHub's workflow schema allows no null in a matrix, so null (a native archive's python)
    becomes ""."""
    data = cell.to_json()
    entry = {key: "" if data[key] is None else data[key] for key in (*ENTRY_FIELDS, *extra)}
    entry["test_runner"] = cell.test_runner or cell.build_runner or ""
    entry["builder"] = cell_builder(cell)
    return entry


def split(items: Sequence[T], limit: int = MAX_MATRIX_JOBS) -> list[list[T]]:
    """Contiguous chunks of near-equal size, none larger than `limit`, order kept."""
    if limit < 1:
        raise ValueError("limit must be at least 1")
    if not items:
        return []
    count = math.ceil(len(items) / limit)
    size, rest = divmod(len(items), count)
    chunks, start = [], 0
    for index in range(count):
        end = start + size + (1 if index < rest else 0)
        chunks.append(list(items[start:end]))
        start = end
    return chunks


def shards(
    cells: Sequence[Cell],
    prefix: str,
    limit: int = MAX_MATRIX_JOBS,
    entry: Callable[[Cell], Mapping[str, Any]] = matrix_entry,
) -> tuple[Shard, ...]:
    """Job matrices `prefix-1`, `prefix-2`, … (numbered even when there is one, so a job keeps
    its id when the matrix grows past the limit)."""
    return tuple(
        Shard(job_id=f"{prefix}-{n}", entries=tuple(entry(c) for c in chunk))
        for n, chunk in enumerate(split(cells, limit), start=1)
    )


def condensed(cells: Sequence[Cell]) -> list[Cell]:
    """What a pull request builds: per platform and accelerator variant, the newest Python
    (GIL-enabled preferred; the newest there is where that one is excluded); one native archive
    per platform and variant; no one-off extra cells.  Order follows `cells`."""
    best: dict[tuple[str, str, str], Cell] = {}
    for cell in cells:
        if cell.extra_of is not None:
            continue
        key = (cell.package_type, cell.platform, cell.variant)
        current = best.get(key)
        if current is None or _newer(cell, current):
            best[key] = cell
    chosen = {c.id for c in best.values()}
    return [c for c in cells if c.id in chosen]


def _newer(cell: Cell, than: Cell) -> bool:
    if cell.python is None or than.python is None:
        return False  # native archives: keep the first (expansion order)
    return _python_key(cell.python) > _python_key(than.python)


def _python_key(text: str) -> tuple[bool, PythonVersion]:
    python = PythonVersion.parse(text)
    return (not python.free_threaded, python)


def group_cells(cells: Sequence[Cell], limit: int = MAX_MATRIX_JOBS) -> list[CellGroup]:
    """Cells grouped by (OS, package type) in order of first appearance, each group sharded."""
    groups: dict[tuple[str, str], list[Cell]] = {}
    for cell in cells:
        groups.setdefault((cell.os, cell.package_type), []).append(cell)
    return [
        CellGroup(
            os=os_name,
            package_type=package_type,
            cells=tuple(members),
            shards=shards(members, "build", limit),
            pr_shards=shards(condensed(members), "pr", limit),
        )
        for (os_name, package_type), members in groups.items()
    ]


def runner_labels(cells: Sequence[Cell]) -> list[str]:
    """Every runner label the generated jobs run on, sorted (e.g. for actionlint's
    `self-hosted-runner.labels`)."""
    labels: set[str] = set()
    for cell in cells:
        labels.update(label for label in (cell.build_runner, cell.test_runner) if label)
    return sorted(labels)
