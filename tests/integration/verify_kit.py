"""Raw access to a store for the verify tests: an attacker's (or an accident's) writes that go
around relforge — no hash checks, forged metadata, restored timestamps."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Protocol


class Raw(Protocol):
    def read(self, key: str) -> bytes: ...
    def write(self, key: str, data: bytes) -> None: ...
    def delete(self, key: str) -> None: ...
    def snapshot(self) -> dict[str, bytes]: ...


class LocalRaw:
    """A directory store: edits keep the inode, size and mtime, so a stamp-based hash cache
    (`.relforge-meta`) would not notice them."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def read(self, key: str) -> bytes:
        return (self.root / key).read_bytes()

    def write(self, key: str, data: bytes) -> None:
        path = self.root / key
        if not path.exists():
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)
            return
        st = path.stat()
        with path.open("r+b") as fh:  # in place: same inode
            fh.write(data)
            fh.truncate()
        os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))

    def delete(self, key: str) -> None:
        (self.root / key).unlink()

    def snapshot(self) -> dict[str, bytes]:
        return {
            p.relative_to(self.root).as_posix(): p.read_bytes()
            for p in sorted(self.root.rglob("*"))
            if p.is_file()
        }


class S3Raw:
    """A bucket prefix: writes carry the original object's `x-amz-meta-sha256` (forged)."""

    def __init__(self, client: Any, bucket: str, prefix: str = "") -> None:
        self.client = client
        self.bucket = bucket
        self.prefix = f"{prefix}/" if prefix else ""

    def read(self, key: str) -> bytes:
        got: bytes = self.client.get_object(Bucket=self.bucket, Key=self.prefix + key)[
            "Body"
        ].read()
        return got

    def write(self, key: str, data: bytes) -> None:
        meta: dict[str, str] = {}
        try:
            head = self.client.head_object(Bucket=self.bucket, Key=self.prefix + key)
            meta = head.get("Metadata", {})
        except Exception:
            pass
        self.client.put_object(Bucket=self.bucket, Key=self.prefix + key, Body=data, Metadata=meta)

    def delete(self, key: str) -> None:
        self.client.delete_object(Bucket=self.bucket, Key=self.prefix + key)

    def snapshot(self) -> dict[str, bytes]:
        out = {}
        pages = self.client.get_paginator("list_objects_v2").paginate(Bucket=self.bucket)
        for page in pages:
            for obj in page.get("Contents", ()):
                key = obj["Key"]
                out[key] = self.client.get_object(Bucket=self.bucket, Key=key)["Body"].read()
        return out


def flip(data: bytes, at: int = 100) -> bytes:
    """The same length, one byte different."""
    return data[:at] + bytes([data[at] ^ 0xFF]) + data[at + 1 :]
