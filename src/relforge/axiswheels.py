"""Where the wheels of a cell's dependency axes are cached: one folder per (requirements, index,
platform, Python, ABI), filled by the build before it starts (relforge.builders.depwheels) and
read again by runtime validation, which installs a built wheel against the same wheels."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from relforge.locations import user_cache_dir
from relforge.matrix.cell import Cell

AXIS_WHEELS = "axis-wheels"  # the cache's subfolder


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
