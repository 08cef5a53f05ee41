"""The pages of a package index: PEP 503 HTML and PEP 691 JSON, per project and per folder.

Each file is listed with the sha256 its manifest vouches for, `data-requires-python` and, when
its PEP 658 sidecar is vouched for, `data-dist-info-metadata`/`data-core-metadata`; a file the
channel's yank record names carries PEP 592 `data-yanked` (HTML) and `yanked` (JSON).  Every page
carries the generation of the page set it belongs to (HTML `<meta name="relforge:generation">`,
JSON `_relforge.generation`; PEP 691 reserves leading-underscore keys for the index).
"""

from __future__ import annotations

import html
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

from packaging.utils import (
    InvalidSdistFilename,
    InvalidWheelFilename,
    canonicalize_name,
    parse_sdist_filename,
    parse_wheel_filename,
)
from packaging.version import Version

from relforge import __version__


def parse_dist(filename: str) -> tuple[str, Version] | None:
    """(project, version) of a wheel or sdist file name; None for anything else."""
    try:
        if filename.endswith(".whl"):
            name, version, _, _ = parse_wheel_filename(filename)
            return name, version
        if filename.endswith((".tar.gz", ".zip")):
            return parse_sdist_filename(filename)
    except (InvalidWheelFilename, InvalidSdistFilename):
        return None
    return None


def canonical(name: str) -> str:
    return str(canonicalize_name(name))


@dataclass(frozen=True, kw_only=True)
class IndexedFile:
    """A file as its page lists it, and what the page was built from (to carry it over)."""

    filename: str
    sha256: str
    size: int
    requires_python: str | None = None
    metadata_sha256: str | None = None
    etag: str = ""
    metadata_etag: str = ""
    manifest: str = ""  # the stored manifest that vouched for it
    yanked: str | None = None  # PEP 592: the reason it is yanked ("" when none was given)


def _sources(files: Sequence[IndexedFile]) -> dict[str, Any]:
    """What each file was built from: [ETag, sidecar ETag, index into `manifests`]."""
    manifests = sorted({f.manifest for f in files})
    number = {m: i for i, m in enumerate(manifests)}
    return {
        "manifests": manifests,
        "files": {f.filename: [f.etag, f.metadata_etag, number[f.manifest]] for f in files},
    }


def carried(page: Mapping[str, Any]) -> dict[str, IndexedFile]:
    """filename → file of a JSON page this module wrote (empty for anything else)."""
    out = {}
    try:
        sources = page["_relforge"]["files"]
        manifests = page["_relforge"]["manifests"]
        for f in page["files"]:
            etag, meta_etag, number = sources[f["filename"]]
            meta = f.get("core-metadata") or {}
            out[f["filename"]] = IndexedFile(
                filename=str(f["filename"]),
                sha256=str(f["hashes"]["sha256"]),
                size=int(f["size"]),
                requires_python=f.get("requires-python"),
                metadata_sha256=meta.get("sha256"),
                etag=str(etag),
                metadata_etag=str(meta_etag),
                manifest=str(manifests[number]),
            )
    except (KeyError, TypeError, ValueError, AttributeError, IndexError):
        return {}
    return out


def _href(f: IndexedFile, folders: Mapping[str, str] | None) -> str:
    """`../file` on a variant folder's page; `../<variant folder>/file` on a channel-root page
    (`folders`: filename → the folder, relative to the channel prefix, that serves it)."""
    folder = folders.get(f.filename) if folders else None
    return f"../{quote(folder)}/{quote(f.filename)}" if folder else f"../{quote(f.filename)}"


def project_html(
    project: str,
    files: Sequence[IndexedFile],
    generation: str = "",
    folders: Mapping[str, str] | None = None,
) -> bytes:
    rows = []
    for f in files:
        attrs = [f'href="{_href(f, folders)}#sha256={f.sha256}"']
        if f.requires_python:
            attrs.append(f'data-requires-python="{html.escape(f.requires_python)}"')
        if f.metadata_sha256:
            attrs.append(f'data-dist-info-metadata="sha256={f.metadata_sha256}"')
            attrs.append(f'data-core-metadata="sha256={f.metadata_sha256}"')
        if f.yanked is not None:
            attrs.append(f'data-yanked="{html.escape(f.yanked)}"')
        rows.append(f"    <a {' '.join(attrs)}>{html.escape(f.filename)}</a><br>")
    return _page(f"Links for {project}", rows, generation)


def project_json(
    project: str,
    files: Sequence[IndexedFile],
    fingerprint: str,
    generation: str = "",
    folders: Mapping[str, str] | None = None,
) -> bytes:
    entries = []
    versions = set()
    for f in files:
        parsed = parse_dist(f.filename)
        if parsed:
            versions.add(parsed[1])
        entry: dict[str, object] = {
            "filename": f.filename,
            "url": _href(f, folders),
            "hashes": {"sha256": f.sha256},
            "size": f.size,
        }
        if f.requires_python:
            entry["requires-python"] = f.requires_python
        if f.metadata_sha256:
            entry["core-metadata"] = {"sha256": f.metadata_sha256}
            entry["dist-info-metadata"] = {"sha256": f.metadata_sha256}
        if f.yanked is not None:
            entry["yanked"] = f.yanked or True
        entries.append(entry)
    page = {
        "meta": {"api-version": "1.1"},
        "name": project,
        "versions": [str(v) for v in sorted(versions)],
        "files": entries,
        "_relforge": {
            "generation": generation,
            "fingerprint": fingerprint,
            "generator": f"relforge {__version__}",
            **_sources(files),
        },
    }
    return (json.dumps(page, separators=(",", ":")) + "\n").encode()


def root_html(projects: Iterable[str], generation: str = "") -> bytes:
    rows = [f'    <a href="{quote(p)}/">{html.escape(p)}</a><br>' for p in projects]
    return _page("Simple index", rows, generation)


def root_json(projects: Iterable[str], generation: str = "") -> bytes:
    page = {
        "meta": {"api-version": "1.1"},
        "projects": [{"name": p} for p in projects],
        "_relforge": {"generation": generation},
    }
    return (json.dumps(page, indent=1) + "\n").encode()


def _page(title: str, rows: list[str], generation: str) -> bytes:
    head = (
        "<!DOCTYPE html>\n<html>\n  <head>\n"
        '    <meta name="pypi:repository-version" content="1.1">\n'
        f'    <meta name="relforge:generation" content="{html.escape(generation)}">\n'
        f"    <title>{html.escape(title)}</title>\n  </head>\n  <body>\n"
        f"    <h1>{html.escape(title)}</h1>\n"
    )
    return (head + "".join(r + "\n" for r in rows) + "  </body>\n</html>\n").encode()
