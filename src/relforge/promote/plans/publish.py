"""`relforge publish`: validated artifacts of a manifest → a channel (nightly or test), with
their PEP 658 sidecars, the manifest stored beside them, nightly pruning, and the index."""

from __future__ import annotations

import dataclasses
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from relforge.errors import ConfigError, NothingToDoError, RefusedError, UsageError
from relforge.manifest import ArtifactManifest, load_manifest, manifest_target, sha256_file
from relforge.matrix.schema import ChannelName, Matrix
from relforge.promote.archives import checksum_transfers, nightly_archive_prune
from relforge.promote.channel import (
    Placed,
    manifest_bytes,
    manifest_key,
    place,
    public_version,
)
from relforge.promote.channellease import LeaseScope
from relforge.promote.channelview import channel_view
from relforge.promote.completeness import PUBLISHED_TYPES, Incoming, release_folders
from relforge.promote.index.prune import nightly_prune
from relforge.promote.install import index_base, index_urls
from relforge.promote.mirrors import mirror_batches
from relforge.promote.plans.storeplan import StorePlan, index_step
from relforge.promote.publishing import open_publishing
from relforge.signing import SIGNATURE_SUFFIX, Trust, require_signer
from relforge.stores import content_types
from relforge.stores.objectstore import sha256_bytes
from relforge.stores.transfer import Transfer, plan_batch, sidecar_transfer
from relforge.wheelformat import core_metadata, requires_python


def refuse_unvalidated(placed: list[Placed], where: str) -> None:
    bad = []
    for p in placed:
        if p.entry.validated:
            continue
        failed = ", ".join(f"{v.check} {v.message}".strip() for v in p.entry.failed)
        bad.append(f"{p.entry.cell_id}: " + (f"failed {failed}" if failed else "not validated"))
    if bad:
        raise RefusedError(
            f"{where}: {len(bad)} artifact(s) are not validated; nothing is published:\n  "
            + "\n  ".join(bad),
            hint="run `relforge validate` on the manifest; only artifacts that passed are shipped",
        )


def _check_file(manifest_dir: Path, p: Placed, limit_mb: int) -> Path:
    path = manifest_dir / p.entry.file
    if not path.is_file():
        raise ConfigError(f"{p.entry.cell_id}: {path} does not exist", key="--manifest")
    if p.entry.size > limit_mb * 1024 * 1024:
        raise RefusedError(
            f"{p.entry.cell_id}: {path.name} is {p.entry.size / 2**20:.1f} MiB, over the "
            f"project's limit of {limit_mb} MiB",
            hint="project.size_limit_mb in the matrix",
        )
    got = sha256_file(path)
    if got != p.entry.sha256 or path.stat().st_size != p.entry.size:
        raise RefusedError(
            f"{p.entry.cell_id}: {path} has sha256 {got}, the manifest says {p.entry.sha256}",
            hint="the file changed after it was built and validated; rebuild it",
        )
    return path


def with_sidecar(p: Placed, path: Path) -> tuple[Placed, bytes | None]:
    """The entry with the sha256/size of its PEP 658 sidecar (the wheel's own METADATA), and
    the sidecar's bytes; a manifest that records another sidecar is refused."""
    if not path.name.endswith(".whl"):
        return p, None
    meta = core_metadata(path)
    sha = sha256_bytes(meta)
    recorded = p.entry.metadata_sha256
    if (recorded is not None and recorded != sha) or (
        p.entry.metadata_size is not None and p.entry.metadata_size != len(meta)
    ):
        raise RefusedError(
            f"{p.entry.cell_id}: the manifest records core metadata sha256 {recorded}, the "
            f"wheel's own METADATA has {sha}",
            hint="the sidecar must be the wheel's METADATA, byte for byte; rebuild the manifest",
        )
    entry = dataclasses.replace(
        p.entry, metadata_sha256=sha, metadata_size=len(meta), requires_python=requires_python(meta)
    )
    return dataclasses.replace(p, entry=entry), meta


def incoming(placed: list[Placed]) -> dict[str, list[Incoming]]:
    """The objects a plan writes, by public version, for the completeness projection."""
    out: dict[str, list[Incoming]] = defaultdict(list)
    for p in placed:
        if p.cell.package_type in PUBLISHED_TYPES:
            out[public_version(p.entry.version)].append(
                Incoming(
                    cell=p.entry.cell_id, key=p.key, sha256=p.entry.sha256, release=p.cell.release
                )
            )
    return out


def artifact_transfers(
    placed: list[Placed], paths: list[Path], sidecars: list[bytes | None]
) -> list[Transfer]:
    out = []
    for p, path, meta in zip(placed, paths, sidecars, strict=True):
        out.append(
            Transfer(
                key=p.key, sha256=p.entry.sha256, size=p.entry.size, what=p.entry.cell_id, path=path
            )
        )
        if meta is not None:
            out.append(sidecar_transfer(p.key, meta))
    return out


def stored_manifest_transfers(
    manifest: ArtifactManifest, version: str, trust: Trust
) -> list[Transfer]:
    """The manifest as stored (content-addressed), and its signature when this run signs."""
    data = manifest_bytes(manifest)
    key = manifest_key(manifest, version)
    out = [
        Transfer(
            key=key,
            sha256=sha256_bytes(data),
            size=len(data),
            what=f"manifest of {version}",
            data=data,
            content_type=content_types.JSON,
        )
    ]
    signature = trust.sign(data)
    if signature is not None:
        out.append(
            Transfer(
                key=key + SIGNATURE_SUFFIX,
                sha256=sha256_bytes(signature),
                size=len(signature),
                what=f"signature of the manifest of {version}",
                data=signature,
                content_type=content_types.JSON,
            )
        )
    return out


def manifest_transfers(
    manifest: ArtifactManifest, placed: list[Placed], trust: Trust
) -> list[Transfer]:
    """The manifest of what went into the channel, one per public version, stored with it."""
    by_version: dict[str, list[Placed]] = defaultdict(list)
    for p in placed:
        by_version[public_version(p.entry.version)].append(p)
    out = []
    for version, group in sorted(by_version.items()):
        part = ArtifactManifest(
            project=manifest.project, release=manifest.release, channel=manifest.channel
        ).with_entries(p.entry for p in group)
        out += stored_manifest_transfers(part, version, trust)
    return out


def _publish_channel(
    matrix: Matrix, manifest: ArtifactManifest, path: Path, given: ChannelName | None
) -> ChannelName:
    """The channel a manifest is published to: the one it was built for (a different one given
    is a UsageError); dev builds are local and go to no channel, release is promotion's."""
    _, channel = manifest_target(
        manifest, path, release=None, channel=given, matrix_file=matrix.file or "FILE"
    )
    if channel == "dev":
        raise UsageError(
            f"{path} holds dev builds (X.Y.Z.dev0 versions), which no channel publishes",
            key="--manifest",
            hint=f"build for a channel: relforge build {matrix.file or 'FILE'} --release "
            f"{manifest.release} (the matrix's default, {matrix.channels.default}) or --channel "
            "nightly, "
            "validate it, then publish",
        )
    if channel == "release":
        raise UsageError(
            "the release channel is filled only by promotion",
            key="--channel",
            hint="relforge promote FILE --version X.Y.Z --from test --to release",
        )
    match channel:
        case "nightly" | "test":
            return channel
    raise UsageError(f"{path} is for channel {channel!r}, which relforge does not know")


@dataclasses.dataclass(frozen=True, kw_only=True)
class PublishRequest:
    """What `relforge publish` asks for: the build manifest at `manifest_path` uploaded to
    `channel` (the manifest's when None) of `matrix`'s store; `index=False` leaves the pages
    (and the nightly pruning) to a later `relforge index`."""

    matrix: Matrix
    manifest_path: Path
    channel: ChannelName | None
    workers: int = 32
    partial: bool = False
    index: bool = True


def plan_publish(request: PublishRequest, lease: LeaseScope | None = None) -> StorePlan:
    """The create-if-absent uploads of a build manifest's validated artifacts (with their
    PEP 658 metadata sidecars and the manifest record) to `channel` of the matrix's store and
    its mirrors, plus the nightly pruning.  `channel`: the manifest's when None.  Checks the
    manifest against the channel, project and files on disk and refuses unvalidated artifacts;
    reads the store, writes nothing.  `lease`: the channel's lease is taken there before the
    store is read (the run's writes then happen under it)."""
    matrix, manifest_path, channel = request.matrix, request.manifest_path, request.channel
    workers, partial, index = request.workers, request.partial, request.index
    manifest = load_manifest(manifest_path)
    channel = _publish_channel(matrix, manifest, manifest_path, channel)
    if manifest.project != matrix.project.name:
        raise UsageError(
            f"{manifest_path} is for project {manifest.project!r}, {matrix.file} for "
            f"{matrix.project.name!r}",
            key="--manifest",
        )
    publishing = open_publishing(matrix)
    here = publishing.channel(channel)
    placed = place(here.cells, manifest, where=str(manifest_path))
    if not placed:
        raise NothingToDoError(f"{manifest_path} has no entries", key="--manifest")
    refuse_unvalidated(placed, str(manifest_path))
    with ThreadPoolExecutor(4) as pool:
        paths = list(
            pool.map(
                lambda p: _check_file(manifest_path.parent, p, matrix.project.size_limit_mb), placed
            )
        )
    trust = publishing.trust
    require_signer(trust, "publish")
    filled = [with_sidecar(p, path) for p, path in zip(placed, paths, strict=True)]
    placed = [p for p, _ in filled]
    store = publishing.store
    if lease is not None:  # after the checks of the local files, before the store is read
        lease.take(store, [channel])
    files = artifact_transfers(placed, paths, [meta for _, meta in filled])
    files += checksum_transfers(placed)  # archives: <file>.sha256 beside each
    records = manifest_transfers(manifest, placed, trust)
    artifacts = plan_batch(store, files, label="artifacts", workers=workers)
    stored = plan_batch(store, records, label="manifest", workers=workers)
    mirrored = mirror_batches(
        publishing.mirrors, [*files, *records], label="artifacts", workers=workers
    )
    folders = sorted(
        {p.folder for p in placed if p.cell.package_type == "wheel"}
        | release_folders(here.cells, {p.cell.release for p in placed})
    )
    deletes: list[str] = []
    notes = [
        f"store: {store.url}",
        f"channel: {channel} ({len(placed)} artifacts from {manifest_path})",
    ]
    view = channel_view(here, workers=min(workers, 16), partial=partial)
    projected = view.completeness.projected(incoming(placed))
    versions = sorted({public_version(p.entry.version) for p in placed})
    notes += [f"after this upload: {projected.state(store, v).line()}" for v in versions]
    if channel == "nightly":
        keep = matrix.publishing.nightly_keep
        if index:
            deletes = nightly_prune(
                store,
                folders,
                {p.key for p in placed},
                keep,
                lambda v: projected.state(store, v).exposed,
            )
        deletes += nightly_archive_prune(matrix, store, placed, keep)  # archives: on no page
        notes.append(
            f"nightly keeps the newest {keep} versions per project (publishing.nightly_keep)"
            + ("" if index else "; `relforge index` prunes the older wheels, after the pages")
        )
    if not index:
        notes.append(
            "pages: not rebuilt (--no-index); `relforge index` advertises each whole version"
        )
    return StorePlan(
        command="publish",
        title=f"publish {manifest.project} {manifest.release} to {channel}",
        batches=(artifacts, stored, *mirrored),
        store=store,
        mirrors=tuple(m.store for m in publishing.mirrors),
        deletes=tuple(deletes),
        index=index_step(folders, view) if index else None,
        notes=tuple(notes),
        channel=channel,
        install_urls=index_urls(
            index_base(matrix, store),
            here.root,
            sorted({p.folder for p in placed if p.cell.package_type == "wheel"}),
        ),
    )
