"""The object stores, registered by URL scheme in one dict, and `open_store` that picks one.

The protocol lives in relforge.stores.objectstore, which imports no store: each store imports the
protocol, and this module imports the stores (when one is opened).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from relforge.errors import ConfigError
from relforge.stores.objectstore import ObjectStore
from relforge.stores.parts import TransferSettings
from relforge.stores.retry import RetryPolicy


@dataclass(frozen=True, kw_only=True)
class StoreOptions:
    s3_endpoint_url: str = ""
    key: str = "publishing.store"  # the matrix key the URL came from, for error messages
    s3_attempts: int = RetryPolicy.attempts  # publishing.s3_attempts: tries per S3 request
    # publishing.s3_multipart_threshold_mb, s3_part_size_mb, s3_part_concurrency, …
    transfers: TransferSettings = field(default_factory=TransferSettings)


def _open_local(url: str, options: StoreOptions) -> ObjectStore:
    from relforge.stores.local import LocalStore

    return LocalStore(Path(url.removeprefix("file://")))


def _open_s3(url: str, options: StoreOptions) -> ObjectStore:
    from relforge.stores.s3 import S3Store

    bucket, _, prefix = url.removeprefix("s3://").partition("/")
    if not bucket:
        raise ConfigError(
            f"{url!r} names no bucket", key=options.key, hint="write s3://BUCKET/PREFIX"
        )
    return S3Store(
        bucket=bucket,
        prefix=prefix.strip("/"),
        endpoint_url=options.s3_endpoint_url,
        config_key=options.key,
        policy=RetryPolicy(attempts=options.s3_attempts),
        settings=options.transfers,
    )


# URL scheme → store factory; `file://PATH` (relative to the working directory) or
# `s3://BUCKET/PREFIX`.
STORES: dict[str, Callable[[str, StoreOptions], ObjectStore]] = {
    "file": _open_local,
    "s3": _open_s3,
}


def open_store(url: str, options: StoreOptions | None = None) -> ObjectStore:
    """The store at `url` (`file://PATH` or `s3://BUCKET/PREFIX`); ConfigError naming the
    matrix key for any other URL."""
    options = options or StoreOptions()
    scheme, sep, rest = url.partition("://")
    factory = STORES.get(scheme) if sep else None
    if factory is None or not rest.strip("/"):
        raise ConfigError(
            f"{url!r} is not a store URL",
            key=options.key,
            hint="use " + " or ".join(f"{s}://…" for s in STORES),
        )
    return factory(url, options)
