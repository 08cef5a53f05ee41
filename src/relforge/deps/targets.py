"""Which interpreter and platform a wheel cell installs on, as pip's target options and as the
set of wheel tags that install there; and which of the project's wheels in a channel folder is
the cell's.
"""

from __future__ import annotations

from dataclasses import dataclass

from packaging.tags import Tag, compatible_tags, cpython_tags
from packaging.utils import canonicalize_name, parse_wheel_filename
from packaging.version import Version

from relforge.matrix.cell import Cell
from relforge.matrix.expand import expand_cells
from relforge.matrix.schema import ChannelName, Matrix
from relforge.matrix.selector import Selector
from relforge.stores.objectstore import ObjectInfo
from relforge.wheelplatform import LEGACY_MANYLINUX, parse_platform_tag


def expand_platform(tag: str) -> list[str]:
    """`manylinux_2_28_x86_64` → itself, every older manylinux_2_N and the legacy aliases
    (pip expands only manylinux2014/2010 and macOS itself); other tags as they are."""
    parsed = parse_platform_tag(tag)
    if parsed is None or parsed.family != "manylinux" or parsed.version is None:
        return [tag]
    (major, minor), arch = parsed.version, parsed.arch
    out = [f"manylinux_{major}_{m}_{arch}" for m in range(minor, 4, -1)]
    legacy = sorted(LEGACY_MANYLINUX.items(), key=lambda item: item[1], reverse=True)
    out += [f"{name}_{arch}" for name, (_, m) in legacy if m <= minor]
    return out


@dataclass(frozen=True, kw_only=True)
class Target:
    """A cell's interpreter and platform."""

    cell: Cell
    python: str  # "3.12" (also for 3.12t)
    abi: str  # "cp312", "cp313t"
    platforms: tuple[str, ...]

    @property
    def label(self) -> str:
        """The cell's id, with the Python when its abi3 wheel serves several."""
        return f"{self.cell.id} (Python {self.python})" if self.cell.serves_python else self.cell.id

    @property
    def folder(self) -> str:
        assert self.cell.upload_prefix is not None
        return self.cell.upload_prefix.rstrip("/")

    def pip_options(self) -> list[str]:
        """pip's options for resolving on this target from any machine."""
        args = ["--only-binary=:all:", "--implementation", "cp"]
        args += ["--python-version", self.python, "--abi", self.abi]
        for platform in self.platforms:
            args += ["--platform", platform]
        return args

    def tags(self) -> set[Tag]:
        version = tuple(int(p) for p in self.python.split("."))
        found = set(cpython_tags(version, abis=[self.abi], platforms=self.platforms))
        interpreter = "cp" + "".join(self.python.split("."))
        found |= set(compatible_tags(version, interpreter, self.platforms))
        return found

    def installs(self, filename: str) -> bool:
        return bool(parse_wheel_filename(filename)[3] & self.tags())


def wheel_targets(
    matrix: Matrix, channel: ChannelName, selectors: tuple[Selector, ...] = ()
) -> list[Target]:
    """Every wheel cell of the channel (all releases) as a target; an abi3 cell as one target
    per Python it serves (its dependencies have wheels per Python: numpy cp312-cp312)."""
    out = []
    for release in matrix.releases:
        for cell in expand_cells(matrix, release, channel=channel, selectors=selectors):
            if cell.package_type != "wheel" or not cell.python or not cell.upload_prefix:
                continue
            tags = (cell.platform_tag or "").split(".")
            platforms = tuple(p for tag in tags if tag for p in expand_platform(tag))
            for each in cell.pythons:
                python = each.removesuffix("t")  # 3.13t: CPython 3.13, ABI cp313t
                abi = "cp" + each.replace(".", "")
                out.append(Target(cell=cell, python=python, abi=abi, platforms=platforms))
    return out


def cell_wheel(
    matrix: Matrix, target: Target, files: list[ObjectInfo], version: str | None
) -> ObjectInfo | None:
    """The newest wheel of the project in the folder that installs on the target, belongs to
    the cell's release (and to `version`, a public version, when given) and carries the cell's
    own local label: cells of a dependency axis share a folder and a platform (numpy-abi's
    `+cpu.numpy1` and `+cpu.numpy2`), and each has its own requirements, so its own closure."""
    project = canonicalize_name(matrix.project.name)
    base = matrix.release(target.cell.release).full_version.base_version
    label = _local(target.cell.local_version)
    best: tuple[Version, ObjectInfo] | None = None
    for info in files:
        filename = info.key.rsplit("/", 1)[1]
        if not filename.endswith(".whl"):
            continue
        name, found, _, _ = parse_wheel_filename(filename)
        if name != project or found.base_version != base or not target.installs(filename):
            continue
        if found.local != label:
            continue
        if version is not None and found.public != Version(version).public:
            continue
        if best is None or found > best[0]:
            best = (found, info)
    return best[1] if best else None


def _local(label: str) -> str | None:
    """A local version label as `Version.local` normalizes it (None for no label)."""
    return Version(f"0+{label}").local if label else None
