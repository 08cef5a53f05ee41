"""Real macOS and Windows wheels from PyPI, for tests of Mach-O and PE validation: each pinned by
project, version, file name and sha256, fetched once with `pip download` into a cache folder
shared by test runs and workers (`$RELFORGE_TEST_CACHE`, else `~/.cache/relforge/test-wheels`).

- simplejson 4.3.0 for CPython 3.13 has all five plain kinds (about 100 KB each): one extension,
  `simplejson/_speedups…`, linking only system libraries;
- shapely 2.2.0 for CPython 3.13 bundles GEOS: delocate's `shapely/.dylibs/` on macOS (the
  extensions load `@loader_path/.dylibs/libgeos_c….dylib`), delvewheel's `shapely.libs/` with
  hash-mangled DLL names on Windows (the extensions import `geos_c-<hash>.dll`).

Tests take a wheel through `foreign_wheel(role)` in a fixture: it skips, saying why, when PyPI
cannot be reached; a file that arrives with another hash fails.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, get_args

import pytest
from packaging.utils import canonicalize_name, parse_wheel_filename
from packaging.version import Version

Role = Literal[
    "macos-arm64",
    "macos-universal2",
    "macos-x86_64",
    "win-amd64",
    "win-arm64",
    "macos-bundled-dylib",
    "win-bundled-dll",
]
ROLES: tuple[Role, ...] = get_args(Role)

PYPI = "https://pypi.org/simple"
CACHE_ENV = "RELFORGE_TEST_CACHE"


@dataclass(frozen=True, kw_only=True)
class ForeignWheel:
    """One wheel file on PyPI and the `pip download` arguments that select exactly it."""

    role: Role
    project: str
    version: str
    filename: str
    sha256: str
    platform: str  # pip --platform
    python_version: str  # pip --python-version
    abi: str  # pip --abi (with --implementation cp)

    def __post_init__(self) -> None:
        name, version, _, tags = parse_wheel_filename(self.filename)
        if name != canonicalize_name(self.project) or version != Version(self.version):
            raise ValueError(f"{self.filename} is not {self.project} {self.version}")
        if not any(t.platform == self.platform and t.abi == self.abi for t in tags):
            raise ValueError(f"{self.filename} has no tag for {self.abi} on {self.platform}")
        if len(self.sha256) != 64 or self.sha256.strip("0123456789abcdef"):
            raise ValueError(f"{self.filename}: {self.sha256!r} is not a sha256 in hex")

    @property
    def requirement(self) -> str:
        return f"{self.project}=={self.version}"

    def pip_args(self) -> list[str]:
        """The selection arguments of `pip download` that pick this file."""
        return [
            "--platform",
            self.platform,
            "--python-version",
            self.python_version,
            "--implementation",
            "cp",
            "--abi",
            self.abi,
        ]


def _simplejson(role: Role, platform: str, sha256: str) -> ForeignWheel:
    return ForeignWheel(
        role=role,
        project="simplejson",
        version="4.3.0",
        filename=f"simplejson-4.3.0-cp313-cp313-{platform}.whl",
        sha256=sha256,
        platform=platform,
        python_version="3.13",
        abi="cp313",
    )


def _shapely(role: Role, platform: str, sha256: str) -> ForeignWheel:
    return ForeignWheel(
        role=role,
        project="shapely",
        version="2.2.0",
        filename=f"shapely-2.2.0-cp313-cp313-{platform}.whl",
        sha256=sha256,
        platform=platform,
        python_version="3.13",
        abi="cp313",
    )


PINS: dict[Role, ForeignWheel] = {
    pin.role: pin
    for pin in (
        _simplejson(
            "macos-arm64",
            "macosx_11_0_arm64",
            "15f38212552d2e850dbd23f1e09e240f30bc4f39a4b4a08a7b9adfe8e290e076",
        ),
        _simplejson(
            "macos-universal2",
            "macosx_10_13_universal2",
            "14b1b13c52eb56c37793872ff4c3a98f718417f3f8bc79c8173d69b71065e8f9",
        ),
        _simplejson(
            "macos-x86_64",
            "macosx_10_13_x86_64",
            "cf1aca2c93f2ee025ac60ef79a8c2c63e5b24295c777caab62ebe56999353601",
        ),
        _simplejson(
            "win-amd64",
            "win_amd64",
            "6e1e964cb5b96f8c2a6ac93fa5d9f0981d322fe302dfb0dd444734d9cfba1dd5",
        ),
        _simplejson(
            "win-arm64",
            "win_arm64",
            "c10f8c7b1334ea93ee451e3e8b8196c2ebbacfb834319ec89820291f08f787f8",
        ),
        _shapely(
            "macos-bundled-dylib",
            "macosx_11_0_arm64",
            "d75957716368f919c63016dae1977a0d007e15f06861cd178701edb91b08d2b0",
        ),
        _shapely(
            "win-bundled-dll",
            "win_amd64",
            "1eaa2cb64cdedaf65d6bc86f2819c9cd7d6d68f969aa3ebfdc93743ab581f437",
        ),
    )
}
assert set(PINS) == set(ROLES), "one pin per role"


class ForeignWheelError(Exception):
    """A pinned wheel is not what its pin says (another hash, another file): the test fails."""


class ForeignWheelUnavailable(ForeignWheelError):
    """A pinned wheel could not be downloaded (no network, PyPI down): fixtures skip."""


Download = Callable[[ForeignWheel, Path], None]


def pip_download(pin: ForeignWheel, dest: Path, *, index_url: str = PYPI) -> None:
    """Download the pinned file into `dest` with pip, from `index_url` alone (--isolated: this
    machine's extra pip sources and PIP_* variables are ignored)."""
    command = [
        sys.executable,
        "-m",
        "pip",
        "download",
        "--isolated",
        "--disable-pip-version-check",
        "--index-url",
        index_url,
        "--no-deps",
        "--only-binary=:all:",
        *pin.pip_args(),
        "--retries",
        "2",
        "--timeout",
        "30",
        "-d",
        str(dest),
        pin.requirement,
    ]
    try:
        proc = subprocess.run(command, capture_output=True, text=True, timeout=600, check=False)
    except subprocess.TimeoutExpired:
        raise ForeignWheelUnavailable(
            f"{pin.filename} could not be fetched from PyPI: pip download took over 600 s"
        ) from None
    if proc.returncode != 0:
        raise ForeignWheelUnavailable(
            f"{pin.filename} could not be fetched from PyPI: {_pip_failure(proc.stderr)}"
        )


def _pip_failure(stderr: str) -> str:
    """pip's last retry warning (which says what the connection did) and its errors."""
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    retries = [line for line in lines if line.startswith("WARNING: Retrying")]
    errors = [line for line in lines if line.startswith("ERROR:")]
    picked = retries[-1:] + errors or lines[-3:] or ["pip failed without a message"]
    return " ".join(picked)


def cache_dir() -> Path:
    """Where fetched wheels are kept: `$RELFORGE_TEST_CACHE`, else ~/.cache/relforge/test-wheels."""
    configured = os.environ.get(CACHE_ENV)
    if configured:
        return Path(configured)
    return Path.home() / ".cache" / "relforge" / "test-wheels"


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


@contextmanager
def _locked(path: Path) -> Iterator[None]:
    """Hold an exclusive lock on `path` (created if absent): one worker downloads, others wait."""
    with path.open("w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        yield


def _intact(path: Path, pin: ForeignWheel) -> bool:
    return path.is_file() and sha256_of(path) == pin.sha256


def fetch_pin(pin: ForeignWheel, cache: Path, download: Download = pip_download) -> Path:
    """`cache/<file name>`, downloaded first when absent (or not the pinned bytes): into a
    temporary folder in `cache`, checked against the pinned sha256, then renamed into place."""
    target = cache / pin.filename
    if _intact(target, pin):
        return target
    cache.mkdir(parents=True, exist_ok=True)
    with _locked(cache / f"{pin.filename}.lock"):
        if _intact(target, pin):  # another worker fetched it while this one waited
            return target
        with tempfile.TemporaryDirectory(prefix=f".{pin.filename}.", dir=cache) as tmp:
            download(pin, Path(tmp))
            got = Path(tmp) / pin.filename
            if not got.is_file():
                found = sorted(p.name for p in Path(tmp).iterdir()) or ["nothing"]
                raise ForeignWheelError(
                    f"pip download {pin.requirement} {' '.join(pin.pip_args())} did not give "
                    f"{pin.filename}; it gave {', '.join(found)}"
                )
            digest = sha256_of(got)
            if digest != pin.sha256:
                raise ForeignWheelError(
                    f"{pin.filename}: downloaded sha256 {digest}, pinned sha256 {pin.sha256}"
                )
            got.replace(target)  # os.replace: atomic, the folders share a file system
    return target


def fetch(role: Role) -> Path:
    """The pinned wheel of `role`, from the cache, downloaded from PyPI the first time.
    Raises ForeignWheelUnavailable when it cannot be downloaded, ForeignWheelError when PyPI
    gives other bytes or another file than the pin says."""
    return fetch_pin(PINS[role], cache_dir())


def foreign_wheel(role: Role) -> Path:
    """For fixtures: the pinned wheel of `role`, or a skip that says why it could not be had."""
    try:
        return fetch(role)
    except ForeignWheelUnavailable as exc:
        pytest.skip(str(exc))
