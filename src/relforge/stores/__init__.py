"""Object stores: the ObjectStore protocol and its backends, opened by URL.

`open_store("file://…")` gives a LocalStore (a directory: the embedded default), `s3://bucket/prefix`
an S3Store (boto3; any S3-compatible service), each registered by URL scheme in
relforge.stores.registry.  Every write of an artifact is create-if-absent and checked against its
sha256; transient faults are retried with bounded jitter (retry.py) and what remains is translated
into relforge's errors (s3_faults.py); large objects move in parts, in parallel, resumably
(parts.py, partflow.py, s3_multipart.py); plans of transfers are journaled (transfer.py,
journal.py); a writer lease (lease.py: `LeasePolicy`, `holding`) is one conditional object
that makes writers take turns.  Nothing here knows about channels, index pages or PyPI: promote,
deps, site and variants build those on top.
"""

from __future__ import annotations

from relforge.stores import content_types
from relforge.stores.lease import LeasePolicy
from relforge.stores.objectstore import DEFAULT_STORE, ObjectInfo, ObjectStore, sha256_bytes
from relforge.stores.registry import StoreOptions, open_store
from relforge.stores.retry import total_retries
from relforge.stores.transfer import Batch, Transfer, plan_batch, refuse_conflicts

__all__ = [
    "DEFAULT_STORE",
    "Batch",
    "LeasePolicy",
    "ObjectInfo",
    "ObjectStore",
    "StoreOptions",
    "Transfer",
    "content_types",
    "open_store",
    "plan_batch",
    "refuse_conflicts",
    "sha256_bytes",
    "total_retries",
]
