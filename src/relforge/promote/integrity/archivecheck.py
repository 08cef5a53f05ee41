"""`relforge verify` of native archives: each vouched archive's `<file>.sha256` against its
manifest entry, and any archive or checksum file in an archive folder that no manifest vouches
for (the checksum file's format and the archives' transfers: relforge.promote.archives)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Protocol

from relforge.manifest import ManifestEntry
from relforge.promote.archives import ARCHIVE_SUFFIX, CHECKSUM, checksum_bytes
from relforge.promote.integrity.findings import IntegrityFinding
from relforge.stores.content import read_bytes, read_content
from relforge.stores.objectstore import ObjectInfo, ObjectStore, sha256_bytes


class VouchedLike(Protocol):
    """What verify knows of a vouched object (relforge.promote.integrity.storeverify.Vouched)."""

    @property
    def key(self) -> str: ...

    @property
    def entry(self) -> ManifestEntry: ...


def checksum_finding(
    store: ObjectStore, key: str, sha256: str, listed: bool
) -> tuple[str, str | None, str] | None:
    """`verify`: what is wrong with the checksum file of the archive at `key` (None: nothing):
    (message, sha256 found, sha256 expected)."""
    want = checksum_bytes(key.rsplit("/", 1)[1], sha256)
    expected = sha256_bytes(want)
    if not listed:
        return "the archive's sha256 file is missing", None, expected
    content = read_content(store, key + CHECKSUM)
    if content is None:
        return "the archive's sha256 file is missing", None, expected
    if content.sha256 == expected:
        return None
    got = read_bytes(store, key + CHECKSUM) or b""  # as served: the recorded hash may lie
    return (
        f"the archive's sha256 file says {got[:80].decode(errors='replace').strip()!r}, the "
        f"manifest says {sha256}",
        content.sha256,
        expected,
    )


def archive_findings(
    vouched: Mapping[str, VouchedLike],
    folders: Iterable[str],
    files: Mapping[str, ObjectInfo],
    store: ObjectStore,
    name: str,
    retired: frozenset[str] = frozenset(),
) -> list[IntegrityFinding]:
    """`verify`: the checksum file of every vouched archive (a `sidecar` finding when it is
    missing or says another sha256 than the manifest), and every archive or checksum file in
    an archive folder that no manifest vouches for (`extra`)."""
    out = []
    for key, v in sorted(vouched.items()):
        if v.entry.package_type == "wheel" or (key in retired and key not in files):
            continue  # a pruned nightly takes its checksum file with it
        wrong = checksum_finding(store, key, v.entry.sha256, key + CHECKSUM in files)
        if wrong is not None:
            message, found, expected = wrong
            out.append(
                IntegrityFinding(
                    kind="sidecar",
                    store=name,
                    key=key + CHECKSUM,
                    message=f"{v.entry.cell_id}: {message}",
                    expected_sha256=expected,
                    found_sha256=found,
                    cell_id=v.entry.cell_id,
                    folder=key.rsplit("/", 1)[0],
                )
            )
    inside = tuple(f + "/" for f in folders)
    for key in sorted(files):
        if not key.startswith(inside) or key in vouched:
            continue
        base = key.removesuffix(CHECKSUM)
        if not base.endswith(ARCHIVE_SUFFIX) or (base in vouched and key != base):
            continue
        content = read_content(store, key)
        out.append(
            IntegrityFinding(
                kind="extra",
                store=name,
                key=key,
                message="no stored manifest vouches for this archive"
                + (" (a sha256 file)" if key != base else ""),
                found_sha256=content.sha256 if content else None,
                folder=key.rsplit("/", 1)[0],
            )
        )
    return out


def restored_checksum(key: str, vouched: Mapping[str, VouchedLike]) -> bytes | None:
    """`verify --repair`: the bytes the checksum file at `key` must hold (from the manifest),
    or None when `key` is not the checksum file of a vouched archive."""
    if not key.endswith(CHECKSUM):
        return None
    v = vouched.get(key.removesuffix(CHECKSUM))
    if v is None or v.entry.package_type == "wheel":
        return None
    return checksum_bytes(v.key.rsplit("/", 1)[1], v.entry.sha256)
