"""After the build command: repair the wheel per the cell's platform policy, declare the cell's
extra install requirements, and check that the result is the artifact the cell asked for.

Repair grafts the libraries a wheel loads from the build machine into it, with one tool per OS
(each pinned in relforge's dependencies for the OS it runs on), and the platform's
`repair_options` (matrix) placed before the wheel:

- Linux (manylinux/musllinux tags): `auditwheel repair --plat <cell tag> --only-plat`, with
  excludes derived from the cell: driver libraries always, and the libraries of every
  distribution the cell requires (its extra install requirements, unless it bundles them, and
  its dependency axes'), from the catalogue validation reads too (relforge.providedlibs).
  macOS and Windows leave out the same way the catalogue's dylibs and DLLs (torch's `c10.dll`,
  the driver's `nvcuda.dll`): what RF-V070/RF-V071 accept from outside the wheel.
- macOS (`macosx_X_Y_<arch>`): delocate's `delocate-wheel` with `--require-archs` of the tag's
  architecture and `--require-target-macos-version X.Y` (the build gets
  MACOSX_DEPLOYMENT_TARGET=X.Y too), so the wheel keeps the cell's tag or the cell fails.
- Windows (`win_amd64`, `win_arm64`, `win32`): `delvewheel repair`.

It runs where the build ran (on the host, or inside the builder container for Linux), because
that is where the libraries to graft live.
"""

from __future__ import annotations

import dataclasses
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from packaging.requirements import Requirement
from packaging.utils import (
    InvalidWheelFilename,
    canonicalize_name,
    parse_wheel_filename,
)
from packaging.version import Version

from relforge.builders.artifacts.wheelfile import add_requires_dist
from relforge.matrix.cell import Cell
from relforge.matrix.wheeltags import tag_mismatch
from relforge.providedlibs import excluded_libraries, platform_environment
from relforge.validate.checklist import Expectation, check_artifact
from relforge.validate.facts import gather
from relforge.validate.platformtags import macos_tag, windows_machine
from relforge.validate.wheelchecks import RPATH_CHECK
from relforge.wheelformat import WheelError


class ArtifactProblem(Exception):
    """The build ran but its output is not what the cell asked for (the cell fails)."""


@dataclass(frozen=True, kw_only=True)
class RepairPolicy(ABC):
    """How one cell's wheel is repaired: the tool, its command line, what it adds to the build's
    environment, and what of it goes into the build cache key."""

    tool: ClassVar[str]  # the distribution that repairs (pinned in relforge's dependencies)
    what: ClassVar[str]  # its run's label in the cell's log and failure reason
    options: tuple[str, ...] = ()  # the platform's `repair_options`, placed before the wheel

    @abstractmethod
    def argv(self, python: str, wheel: str, out_dir: str) -> list[str]:
        """The command that repairs `wheel` with `python` (relforge's, which has the tool) and
        writes the result into `out_dir`; the wheel is the last argument."""

    @property
    def env(self) -> Mapping[str, str]:
        """Variables the cell's build (and so the repair) runs with."""
        return {}

    def to_json(self) -> dict[str, Any]:
        """The policy for the cache key: a change in any of it builds the cell again."""
        fields = {k: list(v) if isinstance(v, tuple) else v for k, v in _fields(self).items()}
        return {"tool": self.tool, **fields}


def _fields(policy: RepairPolicy) -> dict[str, Any]:
    return {f.name: getattr(policy, f.name) for f in dataclasses.fields(policy)}


@dataclass(frozen=True, kw_only=True)
class AuditwheelPolicy(RepairPolicy):
    """`auditwheel repair` of a manylinux/musllinux cell's wheel."""

    tool: ClassVar[str] = "auditwheel"
    what: ClassVar[str] = "auditwheel repair"
    plat: str
    excludes: tuple[str, ...]

    def argv(self, python: str, wheel: str, out_dir: str) -> list[str]:
        args = [python, "-m", "auditwheel", "repair", "--plat", self.plat, "--only-plat"]
        args += ["--wheel-dir", out_dir]
        for pattern in self.excludes:
            args += ["--exclude", pattern]
        return [*args, *self.options, wheel]


_DELOCATE_ARCH = {"aarch64": "arm64", "x86_64": "x86_64", "i686": "i386"}  # delocate's names


@dataclass(frozen=True, kw_only=True)
class DelocatePolicy(RepairPolicy):
    """delocate's `delocate-wheel` of a macOS cell's wheel (its `main` run as a module)."""

    tool: ClassVar[str] = "delocate"
    what: ClassVar[str] = "delocate-wheel"
    require_archs: str  # the tag's architectures, as delocate names them: arm64,x86_64
    target: str  # the tag's macOS version, X.Y
    excludes: tuple[str, ...] = ()  # catalogue globs of libraries the wheel's dependencies ship

    def argv(self, python: str, wheel: str, out_dir: str) -> list[str]:
        args = [python, "-m", "delocate.cmd.delocate_wheel", "--require-archs", self.require_archs]
        args += ["--require-target-macos-version", self.target, "-w", out_dir]
        for pattern in self.excludes:  # delocate's -e matches a part of the library's path
            args += ["-e", pattern.split("*", 1)[0]]
        return [*args, *self.options, wheel]

    @property
    def env(self) -> Mapping[str, str]:
        return {"MACOSX_DEPLOYMENT_TARGET": self.target}


@dataclass(frozen=True, kw_only=True)
class DelvewheelPolicy(RepairPolicy):
    """`delvewheel repair` of a Windows cell's wheel.  It finds DLLs on PATH, which holds the
    host build's toolchain folders (CUDA's bin) and build venv; other folders, and DLLs to leave
    out, come from the platform's `repair_options` (`--add-path DIR`, `--no-dll foo.dll`)."""

    tool: ClassVar[str] = "delvewheel"
    what: ClassVar[str] = "delvewheel repair"
    excludes: tuple[str, ...] = ()  # catalogue globs (delvewheel takes `*` patterns)

    def argv(self, python: str, wheel: str, out_dir: str) -> list[str]:
        args = [python, "-m", "delvewheel", "repair", "-w", out_dir]
        if self.excludes:  # one option, the names separated by Windows' path separator
            args += ["--no-dll", ";".join(self.excludes)]
        return [*args, *self.options, wheel]


def cell_requirements(cell: Cell) -> tuple[str, ...]:
    """What the cell's wheel requires besides the project's own dependencies: its extra install
    requirements (none when it bundles the libraries) and its dependency axes' runtime
    requirements (always)."""
    extra = () if cell.bundles_libraries else cell.extra_install_requires
    return (*extra, *cell.axis_requires)


def repair_policy(cell: Cell, options: Sequence[str] = ()) -> RepairPolicy | None:
    """The repair a cell's wheel gets, by its platform tag, with the platform's extra `options`;
    None for archives and for tags no tool repairs (`any`, `linux_x86_64`).

    On Linux it leaves out what validation accepts from outside the wheel
    (relforge.providedlibs): the driver's libraries and those of every distribution the cell
    requires.  On macOS it requires the tag's architectures and macOS version of every library."""
    if cell.package_type != "wheel" or not cell.platform_tag:
        return None
    plat = cell.platform_tag.split(".")[0]
    extra = tuple(options)
    requirements = [Requirement(r) for r in cell_requirements(cell)]

    def excludes(os: str) -> tuple[str, ...]:
        environment = platform_environment(os, cell.arch, cell.python_tag)
        return excluded_libraries(requirements, environment)

    if plat.startswith(("manylinux", "musllinux")):
        return AuditwheelPolicy(plat=plat, excludes=excludes("linux"), options=extra)
    macos = macos_tag(plat)
    if macos is not None:
        archs = ",".join(sorted(_DELOCATE_ARCH.get(a, a) for a in macos.arches))
        return DelocatePolicy(
            require_archs=archs,
            target=macos.version_text,
            excludes=excludes("macos"),
            options=extra,
        )
    if windows_machine(plat) is not None:
        return DelvewheelPolicy(excludes=excludes("windows"), options=extra)
    return None


def declare_requirements(wheel: Path, cell: Cell) -> list[str]:
    """Add the cell's requirements (`cell_requirements`) to the wheel's Requires-Dist."""
    wanted = cell_requirements(cell)
    if not wanted:
        return []
    try:
        return add_requires_dist(wheel, wanted)
    except WheelError as exc:
        raise ArtifactProblem(f"cannot add Requires-Dist: {exc}") from None


def pick_artifact(found: Sequence[Path], cell: Cell) -> Path:
    """The one artifact a cell's build must leave in its output folder."""
    wanted = [p for p in found if p.suffix == ".whl"] if cell.package_type == "wheel" else found
    if len(wanted) != 1:
        kind = "wheel" if cell.package_type == "wheel" else "archive"
        names = ", ".join(p.name for p in found) or "nothing"
        raise ArtifactProblem(f"the build must write one {kind}, it wrote {names}")
    return wanted[0]


def check_wheel(wheel: Path, cell: Cell, *, project: str, version: str) -> None:
    """The wheel's name, version and tags must be the cell's (the rule of validation's RF-V012:
    `relforge.matrix.wheeltags.tag_mismatch`), or the cell fails with the fix."""
    try:
        name, got_version, _, tags = parse_wheel_filename(wheel.name)
    except InvalidWheelFilename as exc:
        raise ArtifactProblem(str(exc)) from None
    if name != canonicalize_name(project):
        raise ArtifactProblem(f"{wheel.name} is not a wheel of {project}")
    if got_version != Version(version):
        raise ArtifactProblem(
            f"{wheel.name} has version {got_version}, the cell builds {version}: relforge "
            "renames a wheel of the release's own version (or 0+unknown), not of another; "
            "make the build read $RELFORGE_VERSION, or fix the matrix release's version"
        )
    differ = tag_mismatch(cell, [str(t) for t in tags])
    if differ is not None:
        raise ArtifactProblem(differ.reason)


def check_search_paths(wheel: Path) -> None:
    """Validation's RF-V043 on the repaired wheel: a RUNPATH into the build machine (a
    compiler's or interpreter's rpath the build did not drop) fails the cell here, not later."""
    with ThreadPoolExecutor(max_workers=1) as pool:
        facts = gather(wheel, pool, verify_digests=False)
    for verdict in check_artifact(facts, Expectation(), only={RPATH_CHECK}):
        if verdict.status == "fail":
            raise ArtifactProblem(
                f"{verdict.message}: a search path of the build machine, which validation "
                f"fails ({RPATH_CHECK}); if the build adds it (-Wl,-rpath), make it $ORIGIN-"
                "relative or drop it"
            )


def check_archive_name(archive: Path, expected: str) -> None:
    """A native archive must carry the name the matrix gives it (`libtorch.file_name`): docs
    and the site link that name."""
    if archive.name != expected:
        raise ArtifactProblem(
            f"the build wrote {archive.name}; the matrix names this archive {expected} "
            "(releases.<X.Y>.libtorch.file_name, with the stamped version from $RELFORGE_VERSION)"
        )
