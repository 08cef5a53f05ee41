"""Expand one release of a matrix into Cells: deterministic order, stable readable ids.

Order: wheels by platform (file order) → Python (file order) → variant (file order), each extra
cell of an include rule right after the cell it copies; then native archives by platform →
accelerator → archive variant → config.
"""

from __future__ import annotations

import datetime
import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Literal

from packaging.version import Version

from relforge.errors import ConfigError, UsageError
from relforge.matrix.abi3 import abi3_floor, abi3_pythons, as_abi3, check_abi3
from relforge.matrix.axes import expand_axes, resolve_index
from relforge.matrix.cell import Cell
from relforge.matrix.schema import (
    ChannelName,
    ExcludeRule,
    IncludeRule,
    Matrix,
    Platform,
    Release,
    RequiresRule,
    Variant,
    VariantOnPlatform,
)
from relforge.matrix.selector import Selector, select, selector_from_match
from relforge.matrix.values import PythonVersion, local_version, requirement_name


@dataclass(frozen=True)
class Candidate:
    """A cell the release's platforms × Pythons × variants offer, and what the rules did to it."""

    cell: Cell
    excluded_by: ExcludeRule | None = None
    included_by: IncludeRule | None = None

    @property
    def built(self) -> bool:
        return self.excluded_by is None


def expand_cells(
    matrix: Matrix,
    release: str,
    *,
    channel: ChannelName | None = None,
    date: datetime.date | None = None,
    selectors: Sequence[Selector] = (),
) -> list[Cell]:
    """The cells of a release, optionally stamped for a channel and filtered by selectors."""
    rel = matrix.release(release)
    cells = [c.cell for c in candidates(matrix, rel) if c.built]
    if channel is not None:
        cells = [on_channel(c, matrix, rel, channel, date) for c in cells]
    return select(cells, selectors)


AnyChannel = Literal["nightly", "test", "release", "dev"]  # dev: local builds, never published


def dev_version(base: str, local: str) -> str:
    """The dev scheme of local builds: `X.Y.Z.dev0+<variant>` of the base's X.Y.Z."""
    final = Version(base).base_version
    return str(Version(f"{final}.dev0+{local}" if local else f"{final}.dev0"))


def stamped_cells(
    matrix: Matrix,
    release: str,
    channel: AnyChannel,
    *,
    date: datetime.date | None = None,
    selectors: Sequence[Selector] = (),
) -> list[Cell]:
    """The cells of a release stamped for `channel`; on `dev` (no channel of the matrix) each
    carries the dev version of the release's X.Y.Z and no upload place."""
    if channel != "dev":
        return expand_cells(matrix, release, channel=channel, date=date, selectors=selectors)
    base = str(matrix.release(release).full_version)
    return [
        c.replace(version=dev_version(base, c.local_version))
        for c in expand_cells(matrix, release, selectors=selectors)
    ]


def candidates(matrix: Matrix, release: Release) -> list[Candidate]:
    """Every offered cell with its verdict; extra cells of include rules follow their source."""
    axes = tuple(release.axes)
    excludes = [(rule, selector_from_match(rule.match, axes)) for rule in release.exclude]
    includes = [(rule, selector_from_match(rule.match, axes)) for rule in release.include]
    out: list[Candidate] = []
    seen: dict[str, Candidate] = {}

    def add(candidate: Candidate) -> None:
        clash = seen.get(candidate.cell.id)
        if clash is not None:
            rule = candidate.included_by or clash.included_by
            raise ConfigError(
                f"two cells get the id {candidate.cell.id!r}",
                where=rule.span if rule else release.span,
                key=f"releases.{release.name}",
                hint="give the include rule a different suffix, or rename a variant",
            )
        seen[candidate.cell.id] = candidate
        out.append(candidate)

    requires = [(rule, selector_from_match(rule.match, axes)) for rule in release.runtime_requires]
    check_abi3(release)
    for offered in _offered(matrix, release):
        cell = with_runtime_requires(offered, requires)
        excluded = next((rule for rule, sel in excludes if sel.matches(cell)), None)
        add(Candidate(cell, excluded))
        if excluded is not None:
            continue
        for rule, sel in includes:
            if sel.matches(cell):
                extra = with_runtime_requires(_extra_cell(cell, rule), requires)
                dropped = next((r for r, s in excludes if s.matches(extra)), None)
                add(Candidate(extra, dropped, rule))
    return out


def with_runtime_requires(cell: Cell, rules: Sequence[tuple[RequiresRule, Selector]]) -> Cell:
    """`cell` with the requirements of the runtime_requires rules that match it appended (a
    wheel's own list first; a line it already has is not added twice).  Bundling libraries
    does not drop them: they are Python packages (triton), not the bundled libraries."""
    if cell.package_type != "wheel":
        return cell
    have = list(cell.extra_install_requires)
    names = {requirement_name(r): r for r in have}
    for rule, selector in rules:
        if not selector.matches(cell):
            continue
        for line in rule.add:
            if line in have:
                continue
            known = names.get(requirement_name(line))
            if known is not None:
                raise ConfigError(
                    f"{cell.id} would require both {known!r} and {line!r}",
                    where=rule.at("add"),
                    key=f"releases.{cell.release}.runtime_requires",
                    hint="name each distribution once: in the variant's extra_install_requires "
                    "or in a runtime_requires rule",
                )
            have.append(line)
            names[requirement_name(line)] = line
    if len(have) == len(cell.extra_install_requires):
        return cell
    env = {**cell.env, "RELFORGE_EXTRA_INSTALL_REQUIRES": "\n".join(have)}
    return cell.replace(extra_install_requires=tuple(have), env=env)


def _offered(matrix: Matrix, release: Release) -> Iterator[Cell]:
    for pname, platform in release.platforms.items():
        for python in release.python:
            for vname, variant in release.accelerators.items():
                on = variant.platforms.get(pname)
                if on is None:
                    continue
                site = _Site(matrix, release, pname, platform, vname, variant, on)
                served = abi3_pythons(release, variant, python)
                if served and python != served[0]:
                    continue  # one abi3 wheel, made at the first Python it serves
                cell = _cell(
                    site,
                    cell_id=f"wheel-{pname}-py{python}-{vname}",
                    python=python,
                    platform_tag=on.platform_tag or platform.platform_tag,
                    image=on.image,
                )
                if served:
                    cell = as_abi3(cell, pname, vname, abi3_floor(release, variant), served)
                yield from expand_axes(cell, release)
    lib = release.libtorch
    if lib is None:
        return
    for pname in lib.platforms:
        platform = release.platforms[pname]
        wanted = lib.on(pname)
        for vname in wanted.accelerators:
            variant = release.accelerators[vname]
            on = variant.platforms.get(pname) or VariantOnPlatform()
            if wanted.cxx11_abi is not None:
                on = VariantOnPlatform(cxx11_abi=wanted.cxx11_abi, env=on.env)
            site = _Site(matrix, release, pname, platform, vname, variant, on)
            for archive in wanted.variants:
                for config in wanted.configs:
                    cell = _cell(
                        site,
                        cell_id=f"libtorch-{pname}-{vname}-{archive}-{config}",
                        image=lib.images.get(pname, {}).get(vname, ""),
                        archive=(archive, config),
                    )
                    yield from expand_axes(cell, release)


@dataclass(frozen=True)
class _Site:
    """Where a cell is built: one variant on one platform of a release."""

    matrix: Matrix
    release: Release
    pname: str
    platform: Platform
    vname: str
    variant: Variant
    on: VariantOnPlatform

    @property
    def cxx11_abi(self) -> bool:
        return self.platform.cxx11_abi if self.on.cxx11_abi is None else self.on.cxx11_abi


def _cell(
    site: _Site,
    *,
    cell_id: str,
    image: str,
    python: PythonVersion | None = None,
    platform_tag: str | None = None,
    archive: tuple[str, str] | None = None,
) -> Cell:
    """A wheel cell (python and platform_tag given) or a native-archive cell (archive given)."""
    variant, release, platform = site.variant, site.release, site.platform
    bundles = site.on.bundle_libraries and archive is None
    requires = () if bundles or archive else variant.extra_install_requires
    env = _env(site, cell_id, python, platform_tag or "", requires)
    if archive is not None:
        env["LIBTORCH_VARIANT"], env["LIBTORCH_CONFIG"] = archive
    return Cell(
        id=cell_id,
        release=release.name,
        package_type="wheel" if archive is None else "archive",
        platform=site.pname,
        os=platform.os,
        arch=platform.arch,
        python=str(python) if python else None,
        python_tag=python.python_tag if python else None,
        abi_tag=python.abi_tag if python else None,
        free_threaded=python.free_threaded if python else False,
        accelerator=variant.kind,
        accelerator_version=variant.short_version or None,
        accelerator_full_version=str(variant.version) if variant.version else None,
        variant=site.vname,
        local_version=local_version(site.vname),
        status=variant.status,
        platform_tag=platform_tag,
        cxx11_abi=site.cxx11_abi,
        image=image or None,
        extra_install_requires=tuple(requires),
        bundles_libraries=bundles,
        upload_subfolder=site.vname,
        pypi_default=archive is None and release.pypi_default.get(site.pname) == site.vname,
        cudnn_version=str(variant.cudnn) if variant.cudnn else None,
        nccl_version=str(variant.nccl) if variant.nccl else None,
        cuda_arch_list=variant.arch_list,
        nvcc_flags=variant.nvcc_flags,
        libtorch_variant=archive[0] if archive else None,
        libtorch_config=archive[1] if archive else None,
        build_runner=platform.build_runner or None,
        test_runner=platform.test_runners.get(variant.kind) or None,
        env=env,
    )


def _env(
    site: _Site,
    cell_id: str,
    python: PythonVersion | None,
    platform_tag: str,
    requires: Sequence[str],
) -> dict[str, str]:
    """What the build script sees; the matrix's own `env:` maps are layered on top."""
    variant = site.variant
    env = {
        "PACKAGE_TYPE": "wheel" if python else "libtorch",  # PyTorch's builder scripts' word
        "DESIRED_PYTHON": str(python) if python else "",
        "DESIRED_CUDA": site.vname,
        "GPU_ARCH_TYPE": variant.kind,
        "GPU_ARCH_VERSION": variant.short_version,
        "CXX11_ABI": "1" if site.cxx11_abi else "0",
        "PLATFORM_TAG": platform_tag,
        "RELFORGE_CELL_ID": cell_id,
        "RELFORGE_RELEASE": site.release.name,
        "RELFORGE_EXTRA_INSTALL_REQUIRES": "\n".join(requires),
    }
    if variant.arch_list:
        env[site.matrix.project.build.arch_list_env] = ";".join(variant.arch_list)
    if variant.nvcc_flags:
        env["NVCC_FLAGS"] = " ".join(variant.nvcc_flags)
    if variant.cudnn:
        env["CUDNN_VERSION"] = str(variant.cudnn)
    if variant.nccl:
        env["NCCL_VERSION"] = str(variant.nccl)
    layers = (
        site.matrix.project.env,
        site.release.env,
        site.platform.env,
        variant.env,
        site.on.env,
    )
    for layer in layers:
        env.update(layer)
    return env


def _extra_cell(cell: Cell, rule: IncludeRule) -> Cell:
    settings = rule.set
    bundles = (
        cell.bundles_libraries if settings.bundle_libraries is None else settings.bundle_libraries
    )
    requires = () if bundles else cell.extra_install_requires
    env = {
        **cell.env,
        "RELFORGE_CELL_ID": f"{cell.id}-{rule.suffix}",
        "RELFORGE_EXTRA_INSTALL_REQUIRES": "\n".join(requires),
        **settings.env,
    }
    return cell.replace(
        id=f"{cell.id}-{rule.suffix}",
        bundles_libraries=bundles,
        extra_install_requires=requires,
        upload_subfolder=settings.upload_subfolder.format(variant=cell.variant)
        if settings.upload_subfolder
        else cell.upload_subfolder,
        image=settings.image or cell.image,
        extra_of=cell.id,
        off_root_index=settings.root_index is False,
        pypi_default=False,  # a one-off copy never replaces the variant's PyPI upload
        env=env,
    )


def nightly_date() -> datetime.date:
    """Today in UTC, or the day of SOURCE_DATE_EPOCH when set (reproducible builds)."""
    epoch = os.environ.get("SOURCE_DATE_EPOCH")
    if epoch:
        try:
            return datetime.datetime.fromtimestamp(int(epoch), datetime.timezone.utc).date()
        except (ValueError, OverflowError):
            raise UsageError(
                f"SOURCE_DATE_EPOCH={epoch!r} is not a Unix time", key="SOURCE_DATE_EPOCH"
            ) from None
    return datetime.datetime.now(datetime.timezone.utc).date()


def channel_version(
    release: Release, channel_scheme: str, local: str, date: datetime.date | None = None
) -> str:
    base = release.full_version
    label = f"+{local}" if local else ""
    if channel_scheme == "dev-date":
        day = date or nightly_date()
        return f"{base}.dev{day:%Y%m%d}{label}"
    return f"{base}{label}"


def on_channel(
    cell: Cell,
    matrix: Matrix,
    release: Release,
    channel: ChannelName,
    date: datetime.date | None = None,
) -> Cell:
    """The cell as built for a channel: its version and where it is uploaded."""
    spec = matrix.channels.get(channel)
    prefix = spec.prefix if cell.package_type == "wheel" else (spec.libtorch_prefix or spec.prefix)
    prefix = prefix.strip("/")
    base_url = matrix.project.download_url.rstrip("/")
    stamped = cell.replace(channel=channel)
    indexes = {n: resolve_index(i, matrix, stamped, prefix) for n, i in cell.axis_index.items()}
    return stamped.replace(
        axis_index=indexes,
        channel=channel,
        version=channel_version(release, spec.version_scheme, cell.local_version, date),
        upload_prefix=f"{prefix}/{cell.upload_subfolder}/",
        index_url=f"{base_url}/{prefix}/{cell.upload_subfolder}" if base_url else None,
    )
