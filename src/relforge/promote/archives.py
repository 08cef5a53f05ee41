"""Native archives (libtorch-style zips) in a channel: the archive, with its sha256 in the
object's metadata like every artifact, and `<file>.sha256` beside it.

    libtorch/<channel>/<variant>/<file>           the archive (release: libtorch/<variant>/)
    libtorch/<channel>/<variant>/<file>.sha256    "<sha256>  <file>\\n" (`sha256sum -c` reads it)

The checksum file is made from the manifest entry (the root of trust), never from the bytes
found in a store: `publish` writes it, `promote` writes it in the target channel after checking
the source channel's, `verify` compares it with the manifest and `--repair` rewrites it.
Archives are not listed on index pages (installers do not read them); an archive folder holds
only archives and their checksum files, so any other `.zip` there is an extra.  Nightly
archives are pruned per cell to `publishing.nightly_keep` versions, read back from their names
(`libtorch.file_name`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Protocol

from packaging.version import InvalidVersion, Version

from relforge.errors import RefusedError
from relforge.manifest import ManifestEntry
from relforge.matrix.archives import archive_version
from relforge.matrix.expand import expand_cells
from relforge.matrix.schema import ChannelName, Matrix
from relforge.promote.channel import Placed
from relforge.promote.findings import Finding
from relforge.stores import content_types
from relforge.stores.content import read_bytes, read_content
from relforge.stores.store import ObjectInfo, ObjectStore, sha256_bytes
from relforge.stores.transfer import Transfer

CHECKSUM = ".sha256"
ARCHIVE_SUFFIX = ".zip"


class VouchedLike(Protocol):
    """What verify knows of a vouched object (relforge.promote.verify.Vouched)."""

    @property
    def key(self) -> str: ...

    @property
    def entry(self) -> ManifestEntry: ...


def is_archive(p: Placed) -> bool:
    return p.cell.package_type != "wheel"


def checksum_bytes(filename: str, sha256: str) -> bytes:
    """The `.sha256` file of an archive, in `sha256sum` format."""
    return f"{sha256}  {filename}\n".encode()


def checksum_transfer(key: str, sha256: str, what: str) -> Transfer:
    """The transfer that writes `key`'s checksum file (from the manifest's sha256)."""
    data = checksum_bytes(key.rsplit("/", 1)[1], sha256)
    return Transfer(
        key=key + CHECKSUM,
        sha256=sha256_bytes(data),
        size=len(data),
        what=f"sha256 file of {what}",
        data=data,
        content_type=content_types.TEXT,
    )


def checksum_transfers(placed: Iterable[Placed]) -> list[Transfer]:
    """`publish`: the checksum file of each archive being published."""
    return [
        checksum_transfer(p.key, p.entry.sha256, p.entry.cell_id) for p in placed if is_archive(p)
    ]


def promoted_checksums(
    store: ObjectStore,
    src: Sequence[Placed],
    dst: Sequence[Placed],
    present: Mapping[str, ObjectInfo],
    channel: str,
    *,
    workers: int = 16,
) -> list[Transfer]:
    """`promote`: the checksum files of the target channel.  The source channel's must say
    exactly what the manifest says, or nothing is promoted (someone changed it after publish)."""
    pairs = [(s, d) for s, d in zip(src, dst, strict=True) if is_archive(s)]

    def found(p: Placed) -> bytes | None:
        info = present.get(p.key + CHECKSUM)
        return store.get(info.key) if info is not None else None

    with ThreadPoolExecutor(max(1, min(workers, len(pairs)))) as pool:
        seen = list(pool.map(lambda pair: found(pair[0]), pairs))
    bad = []
    for (s, _), got in zip(pairs, seen, strict=True):
        want = checksum_bytes(s.filename, s.entry.sha256)
        if got != want:
            state = "missing" if got is None else f"says {got[:64].decode(errors='replace')!r}"
            says = f"the manifest says {s.entry.sha256}"
            bad.append(f"{s.key}{CHECKSUM} ({s.entry.cell_id}): {state}, {says}")
    if bad:
        raise RefusedError(
            f"{len(bad)} archive sha256 file(s) in the {channel} channel of {store.url} do not "
            "match the manifest; nothing was copied:\n  " + "\n  ".join(bad),
            hint="publish the validated manifest to the channel again (it writes a missing "
            "file), or run `relforge verify --repair` on the channel",
        )
    return [checksum_transfer(d.key, d.entry.sha256, d.entry.cell_id) for _, d in pairs]


def nightly_archive_prune(
    matrix: Matrix, store: ObjectStore, placed: Sequence[Placed], keep: int
) -> list[str]:
    """`publish` to nightly: keys of the archives (with their checksum files) of each cell being
    published that are older than its newest `keep` versions; what is published now stays."""
    doomed: set[str] = set()
    new = {p.key for p in placed}
    for p in placed:
        if not is_archive(p):
            continue
        release = matrix.release(p.cell.release)
        listed = {i.key for i in store.list(p.folder + "/")}
        found: dict[str, Version] = {p.key: Version(p.entry.version)}
        for key in listed:
            text = archive_version(matrix, release, p.cell, key.rsplit("/", 1)[1])
            if text is None:
                continue  # another cell's archive, a checksum file
            try:
                found.setdefault(key, Version(text))
            except InvalidVersion:
                continue
        kept = sorted(set(found.values()), reverse=True)[:keep]
        for key, version in found.items():
            if version not in kept and key not in new:
                doomed.add(key)
                if key + CHECKSUM in listed:
                    doomed.add(key + CHECKSUM)
    return sorted(doomed)


def archive_folders(matrix: Matrix, channel: ChannelName) -> list[str]:
    """Every folder of the channel that holds only archives, across the matrix's releases (a
    channel without a `libtorch_prefix` puts archives in its wheel folders, which keep their
    pages and are no archive folders)."""
    archives: set[str] = set()
    wheels: set[str] = set()
    for release in matrix.releases:
        for cell in expand_cells(matrix, release, channel=channel):
            if cell.upload_prefix:
                chosen = wheels if cell.package_type == "wheel" else archives
                chosen.add(cell.upload_prefix.rstrip("/"))
    return sorted(archives - wheels)


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
) -> list[Finding]:
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
                Finding(
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
            Finding(
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
