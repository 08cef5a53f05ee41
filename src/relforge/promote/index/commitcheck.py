"""Is each committed page still the page its folder's marker committed?  And when it is not,
did another writer put it there (a race) or did someone change it by hand (tampering)?

Two runs writing one folder at once (two `promote --execute`, an index job of each upload
workflow) can leave the marker of one run over the pages of the other: the fingerprints agree
(both were built from the same files), only the pages' bytes differ from the sha256 the marker
names.  Such a page is *explained* when it is a page relforge writes for that project and every
file it lists is vouched for, with the same sha256 and size (and core-metadata hash), by a
manifest stored in the channel: some writer built it from the truth, so the project is rebuilt
from the stored manifests and a new marker committed.  A page that no stored manifest explains
(a file with another hash, a file nobody vouches for, a page relforge did not write) is
tampering: it is reported, and the folder is refused (exit 5) before any page is written.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from relforge.errors import EnvironmentFault, RefusedError, RelforgeError
from relforge.promote.index.pages import carried, parse_dist
from relforge.promote.index.pageset import Marker
from relforge.promote.vouch import Vouchers
from relforge.stores.objectstore import ObjectStore


@dataclass(frozen=True, kw_only=True)
class Commitment:
    """The committed projects whose JSON page is not the one the marker names."""

    raced: tuple[str, ...] = ()  # pages another writer built from stored manifests: rebuild
    tampered: tuple[str, ...] = field(default=())  # one line per page nobody explains: refuse


def check_committed(
    store: ObjectStore,
    folder: str,
    marker: Marker,
    projects: Sequence[str],
    vouchers: Vouchers,
    pool: ThreadPoolExecutor,
) -> Commitment:
    """Compare the JSON page of each of `projects` (committed, with files, listed) with the
    sha256 the marker names (one HEAD each where the store keeps a verified sha256); read and
    judge only those that differ."""

    def judge(project: str) -> tuple[str, str] | None:
        key = f"{folder}/{project}/index.json"
        want = marker.projects[project].json_sha256
        try:
            got = store.sha256(key)
        except RefusedError:  # S3: the recorded sha256 is not the bytes'; judge the bytes
            got = None
        if got == want:
            return None
        try:
            data = store.get(key)
        except EnvironmentFault:
            raise
        except RelforgeError:  # gone since the listing: the project is stale anyway
            return ("raced", project)
        problem = unexplained(data, folder, project, vouchers)
        if problem is not None:
            # the manifests read before another writer stored its own may not explain a page
            # built from them: judge once more with the manifests stored now
            problem = unexplained(data, folder, project, vouchers.fresh())
        if problem is None:
            return ("raced", project)
        return ("tampered", f"{store.url}/{key}: {problem}")

    raced: list[str] = []
    tampered: list[str] = []
    for found in pool.map(judge, projects):
        if found is None:
            continue
        (raced if found[0] == "raced" else tampered).append(found[1])
    return Commitment(raced=tuple(sorted(raced)), tampered=tuple(sorted(tampered)))


def unexplained(data: bytes, folder: str, project: str, vouchers: Vouchers) -> str | None:
    """Why no stored manifest explains this JSON page of `project` in `folder`; None when one
    does (every file it lists is vouched for with the hashes and size it lists)."""
    try:
        page = json.loads(data)
        name = page["name"] if isinstance(page, dict) else None
    except (ValueError, KeyError):
        return "not a JSON page relforge wrote"
    if name != project:
        return f"not a page relforge wrote for {project} (it names {name!r})"
    files = carried(page)
    if not files:
        return "not a page relforge wrote (no file it lists says where it came from)"
    versions = set()
    for filename in files:
        parsed = parse_dist(filename)
        if parsed is None:
            return f"lists {filename}, which is not a distribution file name"
        versions.add(parsed[1].public)
    vouches = vouchers.for_folder(folder, versions)
    for filename, f in sorted(files.items()):
        vouch = vouches.get(f"{folder}/{filename}")
        if vouch is None:
            return f"lists {filename}, for which no stored manifest vouches"
        if (f.sha256, f.size) != (vouch.sha256, vouch.size):
            return (
                f"lists {filename} with sha256 {f.sha256} ({f.size} B); the manifest "
                f"{vouch.manifest} vouches for sha256 {vouch.sha256} ({vouch.size} B)"
            )
        if f.metadata_sha256 is not None and f.metadata_sha256 != vouch.metadata_sha256:
            return (
                f"lists {filename} with core metadata sha256 {f.metadata_sha256}; the manifest "
                f"{vouch.manifest} vouches for {vouch.metadata_sha256}"
            )
    return None
