"""Reading a member's bytes within fixed memory: the ByteSource protocol, sources in memory,
and an exact inflater that never produces more than OUT_STEP bytes per call.

Memory bounds (issue 13: a 4.2 MB wheel declaring a 4 GiB member took 7 GiB): no inflate call
produces more than OUT_STEP, the exact prefix stops at PREFIX_LIMIT (later bytes are streamed
past and dropped), a tail keeps its first and last TAIL_KEEP bytes, and one read may ask for at
most READ_LIMIT bytes (tensorflow's libtensorflow_cc.so.2 has an 82 MB string table).
"""

from __future__ import annotations

import zlib
from collections.abc import Iterator, Sequence
from typing import Protocol

OUT_STEP = 1 << 20
PREFIX_LIMIT = 48 << 20
TAIL_KEEP = 16 << 20
READ_LIMIT = 128 << 20


class MemberError(Exception):
    """The member cannot be read: corrupt deflate data, or a read past its end."""


class MemberTooLarge(MemberError):
    """A read asks for more bytes at once than relforge holds in memory (READ_LIMIT)."""


def check_length(length: int) -> None:
    """MemberTooLarge when one read asks for more than READ_LIMIT bytes."""
    if length > READ_LIMIT:
        raise MemberTooLarge(
            f"too large to inspect: a read of {length} bytes at once, over the limit of "
            f"{READ_LIMIT >> 20} MiB"
        )


def bounded(inflater: zlib._Decompress, data: bytes | memoryview) -> Iterator[bytes]:
    """Inflate `data` in pieces of at most OUT_STEP bytes (deflate expands up to 1032:1)."""
    while True:
        out = inflater.decompress(data, OUT_STEP)
        data = inflater.unconsumed_tail
        if out:
            yield out
        if not data and len(out) < OUT_STEP:
            return


class Cursor:
    """An exact inflater moving forward through the member (its output is not kept)."""

    def __init__(self, comp: memoryview) -> None:
        self.comp = comp
        self.inflater = zlib.decompressobj(-15)
        self.fed = 0  # compressed bytes handed to the inflater
        self.pending: bytes | memoryview = b""
        self.position = 0  # output bytes produced so far

    def copy(self) -> Cursor:
        twin = Cursor(self.comp)
        twin.inflater = self.inflater.copy()
        twin.fed, twin.pending, twin.position = self.fed, self.pending, self.position
        return twin

    def step(self) -> bytes:
        """At most OUT_STEP more bytes; MemberError at the end of the data or on corrupt data."""
        if not self.pending and self.inflater.eof:
            raise MemberError("compressed data ends before the member's size")
        if not self.pending:
            if self.fed >= len(self.comp):
                out = self._inflate(b"")
                if out:
                    return out
                raise MemberError("compressed data ends before the member's size")
            self.pending = self.comp[self.fed : self.fed + (1 << 18)]
            self.fed += len(self.pending)
        return self._inflate(self.pending)

    def _inflate(self, data: bytes | memoryview) -> bytes:
        try:
            out = self.inflater.decompress(data, OUT_STEP)
        except zlib.error as exc:
            raise MemberError(f"corrupt deflate data: {exc}") from None
        self.pending = self.inflater.unconsumed_tail
        self.position += len(out)
        return out


class ByteSource(Protocol):
    """Random-access reads of one file's bytes (a zip member, or bytes in memory)."""

    @property
    def size(self) -> int: ...

    def read(self, offset: int, length: int) -> bytes: ...

    def read_forward(self, offset: int, length: int) -> bytes:
        """`read`, for a reader walking forward through a region (a fat binary's entry
        headers): a deflated member is inflated exactly from where the last such read stopped,
        never from a searched block boundary (thousands of small reads would search as often)."""
        ...

    def set_interest(self, spans: Sequence[tuple[int, int]]) -> None: ...

    @property
    def guessed(self) -> bool:
        """Whether a read was served from bytes inflated after a searched deflate boundary
        (an exact read from the start could differ); False for bytes read exactly."""
        ...


class BytesSource:
    """A file already in memory (also: a stored, uncompressed zip member)."""

    def __init__(self, data: bytes | memoryview) -> None:
        self._data = data

    @property
    def size(self) -> int:
        return len(self._data)

    def read(self, offset: int, length: int) -> bytes:
        if offset < 0 or length < 0 or offset + length > len(self._data):
            raise MemberError(f"read of {length} bytes at {offset} is past the end ({self.size})")
        check_length(length)
        return bytes(self._data[offset : offset + length])

    def read_forward(self, offset: int, length: int) -> bytes:
        return self.read(offset, length)

    @property
    def guessed(self) -> bool:
        return False  # every byte is read exactly

    def set_interest(self, spans: Sequence[tuple[int, int]]) -> None:
        """Nothing to do: every byte is at hand."""
