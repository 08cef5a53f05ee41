"""`relforge promote`: the exact validated objects of one version, test → release, copied
server-side, each hash verified, with a backup copy, the promoted manifest, then the index."""

from __future__ import annotations

import dataclasses
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from relforge.errors import NothingToDoError, RefusedError, UsageError
from relforge.manifest import ArtifactManifest, load_manifest, sha256_file
from relforge.matrix.schema import ChannelName, Matrix
from relforge.promote.archives import promoted_checksums
from relforge.promote.channel import (
    Placed,
    merged,
    place,
    public_version,
    stored_manifests,
)
from relforge.promote.channellease import LeaseScope
from relforge.promote.channelview import ChannelView, channel_view
from relforge.promote.completeness import VersionState, release_folders
from relforge.promote.index.folder import SIDECAR
from relforge.promote.mirrors import mirror_batches
from relforge.promote.plans.publish import incoming, refuse_unvalidated, stored_manifest_transfers
from relforge.promote.plans.storeplan import StorePlan, index_step
from relforge.promote.publishing import open_publishing
from relforge.signing import Trust, require_signer
from relforge.stores.objectstore import ObjectInfo, ObjectStore, sha256_bytes
from relforge.stores.transfer import Transfer, plan_batch
from relforge.wheelformat import core_metadata, requires_python


def check_digest(text: str | None) -> str | None:
    """`--manifest-digest`: a full sha256 (64 hex digits)."""
    if text is None:
        return None
    digest = text.strip().lower()
    if len(digest) != 64 or any(c not in "0123456789abcdef" for c in digest):
        raise UsageError(
            f"{text!r} is not a sha256 (64 hex digits)",
            key="--manifest-digest",
            hint="the digest is the file name of the stored manifest: "
            "relforge/manifests/<channel>/<project>/<version>/<sha256>.json",
        )
    return digest


def select_manifest(
    store: ObjectStore,
    matrix: Matrix,
    channel: str,
    version: str,
    manifest_path: Path | None,
    *,
    trust: Trust,
    pin: str | None = None,
) -> tuple[ArtifactManifest, str]:
    """The manifest given, or the ones publish/promote stored in the channel for `version`
    (each verified against its key and, with trusted keys, its signature).  With `pin`, only
    the manifest whose sha256 it is: anything else is refused."""
    if manifest_path is not None:
        if pin is not None:
            got = sha256_file(manifest_path) if manifest_path.is_file() else None
            if got != pin:
                raise RefusedError(
                    f"{manifest_path} has sha256 {got}, not the approved {pin}",
                    key="--manifest-digest",
                    hint="the manifest changed since it was approved",
                )
        return load_manifest(manifest_path), str(manifest_path)
    found = stored_manifests(store, channel, matrix.project.name, version, trust)
    if pin is not None:
        chosen = [m for m in found if m.sha256 == pin]
        if not chosen:
            digests = ", ".join(m.sha256 for m in found) or "none"
            raise RefusedError(
                f"no manifest of {matrix.project.name} {version} stored in the {channel} "
                f"channel of {store.url} has the approved sha256 {pin} (stored: {digests})",
                key="--manifest-digest",
                hint="the manifest that was approved is not the one stored; approve the "
                "stored one, or publish the approved one",
            )
        return chosen[0].manifest, f"{store.url}/{chosen[0].key}"
    if not found:
        raise NothingToDoError(
            f"no manifest of {matrix.project.name} {version} is stored in the {channel} channel "
            f"of {store.url}",
            key="--version",
            hint=f"publish to {channel} first, or pass --manifest",
        )
    where = (
        f"manifests stored in the {channel} channel (sha256 "
        + ", ".join(m.sha256[:16] + "…" for m in found)
        + ")"
    )
    return merged([m.manifest for m in found], f"{channel} channel"), where


def sidecar_digests(
    store: ObjectStore, placed: list[Placed], present: dict[str, ObjectInfo], channel: str
) -> list[Placed]:
    """Each wheel's entry with the sha256/size of its sidecar (the wheel's own METADATA);
    the sidecar in the channel must be exactly that, or nothing is promoted.  A manifest
    stored before sidecars were recorded gets them from the (verified) wheel itself."""
    out, bad = [], []
    for p in placed:
        if not p.key.endswith(".whl"):
            out.append(p)
            continue
        entry = p.entry
        if entry.metadata_sha256 is None:
            meta = _stored_metadata(store, p)
            entry = dataclasses.replace(
                entry,
                metadata_sha256=sha256_bytes(meta),
                metadata_size=len(meta),
                requires_python=requires_python(meta),
            )
        car = present.get(p.key + SIDECAR)
        found = store.sha256(car.key) if car is not None else None
        if found != entry.metadata_sha256 or (
            car is not None and entry.metadata_size is not None and car.size != entry.metadata_size
        ):
            state = "missing" if car is None else f"sha256 {found}"
            bad.append(
                f"{p.key}{SIDECAR} ({p.entry.cell_id}): {state}, the wheel's METADATA has "
                f"{entry.metadata_sha256}"
            )
        out.append(dataclasses.replace(p, entry=entry))
    if bad:
        raise RefusedError(
            f"{len(bad)} core-metadata sidecar(s) in the {channel} channel of {store.url} are "
            "not the wheel's own METADATA; nothing was copied:\n  " + "\n  ".join(bad),
            hint="a sidecar tells installers what a wheel requires; restore it from the wheel "
            "(publish the validated files again) before promoting",
        )
    return out


def _stored_metadata(store: ObjectStore, p: Placed) -> bytes:
    with tempfile.TemporaryDirectory(prefix="relforge-meta-") as tmp:
        path = Path(tmp) / p.filename
        got = store.download(p.key, path)
        if got != p.entry.sha256:
            raise RefusedError(
                f"{store.url}/{p.key}: sha256 {got}, the manifest says {p.entry.sha256}"
            )
        return core_metadata(path)


def refuse_changed_sources(
    store: ObjectStore, placed: list[Placed], channel: str, workers: int
) -> None:
    """Every source object must hold the validated bytes (verified sha256) before the first
    copy starts: a copy that finds out later would leave part of the promotion behind."""
    with ThreadPoolExecutor(min(workers, max(len(placed), 1))) as pool:
        found = list(pool.map(lambda p: store.sha256(p.key), placed))
    changed = [
        f"{p.key} ({p.entry.cell_id}): sha256 {sha}, the manifest says {p.entry.sha256}"
        for p, sha in zip(placed, found, strict=True)
        if sha != p.entry.sha256
    ]
    if changed:
        raise RefusedError(
            f"{len(changed)} object(s) in the {channel} channel of {store.url} are not the "
            "validated artifact; nothing was copied:\n  " + "\n  ".join(changed),
            hint="the objects changed after they were published; publish the validated files "
            "again under a new version, or restore them",
        )


def refuse_partial(
    view: ChannelView, dst: list[Placed], version: str, source: str, partial: bool
) -> VersionState:
    """Whole releases only: what the target channel holds of `version` once the promotion is
    done; refused (nothing copied) when a cell the matrix expects is missing, unless `partial`."""
    there = view.vouchers
    state = view.completeness.projected(incoming(dst)).state(there.store, version)
    if not state.complete and not partial:
        raise RefusedError(
            f"{version} is not a whole release: after promotion the {there.channel} channel "
            f"would hold {len(state.cells) - len(state.missing)} of the {len(state.cells)} cells "
            f"the matrix expects; nothing was copied; missing: {state.missing_text()}",
            key="--version",
            hint=f"publish the missing cells to {source} first (a per-cell CI job may have "
            "failed), or pass --partial to promote what there is (reported, and loudly)",
        )
    return state


@dataclasses.dataclass(frozen=True, kw_only=True)
class PromoteRequest:
    """What `relforge promote` asks for: `version` of `matrix` copied from channel `source` to
    `target`, the artifacts chosen by the manifest at `manifest_path` (default: the manifests
    publish stored in `source`), pinned to `manifest_digest` when given."""

    matrix: Matrix
    version: str
    source: ChannelName
    target: ChannelName
    manifest_path: Path | None = None
    manifest_digest: str | None = None
    workers: int = 32
    partial: bool = False


def plan_promote(request: PromoteRequest, lease: LeaseScope | None = None) -> StorePlan:
    """The plan copying the validated artifacts of `version` from channel `source` to `target`
    (server-side, never overwriting), with their backups, the promoted manifest and the mirrors;
    refuses artifacts that are unvalidated, missing or changed in the source channel.  `lease`:
    the target channel's lease is taken there before the store is read."""
    matrix, version, source, target = (
        request.matrix,
        request.version,
        request.source,
        request.target,
    )
    manifest_path, manifest_digest = request.manifest_path, request.manifest_digest
    workers, partial = request.workers, request.partial
    if source == target:
        raise UsageError("--from and --to name the same channel", key="--to")
    version = public_version(version)
    pin = check_digest(manifest_digest)
    publishing = open_publishing(matrix)
    trust = publishing.trust
    require_signer(trust, "promote")
    store = publishing.store
    if lease is not None:
        # only the destination: the source channel is read, never written, and its objects
        # are create-only (a racing publish adds files, never changes one, and the copies'
        # sha256 are checked); leasing it too would make promote wait on nightly uploads
        lease.take(store, [target])
    manifest, where = select_manifest(
        store, matrix, source, version, manifest_path, trust=trust, pin=pin
    )
    selected = _version_entries(manifest, version, target, where)
    there = publishing.channel(target)
    src = place(publishing.channel(source).cells, selected, where)
    dst = place(there.cells, selected, where)
    refuse_unvalidated(src, where)
    view = channel_view(there, workers=min(workers, 16), partial=partial)
    whole = refuse_partial(view, dst, version, source, partial)
    present = _present_in_source(store, src, source)
    refuse_changed_sources(store, src, source, workers)
    src = sidecar_digests(store, src, present, source)
    selected = selected.with_entries(p.entry for p in src)
    copies, backups = _copies_and_backups(src, dst, f"{manifest.project}/{version}")
    for checksum in promoted_checksums(store, src, dst, present, source, workers=workers):
        copies.append(checksum)  # archives: <file>.sha256, from the manifest
        backups.append(
            dataclasses.replace(
                checksum, key=f"{manifest.project}/{version}/{checksum.key}", what="backup"
            )
        )
    backup = publishing.backup
    mirrors = publishing.mirrors
    record = stored_manifest_transfers(selected, version, trust)
    promoted = record[0].key.rsplit("/", 1)[1].removesuffix(".json")
    return StorePlan(
        command="promote",
        title=f"promote {manifest.project} {version}: {source} → {target} "
        f"({len(src)} artifacts from {where})",
        batches=(
            plan_batch(store, copies, source=store, label=f"{target} channel", workers=workers),
            plan_batch(backup, backups, source=store, label="backup", workers=workers),
            plan_batch(store, record, label="promoted manifest", workers=workers),
            *mirror_batches(
                mirrors, copies, source=store, label=f"{target} channel", workers=workers
            ),
            *mirror_batches(mirrors, record, label="promoted manifest", workers=workers),
        ),
        store=store,
        mirrors=tuple(m.store for m in mirrors),
        index=index_step(
            {p.folder for p in dst if p.cell.package_type == "wheel"}
            | release_folders(there.cells, {p.cell.release for p in dst}),
            view,
        ),
        notes=(
            f"after this promotion: {whole.line()}",
            f"store: {store.url}",
            f"backup: {backup.url}",
            *(f"mirror {m.name}: {m.store.url}" for m in mirrors),
            f"promoted manifest sha256 {promoted} (pin it: pypi stage --manifest-digest)",
        ),
    )


def _version_entries(
    manifest: ArtifactManifest, version: str, target: ChannelName, where: str
) -> ArtifactManifest:
    """The manifest's entries of `version`, as a manifest of the `target` channel."""
    chosen = [e for e in manifest.entries.values() if public_version(e.version) == version]
    if not chosen:
        versions = sorted({public_version(e.version) for e in manifest.entries.values()})
        raise NothingToDoError(
            f"{where}: no artifact of version {version} (it has {', '.join(versions) or 'none'})",
            key="--version",
        )
    return ArtifactManifest(
        project=manifest.project, release=manifest.release, channel=target
    ).with_entries(chosen)


def _present_in_source(
    store: ObjectStore, src: list[Placed], source: ChannelName
) -> dict[str, ObjectInfo]:
    """The objects of the source folders (key → info); refuses when an artifact to promote is
    not there whole."""
    present = {}
    for folder in sorted({p.folder for p in src}):
        present.update({i.key: i for i in store.list(folder + "/")})
    missing = [
        f"{p.key} ({p.entry.cell_id})"
        for p in src
        if p.key not in present or present[p.key].size != p.entry.size
    ]
    if missing:
        raise RefusedError(
            f"{len(missing)} validated artifact(s) are not (or not whole) in the {source} "
            f"channel of {store.url}:\n  " + "\n  ".join(missing),
            hint=f"publish the manifest to {source} first",
        )
    return present


def _copies_and_backups(
    src: list[Placed], dst: list[Placed], backup_prefix: str
) -> tuple[list[Transfer], list[Transfer]]:
    """Server-side copies of each artifact (and its PEP 658 sidecar) to the target channel, and
    to the backup store under `backup_prefix`."""
    copies, backups = [], []
    for s, d in zip(src, dst, strict=True):
        pairs = [(s.key, d.key, s.entry.sha256, s.entry.size, s.entry.cell_id)]
        if s.entry.metadata_sha256 is not None and s.key.endswith(".whl"):
            assert s.entry.metadata_size is not None
            pairs.append(
                (
                    s.key + SIDECAR,
                    d.key + SIDECAR,
                    s.entry.metadata_sha256,
                    s.entry.metadata_size,
                    "core metadata",
                )
            )
        for src_key, dst_key, sha, size, what in pairs:
            copies.append(
                Transfer(key=dst_key, sha256=sha, size=size, what=what, source_key=src_key)
            )
            backups.append(
                Transfer(
                    key=f"{backup_prefix}/{dst_key}",
                    sha256=sha,
                    size=size,
                    what=f"backup of {what}",
                    source_key=src_key,
                )
            )
    return copies, backups
