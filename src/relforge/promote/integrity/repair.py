"""`relforge verify --repair`: restore each finding from a verified source, then rebuild pages.

A source is verified when its bytes — downloaded and hashed here, never a recorded hash — equal
the manifest's sha256 and size.  Sources tried, in order: the backup store (`promote` writes
`<project>/<version>/<key>` there), the channel the objects were promoted from (test for
release, nightly for test), and the same key in every other store (main and mirrors).  A
sidecar is rebuilt from the verified wheel's own METADATA when that hashes to the expected
digest.  Bytes that replace an object are never lost: the object is first copied to
`relforge/quarantine/<channel>/<its sha256>/<key>` in the same store.  A finding with no
verified source is unrepairable; the pages of a folder with an unrepairable finding are left as
they are (rebuilding them would advertise bytes nobody vouches for).
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from relforge.errors import RefusedError, RelforgeError
from relforge.matrix.schema import ChannelName
from relforge.matrixstores import NamedStore
from relforge.promote.channelview import ChannelView
from relforge.promote.index.folder import SIDECAR, apply_folder, plan_folder, refuse_drift
from relforge.promote.index.pageset import MARKER
from relforge.promote.integrity.archivecheck import restored_checksum
from relforge.promote.integrity.findings import IntegrityFinding, IntegrityReport
from relforge.promote.integrity.storeverify import Truth, Vouched
from relforge.promote.publishing import ResolvedPublishing
from relforge.stores import content_types
from relforge.stores.content import fetch, fetch_verified, read_content
from relforge.stores.objectstore import ObjectStore, sha256_bytes

QUARANTINE = "relforge/quarantine"
_PROMOTED_FROM: dict[str, ChannelName] = {"release": "test", "test": "nightly"}
Verb = Literal["restore", "quarantine", "rebuild-pages", "abort"]
Echo = Callable[[str], None]


@dataclass(frozen=True, kw_only=True)
class RepairSource:
    label: str  # for people: "backup s3://b/…", "test channel", "mirror r2"
    store: ObjectStore | None = None
    key: str = ""
    data: bytes | None = None  # bytes made here (a sidecar from the verified wheel)


@dataclass(frozen=True, kw_only=True)
class RepairAction:
    verb: Verb
    store: NamedStore
    key: str  # the object, or the folder for rebuild-pages
    sha256: str | None = None
    size: int | None = None
    source: RepairSource | None = None
    replaces: str | None = None  # sha256 of the object moved to quarantine first
    content_type: str = content_types.OCTET_STREAM

    def to_json(self) -> dict[str, Any]:
        return {
            "action": self.verb,
            "store": self.store.name,
            "key": self.key,
            "sha256": self.sha256,
            "source": self.source.label if self.source else None,
            "replaces": self.replaces,
        }

    def line(self) -> str:
        where = f"[{self.store.name}]"
        if self.verb == "rebuild-pages":
            return f"rebuild   {where} pages of {self.key}/"
        if self.verb == "quarantine":
            return f"quarantine {where} {self.key} (sha256 {str(self.replaces)[:12]}…)"
        if self.verb == "abort":
            return f"abort     {where} the unfinished uploads of {self.key}"
        moved = f", moving sha256 {self.replaces[:12]}… to quarantine" if self.replaces else ""
        src = self.source.label if self.source else "?"
        return f"restore   {where} {self.key} ← {src}  sha256={str(self.sha256)[:12]}…{moved}"


@dataclass(frozen=True, kw_only=True)
class Unrepairable:
    finding: IntegrityFinding
    reason: str

    def to_json(self) -> dict[str, Any]:
        return {**self.finding.to_json(), "reason": self.reason}


@dataclass(frozen=True, kw_only=True)
class RepairPlan:
    actions: tuple[RepairAction, ...]
    unrepairable: tuple[Unrepairable, ...]

    def to_json(self) -> dict[str, Any]:
        return {
            "actions": [a.to_json() for a in self.actions],
            "unrepairable": [u.to_json() for u in self.unrepairable],
        }


def quarantine_key(channel: str, sha256: str, key: str) -> str:
    return f"{QUARANTINE}/{channel}/{sha256}/{key}"


class _Planner:
    def __init__(
        self, publishing: ResolvedPublishing, truth: Truth, stores: Sequence[NamedStore]
    ) -> None:
        self.publishing = publishing
        self.matrix = publishing.matrix
        self.truth = truth
        self.stores = stores
        self.backup = publishing.backup

    def _from_channel_key(self, v: Vouched) -> tuple[str, str] | None:
        source = _PROMOTED_FROM.get(self.truth.channel)
        if source is None:
            return None
        cell = self.publishing.channel(source).cells.by_id(v.release).get(v.entry.cell_id)
        if cell is None or not cell.upload_prefix:
            return None
        return source, cell.upload_prefix + v.key.rsplit("/", 1)[1]

    def candidates(self, v: Vouched, here: str, suffix: str = "") -> list[RepairSource]:
        """Where verified bytes for `v` (or its sidecar, with suffix) may be found."""
        out = [
            RepairSource(
                label=f"backup {self.backup.url}",
                store=self.backup,
                key=f"{v.project}/{v.version}/{v.key}{suffix}",
            )
        ]
        main = self.stores[0]
        found = self._from_channel_key(v)
        if found is not None:
            channel, key = found
            out.append(RepairSource(label=f"{channel} channel", store=main.store, key=key + suffix))
        for named in self.stores:
            if named.name != here:
                out.append(
                    RepairSource(label=f"store {named.name}", store=named.store, key=v.key + suffix)
                )
        return out

    def verified(
        self, sources: list[RepairSource], sha256: str, size: int | None
    ) -> tuple[RepairSource | None, list[str]]:
        tried: list[str] = []
        for source in sources:
            assert source.store is not None
            try:
                got = read_content(source.store, source.key)
            except RelforgeError as exc:  # an unreadable source is not a verified one
                tried.append(f"{source.label}: unreadable ({exc.message})")
                continue
            if got is not None and got.sha256 == sha256 and (size is None or got.size == size):
                return source, tried
            tried.append(
                f"{source.label}: " + ("absent" if got is None else f"sha256 {got.sha256[:12]}…")
            )
        return None, tried

    def wheel_metadata(self, v: Vouched, named: NamedStore) -> bytes | None:
        """The METADATA of a verified copy of the wheel (here, or from a source)."""
        here = RepairSource(label="here", store=named.store, key=v.key)
        for source in [here, *self.candidates(v, named.name)]:
            assert source.store is not None
            try:
                got = read_content(source.store, source.key, wheel_metadata=True)
            except RelforgeError:
                continue
            if got is not None and got.sha256 == v.entry.sha256 and got.metadata is not None:
                return got.metadata
        return None


def plan_repair(
    publishing: ResolvedPublishing,
    truth: Truth,
    report: IntegrityReport,
    stores: Sequence[NamedStore],
) -> RepairPlan:
    """An action per finding (restore, quarantine), then page rebuilds; read-only."""
    planner = _Planner(publishing, truth, stores)
    by_name = {s.name: s for s in stores}
    actions: list[RepairAction] = []
    broken: list[Unrepairable] = []
    touched: set[tuple[str, str]] = set()  # (store, folder) whose pages get rebuilt
    for f in report.findings:
        named = by_name[f.store]
        if f.kind == "page":
            touched.add((f.store, f.folder))
            continue
        action, reason = _plan_one(planner, truth, f, named)
        if action is None:
            broken.append(Unrepairable(finding=f, reason=reason))
            continue
        if action.verb == "abort" and action in actions:
            continue  # one abort takes every open upload of the key
        actions.append(action)
        if f.kind not in ("parity", "unfinished"):
            touched.add((f.store, f.folder))
    blocked = {(u.finding.store, u.finding.folder) for u in broken}
    for store_name, folder in sorted(touched - blocked):
        if (folder in truth.folders and folder not in truth.archive_folders) or (
            truth.root is not None and folder == truth.root.prefix
        ):
            actions.append(
                RepairAction(verb="rebuild-pages", store=by_name[store_name], key=folder)
            )
    for store_name, folder in sorted(touched & blocked):
        page_findings = [
            f
            for f in report.findings
            if f.kind == "page" and f.store == store_name and f.folder == folder
        ]
        for f in page_findings:
            broken.append(
                Unrepairable(
                    finding=f,
                    reason="the folder has an unrepairable object; its "
                    "pages are not rebuilt over bytes nobody vouches for",
                )
            )
    return RepairPlan(actions=tuple(actions), unrepairable=tuple(broken))


def _plan_one(
    planner: _Planner, truth: Truth, f: IntegrityFinding, named: NamedStore
) -> tuple[RepairAction | None, str]:
    if f.kind == "unfinished":  # the key's other findings, if any, are planned on their own
        return RepairAction(verb="abort", store=named, key=f.key), ""
    if f.kind == "extra" or (f.kind == "parity" and f.expected_sha256 is None):
        if f.found_sha256 is None:
            return None, "the object could not be read"
        return RepairAction(verb="quarantine", store=named, key=f.key, replaces=f.found_sha256), ""
    if f.kind == "parity":
        assert f.expected_sha256 is not None
        main = planner.stores[0]
        source, tried = planner.verified(
            [RepairSource(label="store main", store=main.store, key=f.key)], f.expected_sha256, None
        )
        if source is None:
            return None, "; ".join(tried)
        return RepairAction(
            verb="restore",
            store=named,
            key=f.key,
            sha256=f.expected_sha256,
            source=source,
            replaces=f.found_sha256,
            content_type=content_types.JSON,
        ), ""
    checksum = restored_checksum(f.key, truth.vouched) if f.kind == "sidecar" else None
    if checksum is not None:  # an archive's .sha256 file, written from the manifest
        return RepairAction(
            verb="restore",
            store=named,
            key=f.key,
            sha256=sha256_bytes(checksum),
            size=len(checksum),
            source=RepairSource(label="the manifest's sha256", data=checksum),
            replaces=f.found_sha256,
            content_type=content_types.TEXT,
        ), ""
    if f.kind == "sidecar":
        v = truth.vouched[f.key.removesuffix(SIDECAR)]
        want = f.expected_sha256 or v.entry.metadata_sha256
        metadata = planner.wheel_metadata(v, named)
        if metadata is not None and (want is None or sha256_bytes(metadata) == want):
            source = RepairSource(label="the verified wheel's METADATA", data=metadata)
            return RepairAction(
                verb="restore",
                store=named,
                key=f.key,
                sha256=sha256_bytes(metadata),
                size=len(metadata),
                source=source,
                replaces=f.found_sha256,
                content_type=content_types.TEXT,
            ), ""
        if want is None:
            return None, "no verified copy of the wheel to take its METADATA from"
        found, tried = planner.verified(planner.candidates(v, named.name, SIDECAR), want, None)
        if found is None:
            return None, "no verified source: " + "; ".join(tried)
        return RepairAction(
            verb="restore",
            store=named,
            key=f.key,
            sha256=want,
            source=found,
            replaces=f.found_sha256,
            content_type=content_types.TEXT,
        ), ""
    v = truth.vouched[f.key]
    found, tried = planner.verified(planner.candidates(v, named.name), v.entry.sha256, v.entry.size)
    if found is None:
        return None, "no verified source: " + "; ".join(tried)
    return RepairAction(
        verb="restore",
        store=named,
        key=f.key,
        sha256=v.entry.sha256,
        size=v.entry.size,
        source=found,
        replaces=f.found_sha256,
    ), ""


def render_repair(plan: RepairPlan, echo: Echo) -> None:
    echo(f"repair: {len(plan.actions)} action(s), {len(plan.unrepairable)} unrepairable")
    for action in plan.actions:
        echo("  " + action.line())
    for u in plan.unrepairable:
        echo(f"  UNREPAIRABLE [{u.finding.store}] {u.finding.key}: {u.reason}")


def execute_repair(plan: RepairPlan, channel: str, view: ChannelView, *, workers: int = 16) -> int:
    """Apply the plan's actions in order (objects first, pages last); returns how many ran.
    Pages are rebuilt from what the main store's manifests vouch for (`view`)."""
    done = 0
    root = view.root
    roots: dict[str, tuple[ObjectStore, bool]] = {}  # store URL → (store, root pages edited)
    for action in plan.actions:
        store = action.store.store
        if action.verb == "rebuild-pages":
            is_root = root is not None and action.key.rstrip("/") == root.prefix
            if not is_root:
                _rebuild(store, action.key, view, workers)
            roots[store.url] = (store, is_root or roots.get(store.url, (store, False))[1])
        elif action.verb == "abort":
            for upload in store.unfinished(action.key):
                if upload.key == action.key:
                    store.abort(upload)
        else:
            _replace(action, channel)
        done += 1
    if root is not None:  # the channel-root pages, from the variant pages just rebuilt
        from relforge.promote.index.rootpages import refresh_root

        for store, edited in roots.values():
            refresh_root(store, root, workers=workers, force=edited)
    return done


def _rebuild(store: ObjectStore, folder: str, view: ChannelView, workers: int) -> None:
    """Rebuild every page of the folder: without its page-set marker the index treats each
    project as stale (a run killed here leaves a folder the next index rebuilds whole)."""
    store.delete(f"{folder.rstrip('/')}/{MARKER}")
    found = plan_folder(store, folder, view, workers=workers)
    refuse_drift([found], store)
    apply_folder(store, found, workers=workers)


def _replace(action: RepairAction, channel: str) -> None:
    store = action.store.store
    with tempfile.TemporaryDirectory(prefix="relforge-repair-") as tmp:
        body: Path | bytes
        if action.verb == "restore":
            assert action.source is not None and action.sha256 is not None
            if action.source.data is not None:
                body = action.source.data
            else:
                assert action.source.store is not None
                body = Path(tmp) / "source"
                if not fetch_verified(action.source.store, action.source.key, body, action.sha256):
                    raise RefusedError(
                        f"{action.source.label} {action.source.key} no longer holds sha256 "
                        f"{action.sha256}; {action.key} was not restored",
                        hint="run relforge verify --repair again to plan from what is there now",
                    )
        moved = Path(tmp) / "current"
        current = fetch(store, action.key, moved)
        if current is not None and (action.verb == "quarantine" or current.sha256 != action.sha256):
            kept = quarantine_key(channel, current.sha256, action.key)
            store.put_if_absent(kept, moved, current.sha256)  # nothing is lost
            store.delete(action.key)
        if action.verb == "restore":
            assert action.sha256 is not None
            if not store.put_if_absent(action.key, body, action.sha256, action.content_type):
                got = read_content(store, action.key)
                if got is None or got.sha256 != action.sha256:
                    raise RefusedError(
                        f"{store.url}/{action.key} was written by someone else during the repair"
                    )
