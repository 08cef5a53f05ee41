"""`relforge promote`: the exact validated objects of one version, test → release, copied
server-side, each hash verified, with a backup copy, the promoted manifest, then the index."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from relforge.errors import NothingToDoError, RefusedError, UsageError
from relforge.manifest import ArtifactManifest, load_manifest
from relforge.matrix.schema import ChannelName, Matrix
from relforge.promote.channel import (
    Placed,
    backup_store,
    main_store,
    manifest_bytes,
    manifest_key,
    merged,
    place,
    public_version,
    stored_manifests,
)
from relforge.promote.index import SIDECAR
from relforge.promote.mirrors import mirror_batches, mirror_stores
from relforge.promote.plan import Plan
from relforge.promote.publish import refuse_unvalidated
from relforge.promote.store import ObjectStore, sha256_bytes
from relforge.promote.transfer import Transfer, plan_batch


def select_manifest(
    store: ObjectStore, matrix: Matrix, channel: str, version: str, manifest_path: Path | None
) -> tuple[ArtifactManifest, str]:
    """The manifest given, or the ones publish/promote stored in the channel for `version`."""
    if manifest_path is not None:
        return load_manifest(manifest_path), str(manifest_path)
    found = stored_manifests(store, channel, matrix.project.name, version)
    if not found:
        raise NothingToDoError(
            f"no manifest of {matrix.project.name} {version} is stored in the {channel} channel "
            f"of {store.url}",
            key="--version",
            hint=f"publish to {channel} first, or pass --manifest",
        )
    return merged(found, f"{channel} channel"), f"manifests stored in the {channel} channel"


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


def plan_promote(
    matrix: Matrix,
    version: str,
    source: ChannelName,
    target: ChannelName,
    manifest_path: Path | None = None,
    *,
    workers: int = 32,
) -> Plan:
    if source == target:
        raise UsageError("--from and --to name the same channel", key="--to")
    version = public_version(version)
    store = main_store(matrix)
    manifest, where = select_manifest(store, matrix, source, version, manifest_path)
    chosen = [e for e in manifest.entries.values() if public_version(e.version) == version]
    if not chosen:
        versions = sorted({public_version(e.version) for e in manifest.entries.values()})
        raise NothingToDoError(
            f"{where}: no artifact of version {version} (it has {', '.join(versions) or 'none'})",
            key="--version",
        )
    selected = ArtifactManifest(
        project=manifest.project, release=manifest.release, channel=target
    ).with_entries(chosen)
    src = place(matrix, selected, source, where)
    dst = place(matrix, selected, target, where)
    refuse_unvalidated(src, where)
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
    refuse_changed_sources(store, src, source, workers)
    copies, backups = [], []
    for s, d in zip(src, dst, strict=True):
        pairs = [(s.key, d.key, s.entry.sha256, s.entry.size, s.entry.cell_id)]
        if s.key + SIDECAR in present:
            sha = store.sha256(s.key + SIDECAR)
            assert sha is not None
            pairs.append(
                (
                    s.key + SIDECAR,
                    d.key + SIDECAR,
                    sha,
                    present[s.key + SIDECAR].size,
                    "core metadata",
                )
            )
        for src_key, dst_key, sha, size, what in pairs:
            copies.append(
                Transfer(key=dst_key, sha256=sha, size=size, what=what, source_key=src_key)
            )
            backups.append(
                Transfer(
                    key=f"{manifest.project}/{version}/{dst_key}",
                    sha256=sha,
                    size=size,
                    what=f"backup of {what}",
                    source_key=src_key,
                )
            )
    backup = backup_store(matrix)
    mirrors = mirror_stores(matrix)
    data = manifest_bytes(selected)
    record = Transfer(
        key=manifest_key(selected, version),
        sha256=sha256_bytes(data),
        size=len(data),
        what=f"manifest of {version}",
        data=data,
        content_type="application/json",
    )
    return Plan(
        command="promote",
        title=f"promote {manifest.project} {version}: {source} → {target} "
        f"({len(src)} artifacts from {where})",
        batches=(
            plan_batch(store, copies, source=store, label=f"{target} channel", workers=workers),
            plan_batch(backup, backups, source=store, label="backup", workers=workers),
            plan_batch(store, [record], label="promoted manifest", workers=workers),
            *mirror_batches(
                matrix, copies, source=store, label=f"{target} channel", workers=workers
            ),
            *mirror_batches(matrix, [record], label="promoted manifest", workers=workers),
        ),
        store=store,
        mirrors=tuple(m.store for m in mirrors),
        index_folders=tuple(sorted({p.folder for p in dst if p.cell.package_type == "wheel"})),
        notes=(
            f"store: {store.url}",
            f"backup: {backup.url}",
            *(f"mirror {m.name}: {m.store.url}" for m in mirrors),
        ),
    )
