"""Multipart uploads and part-by-part copies into one S3 bucket, resumable and verified.

An upload sends each part with its CRC32 as the part checksum and hashes the whole object with
SHA-256 in part order as the parts are read (relforge.stores.partflow); it is completed
(relforge.stores.s3_complete: create-if-absent, then checked) only when that hash is the
expected sha256.  A copy
(UploadPartCopy: nothing passes through here) is read back after completion, as every copy
without a service-computed whole-object checksum is.

Each started upload is recorded (relforge.stores.resume) before its first part; a rerun that
brings the same bytes to the same key lists the upload's parts (ListParts) and sends only those
the service lacks or holds with other bytes.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from relforge.envfaults import environment_fault, is_environment_fault
from relforge.errors import RefusedError
from relforge.stores.content_types import OCTET_STREAM
from relforge.stores.objectstore import ObjectStore
from relforge.stores.partflow import Fetch, body, run_each, run_parts
from relforge.stores.parts import Part, cut, part_size_for
from relforge.stores.resume import Started
from relforge.stores.s3_bucket import Bucket, store_id
from relforge.stores.s3_checksums import CHECKSUM_FIELD, PART_CHECKSUM, Sent, b64_crc32
from relforge.stores.s3_complete import NO_UPLOAD, abandon, abort, finish
from relforge.stores.s3_faults import code


@dataclass(frozen=True, kw_only=True)
class _Listed:
    """A part ListParts reported for a resumed upload."""

    etag: str
    size: int
    checksum: str | None

    def holds(self, data: memoryview, checksum: str) -> bool:
        """True when the part on the service has exactly `data`: its CRC32 (when listed) and
        the MD5 its ETag is (for parts not encrypted with KMS) must both match; a CRC32 alone
        vouches for a part only when the ETag is not an MD5."""
        if data.nbytes != self.size or (self.checksum and self.checksum != checksum):
            return False
        etag = self.etag.strip('"')
        if len(etag) == 32 and all(c in "0123456789abcdef" for c in etag):
            return hashlib.md5(data, usedforsecurity=False).hexdigest() == etag
        return bool(self.checksum)


def upload(
    bucket: Bucket,
    key: str,
    *,
    size: int,
    fetch: Fetch,
    sha256: str,
    content_type: str,
    passes: int,
    source: str,
) -> bool:
    """Create `key` from the parts `fetch` returns; True when created, False when the key
    exists (nothing written).  A pass whose bytes do not hash to `sha256` is read again (only
    parts whose bytes changed are sent again), at most `passes` times; then RefusedError."""
    parts = cut(size, bucket.settings.part_size)
    upload_id, listed = _begin(bucket, key, sha256, size, content_type)
    sent: dict[int, Sent] = {}
    lock = threading.Lock()

    def send(part: Part, data: memoryview) -> None:
        checksum = b64_crc32(data)
        with lock:
            before = sent.get(part.number)
        if before is not None and _Listed(
            etag=before.etag, size=part.length, checksum=before.checksum
        ).holds(data, checksum):
            return  # sent in an earlier pass with these very bytes (its CRC32 and MD5)
        found = listed.get(part.number)
        if found is not None and found.holds(data, checksum):
            etag = found.etag  # sent by the interrupted run
        else:
            etag = _send_part(bucket, key, upload_id, part, data, checksum)
        with lock:
            sent[part.number] = Sent(etag=etag, checksum=checksum)

    got = ""
    for _ in range(passes):
        got = run_parts(
            parts,
            fetch=fetch,
            act=send,
            buffers=bucket.buffers,
            workers=bucket.settings.concurrency,
        )
        if got == sha256:
            break
    else:
        abandon(bucket, key, sha256, upload_id)
        reads = f" on each of {passes} reads" if passes > 1 else ""
        raise RefusedError(
            f"{source}: the bytes read have sha256 {got}, not the expected {sha256}{reads}; "
            f"nothing was written to {bucket.url}/{key}",
            hint="the source changed after it was hashed, or is not the validated artifact",
        )
    return finish(bucket, key, upload_id, sent, sha256, read_back=False)


def copy(
    bucket: Bucket,
    key: str,
    *,
    source_bucket: str,
    source_key: str,
    source_etag: str,
    size: int,
    sha256: str,
    content_type: str,
) -> bool:
    """Copy `source_key` of `source_bucket` (same endpoint) into `key` part by part
    (UploadPartCopy); True when created, False when the key exists.  The copy is read back and
    must hash to `sha256`."""
    parts = cut(size, bucket.settings.part_size)
    upload_id, listed = _begin(bucket, key, sha256, size, content_type)
    sent: dict[int, Sent] = {}
    lock = threading.Lock()

    def copy_part(part: Part) -> None:
        found = listed.get(part.number)
        if found is not None and found.size == part.length:
            done = Sent(etag=found.etag, checksum=found.checksum)  # the read-back checks it
        else:

            def call() -> dict[str, Any]:
                answer: dict[str, Any] = bucket.client.upload_part_copy(
                    Bucket=bucket.bucket,
                    Key=bucket.object_key(key),
                    UploadId=upload_id,
                    PartNumber=part.number,
                    CopySource={"Bucket": source_bucket, "Key": source_key},
                    CopySourceRange=part.byte_range,
                    CopySourceIfMatch=source_etag,  # the source may not change half-way
                )
                return answer

            result = bucket.request(f"copy part {part.number} to", key, call)["CopyPartResult"]
            done = Sent(etag=result["ETag"], checksum=result.get(CHECKSUM_FIELD))
        with lock:
            sent[part.number] = done

    run_each(parts, act=copy_part, buffers=bucket.buffers, workers=bucket.settings.concurrency)
    return finish(bucket, key, upload_id, sent, sha256, read_back=True)


def _begin(
    bucket: Bucket, key: str, sha256: str, size: int, content_type: str
) -> tuple[str, dict[int, _Listed]]:
    """The recorded upload of these bytes to `key` with its listed parts, or a new one."""
    step = part_size_for(size, bucket.settings.part_size)
    record = bucket.book.find(store_id(bucket), key, sha256)
    if record is not None:
        listed = _list_parts(bucket, key, record.upload_id) if record.part_size == step else None
        if listed is not None:
            return record.upload_id, listed
        abort(bucket, key, record.upload_id)  # cut differently, or gone: start over

    def create() -> dict[str, Any]:
        answer: dict[str, Any] = bucket.client.create_multipart_upload(
            Bucket=bucket.bucket,
            Key=bucket.object_key(key),
            ContentType=content_type,
            ChecksumAlgorithm=PART_CHECKSUM,
            ChecksumType="COMPOSITE",  # a checksum of the parts' checksums, as sent
            Metadata={"sha256": sha256},
        )
        return answer

    upload_id = str(bucket.request("start upload of", key, create)["UploadId"])
    bucket.book.start(
        Started(store=store_id(bucket), key=key, sha256=sha256, upload_id=upload_id, part_size=step)
    )
    return upload_id, {}


def _list_parts(bucket: Bucket, key: str, upload_id: str) -> dict[int, _Listed] | None:
    """The parts the service holds for the upload (None when the upload no longer exists)."""
    out: dict[int, _Listed] = {}
    marker = 0
    while True:

        def page(after: int = marker) -> dict[str, Any] | None:
            try:
                answer: dict[str, Any] = bucket.client.list_parts(
                    Bucket=bucket.bucket,
                    Key=bucket.object_key(key),
                    UploadId=upload_id,
                    PartNumberMarker=after,
                )
            except Exception as exc:
                if code(exc) in NO_UPLOAD:
                    return None
                raise
            return answer

        found = bucket.request("list the parts of", key, page)
        if found is None:
            return None
        for part in found.get("Parts", ()):
            out[int(part["PartNumber"])] = _Listed(
                etag=part["ETag"],
                size=int(part["Size"]),
                checksum=part.get(CHECKSUM_FIELD),
            )
        if not found.get("IsTruncated"):
            return out
        marker = int(found["NextPartNumberMarker"])


def _send_part(
    bucket: Bucket, key: str, upload_id: str, part: Part, data: memoryview, checksum: str
) -> str:
    def call() -> str:
        answer = bucket.client.upload_part(
            Bucket=bucket.bucket,
            Key=bucket.object_key(key),
            UploadId=upload_id,
            PartNumber=part.number,
            Body=body(data),
            ChecksumAlgorithm=PART_CHECKSUM,
            **{CHECKSUM_FIELD: checksum},  # the service refuses bytes that do not match it
        )
        return str(answer["ETag"])

    return bucket.request(f"upload part {part.number} of", key, call)


def source_size(bucket: Bucket, key: str, source: Path | bytes) -> int:
    """How many bytes an upload of `source` to `key` sends."""
    if isinstance(source, bytes):
        return len(source)
    try:
        return source.stat().st_size
    except OSError as exc:
        if is_environment_fault(exc):
            raise environment_fault(exc, f"put {bucket.url}/{key}: cannot read {source}") from None
        raise


def upload_local(
    bucket: Bucket, key: str, source: Path | bytes, size: int, sha256: str, content_type: str
) -> bool:
    """An upload above the threshold: the parts read from the file (or the bytes) as sent."""
    if bucket.head_object(key) is not None:
        return False  # the completion would refuse it too, after every part was sent
    with contextlib.ExitStack() as stack:
        if isinstance(source, bytes):
            data = source

            def fetch(part: Part, into: memoryview) -> None:
                into[:] = data[part.start : part.start + part.length]

        else:
            try:
                fd = stack.enter_context(source.open("rb")).fileno()
            except OSError as exc:
                if is_environment_fault(exc):
                    raise environment_fault(exc, f"put {bucket.url}/{key}") from None
                raise

            def fetch(part: Part, into: memoryview) -> None:
                if os.preadv(fd, [into], part.start) != part.length:
                    raise RefusedError(
                        f"{source}: shorter than the {size} bytes it had; nothing was written "
                        f"to {bucket.url}/{key}",
                        hint="the file changed after it was hashed",
                    )

        return upload(
            bucket,
            key,
            size=size,
            fetch=fetch,
            sha256=sha256,
            content_type=content_type,
            passes=1,  # a local read gives the same bytes again: a mismatch is final
            source=str(source) if isinstance(source, Path) else key,
        )


def copy_within(
    bucket: Bucket, source: Bucket, src_key: str, key: str, sha256: str, head: dict[str, Any]
) -> bool:
    """A server-side copy above what one CopyObject takes (`head`: the source's HEAD)."""
    if bucket.head_object(key) is not None:
        return False  # the completion would refuse it too, after copying every part
    return copy(
        bucket,
        key,
        source_bucket=source.bucket,
        source_key=source.object_key(src_key),
        source_etag=str(head["ETag"]),
        size=int(head["ContentLength"]),
        sha256=sha256,
        content_type=str(head.get("ContentType") or OCTET_STREAM),
    )


def stream_from(
    bucket: Bucket, source: ObjectStore, src_key: str, key: str, sha256: str, size: int
) -> bool:
    """A copy from another endpoint (or a local store): each part read from the source, sent
    and hashed in order; nothing is held whole, in memory or on disk.  A pass is a read: one
    whose bytes do not hash to `sha256` is read again like any other read."""
    return upload(
        bucket,
        key,
        size=size,
        fetch=lambda part, into: source.read_into(src_key, part.start, into),
        sha256=sha256,
        content_type=OCTET_STREAM,
        passes=bucket.policy.attempts,
        source=f"{source.url}/{src_key}",
    )
