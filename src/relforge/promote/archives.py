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

from packaging.version import InvalidVersion, Version

from relforge.errors import RefusedError
from relforge.matrix.archivenames import archive_version
from relforge.matrix.schema import Matrix
from relforge.promote.cells import ChannelCells
from relforge.promote.channel import Placed
from relforge.stores import content_types
from relforge.stores.objectstore import ObjectInfo, ObjectStore, sha256_bytes
from relforge.stores.transfer import Transfer

CHECKSUM = ".sha256"
ARCHIVE_SUFFIX = ".zip"


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


def archive_folders(cells: ChannelCells) -> list[str]:
    """Every folder of the channel that holds only archives, across the matrix's releases (a
    channel without a `libtorch_prefix` puts archives in its wheel folders, which keep their
    pages and are no archive folders)."""
    archives: set[str] = set()
    wheels: set[str] = set()
    for cell in cells.every():
        if cell.upload_prefix:
            chosen = wheels if cell.package_type == "wheel" else archives
            chosen.add(cell.upload_prefix.rstrip("/"))
    return sorted(archives - wheels)
