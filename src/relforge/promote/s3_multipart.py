"""Multipart uploads and part-by-part copies into one S3 bucket, resumable and verified.

An upload sends each part with its SHA-256 as the part checksum, hashes the whole object in
part order as the parts go (relforge.promote.partflow), and completes only when that hash is
the expected sha256 — with `IfNoneMatch="*"`, so completion never replaces an object.  After
completion the object's composite checksum (the SHA-256 of its parts' SHA-256s, computed by the
service) must be the one of the parts sent, and its metadata sha256 the expected one; a service
that reports no composite checksum is read back instead.  A copy (UploadPartCopy, nothing
passes through here) is read back after completion, as every copy without a service-computed
whole-object checksum is.  A wrong object is deleted (it was just created) and refused.

Each started upload is recorded (relforge.promote.resume) before its first part; a rerun that
brings the same bytes to the same key lists the upload's parts (ListParts) and sends only those
the service lacks or holds with other bytes.  Once the key holds the object, every other upload
still open for that key is aborted: with the key taken none can complete.
"""

from __future__ import annotations

import base64
import hashlib
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

from relforge.errors import RefusedError
from relforge.promote.partflow import Fetch, run_each, run_parts
from relforge.promote.parts import Part, TransferSettings, cut, part_size_for
from relforge.promote.resume import Started, UploadBook
from relforge.promote.s3_faults import CONDITION_FAILED, code
from relforge.promote.store import Unfinished

T = TypeVar("T")
NO_UPLOAD = {"NoSuchUpload", "404"}


class Bucket(Protocol):
    """What the multipart requests need of an S3 store."""

    @property
    def url(self) -> str: ...

    @property
    def bucket(self) -> str: ...

    @property
    def client(self) -> Any: ...

    @property
    def settings(self) -> TransferSettings: ...

    @property
    def slots(self) -> threading.Semaphore: ...

    @property
    def book(self) -> UploadBook: ...

    def object_key(self, key: str) -> str: ...

    def request(
        self,
        action: str,
        key: str,
        call: Callable[[], T],
        on_retry: Callable[[BaseException], None] | None = None,
    ) -> T: ...

    def head_object(self, key: str) -> dict[str, Any] | None: ...

    def read_sha256(self, key: str, expected: str | None) -> str: ...

    def delete(self, key: str) -> None: ...


@dataclass(frozen=True, kw_only=True)
class _Sent:
    """A part the upload holds: its ETag and (when known) its base64 SHA-256."""

    etag: str
    checksum: str | None


@dataclass(frozen=True, kw_only=True)
class _Listed:
    """A part ListParts reported for a resumed upload."""

    etag: str
    size: int
    checksum: str | None

    def holds(self, data: bytes, checksum: str) -> bool:
        """True when the part on the service has exactly `data` (by its SHA-256 when the
        service lists one, else by its ETag, the MD5 of a part's bytes)."""
        if len(data) != self.size:
            return False
        if self.checksum:
            return self.checksum == checksum
        etag = self.etag.strip('"')
        return len(etag) == 32 and hashlib.md5(data, usedforsecurity=False).hexdigest() == etag


def b64_sha256(data: bytes) -> str:
    return base64.b64encode(hashlib.sha256(data).digest()).decode("ascii")


def composite(sent: dict[int, _Sent]) -> str | None:
    """The composite checksum S3 computes for these parts (None when one is unknown)."""
    digests = [sent[n].checksum for n in sorted(sent)]
    if any(d is None for d in digests):
        return None
    joined = b"".join(base64.b64decode(d) for d in digests if d is not None)
    return b64_sha256(joined)


def service_composite(head: dict[str, Any]) -> str | None:
    """The object's composite checksum from a HEAD (`…-N` on AWS, bare on moto)."""
    value = head.get("ChecksumSHA256")
    return str(value).split("-", 1)[0] if value else None


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
    sent: dict[int, _Sent] = {}
    lock = threading.Lock()

    def send(part: Part, data: bytes) -> None:
        checksum = b64_sha256(data)
        with lock:
            before = sent.get(part.number)
        if before is not None and before.checksum == checksum:
            return  # sent in an earlier pass with these very bytes
        found = listed.get(part.number)
        if found is not None and found.holds(data, checksum):
            etag = found.etag  # sent by the interrupted run
        else:
            etag = _send_part(bucket, key, upload_id, part, data, checksum)
        with lock:
            sent[part.number] = _Sent(etag=etag, checksum=checksum)

    got = ""
    for _ in range(passes):
        got = run_parts(
            parts, fetch=fetch, act=send, slots=bucket.slots, workers=bucket.settings.concurrency
        )
        if got == sha256:
            break
    else:
        _abandon(bucket, key, sha256, upload_id)
        reads = f" on each of {passes} reads" if passes > 1 else ""
        raise RefusedError(
            f"{source}: the bytes read have sha256 {got}, not the expected {sha256}{reads}; "
            f"nothing was written to {bucket.url}/{key}",
            hint="the source changed after it was hashed, or is not the validated artifact",
        )
    return _finish(bucket, key, upload_id, sent, sha256, read_back=False)


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
    sent: dict[int, _Sent] = {}
    lock = threading.Lock()

    def copy_part(part: Part) -> None:
        found = listed.get(part.number)
        if found is not None and found.size == part.length:
            done = _Sent(etag=found.etag, checksum=found.checksum)  # the read-back checks it
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
            done = _Sent(etag=result["ETag"], checksum=result.get("ChecksumSHA256"))
        with lock:
            sent[part.number] = done

    run_each(parts, act=copy_part, slots=bucket.slots, workers=bucket.settings.concurrency)
    return _finish(bucket, key, upload_id, sent, sha256, read_back=True)


def _begin(
    bucket: Bucket, key: str, sha256: str, size: int, content_type: str
) -> tuple[str, dict[int, _Listed]]:
    """The recorded upload of these bytes to `key` with its listed parts, or a new one."""
    step = part_size_for(size, bucket.settings.part_size)
    record = bucket.book.find(bucket.url, key, sha256)
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
            ChecksumAlgorithm="SHA256",
            Metadata={"sha256": sha256},
        )
        return answer

    upload_id = str(bucket.request("start upload of", key, create)["UploadId"])
    bucket.book.start(
        Started(store=bucket.url, key=key, sha256=sha256, upload_id=upload_id, part_size=step)
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
                etag=part["ETag"], size=int(part["Size"]), checksum=part.get("ChecksumSHA256")
            )
        if not found.get("IsTruncated"):
            return out
        marker = int(found["NextPartNumberMarker"])


def _send_part(
    bucket: Bucket, key: str, upload_id: str, part: Part, data: bytes, checksum: str
) -> str:
    def call() -> str:
        answer = bucket.client.upload_part(
            Bucket=bucket.bucket,
            Key=bucket.object_key(key),
            UploadId=upload_id,
            PartNumber=part.number,
            Body=data,
            ChecksumAlgorithm="SHA256",
            ChecksumSHA256=checksum,  # the service refuses bytes that do not match it
        )
        return str(answer["ETag"])

    return bucket.request(f"upload part {part.number} of", key, call)


def _finish(
    bucket: Bucket,
    key: str,
    upload_id: str,
    sent: dict[int, _Sent],
    sha256: str,
    *,
    read_back: bool,
) -> bool:
    """Complete the upload create-if-absent and verify what the key then holds."""
    listing = [
        {"PartNumber": n, "ETag": s.etag, **({"ChecksumSHA256": s.checksum} if s.checksum else {})}
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
        _abandon(bucket, key, sha256, upload_id)
        return False  # the key was there first; the caller compares its bytes
    bucket.book.finish(bucket.url, key, sha256)
    _verify(bucket, key, sent, sha256, read_back=read_back)
    abort_stale(bucket, key)
    return True


def _holds(bucket: Bucket, key: str, sent: dict[int, _Sent], sha256: str) -> bool:
    """Whether the key holds this upload's object (an earlier attempt completed it)."""
    head = bucket.head_object(key)
    if head is None or head.get("Metadata", {}).get("sha256") != sha256:
        return False
    ours, theirs = composite(sent), service_composite(head)
    if ours is not None and theirs is not None:
        return ours == theirs
    return bucket.read_sha256(key, None) == sha256


def _verify(
    bucket: Bucket, key: str, sent: dict[int, _Sent], sha256: str, *, read_back: bool
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


def _abandon(bucket: Bucket, key: str, sha256: str, upload_id: str) -> None:
    abort(bucket, key, upload_id)
    bucket.book.finish(bucket.url, key, sha256)


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
