"""What the multipart and ranged-read code needs of an S3 store (S3Store has it all): its
client and bucket, keys under its prefix, retried requests, the transfer settings and the part
buffers that bound the bytes in flight, the record of started uploads.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol, TypeVar

from relforge.stores.partflow import Buffers
from relforge.stores.parts import TransferSettings
from relforge.stores.resume import UploadBook
from relforge.stores.retry import RetryPolicy

T = TypeVar("T")


class Bucket(Protocol):
    """What the multipart requests need of an S3 store."""

    @property
    def url(self) -> str: ...

    @property
    def bucket(self) -> str: ...

    @property
    def endpoint_url(self) -> str: ...

    @property
    def client(self) -> Any: ...

    @property
    def settings(self) -> TransferSettings: ...

    @property
    def policy(self) -> RetryPolicy: ...

    @property
    def buffers(self) -> Buffers: ...

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


def store_id(bucket: Bucket) -> str:
    """The store in the records of started uploads: its URL and endpoint (two services may
    each have a bucket of the same name)."""
    return f"{bucket.url} at {bucket.endpoint_url or 'AWS'}"
