"""Channel-root pages: `<prefix>/<project>/` lists every file of every variant folder of the
channel, so `pip install --index-url <download_url>/<prefix> <project>` works like
`--index-url https://download.pytorch.org/whl`.

The root pages are derived from the variant folders' committed pages, nothing else: each
folder's page-set marker names the projects it advertises and the sha256 of each project's JSON
page; a page whose bytes are not the committed ones is refused (exit 5), so the root lists
exactly the files (hashes, core metadata, Requires-Python, yanks) the variant pages list, with
`href="../<variant folder>/<file>"`.  Only the channel's own variant folders (from the matrix)
are read: the release prefix `whl` holds `whl/test/…` and `whl/nightly/…` of other channels,
which are never listed.  One file name in several folders (a mirrored dependency wheel) is
listed once when the folders agree on its sha256, and refused (exit 5) otherwise.

Commit: a root marker `<prefix>/.relforge-root-pages.json` is written first naming every
project that may have root pages (old and new) with no fingerprint, then the pages, then the
marker again with the fingerprint of the folder markers they came from.  A run interrupted in
between leaves a marker whose fingerprint does not match, and the next run writes the set again;
`channels.<name>.root_index: false` removes the pages the marker names, the marker last.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from relforge.errors import RefusedError
from relforge.promote.index.pages import (
    IndexedFile,
    carried,
    project_html,
    project_json,
    root_html,
    root_json,
)
from relforge.promote.index.pageset import MARKER, new_generation, parse_marker, write_page
from relforge.promote.rootspec import RootSpec, check_name
from relforge.simplepages import JSON_V1
from relforge.stores import content_types
from relforge.stores.objectstore import ObjectStore

ROOT_MARKER = ".relforge-root-pages.json"
FORMAT = 1
PAGE_NAMES = ("index.json", "index.html", "")  # "" is the folder object plain S3 serves


@dataclass(frozen=True, kw_only=True)
class RootMarker:
    generation: str
    fingerprint: str  # "" while a run is writing the set
    projects: tuple[str, ...]

    def to_bytes(self) -> bytes:
        data = {
            "format": FORMAT,
            "generation": self.generation,
            "fingerprint": self.fingerprint,
            "projects": list(self.projects),
        }
        return (json.dumps(data, indent=1) + "\n").encode()


def parse_root_marker(data: bytes) -> RootMarker | None:
    try:
        raw: Any = json.loads(data)
        return RootMarker(
            generation=str(raw["generation"]),
            fingerprint=str(raw["fingerprint"]),
            projects=tuple(str(p) for p in raw["projects"]),
        )
    except (ValueError, KeyError, TypeError):
        return None


@dataclass(frozen=True, kw_only=True)
class RootProject:
    files: tuple[IndexedFile, ...]
    folders: dict[str, str]  # filename → variant folder relative to the prefix


@dataclass(frozen=True, kw_only=True)
class RootPlan:
    spec: RootSpec
    fingerprint: str
    stale: bool
    projects: dict[str, RootProject] = field(default_factory=dict)
    remove: tuple[str, ...] = ()  # projects whose root pages go
    previous: RootMarker | None = None

    def describe(self) -> str:
        where = f"{self.spec.prefix}/ (root of the {self.spec.channel} channel)"
        if not self.stale:
            return f"  {where}: up to date"
        if not self.spec.enabled:
            return f"  {where}: remove the root pages (root_index is false)"
        dropped = f"; drop {', '.join(self.remove)}" if self.remove else ""
        return f"  {where}: write {', '.join(sorted(self.projects)) or 'no project'}{dropped}"


def _get(store: ObjectStore, key: str) -> bytes | None:
    if store.head(key) is None:
        return None
    return store.get(key)


def _page_keys(store: ObjectStore, base: str) -> list[str]:
    """The pages of a folder URL `base` (ending in /)."""
    names = PAGE_NAMES if store.directory_pages else PAGE_NAMES[:2]
    return [base + name for name in names]


def plan_root(
    store: ObjectStore, spec: RootSpec, *, workers: int = 16, force: bool = False
) -> RootPlan:
    """What the channel-root pages should be (read-only); `force`: rewrite even when the
    marker says they are up to date (a repair of pages edited by hand)."""
    previous = _read_root_marker(store, spec)
    if not spec.enabled:
        return RootPlan(
            spec=spec,
            fingerprint="",
            stale=previous is not None or force,
            remove=previous.projects if previous else (),
            previous=previous,
        )
    with ThreadPoolExecutor(max(1, min(workers, len(spec.folders) or 1))) as pool:
        markers = list(pool.map(lambda f: _get(store, f"{f}/{MARKER}"), spec.folders))
    fingerprint = hashlib.sha256(
        json.dumps(
            [
                FORMAT,
                spec.prefix,
                {
                    f: hashlib.sha256(m).hexdigest() if m is not None else None
                    for f, m in zip(spec.folders, markers, strict=True)
                },
            ]
        ).encode()
    ).hexdigest()
    bases = [f"{spec.prefix}/", *(f"{spec.prefix}/{p}/" for p in (previous or _NONE).projects)]
    if (
        not force
        and previous is not None
        and previous.fingerprint == fingerprint
        and all(store.head(key) is not None for b in bases for key in _page_keys(store, b))
    ):
        return RootPlan(spec=spec, fingerprint=fingerprint, stale=False, previous=previous)
    projects = _merge(store, spec, markers, workers)
    for name in projects:
        check_name(spec, name)
    old = set(previous.projects) if previous else set()
    return RootPlan(
        spec=spec,
        fingerprint=fingerprint,
        stale=True,
        projects=projects,
        remove=tuple(sorted(old - set(projects))),
        previous=previous,
    )


_NONE = RootMarker(generation="", fingerprint="", projects=())


def _read_root_marker(store: ObjectStore, spec: RootSpec) -> RootMarker | None:
    data = _get(store, f"{spec.prefix}/{ROOT_MARKER}")
    return parse_root_marker(data) if data is not None else None


def _merge(
    store: ObjectStore, spec: RootSpec, markers: Sequence[bytes | None], workers: int
) -> dict[str, RootProject]:
    """project → its files over every variant folder, from their committed pages."""
    jobs: list[tuple[str, str, str]] = []  # (folder, project, committed json sha256)
    for folder, data in zip(spec.folders, markers, strict=True):
        marker = parse_marker(data) if data is not None else None
        if marker is None:
            continue  # no page set committed: the folder advertises nothing yet
        for project in marker.root:
            record = marker.projects.get(project)
            if record is not None and record.files:
                jobs.append((folder, project, record.json_sha256))

    def read(job: tuple[str, str, str]) -> list[IndexedFile]:
        return _committed_files(store, *job)

    with ThreadPoolExecutor(max(1, min(workers, len(jobs) or 1))) as pool:
        found = list(pool.map(read, jobs))
    chosen: dict[str, dict[str, tuple[str, IndexedFile]]] = {}
    for (folder, project, _), files in zip(jobs, found, strict=True):
        mine = chosen.setdefault(project, {})
        for f in files:
            seen = mine.get(f.filename)
            if seen is None:
                mine[f.filename] = (folder, f)
                continue
            other_folder, other = seen
            if (other.sha256, other.size) != (f.sha256, f.size):
                raise RefusedError(
                    f"{f.filename} is in {other_folder}/ (sha256 {other.sha256}) and in "
                    f"{folder}/ (sha256 {f.sha256}) of the {spec.channel} channel: the root "
                    f"index {spec.prefix}/{project}/ cannot list one name for two files; no "
                    "root page was written",
                    hint="a file name is forever: remove the wrong copy (relforge verify), "
                    f"or set channels.{spec.channel}.root_index: false",
                )
            if other.yanked is None and f.yanked is not None:  # yanked anywhere: yanked
                mine[f.filename] = (other_folder, _with(other, yanked=f.yanked))
    return {
        project: RootProject(
            files=tuple(f for _, (_, f) in sorted(files.items())),
            folders={name: spec.relative(folder) for name, (folder, _) in files.items()},
        )
        for project, files in sorted(chosen.items())
    }


def _with(f: IndexedFile, *, yanked: str | None) -> IndexedFile:
    return dataclasses.replace(f, yanked=yanked)


class UncommittedPage(RefusedError):
    """A variant page is not the one its folder's marker committed (exit 5 when it stays so):
    another run raced this one, or the page was changed by hand.  `folder` names the folder,
    which settle.py re-plans (commitcheck.py tells the two apart)."""

    def __init__(self, message: str, *, folder: str, hint: str) -> None:
        super().__init__(message, hint=hint)
        self.folder = folder


def _committed_files(store: ObjectStore, folder: str, project: str, sha: str) -> list[IndexedFile]:
    key = f"{folder}/{project}/index.json"
    data = _get(store, key)
    got = hashlib.sha256(data).hexdigest() if data is not None else None
    if data is None or got != sha:
        raise UncommittedPage(
            f"{store.url}/{key} is not the page its folder's page set committed (sha256 {got}, "
            f"the marker says {sha}); the channel-root pages are built from committed pages "
            "only, none was written",
            folder=folder,
            hint="another run is writing this channel's pages: run again (a rerun rebuilds "
            "the folder from the stored manifests); if it persists, relforge verify --repair",
        )
    page = json.loads(data)
    files = carried(page)
    yanks = {str(f["filename"]): f.get("yanked") for f in page.get("files", [])}
    out = []
    for name, f in files.items():
        mark = yanks.get(name)
        yanked = None if mark in (None, False) else ("" if mark is True else str(mark))
        out.append(_with(f, yanked=yanked))
    return out


def apply_root(store: ObjectStore, plan: RootPlan, *, workers: int = 16) -> bool:
    """Write (or remove) the root pages; True when anything was written."""
    if not plan.stale:
        return False
    spec = plan.spec
    base = spec.prefix + "/"
    generation = new_generation()
    before = set(plan.previous.projects) if plan.previous else set()
    intent = RootMarker(
        generation=generation, fingerprint="", projects=tuple(sorted(before | set(plan.projects)))
    )
    marker_key = base + ROOT_MARKER
    if spec.enabled:
        write_page(store, marker_key, intent.to_bytes(), content_types.JSON)
    writes: list[tuple[str, bytes, str]] = []
    for project, found in plan.projects.items():
        html_page = project_html(project, found.files, generation, found.folders)
        json_page = project_json(project, found.files, plan.fingerprint, generation, found.folders)
        writes += _set(store, f"{base}{project}/", html_page, json_page)
    if spec.enabled:
        names = tuple(plan.projects)
        writes += _set(store, base, root_html(names, generation), root_json(names, generation))
    with ThreadPoolExecutor(max(1, min(workers, len(writes) or 1))) as pool:
        list(pool.map(lambda w: write_page(store, *w), writes))
    gone = list(plan.remove)
    for project in gone:
        for key in _page_keys(store, f"{base}{project}/"):
            store.delete(key)
    if spec.enabled:
        done = RootMarker(
            generation=generation, fingerprint=plan.fingerprint, projects=tuple(plan.projects)
        )
        write_page(store, marker_key, done.to_bytes(), content_types.JSON)
    else:
        for key in _page_keys(store, base):
            store.delete(key)
        store.delete(marker_key)
    return True


def _set(
    store: ObjectStore, folder_key: str, html_page: bytes, json_page: bytes
) -> list[tuple[str, bytes, str]]:
    out = [(f"{folder_key}index.json", json_page, JSON_V1)]
    out.append((f"{folder_key}index.html", html_page, content_types.HTML))
    if store.directory_pages:
        out.append((folder_key, html_page, content_types.HTML))
    return out


def refresh_root(
    store: ObjectStore, spec: RootSpec | None, *, workers: int = 16, force: bool = False
) -> RootPlan | None:
    """Plan and (with `execute`) apply the channel-root pages: the one call every command that
    writes variant pages makes after them."""
    if spec is None:
        return None
    plan = plan_root(store, spec, workers=workers, force=force)
    apply_root(store, plan, workers=workers)
    return plan
