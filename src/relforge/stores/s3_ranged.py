"""Reading a large S3 object in parallel ranges: each range one GET (of the object version
first seen, `IfMatch` its ETag), retried on its own when it is cut or short; the bytes hashed in
order (relforge.stores.partflow) and, when asked, written at their offsets.  A cut at 90 % costs
one range again, not the whole object, and the bytes go into the store's reused part buffers.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from relforge.stores.partflow import run_parts
from relforge.stores.parts import Part, cut
from relforge.stores.retry import DigestMismatch, TransientFault
from relforge.stores.s3_bucket import Bucket

CHUNK = 1 << 20  # read from the socket in blocks of this size, copied into the part's buffer


def get_range(bucket: Bucket, key: str, part: Part, etag: str | None, into: memoryview) -> None:
    """Fill `into` with the bytes of `part` (of the object version with `etag`, when given),
    retried until they all arrive."""
    if part.length == 0:
        return

    def attempt() -> None:
        extra = {"IfMatch": etag} if etag else {}
        response = bucket.client.get_object(
            Bucket=bucket.bucket, Key=bucket.object_key(key), Range=part.byte_range, **extra
        )
        got = 0
        for block in response["Body"].iter_chunks(CHUNK):
            end = got + len(block)
            if end > part.length:
                raise TransientFault(f"more than the {part.length} bytes asked for arrived")
            into[got:end] = block
            got = end
        if got != part.length:
            raise TransientFault(f"{got} of {part.length} bytes arrived")

    bucket.request("get", key, attempt)


def read_parts(
    bucket: Bucket,
    key: str,
    head: dict[str, Any],
    write_at: Callable[[int, memoryview], object] | None,
    expected: str | None,
) -> str:
    """The sha256 of the object (`head`: its HEAD answer) read in ranges, each written at its
    offset by `write_at`; a whole read whose hash is not `expected` is tried again, like any
    read whose bytes do not match the hash stored with them."""
    parts = cut(int(head["ContentLength"]), bucket.settings.part_size)
    etag = str(head["ETag"])

    def one_read() -> str:
        got = run_parts(
            parts,
            fetch=lambda part, into: get_range(bucket, key, part, etag, into),
            act=(lambda part, data: write_at(part.start, data)) if write_at else None,
            buffers=bucket.buffers,
            workers=bucket.settings.concurrency,
        )
        if expected and got != expected:
            raise DigestMismatch(expected=expected, got=got)
        return got

    return bucket.request("get", key, one_read)
