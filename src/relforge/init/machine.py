"""What `relforge init` learns about the machine and the sources, so the starter matrix builds
here: the platform tag this host's glibc can build (PEP 600: `manylinux_2_<minor>_<arch>`), the
Python versions a builder can find (the host's interpreters, which `relforge builder-image`
also copies into its image), whether the project has CUDA code at all, the nvcc that builds
it (its CUDA version and the architectures it supports), and the wheels of a dependency (torch)
pip can install here without a network (its find-links folders)."""

from __future__ import annotations

import configparser
import os
import platform
import re
import shutil
import subprocess
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from packaging.utils import InvalidWheelFilename, canonicalize_name, parse_wheel_filename
from packaging.version import Version

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


# The CUDA architectures a starter's variant builds for, newest toolkits' minimum first; those
# the found nvcc lists (`nvcc --list-gpu-arch`) are kept, the last one also as PTX.
PREFERRED_ARCHES = ("7.5", "8.0", "8.6", "9.0", "10.0", "12.0")
_NVCC_RELEASE = re.compile(r"release (\d+)\.(\d+), V(\d+\.\d+\.\d+)")
_COMPUTE = re.compile(r"compute_(\d+)")


@dataclass(frozen=True, kw_only=True)
class Nvcc:
    """The CUDA compiler found on this machine."""

    path: str
    version: str  # 13.0.88 (nvcc's own V…)
    major: int
    minor: int
    arch_list: tuple[str, ...]  # 7.5 … 12.0+PTX

    @property
    def variant(self) -> str:
        return f"cu{self.major}{self.minor}"


def nvcc_candidates(env: Mapping[str, str] | None = None) -> list[Path]:
    """Where nvcc is looked for, in order: PATH, $CUDA_HOME/bin, /usr/local/cuda*/bin (newest
    first)."""
    env = os.environ if env is None else env
    found: list[Path] = []
    on_path = shutil.which("nvcc", path=env.get("PATH", ""))
    if on_path:
        found.append(Path(on_path))
    for var in ("CUDA_HOME", "CUDA_PATH"):
        if env.get(var):
            found.append(Path(env[var]) / "bin" / "nvcc")
    local = sorted(Path("/usr/local").glob("cuda*/bin/nvcc"), key=_cuda_dir_order, reverse=True)
    return found + local


def _cuda_dir_order(path: Path) -> tuple[int, ...]:
    digits = re.findall(r"\d+", path.parent.parent.name)
    return tuple(int(d) for d in digits) or (0,)


def find_nvcc(candidates: Iterable[Path] | None = None) -> Nvcc | None:
    """The first nvcc that answers `--version` (and `--list-gpu-arch`), or None."""
    for path in nvcc_candidates() if candidates is None else candidates:
        if not path.is_file():
            continue
        version = _ask(path, "--version")
        found = _NVCC_RELEASE.search(version or "")
        if found is None:
            continue
        arches = set(_COMPUTE.findall(_ask(path, "--list-gpu-arch") or ""))
        kept = [a for a in PREFERRED_ARCHES if a.replace(".", "") in arches] if arches else []
        chosen = kept or list(PREFERRED_ARCHES)
        chosen[-1] += "+PTX"
        return Nvcc(
            path=str(path),
            version=found.group(3),
            major=int(found.group(1)),
            minor=int(found.group(2)),
            arch_list=tuple(chosen),
        )
    return None


def _ask(path: Path, flag: str) -> str | None:
    try:
        done = subprocess.run(
            [str(path), flag], capture_output=True, text=True, timeout=60, check=False
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout if done.returncode == 0 else None


@dataclass(frozen=True, kw_only=True)
class LocalWheels:
    """The newest wheels of one distribution in pip's find-links folders."""

    name: str
    version: Version
    pythons: tuple[str, ...]  # X.Y of its cpXY wheels for this platform
    folder: str


def find_links_folders(env: Mapping[str, str] | None = None) -> list[Path]:
    """The local folders pip takes wheels from: PIP_FIND_LINKS and `find-links` in pip's
    configuration files."""
    env = os.environ if env is None else env
    values = env.get("PIP_FIND_LINKS", "").split()
    for config in _pip_configs(env):
        parser = configparser.ConfigParser(interpolation=None)
        try:
            parser.read(config, encoding="utf-8")
        except (configparser.Error, OSError, UnicodeDecodeError):
            continue
        for section in ("global", "install", "wheel"):
            values += parser.get(section, "find-links", fallback="").split()
    folders: list[Path] = []
    for value in values:
        path = Path(value.removeprefix("file://"))
        if "://" not in value.removeprefix("file://") and path.is_dir() and path not in folders:
            folders.append(path)
    return folders


def _pip_configs(env: Mapping[str, str]) -> list[Path]:
    home = Path(env.get("HOME", "~")).expanduser()
    xdg = env.get("XDG_CONFIG_DIRS", "/etc/xdg").split(":")
    paths = [Path("/etc/pip.conf"), *(Path(d) / "pip" / "pip.conf" for d in xdg)]
    paths += [home / ".pip" / "pip.conf", home / ".config" / "pip" / "pip.conf"]
    if env.get("PIP_CONFIG_FILE"):
        paths.append(Path(env["PIP_CONFIG_FILE"]))
    return [p for p in paths if p.is_file()]


def local_wheels(name: str, arch: str, folders: Iterable[Path] | None = None) -> LocalWheels | None:
    """The newest version of `name` among the wheels in `folders` (default: pip's find-links)
    that install on Linux `arch`, with the CPythons they are for."""
    best: dict[Version, tuple[set[str], str]] = {}
    for folder in find_links_folders() if folders is None else folders:
        for wheel in sorted(folder.glob("*.whl")):
            try:
                dist, version, _build, tags = parse_wheel_filename(wheel.name)
            except InvalidWheelFilename:
                continue
            if dist != canonicalize_name(name):
                continue
            fits = [t for t in tags if t.platform == "any" or t.platform.endswith(arch)]
            if not fits:
                continue
            pythons = best.setdefault(version, (set(), str(folder)))[0]
            for tag in fits:
                found = re.fullmatch(r"cp3(\d+)", tag.interpreter)
                if found:
                    pythons.add(f"3.{found.group(1)}")
    if not best:
        return None
    version = max(best)
    served, where = best[version]
    return LocalWheels(
        name=name,
        version=version,
        pythons=tuple(sorted(served, key=Version)),
        folder=where,
    )
