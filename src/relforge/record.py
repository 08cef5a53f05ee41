"""The hash form a wheel's RECORD uses (binary distribution format): `sha256=` + urlsafe base64
without padding.  Shared by the builder, validation and PyPI staging."""

from __future__ import annotations

import base64
import hashlib


def record_digest(digest: bytes) -> str:
    """The RECORD encoding of a raw sha256 digest."""
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode("ascii")


def record_hash(data: bytes) -> str:
    """The RECORD hash field of `data`: `sha256=…`."""
    return f"sha256={record_digest(hashlib.sha256(data).digest())}"
