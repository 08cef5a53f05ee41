"""Where things live in a store: channel folders (from the matrix's cells), stored manifests,
backups and PyPI staging.

    whl/<channel>/<variant>/<file>            wheels (release: whl/<variant>/): Cell.upload_prefix
    libtorch/<channel>/<variant>/<file>       native archives
    relforge/manifests/<channel>/<project>/<version>/<digest>.json
                                              what publish/promote put in a channel (with verdicts)
    pypi-staging/<version>/<file>             wheels rewritten for PyPI
    backup store: <project>/<version>/<release key>
"""

from __future__ import annotations

import hashlib
import json
import tempfile
from dataclasses import dataclass
from pathlib import Path

from packaging.version import InvalidVersion, Version

from relforge.errors import ConfigError, Span, UsageError
from relforge.manifest import ArtifactManifest, ManifestEntry, load_manifest
from relforge.matrix.cell import Cell
from relforge.matrix.expand import expand_cells
from relforge.matrix.schema import ChannelName, Matrix
from relforge.promote.store import DEFAULT_STORE, ObjectStore, StoreOptions, open_store

MANIFESTS = "relforge/manifests"
STAGING = "pypi-staging"


@dataclass(frozen=True, kw_only=True)
class Placed:
    """A manifest entry, the cell it was built for, and its key in a channel."""

    entry: ManifestEntry
    cell: Cell
    key: str

    @property
    def filename(self) -> str:
        return self.key.rsplit("/", 1)[1]

    @property
    def folder(self) -> str:
        return self.key.rsplit("/", 1)[0]


def main_store(matrix: Matrix) -> ObjectStore:
    pub = matrix.publishing
    return open_store(
        pub.store or DEFAULT_STORE,
        StoreOptions(s3_endpoint_url=pub.s3_endpoint_url, key="publishing.store"),
    )


def backup_store(matrix: Matrix) -> ObjectStore:
    """`publishing.backup_store`, or the `backup/` prefix of the main store."""
    pub = matrix.publishing
    url = pub.backup_store or (pub.store or DEFAULT_STORE).rstrip("/") + "/backup"
    return open_store(
        url, StoreOptions(s3_endpoint_url=pub.s3_endpoint_url, key="publishing.backup_store")
    )


def public_version(text: str) -> str:
    try:
        return Version(text).public
    except InvalidVersion:
        raise UsageError(f"{text!r} is not a PEP 440 version", key="--version") from None


def place(
    matrix: Matrix, manifest: ArtifactManifest, channel: ChannelName, where: str
) -> list[Placed]:
    """Each entry of the manifest with its cell (on `channel`) and key there."""
    cells = {c.id: c for c in expand_cells(matrix, manifest.release, channel=channel)}
    out = []
    for cell_id, entry in sorted(manifest.entries.items()):
        cell = cells.get(cell_id)
        if cell is None:
            raise ConfigError(
                f"entry {cell_id!r} is not a cell of release {manifest.release} in {matrix.file}",
                where=None,
                key=where,
                hint=f"relforge matrix list {matrix.file} --release {manifest.release}",
            )
        if entry.upload_subfolder != cell.upload_subfolder:
            raise ConfigError(
                f"entry {cell_id!r} says upload_subfolder {entry.upload_subfolder!r}, the matrix "
                f"says {cell.upload_subfolder!r}",
                key=where,
            )
        assert cell.upload_prefix is not None
        out.append(Placed(entry=entry, cell=cell, key=cell.upload_prefix + Path(entry.file).name))
    return out


def wheel_folders(matrix: Matrix, channel: ChannelName) -> list[str]:
    """Every wheel folder of the channel across the matrix's releases (indexed even if empty)."""
    folders = set()
    for release in matrix.releases:
        for cell in expand_cells(matrix, release, channel=channel):
            if cell.package_type == "wheel" and cell.upload_prefix:
                folders.add(cell.upload_prefix.rstrip("/"))
    return sorted(folders)


def manifest_bytes(manifest: ArtifactManifest) -> bytes:
    return (json.dumps(manifest.to_json(), indent=2) + "\n").encode()


def manifest_key(manifest: ArtifactManifest, version: str) -> str:
    digest = hashlib.sha256(manifest_bytes(manifest)).hexdigest()[:16]
    return f"{MANIFESTS}/{manifest.channel}/{manifest.project}/{version}/{digest}.json"


def stored_manifests(
    store: ObjectStore, channel: str, project: str, version: str
) -> list[ArtifactManifest]:
    """The manifests publish/promote stored in a channel for one version."""
    found = []
    prefix = f"{MANIFESTS}/{channel}/{project}/{version}/"
    with tempfile.TemporaryDirectory(prefix="relforge-manifest-") as tmp:
        for info in store.list(prefix):
            path = Path(tmp) / "m.json"
            path.write_bytes(store.get(info.key))
            try:
                found.append(load_manifest(path))
            except ConfigError as exc:  # name the stored object, not our temporary copy
                raise ConfigError(
                    exc.message,
                    where=Span(f"{store.url}/{info.key}"),
                    hint="the manifests under relforge/manifests/ are written by publish and "
                    "promote; pass the manifest to use with --manifest",
                ) from None
    return found


def merged(manifests: list[ArtifactManifest], what: str) -> ArtifactManifest:
    """One manifest from several (same project/release/channel); an entry stored twice with
    different bytes is an error."""
    result = manifests[0]
    for other in manifests[1:]:
        for cell_id, entry in other.entries.items():
            mine = result.entries.get(cell_id)
            if mine is not None and mine.sha256 != entry.sha256:
                raise ConfigError(
                    f"{what}: two manifests give {cell_id} different files "
                    f"({mine.sha256[:12]}…, {entry.sha256[:12]}…)",
                    hint="pass the one to use with --manifest",
                )
        result = result.merge(other)
    return result
