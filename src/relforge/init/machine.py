"""What `relforge init` learns about the machine and the sources, so the starter matrix builds
here: the platform tag this host's glibc can build (PEP 600: `manylinux_2_<minor>_<arch>`), the
Python versions a builder can find (the host's interpreters, which `relforge builder-image`
also copies into its image), and whether the project has CUDA code at all."""

from __future__ import annotations

import os
import platform
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from relforge.interpreters import find_interpreter

# The image the starter falls back to on a host without glibc (macOS, musl): manylinux_2_28.
FALLBACK_GLIBC = (2, 28)
_ARCHES = {"amd64": "x86_64", "arm64": "aarch64"}
_GLIBC = re.compile(r"^glibc (\d+)\.(\d+)")
# Files that hold CUDA code, and build files that enable it (setuptools, CMake).
CUDA_SUFFIXES = (".cu", ".cuh")
_CUDA_BUILD = (
    ("setup.py", re.compile(r"\bCUDAExtension\b")),
    ("CMakeLists.txt", re.compile(r"\bLANGUAGES\b[^)]*\bCUDA\b|enable_language\s*\(\s*CUDA")),
)
_SKIPPED_DIRS = frozenset(
    {".git", ".hg", ".relforge", ".venv", "venv", "node_modules", "dist", "build", "__pycache__"}
)
MAX_FILES = 20_000  # a source tree larger than this is not searched to the end


@dataclass(frozen=True, kw_only=True)
class HostPlatform:
    """The Linux platform the starter's wheels are built for, and why this tag."""

    arch: str  # x86_64, aarch64
    glibc: tuple[int, int]
    from_host: bool  # False: this host has no glibc; the tag of a manylinux_2_28 image

    @property
    def name(self) -> str:
        return f"linux-{self.arch}"

    @property
    def tag(self) -> str:
        return f"manylinux_{self.glibc[0]}_{self.glibc[1]}_{self.arch}"

    @property
    def why(self) -> str:
        glibc = ".".join(map(str, self.glibc))
        if self.from_host:
            return (
                f"platform tag {self.tag} from this host's glibc {glibc}: the oldest Linux a "
                "wheel built here runs on (a manylinux image with an older glibc builds for "
                "more machines: then write its tag)"
            )
        return (
            f"platform tag {self.tag}: this host has no glibc, so the wheels are built in a "
            f"manylinux image with glibc {glibc} (`--builder docker`)"
        )


def host_platform() -> HostPlatform:
    """This host's arch and glibc (os.confstr names the C library actually loaded)."""
    machine = platform.machine().lower()
    arch = _ARCHES.get(machine, machine) or "x86_64"
    try:
        libc = os.confstr("CS_GNU_LIBC_VERSION") or ""
    except (ValueError, OSError, AttributeError):  # not a glibc system, or no confstr
        libc = ""
    found = _GLIBC.match(libc)
    if platform.system() != "Linux" or found is None:
        return HostPlatform(arch="x86_64", glibc=FALLBACK_GLIBC, from_host=False)
    return HostPlatform(arch=arch, glibc=(int(found.group(1)), int(found.group(2))), from_host=True)


def python_on_host(version: str) -> bool:
    """Whether a builder here can provide CPython `version` (PATH, pyenv, uv)."""
    return find_interpreter(version) is not None


def split_pythons(
    pythons: Iterable[str], available: Callable[[str], bool] = python_on_host
) -> tuple[list[str], list[str]]:
    """(the versions a builder here has, the ones it has not); all of them when it has none,
    so the matrix still lists what the project supports."""
    wanted = list(pythons)
    here = [p for p in wanted if available(p)]
    if not here:
        return wanted, []
    return here, [p for p in wanted if p not in here]


def cuda_sources(root: Path) -> list[str]:
    """Paths (relative to `root`, at most three) that show the project has CUDA code: `.cu` and
    `.cuh` files, a setup.py using CUDAExtension, a CMakeLists.txt enabling CUDA."""
    found: list[str] = []
    seen = 0
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d not in _SKIPPED_DIRS)
        for name in sorted(filenames):
            seen += 1
            path = Path(dirpath) / name
            if name.endswith(CUDA_SUFFIXES) or _build_file_uses_cuda(path):
                found.append(path.relative_to(root).as_posix())
                if len(found) == 3:
                    return found
        if seen > MAX_FILES:
            break
    return found


def _build_file_uses_cuda(path: Path) -> bool:
    for name, pattern in _CUDA_BUILD:
        if path.name == name:
            try:
                return bool(pattern.search(path.read_text(encoding="utf-8", errors="replace")))
            except OSError:
                return False
    return False
