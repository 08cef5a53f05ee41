"""Where each cell builds in the generated CI, and the cells no runner of theirs could build.

A cell with an image builds in it (`relforge build --builder docker --pull missing`: the runner's
engine pulls the image when it lacks it); a cell without one builds on the runner itself, with
the cell's Python set up first.  GitHub-hosted runners (resources/hosted_runners.yaml) have no
accelerator toolkit and run Linux containers on Linux only, so the generator refuses a cell that
needs nvcc/hipcc/icpx and has no image there, an image on a hosted Windows or macOS runner, and a
hosted runner of another OS or CPU than the cell.  A label not in that list is a self-hosted
runner, trusted to have what its cells need.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from importlib import resources
from typing import Literal

import yaml

from relforge.errors import ConfigError, Span
from relforge.matrix.cell import Cell
from relforge.matrix.schema import Release

CellBuilder = Literal["docker", "host"]
_LABEL = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*\Z")
_ARCHES = {"amd64": "x86_64", "x64": "x86_64", "arm64": "aarch64"}
_TOOLKITS = {"cuda": "nvcc", "rocm": "hipcc", "xpu": "icpx"}


@dataclass(frozen=True, kw_only=True)
class HostedRunner:
    """A GitHub-hosted runner label: the machine a job on it gets."""

    os: str
    arch: str
    docker: bool  # runs Linux containers


@functools.cache
def hosted_runners() -> Mapping[str, HostedRunner]:
    text = resources.files("relforge.resources").joinpath("hosted_runners.yaml").read_text("utf-8")
    return {
        label: HostedRunner(os=str(v["os"]), arch=str(v["arch"]), docker=bool(v["docker"]))
        for label, v in yaml.safe_load(text).items()
    }


def cell_builder(cell: Cell) -> CellBuilder:
    """Docker for a cell with an image, else the runner's host."""
    return "docker" if cell.image else "host"


def check_runners(release: Release, cells: Sequence[Cell]) -> None:
    """Every cell has a plain build runner label, and no hosted runner is asked for what it
    cannot do (ConfigError at the key to change, with the ways out)."""
    for cell in cells:
        platform = release.platforms[cell.platform]
        base = f"releases.{release.name}.platforms.{cell.platform}"
        if not cell.build_runner:
            raise ConfigError(
                f"platform {cell.platform} has no build_runner, so {cell.id} cannot be built in CI",
                where=platform.span,
                key=f"{base}.build_runner",
                hint="name the runner label its builds run on, e.g. build_runner: ubuntu-24.04",
            )
        for key, label in (("build_runner", cell.build_runner), ("test_runners", cell.test_runner)):
            if label and not _LABEL.match(label):
                raise ConfigError(
                    f"runner label {label!r} may hold only letters, digits, '.', '_' and '-'",
                    where=platform.at(key),
                    key=f"{base}.{key}",
                )
        _check_build_runner(release, cell)
        _check_test_runner(release, cell)


def _check_build_runner(release: Release, cell: Cell) -> None:
    label = cell.build_runner or ""
    hosted = hosted_runners().get(label)
    if hosted is None:
        return
    platform = release.platforms[cell.platform]
    runner_key = f"releases.{release.name}.platforms.{cell.platform}.build_runner"
    ways = (
        f"build on a runner of that kind: a self-hosted label, or a GitHub-hosted one of "
        f"{cell.os} {cell.arch} ({runner_key})"
    )
    if cell_builder(cell) == "docker":
        where, key = _image_place(release, cell)
        if not hosted.docker or cell.os != "linux":
            raise ConfigError(
                f"{cell.id} builds in the image {cell.image}, but {label} (GitHub-hosted "
                f"{hosted.os}) cannot run Linux containers",
                where=where,
                key=key,
                hint=f"drop the image to build on the runner itself, or {ways}",
            )
        if _arch(hosted.arch) != _arch(cell.arch):
            raise ConfigError(
                f"{cell.id} is {cell.arch}, but {label} (GitHub-hosted) is {hosted.arch}: its "
                f"engine cannot run the {cell.arch} image {cell.image}",
                where=platform.at("build_runner"),
                key=runner_key,
                hint=ways,
            )
        return
    if (hosted.os, _arch(hosted.arch)) != (cell.os, _arch(cell.arch)):
        raise ConfigError(
            f"{cell.id} is a {cell.os} {cell.arch} cell, but {label} (GitHub-hosted) is "
            f"{hosted.os} {hosted.arch}: a build on it makes {hosted.os} {hosted.arch} binaries",
            where=platform.at("build_runner"),
            key=runner_key,
            hint=ways,
        )
    tool = _TOOLKITS.get(cell.accelerator)
    if tool is not None:
        where, key = _image_place(release, cell)
        raise ConfigError(
            f"{cell.id} needs the {cell.accelerator.upper()} {cell.accelerator_version or ''} "
            f"toolkit ({tool}), which {label} (GitHub-hosted) does not have, and it names no image",
            where=where,
            key=key,
            hint="give it an image that holds the toolkit and the cell's Pythons (e.g. made by "
            "`relforge builder-image --python … --cuda /usr/local/cuda-X.Y`, pushed to a "
            "registry the runner can pull from), or build it on a self-hosted runner that has "
            f"the toolkit ({runner_key})",
        )


def _check_test_runner(release: Release, cell: Cell) -> None:
    label = cell.test_runner or ""
    hosted = hosted_runners().get(label)
    if hosted is None or (hosted.os, _arch(hosted.arch)) == (cell.os, _arch(cell.arch)):
        return
    platform = release.platforms[cell.platform]
    raise ConfigError(
        f"{cell.id} is tested on {label} (GitHub-hosted {hosted.os} {hosted.arch}), which "
        f"cannot install a {cell.os} {cell.arch} artifact",
        where=platform.at("test_runners"),
        key=f"releases.{release.name}.platforms.{cell.platform}.test_runners.{cell.accelerator}",
        hint=f"name a {cell.os} {cell.arch} runner for its {cell.accelerator} tests",
    )


def _image_place(release: Release, cell: Cell) -> tuple[Span, str]:
    """Where the cell's image is (or would be) set in the matrix, and that key's path."""
    if cell.package_type == "archive" and release.libtorch is not None:
        key = f"releases.{release.name}.libtorch.images.{cell.platform}.{cell.variant}"
        return release.libtorch.at("images"), key
    key = f"releases.{release.name}.accelerators.{cell.variant}.platforms.{cell.platform}.image"
    variant = release.accelerators.get(cell.variant)
    if variant is None:
        return release.span, key
    on_platform = variant.platforms.get(cell.platform)
    if on_platform is None:
        return variant.at("platforms"), key
    return on_platform.at("image"), key


def _arch(arch: str) -> str:
    return _ARCHES.get(arch.lower(), arch.lower())
