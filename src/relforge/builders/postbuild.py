"""After the build command: repair the wheel per the cell's platform policy, declare the cell's
extra install requirements, and check that the result is the artifact the cell asked for.

Repair is `auditwheel repair --plat <cell tag> --only-plat` with excludes derived from the cell:
driver libraries always, and the libraries of every package the cell declares instead of
bundling.  It runs where the build ran (on the host, or inside the builder container), because
that is where the libraries to graft live.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

import yaml
from packaging.utils import (
    InvalidWheelFilename,
    canonicalize_name,
    parse_wheel_filename,
)
from packaging.version import Version

from relforge.builders.wheelfile import add_requires_dist
from relforge.matrix.cell import Cell
from relforge.matrix.values import requirement_name
from relforge.wheelformat import WheelError

_CUDA_SUFFIXES = ("-cu11", "-cu12", "-cu13")


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


@functools.cache
def _provided() -> dict[str, dict[str, list[str]]]:
    text = resources.files("relforge.resources").joinpath("provided_libraries.yaml")
    data: dict[str, dict[str, list[str]]] = yaml.safe_load(text.read_text("utf-8"))
    return data


def _package_key(requirement: str) -> str:
    name = requirement_name(requirement)
    for suffix in _CUDA_SUFFIXES:
        name = name.removesuffix(suffix)
    return name


def repair_policy(cell: Cell) -> RepairPolicy | None:
    """The repair a cell's wheel gets; None when its platform tag has no auditwheel policy."""
    if cell.package_type != "wheel" or not cell.platform_tag:
        return None
    plat = cell.platform_tag.split(".")[0]
    if not plat.startswith(("manylinux", "musllinux")):
        return None
    data = _provided()
    excludes = list(data["driver"].get(cell.accelerator, []))
    if not cell.bundles_libraries:
        for requirement in cell.extra_install_requires:
            excludes += data["packages"].get(_package_key(requirement), [])
    return RepairPolicy(plat=plat, excludes=tuple(dict.fromkeys(excludes)))


def declare_requirements(wheel: Path, cell: Cell) -> list[str]:
    """Add the cell's extra install requirements (none when it bundles them) and the runtime
    requirements of its dependency axes (always) to the wheel."""
    extra = () if cell.bundles_libraries else cell.extra_install_requires
    wanted = (*extra, *cell.axis_requires)
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
            f"{wheel.name} has version {got_version}, the cell builds {version}: the build "
            "must use the stamped version from $RELFORGE_VERSION"
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


def check_archive_name(archive: Path, expected: str) -> None:
    """A native archive must carry the name the matrix gives it (`libtorch.file_name`): docs
    and the site link that name."""
    if archive.name != expected:
        raise ArtifactProblem(
            f"the build wrote {archive.name}; the matrix names this archive {expected} "
            "(releases.<X.Y>.libtorch.file_name, with the stamped version from $RELFORGE_VERSION)"
        )
