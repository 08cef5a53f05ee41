"""What a multi-Python builder image adds to its base, as entries of a `docker build` context:
each host CPython manylinux-style (a relocated copy at /opt/_internal/cpython-X.Y.Z[t] without its
test suite, its static libraries (libpython*.a: extension modules never link libpython, and the
manylinux images delete them too) and the host's site-packages, its build configuration moved to
the new prefix and rid of the host's rpath (`relocation`), pip/setuptools/wheel from
relforge's wheelhouse, and a link /opt/python/cpXY-cpXY[t] to it), CUDA toolkits at
/usr/local/cuda-X.Y; and the digest of all of it (paths, sizes, modes, mtimes) that names the
image."""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from relforge.builders.images.pythons import HostPython

RECIPE = 3  # bump when the image layout changes, so cached images are not reused
_KEPT_BIN = ("python",)  # bin/ entries kept: python* (pip, idle, pydoc scripts name the host)
_BUILD_CONFIG = "_sysconfigdata_"  # sysconfig's build configuration: moved to the image's prefix


@dataclass(frozen=True, kw_only=True)
class CudaToolkit:
    home: Path  # on the host, resolved
    version: str  # "13.0"


@dataclass(frozen=True, kw_only=True)
class ContextEntry:
    source: Path | None  # None: a directory or a symlink made by us
    arcname: str  # inside the context: rootfs/…
    link: str | None = None  # symlink target
    patch_rpath: str | None = None  # set this RUNPATH on the copied ELF file
    replace: tuple[tuple[str, str], ...] = ()  # text replacements in the copied file

    def rewritten(self) -> bytes:
        """The copy's bytes: the source's with the replacements made."""
        assert self.source is not None
        data = self.source.read_bytes()
        for old, new in self.replace:
            data = data.replace(old.encode(), new.encode())
        return data


@dataclass(frozen=True, kw_only=True)
class ImageRoot:
    """The root a multi-Python image adds to its base."""

    pythons: list[HostPython]
    layers: dict[str, Path]  # tag → site layer
    cuda: list[CudaToolkit]
    base: str

    def entries(self) -> Iterator[ContextEntry]:
        for python in self.pythons:
            yield from python_entries(python, self.layers.get(python.tag))
        for toolkit in self.cuda:
            yield from _tree(toolkit.home, f"usr/local/cuda-{toolkit.version}")
        if len(self.cuda) == 1:
            yield ContextEntry(
                source=None,
                arcname="rootfs/usr/local/cuda",
                link=f"/usr/local/cuda-{self.cuda[0].version}",
            )

    def digest(self, base_id: str, requirements: tuple[str, ...]) -> str:
        """A digest of every input: paths, sizes, modes and mtimes of the copied files."""
        sha = hashlib.sha256()
        head = {"recipe": RECIPE, "base": base_id, "requirements": sorted(requirements)}
        sha.update(json.dumps(head, sort_keys=True).encode())
        for entry in self.entries():
            stat = entry.source.lstat() if entry.source else None
            facts: list[object] = [entry.arcname, entry.link, entry.patch_rpath, entry.replace]
            if stat is not None:
                facts += [stat.st_size, stat.st_mode, stat.st_mtime_ns]
            sha.update(json.dumps(facts).encode() + b"\n")
        return sha.hexdigest()


def python_entries(python: HostPython, layer: Path | None) -> Iterator[ContextEntry]:
    link = f"rootfs/opt/python/{python.tag}"
    if python.system:  # the image's own /usr interpreter of the same version
        yield ContextEntry(source=None, arcname=link)
        yield ContextEntry(source=None, arcname=f"{link}/bin")
        target = f"/usr/bin/python{python.wanted}"
        for name in ("python", "python3"):
            yield ContextEntry(source=None, arcname=f"{link}/bin/{name}", link=target)
        return
    home = python.home.lstrip("/")
    prefix = python.prefix.resolve()
    stdlib = python.stdlib.resolve().relative_to(prefix).as_posix()  # lib/python3.12
    skip = frozenset({f"{stdlib}/test", f"{stdlib}/site-packages"})
    exe = python.executable.resolve()
    moved = relocation(prefix, f"/{home}")
    for entry in _tree(prefix, home, skip=skip):
        rel = entry.arcname.removeprefix(f"rootfs/{home}/")
        if rel.startswith("bin/") and not rel[4:].startswith(_KEPT_BIN):
            continue
        if rel.endswith(".a"):  # libpython3.X.a (or a link to it): ~60 MB, never linked
            continue
        name = rel.rsplit("/", 1)[-1]
        if name.startswith(_BUILD_CONFIG) and "__pycache__/" in rel:
            continue  # the bytecode of a rewritten file: Python compiles the new one
        if entry.source is not None and entry.source == exe:
            entry = ContextEntry(source=exe, arcname=entry.arcname, patch_rpath="$ORIGIN/../lib")
        elif entry.link is None and name.startswith(_BUILD_CONFIG) and name.endswith(".py"):
            entry = ContextEntry(source=entry.source, arcname=entry.arcname, replace=moved)
        yield entry
    yield ContextEntry(source=None, arcname=f"rootfs/{home}/{stdlib}/site-packages")
    if layer is not None:
        for entry in _tree(
            layer, f"{home}/{stdlib}/site-packages", skip=frozenset({"bin", ".complete"})
        ):
            if entry.arcname != f"rootfs/{home}/{stdlib}/site-packages":
                yield entry
    yield ContextEntry(source=None, arcname=link, link=f"/{home}")


def relocation(prefix: Path, home: str) -> tuple[tuple[str, str], ...]:
    """The text replacements that move an interpreter's build configuration (sysconfig's
    `_sysconfigdata_*.py`: LDSHARED, LIBDIR, …) from its host prefix to its home in the image,
    less the rpath into the host prefix that an `--enable-shared` build (pyenv) puts into
    LDSHARED: every setuptools extension linked with it would get a RUNPATH of the build
    machine (validation's RF-V043); extensions never link libpython on Linux."""
    lib = f"{prefix}/lib"
    return (
        (f" -Wl,-rpath,{lib}", ""),
        (f"-Wl,-rpath,{lib}", ""),
        (f" -Wl,-rpath={lib}", ""),
        (f"-Wl,-rpath={lib}", ""),
        (str(prefix), home),
    )


def _tree(root: Path, dest: str, *, skip: frozenset[str] = frozenset()) -> Iterator[ContextEntry]:
    """Every directory, file and symlink below `root`, as `rootfs/<dest>/…`, sorted."""
    yield ContextEntry(source=root, arcname=f"rootfs/{dest}")
    for dirpath, dirnames, filenames in os.walk(root):
        here = Path(dirpath)
        rel_dir = here.relative_to(root).as_posix()
        keep = []
        for name in sorted(dirnames):
            rel = name if rel_dir == "." else f"{rel_dir}/{name}"
            if rel in skip:
                continue
            if (here / name).is_symlink():
                filenames.append(name)  # os.walk lists a link to a directory as a directory
                continue
            keep.append(name)
            yield ContextEntry(source=here / name, arcname=f"rootfs/{dest}/{rel}")
        dirnames[:] = keep
        for name in sorted(filenames):
            rel = name if rel_dir == "." else f"{rel_dir}/{name}"
            if rel in skip:
                continue
            path = here / name
            link = str(path.readlink()) if path.is_symlink() else None
            yield ContextEntry(source=path, arcname=f"rootfs/{dest}/{rel}", link=link)
