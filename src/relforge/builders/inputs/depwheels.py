"""Wheels a cell's build installs, fetched on the host before the (offline) build: those of its
dependency axes, and, for a container, the build requirements.

Each axis value's requirements are downloaded once with `pip download` from the value's index
(or pip's configured one) for the cell's Python and platform, into a cache folder keyed by
requirements + index + platform + Python.  The build gets the union as one local wheel folder
(PIP_FIND_LINKS + PIP_NO_INDEX) and installs the requirements from it, in a venv or container.
A container's build requirements come the same way (pip's configured index), in a folder of
their own: the host builder installs them from its own wheelhouse
(relforge.builders.inputs.buildenv).
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from relforge.axiswheels import axis_cache_root, fetch_folder
from relforge.builders.control import BuildFailure, run_logged
from relforge.locations import user_cache_dir
from relforge.matrix.cell import Cell

REQUIREMENTS = "requirements.txt"  # what to install, beside the wheels


@dataclass(frozen=True, kw_only=True)
class DependencyWheels:
    """The wheels of a cell's axes, gathered in one folder, and what to install from it."""

    folder: Path
    requirements: tuple[str, ...]
    files: tuple[str, ...]  # file names, part of the build's cache key


def fetch_axis_wheels(
    cell: Cell,
    dest: Path,
    *,
    env: Mapping[str, str],
    log: Path,
    deadline: float,
    cache_root: Path | None = None,
) -> DependencyWheels | None:
    """Fill `dest` with the wheels of every axis of `cell` (None when it has no axes)."""
    if not cell.axis_install:
        return None
    root = axis_cache_root(cache_root)
    dest.mkdir(parents=True, exist_ok=True)
    requirements: list[str] = []
    for axis, install in cell.axis_install.items():
        index = cell.axis_index.get(axis, "")
        if "{" in index:
            raise BuildFailure(f"axis {axis}: the index {index!r} needs a channel to build on")
        folder = _fetched(cell, list(install), index, root, env=env, log=log, deadline=deadline)
        for wheel in folder.glob("*.whl"):
            target = dest / wheel.name
            if not target.exists():
                _link_or_copy(wheel, target)
        requirements += install
    (dest / REQUIREMENTS).write_text("".join(f"{r}\n" for r in requirements), encoding="utf-8")
    files = tuple(sorted(p.name for p in dest.glob("*.whl")))
    return DependencyWheels(folder=dest, requirements=tuple(requirements), files=files)


def fetch_build_wheels(
    cell: Cell,
    requirements: list[str],
    dest: Path,
    *,
    log: Path,
    deadline: float,
    cache_root: Path | None = None,
) -> Path:
    """Fill `dest` with the wheels `requirements` install for the cell's Python and platform,
    and write them to its requirements.txt; returns `dest`."""
    dest.mkdir(parents=True, exist_ok=True)
    if requirements:
        root = (cache_root or user_cache_dir()) / "build-wheels"
        folder = _fetched(
            cell, requirements, "", root, env={}, log=log, deadline=deadline,
            what="fetching the build requirements for the container (pip download)",
        )  # fmt: skip
        for wheel in folder.glob("*.whl"):
            _link_or_copy(wheel, dest / wheel.name)
    (dest / REQUIREMENTS).write_text("".join(f"{r}\n" for r in requirements), encoding="utf-8")
    return dest


def _fetched(
    cell: Cell,
    install: list[str],
    index: str,
    root: Path,
    *,
    env: Mapping[str, str],
    log: Path,
    deadline: float,
    what: str = "fetching the axis wheels (pip download)",
) -> Path:
    def run(argv: Sequence[str], cwd: Path, fetch_env: Mapping[str, str]) -> None:
        run_logged(argv, cwd=cwd, env=fetch_env, log=log, deadline=deadline, what=what)

    return fetch_folder(cell, install, index, root, run=run, env=env)


def pip_find_links_env(wheels: DependencyWheels, folder: str) -> dict[str, str]:
    """The variables that make every pip of the build install from the local folder only."""
    return {
        "PIP_FIND_LINKS": folder,
        "PIP_NO_INDEX": "1",
        "RELFORGE_AXIS_WHEELS": folder,
        "RELFORGE_AXIS_INSTALL": "\n".join(wheels.requirements),
    }


def _link_or_copy(src: Path, dest: Path) -> None:
    try:
        os.link(src, dest)
    except OSError:
        shutil.copy2(src, dest)
