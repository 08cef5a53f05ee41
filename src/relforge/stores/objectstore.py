"""The ObjectStore protocol (the stores register by URL scheme in relforge.stores.registry).

A store holds objects by key (`whl/test/cpu/demo-1.0+cpu-py3-none-any.whl`).  Artifacts are
written only with `put_if_absent`/`copy_if_absent` and carry their sha256; only index pages are
replaced (`write`), atomically.  Credentials come from the environment only.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO, Protocol

from relforge.stores.content_types import OCTET_STREAM

DEFAULT_STORE = "file://.relforge/store"


@dataclass(frozen=True, kw_only=True)
class ObjectInfo:
    """What a listing tells about an object; `etag` changes whenever its bytes change."""

    key: str
    size: int
    etag: str


@dataclass(frozen=True, kw_only=True)
class Unfinished:
    """A write begun and never finished (an S3 multipart upload still open)."""

    key: str
    upload_id: str
    started: str  # ISO 8601, as the service reports it ("" when it does not)


class ObjectStore(Protocol):
    """Where channels, indexes, backups and PyPI staging live."""

    @property
    def url(self) -> str:
        """Where the store is, for people (never holds credentials)."""
        ...

    @property
    def directory_pages(self) -> bool:
        """True when a folder URL is served from an object named `folder/` (plain S3)."""
        ...

    def list(self, prefix: str) -> Iterator[ObjectInfo]:
        """Every object whose key starts with `prefix`, in key order."""
        ...

    def head(self, key: str) -> ObjectInfo | None: ...

    def sha256(self, key: str) -> str | None:
        """The object's verified sha256 (None when absent); raises RefusedError when the
        stored hash disagrees with the bytes."""
        ...

    def get(self, key: str) -> bytes: ...

    def read_into(self, key: str, start: int, into: memoryview) -> None:
        """Fill `into` with the object's bytes from offset `start` (all of it, or an error)."""
        ...

    def download(self, key: str, dest: Path) -> str:
        """Write the object to `dest`; returns the sha256 of the bytes written."""
        ...

    def put_if_absent(
        self,
        key: str,
        source: Path | bytes,
        sha256: str,
        content_type: str = OCTET_STREAM,
    ) -> bool:
        """Create the object unless the key exists (then False, nothing written).  The bytes
        are checked against `sha256`, which is stored with the object."""
        ...

    def copy_if_absent(
        self, source: ObjectStore, src_key: str, key: str, sha256: str, size: int | None = None
    ) -> bool:
        """Copy (server-side when both ends allow) unless the key exists; the copy's sha256 is
        verified, and a copy that does not match is removed and refused.  `size`, when known,
        saves asking the source how large the object is."""
        ...

    def write(self, key: str, data: bytes, content_type: str) -> None:
        """Create or atomically replace a small object (index pages only)."""
        ...

    def delete(self, key: str) -> None: ...

    def create(self, key: str, data: bytes, content_type: str) -> str | None:
        """Create a small object only when the key does not exist (an atomic conditional
        write: of two creates at once exactly one succeeds).  Its ETag, or None when the key
        exists (nothing written).  For coordination objects (writer leases), not artifacts."""
        ...

    def replace_if(self, key: str, data: bytes, content_type: str, etag: str) -> str | None:
        """Replace a small object only while it still has `etag` (atomically): its new ETag,
        or None when it changed or is gone (nothing written)."""
        ...

    def delete_if(self, key: str, etag: str) -> bool:
        """Delete the object only while it still has `etag`: False when it changed (kept)
        or is already gone."""
        ...

    def unfinished(self, prefix: str) -> tuple[Unfinished, ...]:
        """Writes under `prefix` begun and never finished (multipart uploads still open)."""
        ...

    def abort(self, unfinished: Unfinished) -> None:
        """Drop an unfinished write (its parts are deleted; the key is untouched)."""
        ...


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


class Sink(Protocol):
    """Where copy_stream writes: a file, or one whose faults name it (envfaults.writing)."""

    def write(self, data: bytes, /) -> object: ...


def copy_stream(src: BinaryIO, dst: Sink, chunk: int = 1 << 20) -> tuple[str, int]:
    """Copy a stream, returning the sha256 and size of what went through."""
    digest = hashlib.sha256()
    size = 0
    while block := src.read(chunk):
        digest.update(block)
        dst.write(block)
        size += len(block)
    return digest.hexdigest(), size
