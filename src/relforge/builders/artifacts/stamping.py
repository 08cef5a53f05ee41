"""The cell's version in its wheel, with no script of the project's.

Before the build, relforge sets the knobs of the version plugins that compute a version: the
project's `version_env` and RELFORGE_VERSION (a setup.py may read them), setuptools-scm's
SETUPTOOLS_SCM_PRETEND_VERSION_FOR_<DIST> (also read by hatch-vcs and scikit-build-core's
setuptools_scm provider; the build's source copy has no .git), pdm-backend's
PDM_BUILD_SCM_VERSION, and versioneer's parent folder: the source is copied to
`<parentdir_prefix><version>`.  After it, a wheel that still carries the project's own version
of the same release (a static `version = "1.0.0"` for a cell's `1.0.0.dev0+cpu`) or a
placeholder (`0+unknown`, `0.0.0`) is renamed to the cell's version (relforge.wheelversion: the
`.dist-info` folder, METADATA, RECORD and the file name; no member is recompressed).  Code that
carries a version of its own (`__version__ = "1.0.0"`) keeps it: runtime validation warns.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from packaging.utils import InvalidWheelFilename, parse_wheel_filename
from packaging.version import Version

from relforge.builders.artifacts.postbuild import ArtifactProblem
from relforge.builders.inputs import versioneer_prefix
from relforge.errors import RelforgeError
from relforge.wheelversion import renamed, with_version

SOURCE_FOLDER = "src"  # the source copy's name when no plugin reads it


@dataclass(frozen=True, kw_only=True)
class Restamped:
    path: Path
    built: str  # the version the build wrote


def version_env(project: str, version: str) -> dict[str, str]:
    """The variables that make setuptools-scm (and what builds on it) and pdm-backend's SCM
    report `version` for `project`."""
    key = re.sub(r"[-_.]+", "_", project).upper()  # setuptools-scm's normalisation
    return {
        f"SETUPTOOLS_SCM_PRETEND_VERSION_FOR_{key}": version,
        "PDM_BUILD_SCM_VERSION": version,
    }


def source_folder(source: Path, version: str) -> str:
    """The name of the folder the build copies the source to: versioneer reads the version
    from it (`parentdir_prefix`) when git cannot tell."""
    prefix = versioneer_prefix(source)
    return f"{prefix}{version}" if prefix and "/" not in prefix else SOURCE_FOLDER


def restamp(wheel: Path, version: str) -> Restamped | None:
    """Rename the wheel to `version` when the build wrote the project's own version of the
    same release, or a placeholder; None when it already has `version` or has another one
    (check_wheel then fails the cell with the reason)."""
    try:
        _, built, _, _ = parse_wheel_filename(wheel.name)
    except InvalidWheelFilename:
        return None  # check_wheel says why
    wanted = Version(version)
    if built == wanted or not _restampable(built, wanted):
        return None
    target = wheel.with_name(renamed(wheel.name, str(wanted)))
    try:
        with_version(wheel, target, str(wanted), hint="the build's output folder is scratch")
    except RelforgeError as exc:
        raise ArtifactProblem(f"cannot set the version of {wheel.name}: {exc.message}") from None
    if target != wheel:
        wheel.unlink()
    return Restamped(path=target, built=str(built))


def _restampable(built: Version, wanted: Version) -> bool:
    """The project's own version of the cell's release (1.0, 1.0.0, 1.0.0.post1, 1.0.0.dev2
    for 1.0.0.dev0+cpu), or a placeholder (0, 0.0.0, 0+unknown)."""
    if not any(built.release):
        return True
    if built.epoch != wanted.epoch:
        return False
    return _padded(built.release) == _padded(wanted.release)


def _padded(release: tuple[int, ...]) -> tuple[int, ...]:
    return (*release, 0, 0, 0)[:3] if len(release) <= 3 else release
