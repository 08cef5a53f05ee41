"""The text of the starter matrix: plain YAML, with comments that say where each value came
from and where each key is documented.  `StarterLayout` holds every decision
(relforge.init.starter makes them); `render_starter` only writes them down, through the
Jinja template `templates/init/starter.yaml.j2` (the workflows' template syntax)."""

from __future__ import annotations

import datetime
import functools
import json
from collections.abc import Sequence
from dataclasses import dataclass

import jinja2

from relforge.init.machine import HostPlatform
from relforge.workflows.templating import SYNTAX

GPU_RUNNER = "linux-gpu"  # a placeholder for the user's self-hosted GPU runner label
VERSION_FILE = "version.txt"
PACKAGE_TEMPLATES = "templates/init"
STARTER_TEMPLATE = "starter.yaml.j2"


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
    """The matrix text: the template `templates/init/starter.yaml.j2`, rendered."""
    platform = layout.platform
    return (
        _environment()
        .get_template(STARTER_TEMPLATE)
        .render(
            layout=layout,
            platform=platform,
            plat=platform.name,
            cuda=layout.cuda,
            glibc_from=(
                "this host's glibc" if platform.from_host else "a manylinux_2_28 image's glibc"
            ),
            runner="ubuntu-24.04-arm" if platform.arch == "aarch64" else "ubuntu-24.04",
            gpu_runner=GPU_RUNNER,
            version_file=VERSION_FILE,
        )
    )


@functools.cache
def _environment() -> jinja2.Environment:
    """The workflows' template syntax (relforge.workflows.templating.SYNTAX)."""
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("relforge", PACKAGE_TEMPLATES),
        **SYNTAX,
    )
    env.filters["json"] = json.dumps  # YAML flow values, byte for byte as json.dumps writes them
    return env
