"""The host's CPythons for a multi-Python builder image, laid out as manylinux does.

Nothing can be downloaded while an image is made, so the interpreters come from the host: pyenv's
versions first, then uv's, then PATH.  Each is asked what it is (version, free-threaded, prefix).
A relocatable prefix (pyenv, uv, a custom build) is copied to /opt/_internal/cpython-X.Y.Z[t] —
without its test suite and without the host's site-packages, which hold whatever the host
installed — and /opt/python/cpXY-cpXY[t] links to it.  A pyenv CPython links libpython by an
absolute RUNPATH into its host prefix; the copy gets `$ORIGIN/../lib` instead.  A system
interpreter (prefix /usr) cannot be moved: it is used only if the image's own /usr has the same
version, which the image check then proves.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from relforge.interpreters import Interpreter, probe, pyenv_candidates, pyenv_root, uv_candidates
from relforge.matrix.values import PythonVersion

SYSTEM_PREFIXES = ("/usr", "/usr/local")


@dataclass(frozen=True, kw_only=True)
class HostPython:
    """A host interpreter chosen for the image."""

    wanted: str  # as asked: "3.12", "3.13t"
    version: str  # full: "3.12.1"
    free_threaded: bool
    prefix: Path  # sys.base_prefix on the host
    executable: Path
    stdlib: Path
    origin: str  # "pyenv", "uv", "PATH"
    can_make_venv: bool  # as the probe found it (the image's layer needs no venv)

    @property
    def tag(self) -> str:
        """manylinux's folder name under /opt/python: cp312-cp312, cp313-cp313t."""
        core = "cp" + self.wanted.rstrip("t").replace(".", "")
        return f"{core}-{core}{'t' if self.free_threaded else ''}"

    @property
    def system(self) -> bool:
        return str(self.prefix) in SYSTEM_PREFIXES

    @property
    def home(self) -> str:
        """Where the interpreter lives in the image."""
        if self.system:
            return f"/opt/python/{self.tag}"
        return f"/opt/_internal/cpython-{self.version}{'t' if self.free_threaded else ''}"

    def interpreter(self) -> Interpreter:
        """As relforge.interpreters describes a host interpreter (pip runs it for the image)."""
        return Interpreter(
            executable=str(self.executable),
            version=self.version,
            free_threaded=self.free_threaded,
            prefix=str(self.prefix),
            stdlib=str(self.stdlib),
            can_make_venv=self.can_make_venv,
        )

    @property
    def label(self) -> str:
        threaded = " (free-threaded)" if self.free_threaded else ""
        return f"CPython {self.version}{threaded} from {self.origin} ({self.prefix})"


@dataclass(frozen=True, kw_only=True)
class NotFound:
    wanted: str
    why: str


def find_host_pythons(wanted: Sequence[str]) -> tuple[list[HostPython], list[NotFound]]:
    """The host interpreter for each wanted version, and the versions that have none."""
    found: list[HostPython] = []
    missing: list[NotFound] = []
    for text in dict.fromkeys(wanted):
        version = PythonVersion.parse(text)
        seen: list[str] = []
        chosen: HostPython | None = None
        for origin, path in _candidates(version):
            python = probe(path)
            if python is None:
                continue
            if python.serves(version):
                chosen = _host_python(python, str(version), origin)
                break
            seen.append(f"{path} is {python.version}{'t' if python.free_threaded else ''}")
        if chosen is None:
            where = f"in {pyenv_root() / 'versions'}, with `uv python find` and on PATH"
            extra = f" ({'; '.join(seen)})" if seen else ""
            missing.append(
                NotFound(wanted=str(version), why=f"no CPython {version} {where}{extra}")
            )
        else:
            found.append(chosen)
    return found, missing


def _candidates(wanted: PythonVersion) -> Iterator[tuple[str, str]]:
    name = f"python{wanted}"
    for path in pyenv_candidates(wanted, name):
        yield "pyenv", path
    for path in uv_candidates(wanted):
        yield "uv", path
    for folder in os.environ.get("PATH", "").split(os.pathsep):
        candidate = Path(folder or ".") / name
        if Path(folder) != pyenv_root() / "shims" and candidate.is_file():
            yield "PATH", str(candidate)


def _host_python(found: Interpreter, wanted: str, origin: str) -> HostPython:
    return HostPython(
        wanted=wanted,
        version=found.version,
        free_threaded=found.free_threaded,
        prefix=Path(found.prefix),
        executable=Path(found.executable),
        stdlib=Path(found.stdlib),
        origin=origin,
        can_make_venv=found.can_make_venv,
    )
