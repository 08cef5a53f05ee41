"""Wheels a cell's build installs, fetched on the host before the (offline) build: those of its
dependency axes, and, for a container, the build requirements.

Each axis value's requirements are downloaded once with `pip download` from the value's index
(or pip's configured one) for the cell's Python and platform, into a cache folder keyed by
requirements + index + platform + Python.  The build gets the union as one local wheel folder
(PIP_FIND_LINKS + PIP_NO_INDEX) and installs the requirements from it, in a venv or container.
A container's build requirements come the same way (pip's configured index), in a folder of
their own: the host builder installs them from its own wheelhouse (relforge.builders.buildenv).
"""

from __future__ import annotations

import os
import re
import shutil
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from packaging.tags import mac_platforms

from relforge.axiswheels import axis_cache_root, cache_folder
from relforge.builders.cachedir import made_once
from relforge.builders.failures import BuildFailure
from relforge.builders.process import run_logged
from relforge.locations import user_cache_dir
from relforge.matrix.cell import Cell

_MANYLINUX = re.compile(r"manylinux_2_(\d+)_(\w+)\Z")
_LEGACY = {17: "manylinux2014", 12: "manylinux2010", 5: "manylinux1"}
REQUIREMENTS = "requirements.txt"  # what to install, beside the wheels
_QUIET = ["--disable-pip-version-check", "--no-input", "--progress-bar", "off"]


@dataclass(frozen=True, kw_only=True)
class DependencyWheels:
    """The wheels of a cell's axes, gathered in one folder, and what to install from it."""

    folder: Path
    requirements: tuple[str, ...]
    files: tuple[str, ...]  # file names, part of the build's cache key


def platforms(platform_tag: str) -> list[str]:
    """The platform tags a wheel for `platform_tag` may use: manylinux_2_28 accepts 2_27…2_5
    and the legacy aliases, musllinux_1_2 accepts 1_1 and 1_0, macosx_14_0 the older macOS
    versions and universal2 (pip's --platform takes each literally)."""
    out: list[str] = []
    for part in platform_tag.split("."):
        mac = part.split("_", 3)
        if mac[0] == "macosx" and len(mac) == 4 and mac[1].isdigit() and mac[2].isdigit():
            # macOS 14 takes the wheels of 11 (and universal2) too, as packaging lists them
            out += mac_platforms((int(mac[1]), int(mac[2])), mac[3])
            continue
        musl = part.split("_", 3)
        if musl[0] == "musllinux" and len(musl) == 4 and musl[1] == "1" and musl[2].isdigit():
            out += [f"musllinux_1_{minor}_{musl[3]}" for minor in range(int(musl[2]), -1, -1)]
            continue
        found = _MANYLINUX.match(part)
        if not found:
            out.append(part)
            continue
        glibc, arch = int(found.group(1)), found.group(2)
        for minor in range(glibc, 4, -1):
            out.append(f"manylinux_2_{minor}_{arch}")
            if minor in _LEGACY and arch in ("x86_64", "i686", "aarch64"):
                if arch == "aarch64" and minor < 17:
                    continue
                out.append(f"{_LEGACY[minor]}_{arch}")
    return list(dict.fromkeys(out))


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
    folder = cache_folder(cell, install, index, root)

    def make(tmp: Path) -> object:
        argv = download_argv(cell, install, index, tmp)
        fetch_env = {k: v for k, v in env.items() if not k.startswith("PIP_")}
        if not index:  # pip's configured sources stay in force
            fetch_env.update({k: v for k, v in os.environ.items() if k.startswith("PIP_")})
        run_logged(argv, cwd=tmp, env=fetch_env, log=log, deadline=deadline, what=what)
        return {
            "requirements": install,
            "index": index,
            "files": sorted(p.name for p in tmp.iterdir()),
        }

    return made_once(folder, make)


def download_argv(cell: Cell, install: list[str], index: str, dest: Path) -> list[str]:
    """`pip download` of binary wheels for the cell's interpreter and platform."""
    argv = [sys.executable, "-m", "pip"]
    if index:
        argv += ["--isolated"]  # only this index, not the machine's extra sources
    argv += ["download", *_QUIET, "--dest", str(dest), "--only-binary=:all:"]
    if index:
        argv += ["--index-url", index]
    if cell.python:
        argv += ["--python-version", cell.python.rstrip("t"), "--implementation", "cp"]
        if cell.abi_tag:  # the build interpreter's own ABI (an abi3 cell's is not "abi3")
            own = "cp" + cell.python.replace(".", "")
            argv += ["--abi", own, "--abi", "abi3", "--abi", "none"]
    for tag in platforms(cell.platform_tag or ""):
        argv += ["--platform", tag]
    return [*argv, *install]


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
