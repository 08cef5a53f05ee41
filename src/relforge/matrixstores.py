"""The stores and trust the matrix's `publishing:` section names, opened: the main store (the
root of trust, where manifests live), its mirrors, the backup store, and the keys manifests must
be signed with.

Every stage that reads or writes a channel opens its stores here (promote through its
`ResolvedPublishing` context, each opened once per command); the dependency mirror, the site and the
variant providers too, without reaching into promote.
"""

from __future__ import annotations

from dataclasses import dataclass

from relforge.matrix.schema import Matrix, Publishing
from relforge.signing import Trust, trust_from
from relforge.stores.objectstore import DEFAULT_STORE, ObjectStore
from relforge.stores.parts import TransferSettings
from relforge.stores.registry import StoreOptions, open_store

MAIN = "main"  # the name of `publishing.store` among the stores (a mirror has its own)


@dataclass(frozen=True, kw_only=True)
class NamedStore:
    name: str
    store: ObjectStore


def store_options(pub: Publishing, key: str, endpoint_url: str) -> StoreOptions:
    """How to open a store of the publishing section: its endpoint, retries and transfers."""
    return StoreOptions(
        s3_endpoint_url=endpoint_url,
        key=key,
        s3_attempts=pub.s3_attempts,
        transfers=TransferSettings.from_mib(
            threshold=pub.s3_multipart_threshold_mb,
            part_size=pub.s3_part_size_mb,
            concurrency=pub.s3_part_concurrency,
            copy_threshold=pub.s3_copy_threshold_mb,
        ),
    )


def main_store(matrix: Matrix) -> ObjectStore:
    """`publishing.store` (default: a local store under .relforge/), opened."""
    pub = matrix.publishing
    return open_store(
        pub.store or DEFAULT_STORE, store_options(pub, "publishing.store", pub.s3_endpoint_url)
    )


def backup_store(matrix: Matrix) -> ObjectStore:
    """`publishing.backup_store`, or the `backup/` prefix of the main store."""
    pub = matrix.publishing
    url = pub.backup_store or (pub.store or DEFAULT_STORE).rstrip("/") + "/backup"
    return open_store(url, store_options(pub, "publishing.backup_store", pub.s3_endpoint_url))


def mirror_stores(matrix: Matrix) -> list[NamedStore]:
    """The matrix's mirrors (`publishing.mirrors`), in the order written."""
    out = []
    for i, mirror in enumerate(matrix.publishing.mirrors):
        options = store_options(
            matrix.publishing, f"publishing.mirrors[{i}].url", mirror.endpoint_url
        )
        out.append(NamedStore(name=mirror.name, store=open_store(mirror.url, options)))
    return out


def trust(matrix: Matrix) -> Trust:
    """publishing.trusted_keys and the signing key of this run (from the environment)."""
    return trust_from(tuple(matrix.publishing.trusted_keys))
