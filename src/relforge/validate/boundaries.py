"""Finding deflate block boundaries in the middle of a member's compressed data (see inflate.py):
candidate positions, a cheap plausibility test, and comparing two inflations byte by byte."""

from __future__ import annotations

import re
import zlib
from collections.abc import Iterator

WINDOW = 32768
ZEROS = bytes(WINDOW)
LEN_NLEN = re.compile(b"(?=\xff\xff)")  # in LEN xor NLEN: a stored block's length pair
# First byte of a byte-aligned, non-final dynamic-Huffman block: BFINAL=0, BTYPE=10, HLIT<=29.
_DYNAMIC_HEADER = re.compile(
    b"[" + b"".join(re.escape(bytes([b])) for b in range(256) if b & 7 == 4 and b >> 3 <= 29) + b"]"
)


def differing_span(a: bytes, b: bytes) -> tuple[int, int]:
    """First and one-past-last position where two equally long byte strings differ."""
    diff = (int.from_bytes(a, "little") ^ int.from_bytes(b, "little")).to_bytes(len(a), "little")
    return len(diff) - len(diff.lstrip(b"\x00")), len(diff.rstrip(b"\x00"))


def candidates(comp: memoryview, lowest: int, highest: int) -> Iterator[tuple[int, bytes]]:
    """Plausible block starts, nearest `highest` first: (compressed position, bytes to prepend).

    Byte-aligned dynamic-Huffman headers start at their own byte; a stored block is found by its
    LEN/NLEN pair and entered through a one-byte stored-block header of our own (its real
    header bits share a byte with the previous block's end).  Each is tried on a few KiB first.
    """
    window = 256 << 10
    hi = highest
    while hi > lowest:
        lo = max(lowest, hi - window)
        chunk = bytes(comp[lo : min(len(comp), hi + 8192)])
        span = hi - lo
        found = [(lo + m.start(), b"") for m in _DYNAMIC_HEADER.finditer(chunk, 0, span)]
        if span > 4:
            xor = (
                int.from_bytes(chunk[0 : span - 2], "little")
                ^ int.from_bytes(chunk[2:span], "little")
            ).to_bytes(span - 2, "little")
            found += [(lo + m.start(), b"\x00") for m in LEN_NLEN.finditer(xor) if m.start()]
            found.sort(reverse=True)
        else:
            found.reverse()
        for pos, lead in found:
            rel = pos - lo
            if plausible(lead + chunk[rel : rel + 4096]):
                yield pos, lead
        hi = lo


def plausible(data: bytes) -> bool:
    quick = zlib.decompressobj(-15)
    try:
        quick.decompress(data[:32])
    except zlib.error as exc:
        if "too far back" not in str(exc):
            return False
    check = zlib.decompressobj(-15, zdict=ZEROS)
    try:
        check.decompress(data)
    except zlib.error:
        return False
    return True
