"""S3Store: an S3 bucket (or any S3-compatible service via `publishing.s3_endpoint_url`).

Every artifact is written with `IfNoneMatch="*"` (never replaces an object), with its sha256 as
both `x-amz-meta-sha256` and the S3 checksum (the service rejects bytes that do not match it);
copies are server-side (the batch lists the destination again just before, since not every
service honours IfNoneMatch on CopyObject) and ask the service to compute the copy's SHA-256,
which is compared with the expected one.  Objects above `publishing.s3_multipart_threshold_mb`
are uploaded in parts, and copies above `publishing.s3_copy_threshold_mb` made part by part
(relforge.stores.s3_multipart): S3 takes at most 5 GiB in one request.  Large objects are read
in parallel ranges, hashed in order, never held whole in memory.

Every request is retried on transient faults (5xx, throttling, resets, cut or mangled bodies;
see relforge.stores.retry), and every read checks the length and the sha256 of the bytes that
arrived before anything uses them.  botocore's own retries are off so each retry is counted
(`retries`).  A conditional write retried after an attempt that may have landed counts as
created when the key now holds exactly the expected bytes.
Credentials come from the environment (AWS_*), as boto3 finds them; they are never printed.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

from relforge.envfaults import LocalWriteFault, environment_fault, writing
from relforge.errors import ConfigError, RefusedError, RelforgeError
from relforge.stores import s3_complete, s3_multipart, s3_ranged
from relforge.stores.content_types import OCTET_STREAM
from relforge.stores.objectstore import ObjectInfo, ObjectStore, Unfinished
from relforge.stores.partflow import shared_buffers
from relforge.stores.parts import Part, TransferSettings
from relforge.stores.resume import UploadBook
from relforge.stores.retry import (
    DigestMismatch,
    RetryCounter,
    RetryPolicy,
    TransientFault,
    call_with_retries,
)
from relforge.stores.s3_checksums import b64_hex, hex_b64, whole_checksum
from relforge.stores.s3_faults import (
    CONDITION_FAILED,
    MISSING,
    code,
    is_transient,
    not_s3,
    translate,
)
from relforge.stores.s3client import s3_client

T = TypeVar("T")


class S3Store:
    def __init__(
        self,
        *,
        bucket: str,
        prefix: str = "",
        endpoint_url: str = "",
        config_key: str = "publishing.store",
        policy: RetryPolicy | None = None,
        settings: TransferSettings | None = None,
        book: UploadBook | None = None,
    ) -> None:
        self.bucket = bucket
        self.prefix = f"{prefix}/" if prefix else ""
        self.endpoint_url = endpoint_url
        self.config_key = config_key  # the matrix key that names this store, for errors
        self.policy = policy or RetryPolicy()
        self.settings = settings or TransferSettings()
        self.buffers = shared_buffers(self.settings.concurrency, self.settings.part_size)
        self.book = book or UploadBook()
        self._retries = RetryCounter()
        self._client: Any = None
        self._lock = threading.Lock()

    @property
    def url(self) -> str:
        return f"s3://{self.bucket}/{self.prefix}".rstrip("/")

    @property
    def directory_pages(self) -> bool:
        return True

    @property
    def retries(self) -> int:
        """How many requests were tried again after a transient fault."""
        return self._retries.count

    @property
    def client(self) -> Any:
        with self._lock:
            if self._client is None:
                from botocore.config import Config

                config = Config(
                    max_pool_connections=64,
                    retries={"total_max_attempts": 1},  # ours (counted), not botocore's
                    connect_timeout=10,
                    read_timeout=60,
                    s3={"addressing_style": "path"} if self.endpoint_url else {},
                )
                try:
                    self._client = s3_client(endpoint_url=self.endpoint_url or None, config=config)
                except ValueError as exc:  # botocore's "Invalid endpoint", urllib's bad IPv6
                    raise ConfigError(
                        f"{self.endpoint_url!r} is not an endpoint URL ({exc})",
                        key="publishing.s3_endpoint_url",
                        hint="write it like https://s3.example.org or http://127.0.0.1:9000",
                    ) from None
            return self._client

    def object_key(self, key: str) -> str:
        """The S3 key of the store's object `key` (under the store's prefix)."""
        return self.prefix + key

    def request(
        self,
        action: str,
        key: str,
        call: Callable[[], T],
        on_retry: Callable[[BaseException], None] | None = None,
    ) -> T:
        """One request, retried on transient faults; what is left becomes a RelforgeError."""
        try:
            return call_with_retries(
                call,
                transient=is_transient,
                policy=self.policy,
                counter=self._retries,
                on_retry=on_retry,
            )
        except Exception as exc:
            raise translate(exc, self, action, key) from None

    def list(self, prefix: str) -> Iterator[ObjectInfo]:
        token = ""
        while True:
            args = {"Bucket": self.bucket, "Prefix": self.object_key(prefix)}
            if token:
                args["ContinuationToken"] = token
            page = self.request(
                "list", prefix, functools.partial(self.client.list_objects_v2, **args)
            )
            if "Name" not in page:  # every ListBucketResult names its bucket
                raise not_s3(self, "list", prefix, "a listing without the bucket's name")
            for obj in page.get("Contents", ()):
                yield ObjectInfo(
                    key=obj["Key"][len(self.prefix) :], size=obj["Size"], etag=obj["ETag"]
                )
            if not page.get("IsTruncated"):
                return
            token = page["NextContinuationToken"]

    def head_object(self, key: str) -> dict[str, Any] | None:
        """The HEAD answer for the object (None when it does not exist)."""

        def head() -> dict[str, Any] | None:
            try:
                found: dict[str, Any] = self.client.head_object(
                    Bucket=self.bucket, Key=self.object_key(key), ChecksumMode="ENABLED"
                )
            except Exception as exc:
                if code(exc) in MISSING:
                    return None
                raise
            if "ETag" not in found:
                raise not_s3(self, "head", key, "an object without an ETag")
            return found

        return self.request("head", key, head)

    def head(self, key: str) -> ObjectInfo | None:
        head = self.head_object(key)
        if head is None:
            return None
        return ObjectInfo(key=key, size=head["ContentLength"], etag=head["ETag"])

    def sha256(self, key: str) -> str | None:
        head = self.head_object(key)
        if head is None:
            return None
        claimed = head.get("Metadata", {}).get("sha256")
        computed = whole_checksum(head)
        if computed is None and int(head["ContentLength"]) > self.settings.multipart_threshold:
            computed = self.read_parts(key, head, None, claimed)
        elif computed is None:  # no service-computed checksum: the bytes decide
            computed = self._read(key, lambda block: None, lambda: None)
        if claimed and claimed != computed:
            raise RefusedError(
                f"{self.url}/{key}: the stored sha256 {claimed} does not match its bytes "
                f"({computed})",
                hint="the object was changed outside relforge; inspect it before going on",
            )
        return computed

    def _read(self, key: str, write: Callable[[bytes], object], restart: Callable[[], None]) -> str:
        """Stream the object into `write` and return the sha256 of its bytes, tried again
        (after `restart()`) when the body arrives short or does not match its checksum."""

        def attempt() -> str:
            restart()
            response = self.client.get_object(
                Bucket=self.bucket, Key=self.object_key(key), ChecksumMode="ENABLED"
            )
            length = int(response["ContentLength"])
            digest = hashlib.sha256()
            size = 0
            for block in response["Body"].iter_chunks(1 << 20):
                digest.update(block)
                write(block)
                size += len(block)
            if size != length:
                raise TransientFault(f"{size} of {length} bytes arrived")
            got = digest.hexdigest()
            # the service's checksum when it sends one (moto does only for copies), else ours;
            # a mismatch is retried even when it repeats (a wire fault can repeat), and is
            # refused when every try disagrees (the object was changed outside relforge)
            metadata: dict[str, str] = response.get("Metadata", {})
            expected = whole_checksum(response) or metadata.get("sha256")
            if expected and expected != got:
                raise DigestMismatch(expected=expected, got=got)
            return got

        return self.request("get", key, attempt)

    def get(self, key: str) -> bytes:
        blocks: list[bytes] = []
        self._read(key, blocks.append, blocks.clear)
        return b"".join(blocks)

    def download(self, key: str, dest: Path) -> str:
        head = self.head_object(key)
        large = head is not None and int(head["ContentLength"]) > self.settings.multipart_threshold
        # the write side has its own faults: a full disk names `dest`, not this store
        with writing(dest) as out:
            if head is not None and large:
                claimed = head.get("Metadata", {}).get("sha256")
                return self.read_parts(
                    key, head, lambda offset, data: out.pwrite(data, offset), claimed
                )

            def restart() -> None:
                out.seek(0)
                out.truncate()

            return self._read(key, out.write, restart)

    def read_into(self, key: str, start: int, into: memoryview) -> None:
        part = Part(number=1, start=start, length=into.nbytes)
        s3_ranged.get_range(self, key, part, None, into)

    def read_sha256(self, key: str, expected: str | None) -> str:
        """The sha256 of the object's bytes, read in parallel ranges; when `expected` is given,
        bytes that differ are read again (as every read), then refused."""
        head = self.head_object(key)
        if head is None:
            raise RelforgeError(f"get {self.url}/{key}: the object does not exist")
        return self.read_parts(key, head, None, expected)

    def read_parts(
        self,
        key: str,
        head: dict[str, Any],
        write_at: Callable[[int, memoryview], object] | None,
        expected: str | None,
    ) -> str:
        """The object read in parallel ranges (see relforge.stores.s3_ranged)."""
        return s3_ranged.read_parts(self, key, head, write_at, expected)

    def put_if_absent(
        self,
        key: str,
        source: Path | bytes,
        sha256: str,
        content_type: str = OCTET_STREAM,
    ) -> bool:
        size = s3_multipart.source_size(self, key, source)
        if size > self.settings.multipart_threshold:
            return s3_multipart.upload_local(self, key, source, size, sha256, content_type)

        def put() -> None:
            with contextlib.ExitStack() as stack:  # a fresh stream for each attempt
                body = (
                    source if isinstance(source, bytes) else stack.enter_context(source.open("rb"))
                )
                self.client.put_object(
                    Bucket=self.bucket,
                    Key=self.object_key(key),
                    Body=body,
                    ContentType=content_type,
                    # with the algorithm named, moto (like AWS) returns the checksum on HEAD
                    ChecksumAlgorithm="SHA256",
                    ChecksumSHA256=b64_hex(sha256),
                    Metadata={"sha256": sha256},
                    IfNoneMatch="*",
                )

        return self._create("put", key, sha256, put)

    def copy_if_absent(
        self, source: ObjectStore, src_key: str, key: str, sha256: str, size: int | None = None
    ) -> bool:
        if not isinstance(source, S3Store) or source.endpoint_url != self.endpoint_url:
            return self._copy_through(source, src_key, key, sha256, size)
        if size is None or size > self.settings.copy_threshold:
            head = source.head_object(src_key)
            if head is None:
                raise RelforgeError(f"copy {source.url}/{src_key}: the object does not exist")
            if int(head["ContentLength"]) > self.settings.copy_threshold:
                return s3_multipart.copy_within(self, source, src_key, key, sha256, head)
        # AWS refuses a copy onto an existing key with IfNoneMatch; for services that ignore
        # the header on CopyObject, apply_batch lists the destination again right before.
        result: dict[str, Any] = {}

        def copy() -> None:
            result.clear()
            result.update(
                self.client.copy_object(
                    Bucket=self.bucket,
                    Key=self.object_key(key),
                    CopySource={"Bucket": source.bucket, "Key": source.object_key(src_key)},
                    MetadataDirective="COPY",
                    ChecksumAlgorithm="SHA256",
                    IfNoneMatch="*",
                )
            )

        if not self._create("copy", key, sha256, copy):
            return False
        got = hex_b64(result.get("CopyObjectResult", {}).get("ChecksumSHA256")) or self.sha256(key)
        if got != sha256:
            self.delete(key)  # the object we just created; nobody else can have written it
            raise RefusedError(
                f"{source.url}/{src_key}: its copy has sha256 {got}, expected {sha256}; "
                "the copy was removed",
                hint="the source object is not the validated artifact",
            )
        return True

    def _copy_through(
        self, source: ObjectStore, src_key: str, key: str, sha256: str, size: int | None
    ) -> bool:
        """A copy from another endpoint or a local store: large objects stream part by part
        (each read from the source, sent, hashed in order; nothing held whole), smaller ones
        go through a temporary file."""
        import tempfile

        if self.head(key) is not None:
            return False
        if size is None:
            info = source.head(src_key)
            if info is None:
                raise RelforgeError(f"copy {source.url}/{src_key}: the object does not exist")
            size = info.size
        if size > self.settings.multipart_threshold:
            return s3_multipart.stream_from(self, source, src_key, key, sha256, size)
        with tempfile.TemporaryDirectory(prefix="relforge-copy-") as tmp:
            path = Path(tmp) / "object"
            try:
                got = source.download(src_key, path)
            except LocalWriteFault as fault:
                raise environment_fault(
                    fault.error, f"write the temporary copy {path} for {self.url}/{key}"
                ) from None
            if got != sha256:
                raise RefusedError(
                    f"{source.url}/{src_key}: sha256 {got} is not the expected {sha256}; "
                    "nothing was copied"
                )
            return self.put_if_absent(key, path, sha256)

    def write(self, key: str, data: bytes, content_type: str) -> None:
        digest = hashlib.sha256(data).hexdigest()
        self.request(
            "put",
            key,
            lambda: self.client.put_object(
                Bucket=self.bucket,
                Key=self.object_key(key),
                Body=data,
                ContentType=content_type,
                ChecksumAlgorithm="SHA256",
                ChecksumSHA256=b64_hex(digest),
                Metadata={"sha256": digest},
            ),
        )

    def delete(self, key: str) -> None:
        self.request(
            "delete",
            key,
            lambda: self.client.delete_object(Bucket=self.bucket, Key=self.object_key(key)),
        )

    def create(self, key: str, data: bytes, content_type: str) -> str | None:
        return self._conditional_put(key, data, content_type, IfNoneMatch="*")

    def replace_if(self, key: str, data: bytes, content_type: str, etag: str) -> str | None:
        return self._conditional_put(key, data, content_type, IfMatch=etag)

    def delete_if(self, key: str, etag: str) -> bool:
        def attempt() -> bool:
            try:
                self.client.delete_object(
                    Bucket=self.bucket, Key=self.object_key(key), IfMatch=etag
                )
            except Exception as exc:
                if code(exc) in CONDITION_FAILED or code(exc) in MISSING:
                    return False
                raise
            return True

        return self.request("delete", key, attempt)

    def _conditional_put(
        self, key: str, data: bytes, content_type: str, **condition: str
    ) -> str | None:
        """A put that the service applies only under `condition` (IfNoneMatch or IfMatch):
        the new ETag, or None when the condition failed.  A retried attempt that may have
        landed reads as failed; the caller (relforge.stores.lease) tells by the body."""
        digest = hashlib.sha256(data).hexdigest()

        def attempt() -> str | None:
            try:
                answer = self.client.put_object(
                    Bucket=self.bucket,
                    Key=self.object_key(key),
                    Body=data,
                    ContentType=content_type,
                    ChecksumAlgorithm="SHA256",
                    ChecksumSHA256=b64_hex(digest),
                    Metadata={"sha256": digest},
                    **condition,
                )
            except Exception as exc:
                if code(exc) in CONDITION_FAILED or code(exc) in MISSING:
                    return None
                raise
            if "ETag" not in answer:  # every S3 write answers with the object's ETag
                raise not_s3(self, "put", key, "a write answered without an ETag")
            return str(answer["ETag"])

        return self.request("put", key, attempt)

    def unfinished(self, prefix: str) -> tuple[Unfinished, ...]:
        return tuple(s3_complete.unfinished(self, prefix))

    def abort(self, unfinished: Unfinished) -> None:
        s3_complete.abort(self, unfinished.key, unfinished.upload_id)

    def _create(self, action: str, key: str, sha256: str, call: Callable[[], None]) -> bool:
        """A create-if-absent request: True when it created the object.  When the key exists
        and an earlier attempt failed in a way that may have landed (a 500 after the write, a
        reset before the answer), the key holding exactly `sha256` means that attempt made it."""
        uncertain: list[BaseException] = []

        def attempt() -> bool:
            try:
                call()
            except Exception as exc:
                if code(exc) in CONDITION_FAILED:
                    return False
                raise
            return True

        if self.request(action, key, attempt, on_retry=uncertain.append):
            return True
        return bool(uncertain) and self.sha256(key) == sha256
