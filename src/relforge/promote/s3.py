"""S3Store: an S3 bucket (or any S3-compatible service via `publishing.s3_endpoint_url`).

Every artifact is written with `IfNoneMatch="*"` (never replaces an object), with its sha256 as
both `x-amz-meta-sha256` and the S3 checksum (the service rejects bytes that do not match it);
copies are server-side (the batch lists the destination again just before, since not every
service honours IfNoneMatch on CopyObject) and ask the service to compute the copy's SHA-256,
which is compared with the expected one.  Single PUT/COPY requests take objects up to 5 GB,
above any wheel.
Credentials come from the environment (AWS_*), as boto3 finds them; they are never printed.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from relforge.errors import ConfigError, RefusedError, RelforgeError
from relforge.promote.store import OCTET_STREAM, ObjectInfo, ObjectStore, copy_stream

_CONDITION_FAILED = {"PreconditionFailed", "412", "ConditionalRequestConflict", "409"}
_MISSING = {"404", "NoSuchKey", "NotFound"}


def _b64(hex_digest: str) -> str:
    return base64.b64encode(bytes.fromhex(hex_digest)).decode("ascii")


def _hex(b64_digest: str) -> str | None:
    if "-" in b64_digest:  # a composite (per-part) checksum says nothing about the whole
        return None
    return base64.b64decode(b64_digest).hex()


class S3Store:
    def __init__(
        self,
        *,
        bucket: str,
        prefix: str = "",
        endpoint_url: str = "",
        config_key: str = "publishing.store",
    ) -> None:
        self.bucket = bucket
        self.prefix = f"{prefix}/" if prefix else ""
        self.endpoint_url = endpoint_url
        self.config_key = config_key  # the matrix key that names this store, for errors
        self._client: Any = None
        self._lock = threading.Lock()

    @property
    def url(self) -> str:
        return f"s3://{self.bucket}/{self.prefix}".rstrip("/")

    @property
    def directory_pages(self) -> bool:
        return True

    @property
    def client(self) -> Any:
        with self._lock:
            if self._client is None:
                import boto3
                from botocore.config import Config

                config = Config(
                    max_pool_connections=64,
                    retries={"mode": "standard", "max_attempts": 5},
                    s3={"addressing_style": "path"} if self.endpoint_url else {},
                )
                try:
                    self._client = boto3.session.Session().client(
                        "s3", endpoint_url=self.endpoint_url or None, config=config
                    )
                except ValueError as exc:  # botocore's "Invalid endpoint", urllib's bad IPv6
                    raise ConfigError(
                        f"{self.endpoint_url!r} is not an endpoint URL ({exc})",
                        key="publishing.s3_endpoint_url",
                        hint="write it like https://s3.example.org or http://127.0.0.1:9000",
                    ) from None
            return self._client

    def _key(self, key: str) -> str:
        return self.prefix + key

    def list(self, prefix: str) -> Iterator[ObjectInfo]:
        paginator = self.client.get_paginator("list_objects_v2")
        with self._errors("list", prefix):
            for page in paginator.paginate(Bucket=self.bucket, Prefix=self._key(prefix)):
                for obj in page.get("Contents", ()):
                    yield ObjectInfo(
                        key=obj["Key"][len(self.prefix) :], size=obj["Size"], etag=obj["ETag"]
                    )

    def _head(self, key: str) -> dict[str, Any] | None:
        with self._errors("head", key):
            try:
                head: dict[str, Any] = self.client.head_object(
                    Bucket=self.bucket, Key=self._key(key), ChecksumMode="ENABLED"
                )
            except self._client_error() as exc:
                if _code(exc) in _MISSING:
                    return None
                raise
        return head

    def head(self, key: str) -> ObjectInfo | None:
        head = self._head(key)
        if head is None:
            return None
        return ObjectInfo(key=key, size=head["ContentLength"], etag=head["ETag"])

    def sha256(self, key: str) -> str | None:
        head = self._head(key)
        if head is None:
            return None
        claimed = head.get("Metadata", {}).get("sha256")
        checksum = head.get("ChecksumSHA256")
        computed = _hex(checksum) if checksum else None
        if computed is None:  # no service-computed checksum: the bytes decide
            digest = hashlib.sha256()
            with self._errors("get", key):
                body = self.client.get_object(Bucket=self.bucket, Key=self._key(key))["Body"]
                for block in body.iter_chunks(1 << 20):
                    digest.update(block)
            computed = digest.hexdigest()
        if claimed and claimed != computed:
            raise RefusedError(
                f"{self.url}/{key}: the stored sha256 {claimed} does not match its bytes "
                f"({computed})",
                hint="the object was changed outside relforge; inspect it before going on",
            )
        return computed

    def get(self, key: str) -> bytes:
        with self._errors("get", key):
            data: bytes = self.client.get_object(Bucket=self.bucket, Key=self._key(key))[
                "Body"
            ].read()
        return data

    def download(self, key: str, dest: Path) -> str:
        with self._errors("get", key), dest.open("wb") as out:
            body = self.client.get_object(Bucket=self.bucket, Key=self._key(key))["Body"]
            return copy_stream(body, out)[0]

    def put_if_absent(
        self, key: str, source: Path | bytes, sha256: str, content_type: str = OCTET_STREAM
    ) -> bool:
        with contextlib.ExitStack() as stack:
            body = source if isinstance(source, bytes) else stack.enter_context(source.open("rb"))
            return self._conditional(
                "put",
                key,
                lambda: self.client.put_object(
                    Bucket=self.bucket,
                    Key=self._key(key),
                    Body=body,
                    ContentType=content_type,
                    # with the algorithm named, moto (like AWS) returns the checksum on HEAD
                    ChecksumAlgorithm="SHA256",
                    ChecksumSHA256=_b64(sha256),
                    Metadata={"sha256": sha256},
                    IfNoneMatch="*",
                ),
            )

    def copy_if_absent(self, source: ObjectStore, src_key: str, key: str, sha256: str) -> bool:
        if not isinstance(source, S3Store) or source.endpoint_url != self.endpoint_url:
            return self._copy_through(source, src_key, key, sha256)
        # AWS refuses a copy onto an existing key with IfNoneMatch; for services that ignore
        # the header on CopyObject, apply_batch lists the destination again right before.
        result: dict[str, Any] = {}

        def copy() -> None:
            result.update(
                self.client.copy_object(
                    Bucket=self.bucket,
                    Key=self._key(key),
                    CopySource={"Bucket": source.bucket, "Key": source._key(src_key)},
                    MetadataDirective="COPY",
                    ChecksumAlgorithm="SHA256",
                    IfNoneMatch="*",
                )
            )

        if not self._conditional("copy", key, copy):
            return False
        checksum = result.get("CopyObjectResult", {}).get("ChecksumSHA256")
        got = _hex(checksum) if checksum else self.sha256(key)
        if got != sha256:
            self.delete(key)  # the object we just created; nobody else can have written it
            raise RefusedError(
                f"{source.url}/{src_key}: its copy has sha256 {got}, expected {sha256}; "
                "the copy was removed",
                hint="the source object is not the validated artifact",
            )
        return True

    def _copy_through(self, source: ObjectStore, src_key: str, key: str, sha256: str) -> bool:
        import tempfile

        if self.head(key) is not None:
            return False
        with tempfile.TemporaryDirectory(prefix="relforge-copy-") as tmp:
            path = Path(tmp) / "object"
            got = source.download(src_key, path)
            if got != sha256:
                raise RefusedError(
                    f"{source.url}/{src_key}: sha256 {got} is not the expected {sha256}; "
                    "nothing was copied"
                )
            return self.put_if_absent(key, path, sha256)

    def write(self, key: str, data: bytes, content_type: str) -> None:
        digest = hashlib.sha256(data).hexdigest()
        with self._errors("put", key):
            self.client.put_object(
                Bucket=self.bucket,
                Key=self._key(key),
                Body=data,
                ContentType=content_type,
                ChecksumAlgorithm="SHA256",
                ChecksumSHA256=_b64(digest),
                Metadata={"sha256": digest},
            )

    def delete(self, key: str) -> None:
        with self._errors("delete", key):
            self.client.delete_object(Bucket=self.bucket, Key=self._key(key))

    def _conditional(self, action: str, key: str, call: Any) -> bool:
        with self._errors(action, key):
            try:
                call()
            except self._client_error() as exc:
                if _code(exc) in _CONDITION_FAILED:
                    return False
                raise
        return True

    def _client_error(self) -> type[Exception]:
        from botocore.exceptions import ClientError

        return ClientError  # type: ignore[no-any-return]

    @contextlib.contextmanager
    def _errors(self, action: str, key: str) -> Iterator[None]:
        """Turn botocore's exceptions into one-paragraph errors (never with credentials)."""
        from botocore.exceptions import BotoCoreError, ClientError, NoCredentialsError

        try:
            yield
        except NoCredentialsError:
            raise ConfigError(
                f"no AWS credentials for {self.url}",
                hint="set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (or a role) in the "
                "environment",
            ) from None
        except ClientError as exc:
            code = _code(exc)
            message = exc.response.get("Error", {}).get("Message", "")
            if code in ("NoSuchBucket", "AccessDenied", "InvalidAccessKeyId"):
                raise ConfigError(
                    f"{action} {self.url}/{key}: {code} {message}".rstrip(),
                    key=self.config_key,
                ) from None
            raise RelforgeError(f"{action} {self.url}/{key}: {code} {message}".rstrip()) from None
        except BotoCoreError as exc:
            raise RelforgeError(f"{action} {self.url}/{key}: {exc}") from None


def _code(exc: Any) -> str:
    return str(exc.response.get("Error", {}).get("Code", ""))
