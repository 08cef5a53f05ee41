"""Package indexes of a folder, built from the truth: the stored manifests.

A file is advertised only when a stored manifest of the channel vouches for its key; the page
lists the manifest's sha256, never a hash computed from unknown store bytes.  The store's bytes
are checked against the manifest (S3: the service-computed SHA-256 from one HEAD; the local
store: its hash record, or the bytes): when they differ the object has *drifted*, and the
folder is refused (exit 5) with nothing written.  An object that no manifest vouches for
(a dependency mirrored by another tool, a file put there by hand) is left off the pages and
reported.  Only whole versions are advertised: the completeness judgement (completeness.py)
leaves out every version of which the channel lacks an expected cell.  Re-indexing rebuilds only
projects whose files (listing: key, size, ETag, sidecar ETag) or manifests changed, and carries
each unchanged file over from the project's previous page when that page is the one the marker
committed.  Pages commit as one unit (pageset).  A committed page that is not the one its
marker names was written by another run racing this one (its project is rebuilt from the stored
manifests and a new marker committed) or changed by hand (refused, exit 5): commitcheck.py.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Mapping, Sequence, Set
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from relforge.errors import RefusedError, RelforgeError
from relforge.promote.channelview import ChannelView
from relforge.promote.completeness import Completeness
from relforge.promote.index.commitcheck import check_committed
from relforge.promote.index.pages import (
    IndexedFile,
    canonical,
    carried,
    parse_dist,
    project_html,
    project_json,
    root_html,
    root_json,
)
from relforge.promote.index.pageset import (
    MARKER,
    Marker,
    PageRecord,
    new_generation,
    read_marker,
    write_page,
)
from relforge.promote.vouch import Vouch, Vouchers
from relforge.simplepages import JSON_V1
from relforge.stores import content_types
from relforge.stores.objectstore import ObjectInfo, ObjectStore
from relforge.stores.transfer import SIDECAR
from relforge.wheelformat import requires_python

__all__ = ["SIDECAR", "apply_folder", "canonical", "list_folder", "parse_dist", "plan_folder"]

FORMAT = 2  # bump to rebuild every page after a change of the page format
PAGE_NAMES = ("index.json", "index.html", "")  # "" is the folder object S3 serves for `p/`


@dataclass(frozen=True, kw_only=True)
class FolderListing:
    """What a variant folder holds: distribution files by project, sidecars, current pages."""

    folder: str
    projects: dict[str, list[ObjectInfo]] = field(default_factory=dict)
    sidecars: dict[str, ObjectInfo] = field(default_factory=dict)
    pages: set[str] = field(default_factory=set)  # "p/index.json", "index.html", "p/", ""…
    marker: ObjectInfo | None = None
    version_of: dict[str, str] = field(default_factory=dict)  # key → public version

    def paged(self) -> set[str]:
        """Projects that have at least one page object now."""
        return {p.split("/", 1)[0] for p in self.pages if "/" in p}

    def versions(self, project: str) -> set[str]:
        return {self.version_of[info.key] for info in self.projects.get(project, ())}

    def fingerprint(
        self,
        project: str,
        manifests: Sequence[str],
        yanked: Mapping[str, str] | None = None,
        withheld: Sequence[str] = (),
    ) -> str:
        parts: list[object] = [FORMAT, list(manifests)]
        if withheld:  # versions left off until complete: completing one makes the page stale
            parts.append(["withheld", sorted(withheld)])
        for info in self.projects.get(project, ()):
            car = self.sidecars.get(info.key + SIDECAR)
            part: list[object] = [info.key, info.size, info.etag, car.etag if car else ""]
            if yanked and info.key in yanked:  # a yank (PEP 592) makes the page stale
                part.append(["yanked", yanked[info.key]])
            parts.append(part)
        return hashlib.sha256(json.dumps(parts).encode()).hexdigest()


def read_folder(store: ObjectStore, folder: str) -> list[ObjectInfo]:
    """Every object of a folder, as the store lists it (one listing, for several readers)."""
    return list(store.list(folder.rstrip("/") + "/"))


def list_folder(
    store: ObjectStore,
    folder: str,
    absent: Set[str] = frozenset(),
    *,
    infos: Sequence[ObjectInfo] | None = None,
) -> FolderListing:
    """The folder as the store lists it (or as `infos` from `read_folder` say), without the
    `absent` keys (about to be deleted)."""
    listing = FolderListing(folder=folder.rstrip("/"))
    base = listing.folder + "/"
    marker = None
    for info in read_folder(store, folder) if infos is None else infos:
        if info.key in absent:
            continue
        rest = info.key[len(base) :]
        if rest == MARKER:
            marker = info
        elif "/" in rest or rest in ("index.json", "index.html", ""):
            listing.pages.add(rest)
        elif rest.endswith(SIDECAR):
            listing.sidecars[info.key] = info
        elif (parsed := parse_dist(rest)) is not None:
            listing.projects.setdefault(parsed[0], []).append(info)
            listing.version_of[info.key] = parsed[1].public
    return dataclasses.replace(listing, marker=marker)


@dataclass(frozen=True, kw_only=True)
class FolderPlan:
    folder: str
    rebuild: tuple[str, ...]  # projects whose pages are written
    unchanged: tuple[str, ...]
    remove: tuple[str, ...]  # projects whose pages are deleted (nothing of theirs advertised)
    projects: tuple[str, ...]  # what the folder page lists
    root_stale: bool
    listing: FolderListing
    files: dict[str, tuple[IndexedFile, ...]] = field(default_factory=dict)  # of `rebuild`
    records: dict[str, PageRecord] = field(default_factory=dict)  # every project, for the marker
    drift: tuple[str, ...] = ()  # one line per object whose bytes are not its manifest's
    unvouched: tuple[str, ...] = ()  # keys no manifest vouches for (not advertised)
    withheld: tuple[str, ...] = ()  # keys of versions not complete (not advertised)
    verified: int = 0  # files checked against their manifest
    carried: int = 0  # files carried over from the previous page
    marker_stale: bool = False
    raced: tuple[str, ...] = ()  # projects whose page another run wrote over the committed one
    tampered: tuple[str, ...] = ()  # one line per page no stored manifest explains (refused)

    @property
    def changed(self) -> bool:
        return bool(self.rebuild or self.remove or self.root_stale or self.marker_stale)


def _pages_complete(listing: FolderListing, project: str, store: ObjectStore) -> bool:
    names = PAGE_NAMES if store.directory_pages else PAGE_NAMES[:2]
    return all(f"{project}/{name}" in listing.pages for name in names)


def plan_folder(
    store: ObjectStore,
    folder: str,
    view: ChannelView,
    *,
    workers: int = 16,
    absent: Set[str] = frozenset(),
    infos: Sequence[ObjectInfo] | None = None,
) -> FolderPlan:
    """What a folder's pages should be (read-only): which projects to rebuild, each file
    checked against the manifest that vouches for it or carried from the committed page, the
    versions `view` does not judge whole left off.
    `absent`: keys about to be deleted (pruned), which no page may list; `infos`: the folder
    as `read_folder` already listed it."""
    vouchers, completeness = view.vouchers, view.completeness
    with ThreadPoolExecutor(1) as side:  # the manifests are listed while the folder is
        manifests = side.submit(vouchers.manifest_keys, ())
        listing = list_folder(store, folder, absent, infos=infos)
        marker = read_marker(store, listing.folder) if listing.marker else None
        manifests.result()
    names = sorted(listing.projects)
    yanked = vouchers.yanked()
    held = _withheld_versions(store, listing, completeness)
    fingerprints = {
        p: listing.fingerprint(
            p,
            vouchers.manifest_keys(listing.versions(p)),
            yanked,
            sorted(listing.versions(p) & held),
        )
        for p in names
    }
    stale = []
    for p in names:
        record = marker.projects.get(p) if marker else None
        if (
            record is None
            or record.fingerprint != fingerprints[p]
            or (record.files and not _pages_complete(listing, p, store))
        ):
            stale.append(p)
    files: dict[str, tuple[IndexedFile, ...]] = {}
    drift: list[str] = []
    unvouched: list[str] = []
    counts = [0, 0]
    with ThreadPoolExecutor(workers) as pool:
        committed = [p for p in names if p not in stale and marker and marker.projects[p].files]
        commitment = (
            check_committed(store, listing.folder, marker, committed, vouchers, pool)
            if marker is not None and committed
            else None
        )
        raced = commitment.raced if commitment else ()
        stale = [p for p in names if p in stale or p in raced]
        for p in stale:
            built = _project_files(store, listing, p, marker, vouchers, pool, held)
            files[p] = built.files
            drift += built.drift
            unvouched += built.unvouched
            counts[0] += built.verified
            counts[1] += built.carried
    seen = {line.split(" ", 1)[0] for line in drift}
    drift += [
        g for g in _gate_drift(store, listing, completeness) if g.split(" ", 1)[0] not in seen
    ]
    records: dict[str, PageRecord] = {}
    for p in names:
        if p in files:
            records[p] = PageRecord(
                fingerprint=fingerprints[p], generation="", json_sha256="", files=len(files[p])
            )
        else:
            assert marker is not None
            records[p] = marker.projects[p]
    advertised = tuple(p for p in names if records[p].files)
    rebuild = tuple(p for p in stale if files[p])
    remove = tuple(
        sorted((listing.paged() | set(marker.projects if marker else ())) - set(advertised))
    )
    root_names = PAGE_NAMES if store.directory_pages else PAGE_NAMES[:2]
    root_stale = (
        marker is None
        or marker.root != advertised
        or any(name not in listing.pages for name in root_names)
    )
    return FolderPlan(
        folder=listing.folder,
        rebuild=rebuild,
        unchanged=tuple(p for p in advertised if p not in rebuild),
        remove=tuple(p for p in remove if p in listing.paged()),
        projects=advertised,
        root_stale=root_stale,
        listing=listing,
        files=files,
        records=records,
        drift=tuple(sorted(drift)),
        unvouched=tuple(sorted(unvouched)),
        withheld=tuple(
            sorted(
                info.key
                for infos in listing.projects.values()
                for info in infos
                if listing.version_of[info.key] in held
            )
        ),
        verified=counts[0],
        carried=counts[1],
        marker_stale=bool(stale) or marker is None or set(marker.projects) != set(names),
        raced=raced,
        tampered=commitment.tampered if commitment else (),
    )


def _gate_drift(store: ObjectStore, listing: FolderListing, judged: Completeness) -> list[str]:
    """Drifted objects of the folder's versions, wherever in the channel they are."""
    return judged.drift(store, set(listing.version_of.values()))


def _withheld_versions(
    store: ObjectStore, listing: FolderListing, judged: Completeness
) -> set[str]:
    """Versions in the folder that are not advertised: not whole in the channel (completeness)."""
    versions = set(listing.version_of.values())
    return versions - judged.exposed(store, versions)


@dataclass(frozen=True, kw_only=True)
class _Built:
    files: tuple[IndexedFile, ...]
    drift: list[str]
    unvouched: list[str]
    verified: int
    carried: int


def _previous(
    store: ObjectStore, listing: FolderListing, project: str, marker: Marker | None
) -> dict[str, IndexedFile]:
    """The files of the project's committed page (only if it is byte for byte the page the
    marker names: a page from an interrupted run or edited by hand carries nothing)."""
    record = marker.projects.get(project) if marker else None
    if record is None or not record.json_sha256:
        return {}
    if f"{project}/index.json" not in listing.pages:
        return {}
    try:
        data = store.get(f"{listing.folder}/{project}/index.json")
    except RelforgeError:
        return {}
    if hashlib.sha256(data).hexdigest() != record.json_sha256:
        return {}
    try:
        return carried(json.loads(data))
    except ValueError:
        return {}


def _project_files(
    store: ObjectStore,
    listing: FolderListing,
    project: str,
    marker: Marker | None,
    vouchers: Vouchers,
    pool: ThreadPoolExecutor,
    withheld: set[str],
) -> _Built:
    previous = _previous(store, listing, project, marker)
    todo: list[ObjectInfo] = []
    kept: list[IndexedFile] = []
    for info in listing.projects[project]:
        if listing.version_of[info.key] in withheld:
            continue  # an incomplete version is not advertised (see completeness)
        old = previous.get(info.key.rsplit("/", 1)[1])
        car = listing.sidecars.get(info.key + SIDECAR)
        if (
            old is not None
            and old.etag == info.etag
            and old.size == info.size
            and old.metadata_etag == (car.etag if car else "")
            and vouchers.still_stored(old.manifest)
        ):
            kept.append(old)
        else:
            todo.append(info)
    vouches = vouchers.for_folder(listing.folder, {listing.version_of[info.key] for info in todo})

    def check(info: ObjectInfo) -> IndexedFile | str | None:
        vouch = vouches.get(info.key)
        if vouch is None:
            return None
        return _verify(store, listing, info, vouch)

    drift, unvouched, verified = [], [], []
    for info, got in zip(todo, pool.map(check, todo), strict=True):
        if got is None:
            unvouched.append(info.key)
        elif isinstance(got, str):
            drift.append(got)
        else:
            verified.append(got)
    yanked = vouchers.yanked()
    files = sorted(
        (
            dataclasses.replace(f, yanked=yanked.get(f"{listing.folder}/{f.filename}"))
            for f in [*kept, *verified]
        ),
        key=lambda f: f.filename,
    )
    return _Built(
        files=tuple(files),
        drift=drift,
        unvouched=unvouched,
        verified=len(verified),
        carried=len(kept),
    )


def _verify(
    store: ObjectStore, listing: FolderListing, info: ObjectInfo, vouch: Vouch
) -> IndexedFile | str:
    """The file as its manifest describes it, or a line saying how the store's bytes drifted."""
    where = f"{info.key} (vouched for by {vouch.manifest})"
    try:
        sha = store.sha256(info.key)
    except RefusedError as exc:  # S3: the object's recorded sha256 is not its bytes'
        return f"{where}: {exc.message}"
    if sha is None:
        return f"{where}: disappeared while indexing; run again"
    if sha != vouch.sha256 or info.size != vouch.size:
        return (
            f"{where}: the store holds sha256 {sha} ({info.size} B), the manifest says "
            f"{vouch.sha256} ({vouch.size} B)"
        )
    car = listing.sidecars.get(info.key + SIDECAR)
    meta_sha = req = None
    if car is not None and vouch.metadata_sha256 is not None:
        found = _sidecar(store, car, vouch)
        if isinstance(found, str):
            return found
        if found is not None:
            meta_sha, req = vouch.metadata_sha256, found[1]
    return IndexedFile(
        filename=info.key.rsplit("/", 1)[1],
        sha256=vouch.sha256,
        size=vouch.size,
        requires_python=req,
        metadata_sha256=meta_sha,
        etag=info.etag,
        metadata_etag=car.etag if (car is not None and meta_sha) else "",
        manifest=vouch.manifest,
    )


def _sidecar(
    store: ObjectStore, car: ObjectInfo, vouch: Vouch
) -> tuple[str, str | None] | str | None:
    """(sha256, Requires-Python) of a sidecar that is what the manifest vouches for; a line
    saying how it drifted; None when it vanished since the listing.  With Requires-Python
    recorded in the manifest one HEAD (the store's verified sha256) is enough; without it the
    bytes are read for it."""
    where = f"{car.key} (vouched for by {vouch.manifest})"
    if vouch.requires_python is not None:
        try:
            got = store.sha256(car.key)
        except RefusedError as exc:
            return f"{where}: {exc.message}"
        req: str | None = vouch.requires_python
    else:
        try:
            data = store.get(car.key)
        except RelforgeError:
            return None
        got, req = hashlib.sha256(data).hexdigest(), requires_python(data)
    if got is None:
        return None
    if got != vouch.metadata_sha256 or (
        vouch.metadata_size is not None and car.size != vouch.metadata_size
    ):
        return (
            f"{where}: the sidecar has sha256 {got} ({car.size} B), the manifest says "
            f"{vouch.metadata_sha256} (the wheel's own METADATA)"
        )
    return got, req


def refuse_drift(plans: Sequence[FolderPlan], store: ObjectStore) -> None:
    """Drifted objects are never advertised, pages changed by hand are not written over:
    refuse before any page is written."""
    tampered = sorted({line for p in plans for line in p.tampered})
    if tampered:
        raise RefusedError(
            f"{len(tampered)} page(s) in {store.url} are not the pages their folder's page set "
            "committed, and no stored manifest explains them (not another relforge run's "
            "output: changed by hand?); no page of their folder was written:\n  "
            + "\n  ".join(tampered),
            hint="see what changed (relforge verify); relforge verify --repair rebuilds the "
            "pages from the stored manifests",
        )
    lines = sorted({line for p in plans for line in p.drift})  # a version spans folders
    if lines:
        raise RefusedError(
            f"{len(lines)} object(s) in {store.url} are not the bytes their manifest vouches "
            "for; no page of their folder was written:\n  " + "\n  ".join(lines),
            hint="the objects changed after they were published; restore them from the backup "
            "store or the channel they were promoted from (relforge verify --repair)",
        )


def apply_folder(store: ObjectStore, plan: FolderPlan, *, workers: int = 16) -> None:
    """Write the stale project pages, the folder page, drop pages of projects with nothing
    advertised, then commit the set by replacing the marker (last)."""
    if plan.drift or plan.tampered:
        refuse_drift([plan], store)
    generation = new_generation()
    base = plan.folder + "/"
    records = dict(plan.records)

    def write_project(project: str) -> None:
        files = plan.files[project]
        record = records[project]
        json_page = project_json(project, files, record.fingerprint, generation)
        _write_set(store, f"{base}{project}/", project_html(project, files, generation), json_page)
        records[project] = PageRecord(
            fingerprint=record.fingerprint,
            generation=generation,
            json_sha256=hashlib.sha256(json_page).hexdigest(),
            files=len(files),
        )

    with ThreadPoolExecutor(max(1, min(workers, len(plan.rebuild) or 1))) as pool:
        list(pool.map(write_project, plan.rebuild))
    if plan.remove or plan.root_stale:
        _write_set(
            store, base, root_html(plan.projects, generation), root_json(plan.projects, generation)
        )
    for project in plan.remove:
        for name in PAGE_NAMES:
            store.delete(f"{base}{project}/{name}")
    marker = Marker(generation=generation, projects=records, root=plan.projects)
    write_page(store, base + MARKER, marker.to_bytes(), content_types.JSON)


def _write_set(store: ObjectStore, folder_key: str, html_page: bytes, json_page: bytes) -> None:
    """The pages of one project (or of the folder), in parallel: their order does not matter,
    the marker written after all of them commits the set."""
    writes = [(f"{folder_key}index.json", json_page, JSON_V1)]
    writes.append((f"{folder_key}index.html", html_page, content_types.HTML))
    if store.directory_pages:
        writes.append((folder_key, html_page, content_types.HTML))
    with ThreadPoolExecutor(len(writes)) as pool:
        list(pool.map(lambda w: write_page(store, *w), writes))
