"""Where the wheels of a cell's dependency axes are cached: one folder per (requirements, index,
platform, Python, ABI), filled by the build before it starts (relforge.builders.inputs.depwheels)
and by runtime validation for every other Python an abi3 cell serves (the build fetches them for
its own Python only); both install against the same wheels.

Each folder is made once with `pip download` of binary wheels for the cell's Python and
platform (`download_argv`), from the axis value's index or pip's configured one.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from packaging.tags import mac_platforms

from relforge.cachedir import made_once
from relforge.locations import user_cache_dir
from relforge.matrix.cell import Cell
from relforge.wheelplatform import legacy_manylinux, parse_platform_tag

AXIS_WHEELS = "axis-wheels"  # the cache's subfolder
_QUIET = ["--disable-pip-version-check", "--no-input", "--progress-bar", "off"]

Runner = Callable[[Sequence[str], Path, Mapping[str, str]], None]
"""Runs (argv, cwd, env) and raises when it fails; the build's logs, validation's collects."""


def axis_cache_root(cache_root: Path | None = None) -> Path:
    return (cache_root or user_cache_dir()) / AXIS_WHEELS


def cached_folders(cell: Cell, cache_root: Path | None = None) -> list[Path]:
    """The filled cache folders of the cell's axis values (all of them, or none)."""
    root = axis_cache_root(cache_root)
    folders = [
        cache_folder(cell, list(install), cell.axis_index.get(axis, ""), root)
        for axis, install in cell.axis_install.items()
    ]
    return folders if all((f / ".complete").exists() for f in folders) else []


def cache_folder(cell: Cell, install: list[str], index: str, root: Path) -> Path:
    ident = [sorted(install), index, cell.platform_tag or "", cell.python or "", cell.abi_tag]
    return root / hashlib.sha256(json.dumps(ident).encode()).hexdigest()[:20]


def fetched_folders(
    cell: Cell, *, run: Runner, env: Mapping[str, str], cache_root: Path | None = None
) -> list[Path]:
    """The cache folders of the cell's axis values for the cell's Python, each downloaded the
    first time it is asked for (`run` raises when a download fails; nothing half-filled stays)."""
    root = axis_cache_root(cache_root)
    return [
        fetch_folder(cell, list(install), cell.axis_index.get(axis, ""), root, run=run, env=env)
        for axis, install in cell.axis_install.items()
    ]


def fetch_folder(
    cell: Cell,
    install: list[str],
    index: str,
    root: Path,
    *,
    run: Runner,
    env: Mapping[str, str],
) -> Path:
    """The cache folder of `install` from `index` for the cell's Python and platform, made
    once: `pip download` with `env` (with an index of its own, none of pip's settings; else
    pip's configured sources stay in force)."""
    folder = cache_folder(cell, install, index, root)

    def make(tmp: Path) -> object:
        fetch_env = {k: v for k, v in env.items() if not k.startswith("PIP_")}
        if not index:
            fetch_env.update({k: v for k, v in os.environ.items() if k.startswith("PIP_")})
        run(download_argv(cell, install, index, tmp), tmp, fetch_env)
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
        if cell.abi_tag:  # the interpreter's own ABI (an abi3 cell's is not "abi3")
            own = "cp" + cell.python.replace(".", "")
            argv += ["--abi", own, "--abi", "abi3", "--abi", "none"]
    for tag in platforms(cell.platform_tag or ""):
        argv += ["--platform", tag]
    return [*argv, *install]


def platforms(platform_tag: str) -> list[str]:
    """The platform tags a wheel for `platform_tag` may use: manylinux_2_28 accepts 2_27…2_5
    and the legacy aliases, musllinux_1_2 accepts 1_1 and 1_0, macosx_14_0 the older macOS
    versions and universal2 (pip's --platform takes each literally)."""
    out: list[str] = []
    for part in platform_tag.split("."):
        tag = parse_platform_tag(part)
        if tag is None or tag.version is None or tag.legacy is not None:
            out.append(part)
            continue
        (major, newest), arch = tag.version, tag.arch
        if tag.family == "macosx":
            # macOS 14 takes the wheels of 11 (and universal2) too, as packaging lists them
            out += mac_platforms(tag.version, arch)
        elif tag.family == "musllinux" and major == 1:
            out += [f"musllinux_1_{minor}_{arch}" for minor in range(newest, -1, -1)]
        elif tag.family == "manylinux" and major == 2:
            for minor in range(newest, 4, -1):
                out.append(f"manylinux_2_{minor}_{arch}")
                legacy = legacy_manylinux((2, minor))
                if legacy and arch in ("x86_64", "i686", "aarch64"):
                    if arch == "aarch64" and minor < 17:
                        continue
                    out.append(f"{legacy}_{arch}")
        else:
            out.append(part)
    return list(dict.fromkeys(out))
