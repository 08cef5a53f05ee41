"""After the build command: repair the wheel per the cell's platform policy, declare the cell's
extra install requirements, and check that the result is the artifact the cell asked for.

Repair is `auditwheel repair --plat <cell tag> --only-plat` with excludes derived from the cell:
driver libraries always, and the libraries of every distribution the cell requires (its extra
install requirements, unless it bundles them, and its dependency axes'), from the catalogue
validation reads too (relforge.providedlibs).  It runs where the build ran (on the host, or
inside the builder container), because that is where the libraries to graft live.
"""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import (
    InvalidWheelFilename,
    canonicalize_name,
    parse_wheel_filename,
)
from packaging.version import Version

from relforge.builders.wheelfile import add_requires_dist
from relforge.matrix.cell import Cell
from relforge.providedlibs import excluded_libraries, linux_environment
from relforge.validate.checks import RPATH_CHECK
from relforge.validate.facts import gather
from relforge.validate.registry import Expectation, check_artifact
from relforge.wheelformat import WheelError


class ArtifactProblem(Exception):
    """The build ran but its output is not what the cell asked for (the cell fails)."""


@dataclass(frozen=True, kw_only=True)
class RepairPolicy:
    """How `auditwheel repair` treats one cell's wheel."""

    plat: str
    excludes: tuple[str, ...]

    def argv(self, python: str, wheel: str, out_dir: str) -> list[str]:
        args = [python, "-m", "auditwheel", "repair", "--plat", self.plat, "--only-plat"]
        args += ["--wheel-dir", out_dir]
        for pattern in self.excludes:
            args += ["--exclude", pattern]
        return [*args, wheel]


def cell_requirements(cell: Cell) -> tuple[str, ...]:
    """What the cell's wheel requires besides the project's own dependencies: its extra install
    requirements (none when it bundles the libraries) and its dependency axes' runtime
    requirements (always)."""
    extra = () if cell.bundles_libraries else cell.extra_install_requires
    return (*extra, *cell.axis_requires)


def repair_policy(cell: Cell) -> RepairPolicy | None:
    """The repair a cell's wheel gets; None when its platform tag has no auditwheel policy.
    It leaves out what validation accepts from outside the wheel (relforge.providedlibs): the
    driver's libraries and those of every distribution the cell requires."""
    if cell.package_type != "wheel" or not cell.platform_tag:
        return None
    plat = cell.platform_tag.split(".")[0]
    if not plat.startswith(("manylinux", "musllinux")):
        return None
    environment = linux_environment(cell.arch, cell.python_tag)
    requirements = [Requirement(r) for r in cell_requirements(cell)]
    return RepairPolicy(plat=plat, excludes=excluded_libraries(requirements, environment))


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
    """The wheel's name, version, Python and platform tags must be the cell's."""
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
    if cell.python_tag and not any(
        t.interpreter in (cell.python_tag, "py3") or t.abi == "abi3" for t in tags
    ):
        raise ArtifactProblem(f"{wheel.name} is not a wheel for Python {cell.python}")
    got = {t.platform for t in tags}
    want = set((cell.platform_tag or "").split("."))
    if got != want:
        raise ArtifactProblem(
            f"{wheel.name} is tagged {'.'.join(sorted(got))}, the cell's platform tag is "
            f"{cell.platform_tag}"
        )


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
