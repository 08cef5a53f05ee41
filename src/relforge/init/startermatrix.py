"""The text of the starter matrix: plain YAML, with comments that say where each value came
from and where each key is documented.  `StarterLayout` holds every decision
(relforge.init.starter makes them); `render_starter` only writes them down."""

from __future__ import annotations

import datetime
import json
from collections.abc import Sequence
from dataclasses import dataclass

from relforge.init.machine import HostPlatform

GPU_RUNNER = "linux-gpu"  # a placeholder for the user's self-hosted GPU runner label
VERSION_FILE = "version.txt"


@dataclass(frozen=True, kw_only=True)
class CudaChoice:
    variant: str  # cu130
    version: str  # 13.0.88
    arch_list: tuple[str, ...]
    image: str
    why: str  # a comment: where the version came from


@dataclass(frozen=True, kw_only=True)
class AxisChoice:
    """One value of a dependency axis the starter writes."""

    dependency: str  # torch, numpy
    value: str  # "2.13", "2.x"
    install: tuple[str, ...]
    requires: tuple[str, ...]
    why: str  # a comment on install


@dataclass(frozen=True, kw_only=True)
class StarterLayout:
    """Everything the starter matrix says."""

    name: str
    import_name: str = ""  # written only when it is not the name's default
    import_name_from: str = ""
    release: str
    version: str | None  # releases.X.Y.version (a patch release), or None for X.Y.0
    date: datetime.date
    pythons: Sequence[str]
    absent_pythons: Sequence[str] = ()
    requires_python: str | None = None
    requires_python_from: str = "pyproject.toml"
    requires_comment: bool = False  # it excludes some X.Y.0: written as a comment
    source: str
    matrix_file: str
    download_url: str = ""
    platform: HostPlatform
    cpu_image: str
    cuda: CudaChoice | None = None
    abi3: str = ""
    abi3_from: str = ""
    axes: Sequence[AxisChoice] = ()
    images_comment: str = ""


def render_starter(layout: StarterLayout) -> str:
    """The matrix text."""
    plat = layout.platform.name
    platform = layout.platform
    glibc_from = "this host's glibc" if platform.from_host else "a manylinux_2_28 image's glibc"
    runner = "ubuntu-24.04-arm" if platform.arch == "aarch64" else "ubuntu-24.04"
    cuda = layout.cuda
    runners = f"{{cpu: {runner}, cuda: {GPU_RUNNER}}}" if cuda else f"{{cpu: {runner}}}"
    gpu_comment = (
        f"        # Tests of CUDA wheels run on a runner with a GPU: {GPU_RUNNER} stands for your\n"
        "        # self-hosted runner's label (`workflows generate` lists it in "
        ".github/actionlint.yaml).\n"
        if cuda
        else ""
    )
    cuda_variant = (
        f"""\
      {cuda.variant}:
        kind: cuda
        version: {cuda.version}  # {cuda.why}
        arch_list: {json.dumps(list(cuda.arch_list))}
        # extra_install_requires: ["nvidia-cuda-runtime"]  # if you link it shared
        platforms:
          {plat}: {{image: {cuda.image}}}
"""
        if cuda
        else ""
    )
    download = (
        f"  download_url: {json.dumps(layout.download_url)}  # where the channel indexes are "
        "served\n"
        if layout.download_url
        else "  # download_url: https://download.example.org  # where the channel indexes are "
        "served\n"
    )
    import_name = (
        f"  import_name: {layout.import_name}  # the module it installs "
        f"({layout.import_name_from})\n"
        if layout.import_name
        else ""
    )
    absent = (
        f"    # and {json.dumps(list(layout.absent_pythons))} once a builder here has them: no "
        "CPython\n    # of those versions was on PATH, in pyenv or from uv when this was written\n"
        if layout.absent_pythons
        else ""
    )
    requires = (
        f"    requires_python: {json.dumps(layout.requires_python)}"
        f"  # = its {layout.requires_python_from} (checked on every wheel)\n"
        if layout.requires_python is not None
        else ""
    )
    if requires and layout.requires_comment:  # the matrix reads X.Y as X.Y.0, which it excludes
        requires = "    # " + requires.lstrip().replace(
            "(checked on every wheel)", "(excludes some Python X.Y.0 listed above)"
        )
    patch = (
        f"    version: {layout.version}  # the patch release built from this branch\n"
        if layout.version
        else ""
    )
    abi3 = (
        f'    abi3: "{layout.abi3}"  # one cp{layout.abi3.replace(".", "")}-abi3 wheel for Python '
        f"{layout.abi3} on ({layout.abi3_from})\n"
        if layout.abi3
        else ""
    )
    return f"""\
# Build matrix of {layout.name}, written by `relforge init`; edit it freely.
# Every key is described in relforge's docs: docs/reference/matrix.md (and the JSON Schema
# editors complete it with, docs/reference/matrix.schema.json); docs/guide/matrix.md (sections,
# extends, rules), builds.md (project.build), channels-and-promotion.md (publishing),
# dependencies.md (axes); docs/cuda-extension.md in relforge's repository walks a CUDA
# extension from here to a release.
# Check it with `relforge matrix check {layout.matrix_file}`
# and `relforge matrix lint --strict {layout.matrix_file}`.
schema_version: 1

project:
  name: {json.dumps(layout.name)}
{import_name}  version_file: {VERSION_FILE}  # X.Y.Z of nightly and test builds (from build.source)
  # repository: OWNER/NAME  # GitHub repository: lets `workflows generate --ref` pin branches
{download}  build:
    source: {json.dumps(layout.source)}  # the project root, relative to this file
    command: []  # empty: the PEP 517 wheel build (pip wheel, offline); or your build script
    arch_list_env: CUDA_ARCH_LIST  # the variable your build reads the CUDA arch list from
    timeout_minutes: 60

channels:
  default: nightly  # `relforge release cut` makes it test on release/X.Y

publishing:
  store: file://.relforge/store  # or s3://BUCKET/PREFIX (credentials from the environment)

releases:
  "{layout.release}":
{patch}    date: {layout.date.isoformat()}  # planned release: lint checks Python end of life by it
    python: {json.dumps(list(layout.pythons))}
{absent}{requires}{abi3}    platforms:
      {plat}:
        os: linux
        arch: {platform.arch}
        platform_tag: {platform.tag}  # {glibc_from}
        build_runner: {runner}
{gpu_comment}        test_runners: {runners}
{layout.images_comment}    accelerators:
      cpu:
        kind: cpu
        platforms:
          {plat}: {{image: {layout.cpu_image}}}
{cuda_variant}{_axes(layout.axes)}    pypi_default:
      {plat}: cpu  # the variant `relforge pypi stage` uploads to PyPI
"""


def _axes(axes: Sequence[AxisChoice]) -> str:
    if not axes:
        return ""
    text = "    axes:  # dependencies the build compiles against (docs/guide/dependencies.md)\n"
    for axis in axes:
        text += (
            f"      {axis.dependency}:\n"
            f"        {json.dumps(axis.value)}:\n"
            f"          install: {json.dumps(list(axis.install))}  # {axis.why}\n"
            f"          requires: {json.dumps(list(axis.requires))}  # what the wheel then needs\n"
        )
    return text
