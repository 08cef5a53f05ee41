"""Native archive file names and download URLs, from the release's `libtorch.file_name`.

The build must write exactly this name (`relforge build` refuses another), so `matrix docs` and
the site can link each archive's file, not just its folder.  A nightly's version carries the
build date, which the matrix does not know: its docs show the pattern with `YYYYMMDD`.
"""

from __future__ import annotations

import string
import urllib.parse

from relforge.errors import ConfigError
from relforge.matrix.cell import Cell
from relforge.matrix.schema import Libtorch, Matrix, Release

FIELDS = ("project", "libtorch_variant", "libtorch_config", "debug", "variant", "version")
NIGHTLY_DATE = "YYYYMMDD"


def check_file_name(libtorch: Libtorch, path: str) -> None:
    """Load-time check: the template names only known fields and ends in `.zip`."""
    template = libtorch.file_name
    try:
        names = [f for _, f, _, _ in string.Formatter().parse(template) if f is not None]
    except ValueError as exc:
        raise _bad(libtorch, path, f"is not a template ({exc})") from None
    unknown = [n for n in names if n not in FIELDS]
    if unknown:
        raise _bad(libtorch, path, f"names unknown field(s) {', '.join(map(repr, unknown))}")
    if "version" not in names:
        raise _bad(libtorch, path, "must contain {version} (a file name is forever)")
    if not template.endswith(".zip") or "/" in template:
        raise _bad(libtorch, path, "must be a .zip file name (no folders)")


def _bad(libtorch: Libtorch, path: str, what: str) -> ConfigError:
    return ConfigError(
        f"file_name {libtorch.file_name!r} {what}",
        where=libtorch.at("file_name"),
        key=f"{path}.file_name",
        hint="fields: " + ", ".join("{" + f + "}" for f in FIELDS),
    )


def archive_filename(matrix: Matrix, release: Release, cell: Cell, version: str) -> str:
    """The file name of `cell`'s archive when it is built as `version`."""
    assert release.libtorch is not None and cell.package_type != "wheel"
    config = cell.libtorch_config or "release"
    return release.libtorch.file_name.format(
        project=matrix.project.name,
        libtorch_variant=cell.libtorch_variant or "",
        libtorch_config=config,
        debug="-debug" if config == "debug" else "",
        variant=cell.variant,
        version=version,
    )


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
