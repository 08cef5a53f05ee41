"""What an object really holds: the sha256 and size of its bytes, hashed as they are read (and,
for a wheel, its METADATA), for `relforge verify` and `--repair`.

Why not `ObjectStore.sha256`: it may answer from records kept beside the bytes (the local
store's `.relforge-meta` stamp, which a `touch -r` after an edit fools; S3's
`x-amz-meta-sha256`, which anyone who can PUT can write).  Verification must not trust what it
is verifying, so by default every object is streamed and hashed here.

`--trust-service-checksums` (S3 only) instead takes the `ChecksumSHA256` that a HEAD with
`ChecksumMode=ENABLED` returns, when it is a whole-object checksum (not a composite per-part
one).  On AWS S3 that value is computed or checked by the service against the bytes it stored
(a PUT whose bytes disagree with the supplied checksum fails with BadDigest, and bytes cannot
change without a new PUT), so it is as trustworthy as the service itself and costs one HEAD
instead of a download.  It is not the default because S3-compatible services differ: moto
5.2.5 (checked) stores a client-supplied ChecksumSHA256 without checking it and returns none
for an object PUT with the checksum but no `x-amz-sdk-checksum-algorithm` header, which is how
botocore sends relforge's own writes; an object without a usable checksum is downloaded.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
import threading
import weakref
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from relforge.errors import ConfigError, RelforgeError
from relforge.stores.local import LocalStore
from relforge.stores.objectstore import ObjectStore
from relforge.stores.s3 import S3Store
from relforge.stores.s3_checksums import whole_checksum
from relforge.stores.s3_faults import MISSING, code
from relforge.stores.s3client import s3_client
from relforge.wheelformat import core_metadata

_CHUNK = 1 << 20


@dataclass(frozen=True, kw_only=True)
class Content:
    sha256: str
    size: int
    metadata: bytes | None = None  # the wheel's own METADATA, when asked for and readable
    from_service: bool = False  # True: the service's checksum, not our own hashing


def read_content(
    store: ObjectStore,
    key: str,
    *,
    wheel_metadata: bool = False,
    trust_service: bool = False,
) -> Content | None:
    """The object's sha256 and size from its bytes (None when it does not exist); with
    `wheel_metadata`, also the METADATA of the wheel those bytes are."""
    if trust_service and not wheel_metadata and isinstance(store, S3Store):
        found = _service_checksum(store, key)
        if found is not None:
            return found
    if not wheel_metadata:
        got = _hash_object(store, key, None)
        return None if got is None else Content(sha256=got[0], size=got[1])
    with tempfile.TemporaryDirectory(prefix="relforge-verify-") as tmp:
        keep = Path(tmp) / "object.whl"
        got = _hash_object(store, key, keep)
        if got is None:
            return None
        try:
            metadata: bytes | None = core_metadata(keep)
        except ConfigError:
            metadata = None  # not a readable wheel: its hash already tells
        return Content(sha256=got[0], size=got[1], metadata=metadata)


def fetch(store: ObjectStore, key: str, dest: Path) -> Content | None:
    """Copy the object to `dest`, hashing it on the way (None when it does not exist)."""
    got = _hash_object(store, key, dest)
    return None if got is None else Content(sha256=got[0], size=got[1])


def read_bytes(store: ObjectStore, key: str) -> bytes | None:
    """The object's bytes as the store serves them, with no check against a recorded hash (a
    page whose bytes were replaced must be judged by what it says), or None when absent."""
    with tempfile.TemporaryDirectory(prefix="relforge-read-") as tmp:
        dest = Path(tmp) / "object"
        got = _hash_object(store, key, dest)
        return None if got is None else dest.read_bytes()


def fetch_verified(store: ObjectStore, key: str, dest: Path, sha256: str) -> bool:
    """Copy the object to `dest` and return True only when its bytes hash to `sha256`."""
    got = fetch(store, key, dest)
    return got is not None and got.sha256 == sha256


def _service_checksum(store: S3Store, key: str) -> Content | None:
    head = store.head_object(key)  # the store's own HEAD with ChecksumMode=ENABLED
    if head is None:
        return None
    digest = whole_checksum(head)  # None for a multipart object's composite checksum
    if digest is None:
        return None
    return Content(sha256=digest, size=int(head["ContentLength"]), from_service=True)


_READERS: weakref.WeakKeyDictionary[S3Store, Any] = weakref.WeakKeyDictionary()
_READERS_LOCK = threading.Lock()


def _reader(store: S3Store) -> Any:
    """The store's client, except that botocore does not check the body against the service's
    stored checksum while reading it: a mismatch is drift for us to report with the hash of the
    bytes actually served, not an exception half-way through a read."""
    with _READERS_LOCK:
        client = _READERS.get(store)
        if client is None:
            from botocore.config import Config

            base = store.client
            client = s3_client(
                endpoint_url=base.meta.endpoint_url,
                region_name=base.meta.region_name,
                config=base.meta.config.merge(Config(response_checksum_validation="when_required")),
            )
            _READERS[store] = client
        return client


def _hash_object(store: ObjectStore, key: str, keep: Path | None) -> tuple[str, int] | None:
    """Stream the object through sha256 (and into `keep` when given)."""
    if isinstance(store, S3Store):
        head = store.head_object(key)
        if head is None:
            return None
        size = int(head["ContentLength"])
        if size > store.settings.multipart_threshold:
            # parallel ranges hashed in order, each retried on its own; nothing is compared
            # with a recorded hash (expected=None): the bytes are what is being verified
            with ExitStack() as stack:
                fd = stack.enter_context(keep.open("wb")).fileno() if keep else None
                write = (lambda at, data: os.pwrite(fd, data, at)) if fd is not None else None
                return store.read_parts(key, head, write, None), size
        # one attempt reads the whole body; a cut or reset body starts again from the first
        # byte (the store's bounded, jittered, counted retries)
        return store.request("get", key, lambda: _hash_s3(store, key, keep))
    digest = hashlib.sha256()
    size = 0
    with ExitStack() as stack:
        out: IO[bytes] | None = stack.enter_context(keep.open("wb")) if keep else None
        source = _open(store, key, stack)
        if source is None:
            return None
        for block in source:
            digest.update(block)
            size += len(block)
            if out is not None:
                out.write(block)
    return digest.hexdigest(), size


def _hash_s3(store: S3Store, key: str, keep: Path | None) -> tuple[str, int] | None:
    from botocore.exceptions import ClientError

    try:
        body = _reader(store).get_object(Bucket=store.bucket, Key=store.object_key(key))["Body"]
    except ClientError as exc:
        if code(exc) in MISSING:
            return None
        raise
    digest = hashlib.sha256()
    size = 0
    with ExitStack() as stack:
        stack.callback(body.close)
        out: IO[bytes] | None = stack.enter_context(keep.open("wb")) if keep else None
        for block in body.iter_chunks(_CHUNK):
            digest.update(block)
            size += len(block)
            if out is not None:
                out.write(block)
    return digest.hexdigest(), size


def _open(store: ObjectStore, key: str, stack: ExitStack) -> Any:
    """An iterator of the object's byte blocks, or None when it does not exist."""
    if isinstance(store, LocalStore):
        path = store.root / key
        try:
            fh = stack.enter_context(path.open("rb"))
        except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
            return None
        return iter(lambda: fh.read(_CHUNK), b"")
    if store.head(key) is None:
        return None
    tmp = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="relforge-get-")))
    try:
        store.download(key, tmp / "object")
    except RelforgeError:
        return None
    fh = stack.enter_context((tmp / "object").open("rb"))
    return iter(lambda: fh.read(_CHUNK), b"")
