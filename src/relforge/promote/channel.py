"""Where things live in a store: channel folders (from the matrix's cells), stored manifests,
backups and PyPI staging.

    whl/<channel>/<variant>/<file>            wheels (release: whl/<variant>/): Cell.upload_prefix
    libtorch/<channel>/<variant>/<file>       native archives
    relforge/manifests/<channel>/<project>/<version>/<sha256>.json[.sig]
                                              what publish/promote put in a channel (with verdicts),
                                              named by the sha256 of its bytes (checked on every
                                              read), with its Ed25519 signature when signed
    whl/…/<variant>/.relforge-pages.json      the committed page set of an index folder
    pypi-staging/<version>/<file>             wheels rewritten for PyPI
    backup store: <project>/<version>/<release key>
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

from packaging.version import InvalidVersion, Version

from relforge.errors import ConfigError, RefusedError, UsageError
from relforge.manifest import ArtifactManifest, ManifestEntry, parse_manifest
from relforge.matrix.cell import Cell
from relforge.promote.cells import ChannelCells
from relforge.signing import SIGNATURE_SUFFIX, Trust
from relforge.stores.objectstore import ObjectStore

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


def public_version(text: str) -> str:
    try:
        return Version(text).public
    except InvalidVersion:
        raise UsageError(f"{text!r} is not a PEP 440 version", key="--version") from None


def place(cells: ChannelCells, manifest: ArtifactManifest, where: str) -> list[Placed]:
    """Each entry of the manifest with its cell (on the cells' channel) and key there."""
    matrix = cells.matrix
    by_id = cells.by_id(manifest.release)
    out = []
    for cell_id, entry in sorted(manifest.entries.items()):
        cell = by_id.get(cell_id)
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


def wheel_folders(cells: ChannelCells) -> list[str]:
    """Every wheel folder of the channel across the matrix's releases (indexed even if empty)."""
    return sorted(
        {
            cell.upload_prefix.rstrip("/")
            for cell in cells.every()
            if cell.package_type == "wheel" and cell.upload_prefix
        }
    )


def manifest_bytes(manifest: ArtifactManifest) -> bytes:
    return (json.dumps(manifest.to_json(), indent=2) + "\n").encode()


def manifest_key(manifest: ArtifactManifest, version: str) -> str:
    """Content-addressed: the file name is the full sha256 of the stored bytes.  (Before
    relforge 0.x it was the first 16 hex digits; such keys are still read and checked.)"""
    digest = hashlib.sha256(manifest_bytes(manifest)).hexdigest()
    return f"{MANIFESTS}/{manifest.channel}/{manifest.project}/{version}/{digest}.json"


@dataclass(frozen=True, kw_only=True)
class StoredManifest:
    """A manifest read from a store, its digest checked against its key (and its signature
    against publishing.trusted_keys when keys are configured)."""

    key: str
    sha256: str  # of the stored bytes
    manifest: ArtifactManifest


def _digest_of_key(key: str) -> str | None:
    name = key.rsplit("/", 1)[-1].removesuffix(".json")
    if len(name) in (16, 64) and all(c in "0123456789abcdef" for c in name):
        return name
    return None


def read_manifest(
    store: ObjectStore, key: str, trust: Trust, *, signature: bytes | None
) -> StoredManifest:
    """Read one stored manifest; refused (exit 5) unless its bytes hash to the digest its key
    names and, with trusted keys, `signature` (the `<key>.sig` object) verifies."""
    where = f"{store.url}/{key}"
    data = store.get(key)
    digest = hashlib.sha256(data).hexdigest()
    named = _digest_of_key(key)
    if named is None or not digest.startswith(named):
        raise RefusedError(
            f"{where}: its bytes have sha256 {digest}, which its key does not name; the "
            "manifest was changed (or put there) outside relforge and is not used",
            hint="a stored manifest is content-addressed: relforge/manifests/…/<sha256>.json; "
            "publish the validated manifest again, or restore the original",
        )
    trust.check(data, signature, where)
    try:
        manifest = parse_manifest(data, where)
    except ConfigError as exc:
        raise ConfigError(
            exc.message,
            where=exc.where,
            hint="the manifests under relforge/manifests/ are written by publish and "
            "promote; pass the manifest to use with --manifest",
        ) from None
    return StoredManifest(key=key, sha256=digest, manifest=manifest)


def read_manifests(
    store: ObjectStore, prefix: str, trust: Trust, *, keys: list[str] | None = None
) -> list[StoredManifest]:
    """Every manifest stored under `prefix` (or the given keys of it), each verified."""
    listed = [i.key for i in store.list(prefix)] if keys is None else keys
    present = set(listed)
    found = []
    for key in sorted(listed):
        if not key.endswith(".json"):
            continue
        sig_key = key + SIGNATURE_SUFFIX
        signature = store.get(sig_key) if trust.required and sig_key in present else None
        found.append(read_manifest(store, key, trust, signature=signature))
    return found


def stored_manifests(
    store: ObjectStore, channel: str, project: str, version: str, trust: Trust
) -> list[StoredManifest]:
    """The manifests publish/promote stored in a channel for one version, each verified."""
    return read_manifests(store, f"{MANIFESTS}/{channel}/{project}/{version}/", trust)


def merged(manifests: list[ArtifactManifest], what: str) -> ArtifactManifest:
    """One manifest from several (same project/release/channel); an entry stored twice with
    different bytes is an error."""
    result = manifests[0]
    for other in manifests[1:]:
        for cell_id, entry in other.entries.items():
            mine = result.entries.get(cell_id)
            sidecars = (mine.metadata_sha256, entry.metadata_sha256) if mine else (None, None)
            if mine is not None and (
                mine.sha256 != entry.sha256 or (None not in sidecars and sidecars[0] != sidecars[1])
            ):
                raise RefusedError(
                    f"{what}: two manifests give {cell_id} different files "
                    f"({mine.sha256[:12]}…, {entry.sha256[:12]}…); neither is used",
                    hint="one of them was stored outside relforge; pin the approved one with "
                    "--manifest-digest (or pass it with --manifest)",
                )
        result = result.merge(other)
    return result
