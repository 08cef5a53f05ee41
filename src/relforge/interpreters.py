"""Find the host interpreter for a cell's Python: PATH, then pyenv, then `uv python find`.

Each candidate is asked what it is (version, free-threaded or not, where it really lives), so a
pyenv shim or a stale symlink never passes for the wrong Python.
"""

from __future__ import annotations

import functools
import json
import os
import shutil
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from packaging.version import InvalidVersion, Version

from relforge.matrix.values import PythonVersion

_PROBE = (
    "import importlib.util, json, platform, sys, sysconfig; print(json.dumps({"
    "'executable': sys.executable, 'version': platform.python_version(), "
    "'implementation': sys.implementation.name, "
    "'free_threaded': bool(sysconfig.get_config_var('Py_GIL_DISABLED')), "
    "'prefix': sys.base_prefix, 'stdlib': sysconfig.get_paths()['stdlib'], "
    "'venv': importlib.util.find_spec('venv') is not None}))"
)


@dataclass(frozen=True, kw_only=True)
class Interpreter:
    """What a CPython on the host says it is (asked with `-I`, so nothing of the caller's)."""

    executable: str
    version: str  # full, e.g. 3.12.1
    free_threaded: bool
    prefix: str  # sys.base_prefix
    stdlib: str
    can_make_venv: bool  # some distributions ship CPython without the venv module

    @property
    def label(self) -> str:
        return f"CPython {self.version}{' (free-threaded)' if self.free_threaded else ''}"

    def serves(self, wanted: PythonVersion) -> bool:
        """It is the X.Y (and the free-threaded build or not) that `wanted` names."""
        try:
            release = Version(self.version).release[:2]
        except InvalidVersion:
            return False
        return release == wanted.version.release[:2] and self.free_threaded == wanted.free_threaded


@functools.cache
def find_interpreter(python: str) -> Interpreter | None:
    """The host CPython for `python` ("3.12", "3.13t") that can make a venv, or None."""
    wanted = PythonVersion.parse(python)
    for candidate in _candidates(wanted):
        found = probe(candidate)
        if found is not None and found.can_make_venv and found.serves(wanted):
            return found
    return None


@functools.cache
def probe(path: str) -> Interpreter | None:
    try:
        done = subprocess.run(
            [path, "-I", "-c", _PROBE], capture_output=True, text=True, timeout=30, check=False
        )
        data = json.loads(done.stdout) if done.returncode == 0 else None
    except (OSError, subprocess.TimeoutExpired, json.JSONDecodeError):
        return None
    if not isinstance(data, dict) or data.get("implementation") != "cpython":
        return None
    return Interpreter(
        executable=str(data["executable"]),
        version=str(data["version"]),
        free_threaded=bool(data["free_threaded"]),
        prefix=str(data["prefix"]),
        stdlib=str(data["stdlib"]),
        can_make_venv=bool(data["venv"]),
    )


def _candidates(wanted: PythonVersion) -> Iterator[str]:
    name = f"python{wanted}"  # python3.12, python3.13t
    on_path = shutil.which(name)
    if on_path and Path(on_path).parent != pyenv_root() / "shims":  # shims: see pyenv_candidates
        yield on_path
    yield from pyenv_candidates(wanted, name)
    yield from uv_candidates(wanted)


def uv_candidates(wanted: PythonVersion) -> Iterator[str]:
    """The interpreter `uv python find` names (uv-managed or not), when uv is installed."""
    uv = shutil.which("uv")
    if uv is None:
        return
    try:
        done = subprocess.run(
            [uv, "python", "find", str(wanted)],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return
    if done.returncode == 0 and done.stdout.strip():
        yield done.stdout.strip()


def pyenv_root() -> Path:
    return Path(os.environ.get("PYENV_ROOT") or Path.home() / ".pyenv")


def pyenv_candidates(wanted: PythonVersion, name: str) -> Iterator[str]:
    """pyenv's installed versions, directly (its shims only answer for activated versions)."""
    root = pyenv_root() / "versions"
    if not root.is_dir():
        return
    found: list[tuple[Version, Path]] = []
    for entry in root.iterdir():
        label = entry.name
        threaded = label.endswith("t")
        try:
            version = Version(label[:-1] if threaded else label)
        except InvalidVersion:
            continue
        if (
            threaded == wanted.free_threaded
            and version.release[:2] == wanted.version.release[:2]
            and not version.is_prerelease
            and (entry / "bin" / name).exists()
        ):
            found.append((version, entry / "bin" / name))
    for _, path in sorted(found, reverse=True):
        yield str(path)
