"""Completing a multipart upload create-if-absent and checking what the key then holds;
aborting uploads; listing the ones left open.

Completion carries `IfNoneMatch="*"`, so it never replaces an object.  A completion retried
after an attempt that may have landed looks first: the key holding this upload's parts (its
composite checksum, the CRC32 of the parts' CRC32s, and the sha256 in its metadata) means
that attempt made it.  After completion the composite must be the one of the parts sent (or,
for copies and services without checksums, the object is read back) — else the object, created a
moment ago by this upload, is deleted and refused.  Then every other upload still open for the
key is aborted: with the key taken none can ever complete.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from relforge.errors import RefusedError
from relforge.stores.objectstore import Unfinished
from relforge.stores.s3_bucket import Bucket, store_id
from relforge.stores.s3_checksums import CHECKSUM_FIELD, Sent, composite, service_composite
from relforge.stores.s3_faults import CONDITION_FAILED, code

NO_UPLOAD = {"NoSuchUpload", "404"}


def finish(
    bucket: Bucket,
    key: str,
    upload_id: str,
    sent: dict[int, Sent],
    sha256: str,
    *,
    read_back: bool,
) -> bool:
    """Complete the upload create-if-absent and verify what the key then holds."""
    listing = [
        {"PartNumber": n, "ETag": s.etag, **({CHECKSUM_FIELD: s.checksum} if s.checksum else {})}
        for n, s in sorted(sent.items())
    ]
    uncertain: list[BaseException] = []

    def attempt() -> bool | None:
        # an attempt that failed after the service acted may have completed the upload (a
        # retry then finds no upload: NoSuchUpload, or a 500 on moto): look before asking again
        if uncertain and bucket.head_object(key) is not None:
            return None
        try:
            bucket.client.complete_multipart_upload(
                Bucket=bucket.bucket,
                Key=bucket.object_key(key),
                UploadId=upload_id,
                MultipartUpload={"Parts": listing},
                IfNoneMatch="*",
            )
        except Exception as exc:
            if code(exc) in CONDITION_FAILED:
                return False
            raise
        return True

    outcome = bucket.request("complete", key, attempt, on_retry=uncertain.append)
    if outcome is not True and not (uncertain and _holds(bucket, key, sent, sha256)):
        abandon(bucket, key, sha256, upload_id)
        return False  # the key was there first; the caller compares its bytes
    bucket.book.finish(store_id(bucket), key, sha256)
    _verify(bucket, key, sent, sha256, read_back=read_back)
    abort_stale(bucket, key)
    return True


def _holds(bucket: Bucket, key: str, sent: dict[int, Sent], sha256: str) -> bool:
    """Whether the key holds this upload's object (an earlier attempt completed it)."""
    head = bucket.head_object(key)
    if head is None or head.get("Metadata", {}).get("sha256") != sha256:
        return False
    ours, theirs = composite(sent), service_composite(head)
    if ours is not None and theirs is not None:
        return ours == theirs
    return bucket.read_sha256(key, None) == sha256


def _verify(
    bucket: Bucket, key: str, sent: dict[int, Sent], sha256: str, *, read_back: bool
) -> None:
    """The object just created is the expected one, or it is deleted and refused."""
    head = bucket.head_object(key) or {}
    stored = head.get("Metadata", {}).get("sha256")
    ours, theirs = composite(sent), service_composite(head)
    problem = None
    if stored != sha256:
        problem = f"its metadata names sha256 {stored}"
    elif ours is not None and theirs is not None and ours != theirs:
        problem = f"its parts' checksum is {theirs}, the parts sent have {ours}"
    elif read_back or ours is None or theirs is None:
        try:
            got = bucket.read_sha256(key, sha256)
        except RefusedError as exc:
            problem = exc.message
        else:
            problem = None if got == sha256 else f"its bytes have sha256 {got}"
    if problem is not None:
        bucket.delete(key)  # created by this upload a moment ago: nobody else wrote it
        raise RefusedError(
            f"{bucket.url}/{key}: the object made from the parts is not the expected one "
            f"({problem}; expected {sha256}); it was removed",
            hint="rerun; if it happens again the service does not keep the parts it accepts",
        )


def abandon(bucket: Bucket, key: str, sha256: str, upload_id: str) -> None:
    abort(bucket, key, upload_id)
    bucket.book.finish(store_id(bucket), key, sha256)


def abort(bucket: Bucket, key: str, upload_id: str) -> None:
    """Abort one upload (one that no longer exists counts as aborted)."""

    def call() -> None:
        try:
            bucket.client.abort_multipart_upload(
                Bucket=bucket.bucket, Key=bucket.object_key(key), UploadId=upload_id
            )
        except Exception as exc:
            if code(exc) not in NO_UPLOAD:
                raise

    bucket.request("abort the upload of", key, call)


def abort_stale(bucket: Bucket, key: str) -> None:
    """Abort every upload still open for `key`, which now holds its object."""
    for open_upload in unfinished(bucket, key):
        if open_upload.key == key:
            abort(bucket, key, open_upload.upload_id)


def unfinished(bucket: Bucket, prefix: str) -> Iterator[Unfinished]:
    """The multipart uploads open under `prefix`, in key order."""
    full = bucket.object_key(prefix)
    strip = len(bucket.object_key(""))
    markers: dict[str, str] = {}
    while True:

        def page(after: dict[str, str] = markers) -> dict[str, Any]:
            answer: dict[str, Any] = bucket.client.list_multipart_uploads(
                Bucket=bucket.bucket, Prefix=full, **after
            )
            return answer

        found = bucket.request("list the uploads under", prefix, page)
        for item in found.get("Uploads", ()):
            initiated = item.get("Initiated")
            yield Unfinished(
                key=str(item["Key"])[strip:],
                upload_id=str(item["UploadId"]),
                started=initiated.isoformat() if initiated is not None else "",
            )
        if not found.get("IsTruncated"):
            return
        markers = {
            "KeyMarker": found.get("NextKeyMarker", ""),
            "UploadIdMarker": found.get("NextUploadIdMarker", ""),
        }
