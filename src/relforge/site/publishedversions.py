"""`published_versions.json`: every chosen release with the command of each selector combination.

The selector is generic: a release lists its `choices` (axis key → values, in display order) and
its `combinations`, each naming one value per axis in `selection`.  Today the axes are channel ×
platform × installer × accelerator; a matrix axis (numpy, torch…) becomes one more key in both,
and the page needs no change.  Commands come from `relforge.matrix.docs.install_command`, the code
`matrix docs` prints with, so the page and the docs cannot disagree.
"""

from __future__ import annotations

import datetime
import itertools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from relforge import __version__
from relforge.errors import UsageError
from relforge.matrix.archivenames import archive_filename, archive_url, shown_version
from relforge.matrix.cell import Cell
from relforge.matrix.describe import python_label, variant_label
from relforge.matrix.docs import INSTALLERS, install_command, pypi_platforms
from relforge.matrix.expand import Candidate, candidates, on_channel
from relforge.matrix.schema import ChannelName, Matrix, Release

SCHEMA_VERSION = 1
SITE_CHANNELS: tuple[ChannelName, ...] = ("release", "test", "nightly")  # the default first
_ANY_DAY = datetime.date(2000, 1, 1)
AXES: tuple[tuple[str, str], ...] = (
    ("channel", "Channel"),
    ("platform", "OS"),
    ("installer", "Installer"),
    ("accelerator", "Compute platform"),
)
CHANNEL_LABELS = {"release": "Release", "test": "Test (RC)", "nightly": "Nightly"}
INSTALLER_LABELS = {"pip": "pip", "uv": "uv"}
OS_LABELS = {"linux": "Linux", "windows": "Windows", "macos": "macOS"}


@dataclass(frozen=True, kw_only=True)
class Choice:
    value: str
    label: str

    def to_json(self) -> dict[str, str]:
        return {"value": self.value, "label": self.label}


def platform_label(matrix_release: Release, name: str) -> str:
    platform = matrix_release.platforms[name]
    return f"{OS_LABELS.get(platform.os, platform.os)} {platform.arch}"


def folder_label(release: Release, subfolder: str, cells: Sequence[Cell]) -> str:
    """`CUDA 12.8`, or `CUDA 12.6 [cu126_full]` for an include rule's own folder."""
    variant = next(c.variant for c in cells if c.upload_subfolder == subfolder)
    label = variant_label(variant, release.accelerators[variant])
    return label if subfolder == variant else f"{label} [{subfolder}]"


def _unavailable_reason(
    release: Release, platform: str, subfolder: str, offered: Sequence[Candidate], label: str
) -> str:
    """Why no wheel of this folder exists on this platform: the exclude rules' reasons, or that
    the variant has no settings for the platform."""
    reasons = list(dict.fromkeys(c.excluded_by.reason for c in offered if c.excluded_by))
    if reasons:
        return "; ".join(reasons)
    return f"{label} is not built for {platform} in {release.name}"


def selector_folder(cell: Cell, release: Release) -> str:
    """The accelerator choice a wheel cell is under: its index folder, or its variant when the
    folder is the variant's per-axis-value one (`cpu-numpy2.x`, no local label): the axis is
    then chosen on its own."""
    if cell.axes and not release.local_label:
        return cell.variant
    return cell.upload_subfolder


def axis_choices(release: Release) -> dict[str, list[dict[str, str]]]:
    """Each dependency axis (numpy, torch…) with its values, in file order."""
    return {
        axis: [Choice(value=key, label=f"{axis} {key}").to_json() for key in values]
        for axis, values in release.axes.items()
    }


def _check_axis_names(release: Release) -> None:
    taken = [a for a in release.axes if a in {key for key, _ in AXES}]
    if taken:
        raise UsageError(
            f"axis {taken[0]!r} has the name of a selector choice of the site",
            where=release.at("axes"),
            key=f"releases.{release.name}.axes.{taken[0]}",
            hint="rename the axis (e.g. after the dependency it stands for)",
        )


def release_versions(matrix: Matrix, release: Release) -> dict[str, Any]:
    """One release's entry of published_versions.json."""
    _check_axis_names(release)
    every = candidates(matrix, release)
    wheels = [c for c in every if c.cell.package_type == "wheel"]
    built = [c.cell for c in wheels if c.built]
    archives = [c.cell for c in every if c.cell.package_type == "archive" and c.built]
    folders = list(dict.fromkeys(selector_folder(c.cell, release) for c in wheels))
    labels = {
        f: folder_label(release, f, [c.cell for c in wheels])
        if any(c.cell.upload_subfolder == f for c in wheels)
        else variant_label(f, release.accelerators[f])
        for f in folders
    }
    axis_names = list(release.axes)
    axis_values = list(itertools.product(*(list(release.axes[a]) for a in axis_names)))
    combos: list[dict[str, Any]] = []
    for channel in SITE_CHANNELS:
        for platform in release.platforms:
            for installer in INSTALLERS:
                for folder in folders:
                    for values in axis_values:
                        chosen = dict(zip(axis_names, values, strict=True))
                        on = [
                            c
                            for c in wheels
                            if c.cell.platform == platform
                            and selector_folder(c.cell, release) == folder
                            and c.cell.axes == chosen
                        ]
                        selection = {
                            "channel": channel,
                            "platform": platform,
                            "installer": installer,
                            "accelerator": folder,
                            **chosen,
                        }
                        combos.append(
                            {
                                "selection": selection,
                                **_combination(
                                    matrix, release, selection, on, built, archives, labels[folder]
                                ),
                            }
                        )
    return {
        "version": str(release.full_version),
        "date": release.date.isoformat() if release.date else None,
        "python": [python_label(p) for p in release.python],
        "choices": {
            "channel": [Choice(value=c, label=CHANNEL_LABELS[c]).to_json() for c in SITE_CHANNELS],
            "platform": [
                Choice(value=p, label=platform_label(release, p)).to_json()
                for p in release.platforms
            ],
            "installer": [Choice(value=i, label=INSTALLER_LABELS[i]).to_json() for i in INSTALLERS],
            "accelerator": [Choice(value=f, label=labels[f]).to_json() for f in folders],
            **axis_choices(release),
        },
        "combinations": combos,
        "archive_cells": len(archives),
    }


def _combination(
    matrix: Matrix,
    release: Release,
    selection: dict[str, Any],
    on: Sequence[Candidate],
    built: list[Cell],
    archives: list[Cell],
    label: str,
) -> dict[str, Any]:
    """What the page shows for one selection: the command, or why there is none."""
    channel, platform, folder = (
        selection["channel"],
        selection["platform"],
        selection["accelerator"],
    )
    cells = [c.cell for c in on if c.built]
    if not cells:
        reason = _unavailable_reason(release, platform, folder, on, label)
        return {"available": False, "reason": reason}
    index_folder = cells[0].upload_subfolder  # the axis value's own, without a local label
    same_axes = [c for c in built if c.axes == cells[0].axes]  # PyPI holds one axis value
    pypi = platform in pypi_platforms(same_axes, index_folder)
    command = install_command(
        matrix, release, index_folder, channel, pypi, installer=selection["installer"]
    )
    axes = {
        "folder": index_folder,
        "requires": list(cells[0].axis_requires),
    }
    return {
        "available": True,
        "command": command,
        **(axes if cells[0].axes else {}),
        "source": "pypi" if pypi and channel == "release" else "index",
        "status": cells[0].status,
        "python": [p for c in cells for p in c.pythons],  # an abi3 wheel serves several
        "python_not_built": [
            {"python": c.cell.python, "reason": c.excluded_by.reason}
            for c in on
            if c.excluded_by is not None
        ],
        "archives": _archives(matrix, release, channel, cells[0], archives),
    }


def _archives(
    matrix: Matrix, release: Release, channel: ChannelName, wheel: Cell, archives: list[Cell]
) -> list[dict[str, str | None]]:
    """The native archives of the wheel's variant on its platform, and the file each channel
    publishes (an include rule's copy has none: archives follow the variant, not the extra
    folder); `url` links the file itself."""
    if wheel.extra_of is not None:
        return []
    out = []
    for cell in archives:
        if cell.platform != wheel.platform or cell.variant != wheel.variant:
            continue
        # A nightly's file name carries its build date: shown as YYYYMMDD, never linked.
        placed = on_channel(cell, matrix, release, channel, _ANY_DAY)
        filename = archive_filename(matrix, release, placed, shown_version(placed))
        dated = channel == "nightly"
        out.append(
            {
                "id": cell.id,
                "archive": cell.libtorch_variant,
                "config": cell.libtorch_config,
                "folder": placed.upload_prefix,
                "file": filename,
                "url": archive_url(placed.index_url, filename)
                if placed.index_url and not dated
                else None,
            }
        )
    return out


def _dependency_axes(releases: Sequence[Release]) -> list[str]:
    """Every dependency axis of the chosen releases, in file order (a release without one
    has no choices for it, and the page shows no group)."""
    return list(dict.fromkeys(a for r in releases for a in r.axes))


def published_versions(matrix: Matrix, releases: Sequence[Release]) -> dict[str, Any]:
    """The whole document; releases newest first (the page's default is the first)."""
    return {
        "schema_version": SCHEMA_VERSION,
        "generator": f"relforge {__version__}",
        "project": {
            "name": matrix.project.name,
            "title": matrix.project.title,
            "download_url": matrix.project.download_url,
        },
        "axes": [{"key": key, "label": label} for key, label in AXES]
        + [{"key": axis, "label": axis} for axis in _dependency_axes(releases)],
        "releases": [
            {"release": r.name, **release_versions(matrix, r)} for r in reversed(releases)
        ],
    }
