"""`relforge deps mirror`: the dependency closure of every wheel cell of a channel, copied from
an upstream index into the cell's folder, verified, recorded and indexed.

For each wheel cell, the project's newest wheel for that cell (in the channel folder, or the
cell's file in a build manifest: then before it is published) is resolved with pip for the
cell's platform and Python against the upstream index; every other distribution pip would
install is a dependency wheel of that folder.  Each is downloaded from the URL the upstream's
page gave and checked against the sha256 that page gave (a link without a hash is refused);
then wheels and PEP 658 sidecars are written create-if-absent (a file name already holding
other bytes refuses the whole plan), the record (relforge/deps/<folder>.json) is updated, and
the touched folders are re-indexed last.

This module resolves, plans and fetches (reading the channel, never writing it); writing the
fetched files, the record and the pages into the channel is promote's
(`relforge.promote.plans.dependencies.apply_mirror`).
"""

from __future__ import annotations

import hashlib
import tempfile
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal
from urllib.parse import urlsplit

from packaging.utils import canonicalize_name, parse_wheel_filename

from relforge.deps.mirrorrecord import MirroredFile, record_key
from relforge.deps.resolve import RESOLVERS, Resolved, pip_resolve, reachable, redact
from relforge.deps.targets import Target, cell_wheel, wheel_targets
from relforge.deps.upstreamhashes import published_hashes
from relforge.errors import EnvironmentFault, NothingToDoError, RefusedError, ValidationFailed
from relforge.matrix.schema import ChannelName, Matrix
from relforge.matrix.selector import Selector
from relforge.stores.objectstore import ObjectInfo, ObjectStore, sha256_bytes
from relforge.stores.transfer import SIDECAR, Transfer, sidecar_transfer
from relforge.wheelformat import core_metadata

Echo = Callable[[str], None]
State = Literal["create", "identical"]
DOWNLOAD_TIMEOUT = 60


@dataclass(frozen=True, kw_only=True)
class WantedWheel:
    """One dependency wheel a folder needs."""

    folder: str
    resolved: Resolved
    cells: tuple[str, ...]
    state: State
    size: int | None  # known when the folder already holds it
    sidecar: bool  # the folder already holds its .metadata

    @property
    def key(self) -> str:
        return f"{self.folder}/{self.resolved.filename}"


@dataclass(frozen=True, kw_only=True)
class MirrorPlan:
    channel: ChannelName
    upstream: str
    store: ObjectStore
    wanted: tuple[WantedWheel, ...]
    resolved_cells: tuple[str, ...]
    skipped: tuple[str, ...] = field(default=())  # cells without a wheel of the project

    @property
    def folders(self) -> list[str]:
        return sorted({w.folder for w in self.wanted})

    def to_json(self) -> dict[str, object]:
        """The plan for machines (`deps mirror --format json` prints it, with what was done)."""
        return {
            "channel": self.channel,
            "store": self.store.url,
            "upstream": self.upstream,
            "resolved_cells": list(self.resolved_cells),
            "skipped_cells": list(self.skipped),
            "wheels": [
                {
                    "folder": w.folder,
                    "filename": w.resolved.filename,
                    "sha256": w.resolved.sha256,
                    "upstream_url": redact(w.resolved.url),
                    "cells": list(w.cells),
                    "action": "copy" if w.state == "create" else "skip",
                }
                for w in self.wanted
            ],
            "records": [record_key(f) for f in self.folders],
        }


@dataclass(frozen=True, kw_only=True)
class Fetched:
    """The plan's wheels downloaded and checked, ready to be written into the channel."""

    transfers: tuple[Transfer, ...]  # wheels and PEP 658 sidecars not yet in their folder
    records: dict[str, tuple[MirroredFile, ...]]  # folder → what its record is to say


def folder_files(store: ObjectStore, folder: str) -> dict[str, ObjectInfo]:
    base = folder + "/"
    return {i.key: i for i in store.list(base) if "/" not in i.key[len(base) :]}


def _closure(
    matrix: Matrix,
    store: ObjectStore,
    targets: list[Target],
    upstream: str,
    version: str | None,
    listings: dict[str, dict[str, ObjectInfo]],
    built: Mapping[str, Path] | None = None,
) -> tuple[dict[tuple[str, str], tuple[Resolved, set[str]]], list[str], list[str]]:
    """(folder, filename) → (what pip resolved, cells needing it); resolved and skipped cells.
    `built` (cell id → wheel file of a build manifest) replaces the published wheels."""
    project = canonicalize_name(matrix.project.name)
    found: dict[tuple[str, str], tuple[Resolved, set[str]]] = {}
    failures, resolved, skipped = [], [], []
    unexplained = False  # a failure that is not a missing distribution
    jobs: list[tuple[Target, Path]] = []
    with tempfile.TemporaryDirectory(prefix="relforge-deps-") as tmp:
        for target in targets:
            if built is not None:
                if target.cell.id in built:
                    jobs.append((target, built[target.cell.id]))
                else:
                    skipped.append(target.label)
                continue
            ours = cell_wheel(matrix, target, list(listings[target.folder].values()), version)
            if ours is None:
                skipped.append(target.label)
                continue
            local = Path(tmp) / ours.key.replace("/", "_") / ours.key.rsplit("/", 1)[1]
            if not local.exists():
                local.parent.mkdir(parents=True)
                store.download(ours.key, local)
            jobs.append((target, local))
        # pip spends most of a resolution waiting on the index: a few run side by side
        with ThreadPoolExecutor(RESOLVERS) as pool:
            results = list(pool.map(lambda j: pip_resolve(j[0], [str(j[1])], upstream), jobs))
    for (target, local), result in zip(jobs, results, strict=True):
        if result.tampered:
            raise RefusedError(
                f"{target.label}: pip found files on {redact(upstream)} whose bytes do not "
                f"match the index's sha256; nothing was written\n  {result.error}",
                key="--upstream-index",
                hint="someone may have tampered with the upstream; do not mirror from it",
            )
        if not result.ok:
            if result.missing:
                failures.append(
                    f"{target.label} ({local.name}): missing {', '.join(result.missing)}"
                )
            else:  # pip itself failed: its words, never "missing"
                failures.append(f"{target.label} ({local.name}): {result.error or 'pip failed'}")
                unexplained = True
            continue
        resolved.append(target.label)
        for item in result.installs:
            if item.direct or item.name == project:
                continue  # our own wheel: never a copy of it from elsewhere
            slot = found.setdefault((target.folder, item.filename), (item, set()))
            if slot[0].sha256 != item.sha256:
                failures.append(f"{target.label}: the upstream gave {item.filename} two sha256")
            slot[1].add(target.cell.id)
    if failures:
        raise ValidationFailed(
            f"pip cannot resolve {len(failures)} cell(s) from {redact(upstream)}; nothing was "
            "written:\n  " + "\n  ".join(failures),
            key="--upstream-index",
            hint="pip's own error is quoted: fix what it names and rerun"
            if unexplained
            else "the upstream index must hold every dependency for each cell's platform and "
            "Python",
        )
    return found, resolved, skipped


def _unpublished(upstream: str, items: list[Resolved]) -> list[str]:
    """Files whose sha256 the upstream's own project page does not give (pip computes one
    for a bare link; that proves nothing); a page that gives another hash than pip's report
    is refused at once."""
    pages = {name: published_hashes(upstream, name) for name in sorted({i.name for i in items})}
    out = []
    for item in items:
        published = pages[item.name].get(item.filename)
        if not published:
            out.append(redact(item.url))
        elif published != item.sha256:
            raise RefusedError(
                f"{item.filename}: the upstream's page says sha256 {published}, pip read "
                f"{item.sha256}; nothing was written",
                key="--upstream-index",
            )
    return sorted(out)


@dataclass(frozen=True, kw_only=True)
class MirrorRequest:
    """What `relforge deps mirror` asks for: the dependency closure of the selected wheel
    cells of `channel` of `matrix` (of `version` when given), resolved against the `upstream`
    index; `built` (cell id → wheel file, from a build manifest) stands in for wheels not yet
    published."""

    matrix: Matrix
    channel: ChannelName
    upstream: str
    selectors: tuple[Selector, ...] = ()
    version: str | None = None
    built: Mapping[str, Path] | None = None


def plan_mirror(store: ObjectStore, request: MirrorRequest) -> MirrorPlan:
    """Resolve every cell and compare the closure with the channel folders of `store` (the
    main store; reads only).  `built` (cell id → wheel file, from a build manifest) resolves
    wheels not yet published, so their closure is in the channel before they are validated
    and published."""
    matrix, channel, upstream = request.matrix, request.channel, request.upstream
    selectors, version, built = request.selectors, request.version, request.built
    targets = wheel_targets(matrix, channel, selectors)
    if not targets:
        raise NothingToDoError(f"the {channel} channel has no wheel cells", key="--channel")
    reachable(upstream)
    listings = {f: folder_files(store, f) for f in sorted({t.folder for t in targets})}
    found, resolved, skipped = _closure(matrix, store, targets, upstream, version, listings, built)
    if not resolved and built is not None:
        raise NothingToDoError(f"the manifest has no wheel of a {channel} cell", key="--manifest")
    if not resolved:
        raise NothingToDoError(
            f"no folder of the {channel} channel in {store.url} holds a wheel of "
            f"{matrix.project.name} for any cell",
            key="--channel",
            hint="publish first, or name the build's manifest (--manifest): `deps mirror` "
            "resolves the wheels' requirements",
        )
    schemes = {"http", "https"} | ({"file"} if upstream.startswith("file:") else set())
    foreign = sorted(
        redact(r.url) for r, _ in found.values() if urlsplit(r.url).scheme not in schemes
    )
    if foreign:  # an http index must not make relforge copy files of this machine
        raise RefusedError(
            "the upstream links files relforge will not fetch:\n  " + "\n  ".join(foreign),
            key="--upstream-index",
        )
    unhashed = _unpublished(upstream, [r for r, _ in found.values()])
    if unhashed:
        raise RefusedError(
            f"the upstream gives no sha256 for {len(unhashed)} file(s); nothing is mirrored "
            "unverified:\n  " + "\n  ".join(unhashed),
            key="--upstream-index",
        )
    wanted, conflicts = [], []
    for (folder, filename), (item, cells) in sorted(found.items()):
        key = f"{folder}/{filename}"
        info = listings[folder].get(key)
        state: State = "create"
        if info is not None:
            have = store.sha256(key)
            if have is not None and have != item.sha256:
                conflicts.append(f"{store.url}/{key}: holds {have}, the upstream has {item.sha256}")
                continue
            state = "identical" if have is not None else "create"
        wanted.append(
            WantedWheel(
                folder=folder,
                resolved=item,
                cells=tuple(sorted(cells)),
                state=state,
                size=info.size if info is not None and state == "identical" else None,
                sidecar=key + SIDECAR in listings[folder],
            )
        )
    if conflicts:
        raise RefusedError(
            f"{len(conflicts)} file(s) in the channel hold other bytes than the upstream's; "
            "nothing was written:\n  " + "\n  ".join(conflicts),
            hint="a file name is forever; find out which bytes are right before going on",
        )
    return MirrorPlan(
        channel=channel,
        upstream=redact(upstream),
        store=store,
        wanted=tuple(wanted),
        resolved_cells=tuple(resolved),
        skipped=tuple(skipped),
    )


def render_mirror(plan: MirrorPlan, echo: Echo) -> None:
    echo(f"deps mirror: the {plan.channel} channel of {plan.store.url} from {plan.upstream}")
    echo(f"  {len(plan.resolved_cells)} cell(s) resolved with pip")
    if plan.skipped:
        echo(
            f"  {len(plan.skipped)} cell(s) have no wheel to resolve (none published, or "
            "none in the manifest), skipped: " + ", ".join(plan.skipped)
        )
    for folder in plan.folders:
        rows = [w for w in plan.wanted if w.folder == folder]
        new = sum(1 for w in rows if w.state == "create")
        echo(f"{folder}/: {len(rows)} dependency wheel(s), {new} to copy, {len(rows) - new} there")
        for w in rows:
            verb = "copy" if w.state == "create" else "skip"
            echo(
                f"  {verb:<9} {w.resolved.filename}  sha256={(w.resolved.sha256 or '')[:12]}…  "
                f"← {redact(w.resolved.url)}  [{len(w.cells)} cell(s)]"
            )
        echo(f"  record    {record_key(folder)}")
    if plan.folders:
        echo(f"then re-index {len(plan.folders)} folder(s)")
    else:
        echo("no dependency wheels: every cell needs only the project itself")


def _download(url: str, dest: Path, sha256: str) -> int:
    digest = hashlib.sha256()
    size = 0
    try:
        with (
            urllib.request.urlopen(url, timeout=DOWNLOAD_TIMEOUT) as response,
            dest.open("wb") as out,
        ):
            while block := response.read(1 << 20):
                digest.update(block)
                out.write(block)
                size += len(block)
    except (OSError, ValueError) as exc:
        raise EnvironmentFault(f"cannot download {redact(url)}: {exc}") from None
    if digest.hexdigest() != sha256:
        raise RefusedError(
            f"{redact(url)}: the bytes have sha256 {digest.hexdigest()}, the upstream's page "
            f"says {sha256}; nothing of them was written",
            key="--upstream-index",
        )
    return size


def fetch(plan: MirrorPlan, into: Path) -> Fetched:
    """Download each wheel the plan copies (or whose sidecar is missing) into the folder `into`,
    checked against the upstream's sha256, with its PEP 658 sidecar; and the records to write."""
    transfers: list[Transfer] = []
    records: dict[str, list[MirroredFile]] = {}
    for n, w in enumerate(plan.wanted):
        item = w.resolved
        assert item.sha256 is not None
        size = w.size
        meta_digest: tuple[str, int] | None = None
        if w.state == "create" or not w.sidecar:
            name = parse_wheel_filename(item.filename)[0]
            if name != item.name:
                raise RefusedError(f"{redact(item.url)} is not a wheel of {item.name}")
            path = into / str(n) / item.filename
            path.parent.mkdir(parents=True)
            size = _download(item.url, path, item.sha256)
            transfers.append(
                Transfer(key=w.key, sha256=item.sha256, size=size, what="dependency", path=path)
            )
            meta = core_metadata(path)
            meta_digest = (sha256_bytes(meta), len(meta))
            transfers.append(sidecar_transfer(w.key, meta))
        assert size is not None
        records.setdefault(w.folder, []).append(
            MirroredFile(
                filename=item.filename,
                name=item.name,
                version=item.version,
                sha256=item.sha256,
                size=size,
                upstream_url=redact(item.url),
                cells=w.cells,
                metadata_sha256=meta_digest[0] if meta_digest else None,
                metadata_size=meta_digest[1] if meta_digest else None,
            )
        )
    return Fetched(
        transfers=tuple(transfers),
        records={folder: tuple(files) for folder, files in sorted(records.items())},
    )
