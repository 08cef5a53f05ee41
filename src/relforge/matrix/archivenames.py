"""Native archive file names and download URLs, from the release's `libtorch.file_name`.

The build must write exactly this name (`relforge build` refuses another), so `matrix docs` and
the site can link each archive's file, not just its folder.  A nightly's version carries the
build date, which the matrix does not know: its docs show the pattern with `YYYYMMDD`.
"""

from __future__ import annotations

import string
import urllib.parse
from dataclasses import dataclass

from packaging.utils import canonicalize_name

from relforge.errors import ConfigError
from relforge.matrix.cell import Cell
from relforge.matrix.describe import variant_label
from relforge.matrix.schema import (
    CHANNEL_NAMES,
    ChannelName,
    Libtorch,
    Located,
    Matrix,
    Release,
)

FIELDS = (
    "project",
    "platform",
    "libtorch_variant",
    "libtorch_config",
    "debug",
    "variant",
    "version",
)
NIGHTLY_DATE = "YYYYMMDD"


@dataclass(frozen=True, kw_only=True)
class ArchiveLink:
    """Where a channel publishes one archive cell's file."""

    cell: Cell
    file: str  # the nightly's with YYYYMMDD for its date
    key: str  # in the store: <archive prefix>/<variant>/<file>
    url: str | None  # under project.download_url; None when the matrix sets none
    dated: bool  # True: `file` is a pattern (nightly), not one file


def check_file_name(libtorch: Libtorch, path: str) -> None:
    """Load-time check: each template names only known fields and ends in `.zip`."""
    _check_template(libtorch.file_name, libtorch, path)
    for platform, over in libtorch.per_platform.items():
        if over.file_name is not None:
            _check_template(over.file_name, over, f"{path}.per_platform.{platform}")


def _check_template(template: str, libtorch: Located, path: str) -> None:
    try:
        names = [f for _, f, _, _ in string.Formatter().parse(template) if f is not None]
    except ValueError as exc:
        raise _bad(template, libtorch, path, f"is not a template ({exc})") from None
    unknown = [n for n in names if n not in FIELDS]
    if unknown:
        raise _bad(
            template, libtorch, path, f"names unknown field(s) {', '.join(map(repr, unknown))}"
        )
    if "version" not in names:
        raise _bad(template, libtorch, path, "must contain {version} (a file name is forever)")
    if not template.endswith(".zip") or "/" in template:
        raise _bad(template, libtorch, path, "must be a .zip file name (no folders)")


def _bad(template: str, libtorch: Located, path: str, what: str) -> ConfigError:
    return ConfigError(
        f"file_name {template!r} {what}",
        where=libtorch.at("file_name"),
        key=f"{path}.file_name",
        hint="fields: " + ", ".join("{" + f + "}" for f in FIELDS),
    )


def archive_filename(matrix: Matrix, release: Release, cell: Cell, version: str) -> str:
    """The file name of `cell`'s archive when it is built as `version`."""
    assert release.libtorch is not None and cell.package_type != "wheel"
    config = cell.libtorch_config or "release"
    over = release.libtorch.per_platform.get(cell.platform)
    template = (over.file_name if over else None) or release.libtorch.file_name
    return template.format(
        project=canonicalize_name(matrix.project.name),
        platform=cell.platform,
        libtorch_variant=cell.libtorch_variant or "",
        libtorch_config=config,
        debug="-debug" if config == "debug" else "",
        variant=cell.variant,
        version=version,
    )


def archive_version(matrix: Matrix, release: Release, cell: Cell, filename: str) -> str | None:
    """The version in `filename` when it is an archive of `cell` (any version), else None."""
    marker = "\0"
    head, _, tail = archive_filename(matrix, release, cell, marker).partition(marker)
    if marker in tail or len(filename) <= len(head) + len(tail):
        return None  # {version} twice, or too short to hold one
    if not (filename.startswith(head) and filename.endswith(tail)):
        return None
    return filename[len(head) : len(filename) - len(tail)]


def archive_url(folder_url: str, filename: str) -> str:
    """The download URL of a file in a folder (`+` of a local version percent-encoded)."""
    return f"{folder_url.rstrip('/')}/{urllib.parse.quote(filename)}"


def shown_version(cell: Cell) -> str:
    """The version docs show for a channel's archive: the nightly date as a pattern."""
    assert cell.version is not None
    if cell.channel != "nightly":
        return cell.version
    from packaging.version import Version

    parsed = Version(cell.version)
    local = f"+{parsed.local}" if parsed.local else ""
    return f"{parsed.base_version}.dev{NIGHTLY_DATE}{local}"


def archive_links(matrix: Matrix, release: Release, channel: ChannelName) -> dict[str, ArchiveLink]:
    """Cell id → where the channel publishes that archive (its file, folder and URL)."""
    from relforge.matrix.expand import expand_cells  # expand → load → consistency → here

    out = {}
    base = matrix.project.download_url.rstrip("/")
    for cell in expand_cells(matrix, release.name, channel=channel):
        if cell.package_type == "wheel" or cell.upload_prefix is None:
            continue
        filename = archive_filename(matrix, release, cell, shown_version(cell))
        out[cell.id] = ArchiveLink(
            cell=cell,
            file=filename,
            key=cell.upload_prefix + filename,
            url=archive_url(f"{base}/{cell.upload_prefix}", filename) if base else None,
            dated=channel == "nightly",
        )
    return out


def archive_table(matrix: Matrix, release: Release) -> str:
    """`matrix docs`: each archive's download URL per channel ("" when the release has none)."""
    if release.libtorch is None:
        return ""
    links = {ch: archive_links(matrix, release, ch) for ch in CHANNEL_NAMES}
    lines = [
        f"#### {matrix.project.title} {release.name} native archives",
        "",
        "| Variant | Platform | Archive | " + " | ".join(CHANNEL_NAMES) + " |",
        "|---|---|---|" + "---|" * len(CHANNEL_NAMES),
    ]
    base = "" if matrix.project.download_url else "<download_url>/"
    for cell_id, first in links[CHANNEL_NAMES[0]].items():
        cell = first.cell
        label = variant_label(cell.variant, release.accelerators[cell.variant])
        shown = []
        for channel in CHANNEL_NAMES:
            link = links[channel].get(cell_id)
            shown.append(f"`{link.url or base + link.key}`" if link else "—")
        lines.append(
            f"| {label} | {cell.platform} | {cell.libtorch_variant} ({cell.libtorch_config}) | "
            + " | ".join(shown)
            + " |"
        )
    if any(link.dated for ch in links.values() for link in ch.values()):
        lines += ["", f"Nightly archives carry their build date in place of {NIGHTLY_DATE}."]
    return "\n".join(lines)
