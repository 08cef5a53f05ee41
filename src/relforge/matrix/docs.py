"""Generated documentation: the RELEASE.md-style compatibility table of every release and, per
release, the pip command that installs each variant from each channel."""

from __future__ import annotations

import dataclasses
import shlex
from typing import Literal

from typing_extensions import assert_never

from relforge.matrix.archivenames import archive_table
from relforge.matrix.cell import Cell
from relforge.matrix.describe import python_range, variant_label
from relforge.matrix.expand import expand_cells
from relforge.matrix.schema import CHANNEL_NAMES, ChannelName, Matrix, Release, Variant

Installer = Literal["pip", "uv"]
INSTALLERS: tuple[Installer, ...] = ("pip", "uv")


def _versions_with_cudnn(release: Release, kind: str, status: str) -> str:
    """`CUDA 12.6, CUDA 12.8 (cuDNN 9.10.2.21)`: variants grouped by their cuDNN version."""
    chosen = [
        (n, v) for n, v in release.accelerators.items() if v.kind == kind and v.status == status
    ]
    groups: list[tuple[str, list[str]]] = []
    for name, variant in chosen:
        cudnn = str(variant.cudnn) if variant.cudnn else ""
        if groups and groups[-1][0] == cudnn:
            groups[-1][1].append(variant_label(name, variant))
        else:
            groups.append((cudnn, [variant_label(name, variant)]))
    parts = [", ".join(labels) + (f" (cuDNN {cudnn})" if cudnn else "") for cudnn, labels in groups]
    return ", ".join(parts) or "—"


def compatibility_rows(matrix: Matrix) -> tuple[list[str], list[list[str]]]:
    """The RELEASE.md-style table as a header and rows (newest release first)."""
    title = matrix.project.title
    with_cxx = any(r.cxx_standard for r in matrix.releases.values())
    head = [
        f"{title} version",
        "Python",
        *(["C++"] if with_cxx else []),
        "Stable CUDA",
        "Experimental CUDA",
        "Stable ROCm",
        "Other accelerators",
    ]
    rows = []
    for release in reversed(list(matrix.releases.values())):
        other = sorted(
            {
                variant_label(n, v)
                for n, v in release.accelerators.items()
                if v.kind == "xpu" or (v.kind == "rocm" and v.status != "stable")
            }
        )
        row = [
            release.name,
            python_range(release),
            *([release.cxx_standard or "—"] if with_cxx else []),
            _versions_with_cudnn(release, "cuda", "stable"),
            _versions_with_cudnn(release, "cuda", "experimental"),
            _versions_with_cudnn(release, "rocm", "stable"),
            ", ".join(other) or "—",
        ]
        rows.append(row)
    return head, rows


def compatibility_table(matrix: Matrix) -> str:
    head, rows = compatibility_rows(matrix)
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def with_download_url(matrix: Matrix, url: str) -> Matrix:
    """The matrix with `project.download_url` replaced (a mirror, or a local store's URL)."""
    project = dataclasses.replace(matrix.project, download_url=url)
    return dataclasses.replace(matrix, project=project)


def pypi_platforms(wheels: list[Cell], subfolder: str) -> list[str]:
    """Platforms whose PyPI upload is this folder's wheel (include-rule copies never are)."""
    return list(
        dict.fromkeys(
            c.platform
            for c in wheels
            if c.upload_subfolder == subfolder and c.pypi_default and c.extra_of is None
        )
    )


def pypi_axes(wheels: list[Cell], subfolder: str) -> dict[str, str]:
    """The dependency-axis values of this folder's PyPI upload (PyPI holds one wheel per
    platform and Python: the last value of each axis); {} when the release has no axes."""
    for cell in wheels:
        if cell.upload_subfolder == subfolder and cell.pypi_default and cell.extra_of is None:
            return dict(cell.axes)
    return {}


def axes_words(axes: dict[str, str]) -> str:
    """`numpy 2.x, torch 2.9`: axis values as the docs and the site name them."""
    return ", ".join(f"{name} {value}" for name, value in axes.items())


def install_command(
    matrix: Matrix,
    release: Release,
    variant: str,
    channel: ChannelName,
    pypi: bool,
    installer: Installer = "pip",
) -> str:
    """The one command that installs `variant` (an upload folder) from `channel`: from PyPI when
    `pypi` (the platform's PyPI default) and the channel is release, else from the channel's
    folder under `project.download_url`.  `matrix docs` and `relforge site` both print this."""
    url = ""
    if not (pypi and channel == "release"):
        spec = matrix.channels.get(channel)
        path = f"{spec.prefix.strip('/')}/{variant}"
        base = matrix.project.download_url.rstrip("/")
        url = f"{base}/{path}" if base else f"<download_url>/{path}"
    return index_install_command(matrix.project.name, url, channel, installer)


def index_install_command(
    project: str, url: str, channel: ChannelName, installer: Installer = "pip"
) -> str:
    """`pip3 install [--pre] PROJECT --index-url URL` (uv: `uv pip install … --default-index
    URL`); without `url`, from the installer's default index (PyPI).  Nightly versions are
    pre-releases: the command allows them.  `publish` ends with these for the channel's index."""
    name = shlex.quote(project)
    nightly = channel == "nightly"
    quoted = url if url.startswith("<download_url>") else shlex.quote(url)
    match installer:
        case "pip":
            words = ["pip3", "install", *(["--pre"] if nightly else []), name]
            index = ["--index-url", quoted]
        case "uv":
            words = ["uv", "pip", "install", *(["--prerelease", "allow"] if nightly else []), name]
            index = ["--default-index", quoted]
        case _:
            assert_never(installer)
    return " ".join(words + (index if url else []))


def install_table(matrix: Matrix, release: Release) -> str:
    wheels = [c for c in expand_cells(matrix, release.name) if c.package_type == "wheel"]
    lines = [
        f"### {matrix.project.title} {release.name}",
        "",
        "| Variant | Platforms | " + " | ".join(CHANNEL_NAMES) + " |",
        "|---|---|" + "---|" * len(CHANNEL_NAMES),
    ]
    for vname, variant in release.accelerators.items():
        for subfolder in dict.fromkeys(c.upload_subfolder for c in wheels if c.variant == vname):
            cells = [c for c in wheels if c.upload_subfolder == subfolder]
            platforms = list(dict.fromkeys(c.platform for c in cells))
            pypi = pypi_platforms(wheels, subfolder)
            commands = []
            for channel in CHANNEL_NAMES:
                cmd = f"`{install_command(matrix, release, subfolder, channel, False)}`"
                if channel == "release" and pypi:
                    on = axes_words(pypi_axes(wheels, subfolder))
                    cmd = (
                        f"`{install_command(matrix, release, subfolder, channel, True)}` "
                        f"({', '.join(pypi)}{'; ' + on if on else ''}); elsewhere {cmd}"
                    )
                commands.append(cmd)
            lines.append(
                f"| {_label(subfolder, vname, variant)} | {', '.join(platforms)} | "
                + " | ".join(commands)
                + " |"
            )
    return "\n".join([*lines, *axes_lines(release)])


def axes_lines(release: Release) -> list[str]:
    """What each dependency axis value is built against and what its wheels require."""
    out = []
    for axis, values in release.axes.items():
        shown = "; ".join(
            f"{key}: built with {', '.join(v.install)}"
            + (f", requires {', '.join(v.requires)}" if v.requires else "")
            for key, v in values.items()
        )
        out.append(f"- built against each {axis}: {shown}")
    return ["", *out] if out else []


def _label(subfolder: str, name: str, variant: Variant) -> str:
    label = variant_label(name, variant)
    return label if subfolder == name else f"{label} [{subfolder}]"


def render_docs(matrix: Matrix, releases: list[str] | None = None) -> str:
    """The Markdown compatibility page: the table of releases and an install command table
    per release (newest first)."""
    chosen = [matrix.release(r) for r in releases] if releases else list(matrix.releases.values())
    out = [
        f"# {matrix.project.title} compatibility matrix",
        "",
        f"<!-- generated by relforge from {matrix.file}; do not edit -->",
        "",
        compatibility_table(matrix),
        "",
        "## Install commands",
        "",
    ]
    for release in reversed(chosen):
        out += [install_table(matrix, release), ""]
        archives = archive_table(matrix, release)
        out += [archives, ""] if archives else []
    return "\n".join(out)
