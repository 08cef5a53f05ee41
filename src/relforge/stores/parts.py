"""How a large object is cut into parts, and the settings that decide when it is.

S3 takes at most 5 GiB in one request (a PUT, a copy, one part) and at most 10,000 parts of at
least 5 MiB each (all but the last); `cut` keeps to both, growing the part size for an object
that would otherwise need more parts.  `TransferSettings` carries `publishing.s3_*` to a store.
"""

from __future__ import annotations

from dataclasses import dataclass

MIB = 1 << 20
MIN_PART = 5 * MIB  # every part but the last
MAX_SINGLE = 5120 * MIB  # one PUT, one CopyObject, one part
MAX_PARTS = 10_000


@dataclass(frozen=True, kw_only=True)
class TransferSettings:
    """When objects move in parts, how large the parts are and how many are in flight."""

    multipart_threshold: int = 64 * MIB  # uploads (and copies across endpoints) above it
    # 8 MiB × 16 (awscli: 8 MiB × 10): on moto, 4 × 1 GiB in 16 MiB × 8 parts took 66 s,
    # in 8 MiB × 10 45 s, in 8 MiB × 16 16–47 s (a loaded machine), as fast as aws s3 cp
    part_size: int = 8 * MIB
    concurrency: int = 16  # parts in flight (each holds up to part_size bytes)
    copy_threshold: int = MAX_SINGLE  # server-side copies above it go part by part

    @classmethod
    def from_mib(
        cls, *, threshold: int, part_size: int, concurrency: int, copy_threshold: int
    ) -> TransferSettings:
        return cls(
            multipart_threshold=threshold * MIB,
            part_size=part_size * MIB,
            concurrency=concurrency,
            copy_threshold=copy_threshold * MIB,
        )


@dataclass(frozen=True, kw_only=True)
class Part:
    """Bytes `start` to `start + length - 1` of an object; `number` counts from 1 (S3's)."""

    number: int
    start: int
    length: int

    @property
    def index(self) -> int:
        return self.number - 1

    @property
    def byte_range(self) -> str:
        """The HTTP Range (and CopySourceRange) of the part."""
        return f"bytes={self.start}-{self.start + self.length - 1}"


def part_size_for(size: int, wanted: int) -> int:
    """`wanted`, or the smallest whole number of MiB that keeps `size` within MAX_PARTS."""
    needed = -(-size // MAX_PARTS)  # ceiling division
    if needed <= wanted:
        return wanted
    return -(-needed // MIB) * MIB


def cut(size: int, part_size: int) -> tuple[Part, ...]:
    """The parts of an object of `size` bytes (one empty part for an empty object)."""
    step = part_size_for(size, part_size)
    if size == 0:
        return (Part(number=1, start=0, length=0),)
    return tuple(
        Part(number=i + 1, start=start, length=min(step, size - start))
        for i, start in enumerate(range(0, size, step))
    )
