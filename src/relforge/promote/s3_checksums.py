"""S3's SHA-256 checksums: base64 as the service writes them, whole-object or composite.

A single-part object's ChecksumSHA256 is the SHA-256 of its bytes.  A multipart object's is
composite: the SHA-256 of its parts' SHA-256s (raw bytes, in part order) — it identifies the
parts, not the object's own sha256, which only reading the bytes (or the metadata relforge
stored and then checks) gives.
"""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, kw_only=True)
class Sent:
    """A part an upload holds: its ETag and (when known) its base64 SHA-256."""

    etag: str
    checksum: str | None


def b64_hex(hex_digest: str) -> str:
    """A hex digest as S3 writes checksums: base64 of the raw bytes."""
    return base64.b64encode(bytes.fromhex(hex_digest)).decode("ascii")


def hex_b64(b64_digest: str | None) -> str | None:
    """An S3 checksum as a hex digest (None for none, or for a composite `…-N` one)."""
    if not b64_digest or "-" in b64_digest:  # a composite (per-part) checksum says nothing
        return None
    return base64.b64decode(b64_digest).hex()


def whole_checksum(answer: dict[str, Any]) -> str | None:
    """The object's own SHA-256 (hex) from a HEAD or GET answer, or None: a multipart object's
    checksum is composite (a hash of its parts' hashes), whether or not the service marks it so
    (AWS appends `-N`; moto 5.2.5 sends it bare on a HEAD, with the ETag's `-N` the only sign)."""
    kind = answer.get("ChecksumType")
    multipart = "-" in str(answer.get("ETag", "")).strip('"')
    if kind == "COMPOSITE" or (multipart and kind != "FULL_OBJECT"):
        return None
    return hex_b64(answer.get("ChecksumSHA256"))


def b64_sha256(data: bytes | memoryview) -> str:
    return base64.b64encode(hashlib.sha256(data).digest()).decode("ascii")


def composite(sent: Mapping[int, Sent]) -> str | None:
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
