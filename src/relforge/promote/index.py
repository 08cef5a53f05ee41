"""Package indexes: PEP 503 HTML and PEP 691 JSON per variant folder and per project.

Every file is listed with its verified sha256 (the store's; never an entry without one),
`data-requires-python` and, when a `<file>.metadata` sidecar exists, its hash as
`data-dist-info-metadata`/`data-core-metadata` (PEP 658/714).  A project's pages are rebuilt
only when its files changed: the JSON page keeps a fingerprint of what it was built from under
the private key `_relforge` (PEP 691 reserves leading-underscore keys for the index).
Each page is written atomically (pages before the folder page that links to them).
"""

from __future__ import annotations

import hashlib
import html
import json
from collections.abc import Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
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
from relforge.errors import RelforgeError
from relforge.promote.store import ObjectInfo, ObjectStore
from relforge.promote.wheels import requires_python

FORMAT = 1  # bump to rebuild every page after a change of the page format
HTML_TYPE = "text/html; charset=utf-8"
JSON_TYPE = "application/vnd.pypi.simple.v1+json"
SIDECAR = ".metadata"


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


@dataclass(frozen=True, kw_only=True)
class IndexedFile:
    filename: str
    sha256: str
    size: int
    requires_python: str | None = None
    metadata_sha256: str | None = None


@dataclass(frozen=True, kw_only=True)
class FolderListing:
    """What a variant folder holds: distribution files by project, sidecars, current pages."""

    folder: str
    projects: dict[str, list[ObjectInfo]] = field(default_factory=dict)
    sidecars: dict[str, ObjectInfo] = field(default_factory=dict)
    paged: set[str] = field(default_factory=set)  # projects that have an index.json now

    def fingerprint(self, project: str) -> str:
        parts: list[object] = [FORMAT]
        for info in self.projects.get(project, ()):
            car = self.sidecars.get(info.key + SIDECAR)
            parts.append([info.key, info.size, info.etag, car.etag if car else ""])
        return hashlib.sha256(json.dumps(parts).encode()).hexdigest()


def list_folder(store: ObjectStore, folder: str) -> FolderListing:
    listing = FolderListing(folder=folder)
    base = folder.rstrip("/") + "/"
    for info in store.list(base):
        rest = info.key[len(base) :]
        if "/" in rest:
            project, _, page = rest.partition("/")
            if page == "index.json":
                listing.paged.add(project)
            continue
        if rest.endswith(SIDECAR):
            listing.sidecars[info.key] = info
        elif (parsed := parse_dist(rest)) is not None:
            listing.projects.setdefault(parsed[0], []).append(info)
    return listing


@dataclass(frozen=True, kw_only=True)
class FolderPlan:
    folder: str
    rebuild: tuple[str, ...]
    unchanged: tuple[str, ...]
    remove: tuple[str, ...]
    projects: tuple[str, ...]
    root_stale: bool
    listing: FolderListing

    @property
    def changed(self) -> bool:
        return bool(self.rebuild or self.remove or self.root_stale)


def plan_folder(store: ObjectStore, folder: str, *, workers: int = 16) -> FolderPlan:
    """Which projects of a folder need their pages rebuilt (read-only)."""
    listing = list_folder(store, folder)
    base = folder.rstrip("/") + "/"

    def stale(project: str) -> bool:
        if project not in listing.paged:
            return True
        try:
            page = json.loads(store.get(f"{base}{project}/index.json"))
            return bool(
                page.get("_relforge", {}).get("fingerprint") != listing.fingerprint(project)
            )
        except (ValueError, AttributeError, RelforgeError):
            return True

    names = sorted(listing.projects)
    with ThreadPoolExecutor(workers) as pool:
        flags = list(pool.map(stale, names))
    rebuild = tuple(n for n, s in zip(names, flags, strict=True) if s)
    try:
        root_stale = store.get(f"{base}index.html") != root_html(names)
    except RelforgeError:
        root_stale = True
    return FolderPlan(
        folder=folder.rstrip("/"),
        rebuild=rebuild,
        unchanged=tuple(n for n in names if n not in rebuild),
        remove=tuple(sorted(listing.paged - set(names))),
        projects=tuple(names),
        root_stale=root_stale,
        listing=listing,
    )


def _verified_files(
    store: ObjectStore, listing: FolderListing, project: str, pool: ThreadPoolExecutor
) -> list[IndexedFile]:
    def one(info: ObjectInfo) -> IndexedFile:
        sha = store.sha256(info.key)
        if sha is None:
            raise RelforgeError(f"{store.url}/{info.key} disappeared while indexing; run again")
        car = listing.sidecars.get(info.key + SIDECAR)
        meta_sha = req = None
        if car is not None:
            data = store.get(car.key)
            meta_sha = hashlib.sha256(data).hexdigest()
            req = requires_python(data)
        return IndexedFile(
            filename=info.key.rsplit("/", 1)[1],
            sha256=sha,
            size=info.size,
            requires_python=req,
            metadata_sha256=meta_sha,
        )

    files = list(pool.map(one, listing.projects[project]))
    return sorted(files, key=lambda f: f.filename)


def project_html(project: str, files: Sequence[IndexedFile]) -> bytes:
    rows = []
    for f in files:
        attrs = [f'href="../{quote(f.filename)}#sha256={f.sha256}"']
        if f.requires_python:
            attrs.append(f'data-requires-python="{html.escape(f.requires_python)}"')
        if f.metadata_sha256:
            attrs.append(f'data-dist-info-metadata="sha256={f.metadata_sha256}"')
            attrs.append(f'data-core-metadata="sha256={f.metadata_sha256}"')
        rows.append(f"    <a {' '.join(attrs)}>{html.escape(f.filename)}</a><br>")
    return _page(f"Links for {project}", rows)


def project_json(project: str, files: Sequence[IndexedFile], fingerprint: str) -> bytes:
    entries = []
    versions = set()
    for f in files:
        parsed = parse_dist(f.filename)
        if parsed:
            versions.add(parsed[1])
        entry: dict[str, object] = {
            "filename": f.filename,
            "url": f"../{quote(f.filename)}",
            "hashes": {"sha256": f.sha256},
            "size": f.size,
        }
        if f.requires_python:
            entry["requires-python"] = f.requires_python
        if f.metadata_sha256:
            entry["core-metadata"] = {"sha256": f.metadata_sha256}
            entry["dist-info-metadata"] = {"sha256": f.metadata_sha256}
        entries.append(entry)
    page = {
        "meta": {"api-version": "1.1"},
        "name": project,
        "versions": [str(v) for v in sorted(versions)],
        "files": entries,
        "_relforge": {"fingerprint": fingerprint, "generator": f"relforge {__version__}"},
    }
    return (json.dumps(page, indent=1) + "\n").encode()


def root_html(projects: Iterable[str]) -> bytes:
    rows = [f'    <a href="{quote(p)}/">{html.escape(p)}</a><br>' for p in projects]
    return _page("Simple index", rows)


def root_json(projects: Iterable[str]) -> bytes:
    page = {"meta": {"api-version": "1.1"}, "projects": [{"name": p} for p in projects]}
    return (json.dumps(page, indent=1) + "\n").encode()


def _page(title: str, rows: list[str]) -> bytes:
    head = (
        "<!DOCTYPE html>\n<html>\n  <head>\n"
        '    <meta name="pypi:repository-version" content="1.1">\n'
        f"    <title>{html.escape(title)}</title>\n  </head>\n  <body>\n"
        f"    <h1>{html.escape(title)}</h1>\n"
    )
    return (head + "".join(r + "\n" for r in rows) + "  </body>\n</html>\n").encode()


def _write_page(store: ObjectStore, folder_key: str, html_page: bytes, json_page: bytes) -> None:
    store.write(f"{folder_key}index.json", json_page, JSON_TYPE)
    store.write(f"{folder_key}index.html", html_page, HTML_TYPE)
    if store.directory_pages:
        store.write(folder_key, html_page, HTML_TYPE)


def apply_folder(store: ObjectStore, plan: FolderPlan, *, workers: int = 16) -> None:
    """Rebuild the stale project pages, then the folder page (which exists even for an empty
    folder), then drop the pages of projects that no longer have files."""
    base = plan.folder + "/"
    listing = plan.listing
    with ThreadPoolExecutor(workers) as pool:
        for project in plan.rebuild:
            files = _verified_files(store, listing, project, pool)
            _write_page(
                store,
                f"{base}{project}/",
                project_html(project, files),
                project_json(project, files, listing.fingerprint(project)),
            )
    if plan.changed:
        _write_page(store, base, root_html(plan.projects), root_json(plan.projects))
    for project in plan.remove:
        for name in ("index.json", "index.html", ""):
            store.delete(f"{base}{project}/{name}")


def canonical(name: str) -> str:
    return str(canonicalize_name(name))
