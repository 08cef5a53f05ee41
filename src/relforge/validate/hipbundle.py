"""HIP offload bundles (`.hip_fatbin`): the gfx targets of each clang offload bundle, from its
entry table.

A `.hip_fatbin` section holds one bundle per translation unit, one after another, each padded
with zero bytes to the section's alignment (4096 is common).  A bundle is one of:

Uncompressed (clang-offload-bundler's binary format, every integer little-endian):

    0  24 bytes  magic "__CLANG_OFFLOAD_BUNDLE__"
    24 u64       number of entries
    32 per entry u64 offset (from the bundle's start), u64 size, u64 triple length, the triple

    A triple is `<kind>-<arch>-<vendor>-<os>-<env>[-<target id>]`:
    `hipv4-amdgcn-amd-amdhsa--gfx90a:xnack+`, `hip-amdgcn-amd-amdhsa--gfx942:sramecc+:xnack-`
    (older clang: `hip-amdgcn-amd-amdhsa-gfx906`), and the host's
    `host-x86_64-unknown-linux-gnu-`, which carries no device code and is skipped.  The entries'
    payloads follow the table; the bundle ends where its furthest entry ends.

Compressed (`clang-offload-bundler -compress`, `--offload-compress`; integers little-endian as
written by the x86-64 and AArch64 hosts clang runs on):

    0 "CCOB", u16 version, u16 method (llvm::compression::Format: 0 zlib, 1 zstd), then
    v1: u32 uncompressed size, u64 hash                       (20-byte header; read as running to
                                                              the section's end)
    v2: u32 total size, u32 uncompressed size, u64 hash       (24-byte header)
    v3: u64 total size, u64 uncompressed size, u64 hash       (32-byte header)

    The total size counts the header; the data after the header is one zlib stream or zstd frame
    holding an uncompressed bundle.  Only a bounded prefix of it is inflated (the entry table,
    never the payloads): at most MAX_TABLE bytes per bundle and MAX_INFLATED per section.

Anything malformed — no magic, an absurd count, a triple or entry past its bundle, a size that
does not advance, a table that will not fit MAX_TABLE — is a DeviceCodeError naming the offset
within the section; no payload is ever read.  The ELF's own byte order does not matter: the
bundle formats are little-endian.
"""

from __future__ import annotations

import importlib
import struct
import zlib
from typing import Any

from relforge.validate.devicecode import DeviceCodeError, DeviceImage, Section
from relforge.validate.streams import ByteSource

MAGIC = b"__CLANG_OFFLOAD_BUNDLE__"
COMPRESSED_MAGIC = b"CCOB"
COUNT = struct.Struct("<Q")
ENTRY = struct.Struct("<QQQ")
COMMON = struct.Struct("<4sHH")
# version: the fields after COMMON (v2, v3: total size first, then the uncompressed size)
VERSIONS = {1: struct.Struct("<IQ"), 2: struct.Struct("<IIQ"), 3: struct.Struct("<QQQ")}
METHODS = {0: "zlib", 1: "zstd"}  # llvm::compression::Format
# Real bundles list a host entry and one entry per offload arch (tens at most), with triples of
# about 40 bytes; an entry table past these is not believed.
MAX_ENTRIES = 1 << 12
MAX_TRIPLE = 1 << 12
MAX_TABLE = 1 << 20  # bytes of one bundle's header and entry table, read or inflated
MAX_INFLATED = 64 << 20  # bytes inflated for one section, over all its compressed bundles
# Bundles, entries and reads of padding in one section (a ROCm libtorch: thousands of bundles).
MAX_STEPS = 1 << 18
CHUNK = 1 << 16  # compressed bytes read at once; zero padding scanned at once
FIRST_READ = 1 << 10


def read_hip_fatbin(src: ByteSource, section: Section, endian: str) -> list[DeviceImage]:
    """The device entries of every bundle in the section (in file order, host entries left
    out); DeviceCodeError on anything malformed."""
    walk = _Walk(src, section)
    at, end = section.offset, section.offset + section.size
    while at < end:
        walk.step()
        head = src.read_forward(at, min(len(MAGIC), end - at))
        if head == MAGIC:
            at += walk.plain(at)
        elif head[: len(COMPRESSED_MAGIC)] == COMPRESSED_MAGIC:
            at += walk.compressed(at)
        elif head[0] == 0:
            chunk = src.read_forward(at, min(CHUNK, end - at))
            at += len(chunk) - len(chunk.lstrip(b"\x00"))  # padding between or after bundles
        else:
            raise DeviceCodeError(f"no offload bundle magic at {at - section.offset:#x}")
    return walk.images


class _Walk:
    """One section's walk: the images found so far and the budgets it spends."""

    def __init__(self, src: ByteSource, section: Section) -> None:
        self.src = src
        self.section = section
        self.images: list[DeviceImage] = []
        self.steps = 0
        self.inflated = 0

    def step(self) -> None:
        self.steps += 1
        if self.steps > MAX_STEPS:
            raise DeviceCodeError(f"more than {MAX_STEPS} bundles, entries and gaps: not believed")

    def plain(self, at: int) -> int:
        """Read the uncompressed bundle at `at`; its length in the section."""
        end = self.section.offset + self.section.size
        where = f"the bundle at {at - self.section.offset:#x}"
        bound = f"the section's end ({end - at} bytes left)"
        table = _Table(where, end - at, bound, _Stored(self.src, at, end - at))
        return self._bundle(table, "")

    def compressed(self, at: int) -> int:
        """Read the compressed bundle at `at`; its length in the section."""
        end = self.section.offset + self.section.size
        where = f"the compressed bundle at {at - self.section.offset:#x}"
        if at + COMMON.size > end:
            raise DeviceCodeError(f"{where} is cut off by the section's end")
        _, version, method = COMMON.unpack(self.src.read_forward(at, COMMON.size))
        sizes = VERSIONS.get(version)
        if sizes is None:
            raise DeviceCodeError(f"{where} is of unknown version {version}")
        header = COMMON.size + sizes.size
        if at + header > end:
            raise DeviceCodeError(f"{where} is cut off by the section's end")
        fields = sizes.unpack(self.src.read_forward(at + COMMON.size, sizes.size))
        if version == 1:
            total, uncompressed = end - at, fields[0]  # v1 bundles run to the end
        else:
            total, uncompressed = fields[0], fields[1]
            if total <= header:
                raise DeviceCodeError(
                    f"{where} claims a total size of {total} bytes, no more than its "
                    f"{header}-byte header"
                )
            if at + total > end:
                raise DeviceCodeError(
                    f"{where} claims {total} bytes, past the section's end ({end - at} bytes left)"
                )
        name = METHODS.get(method)
        if name is None:
            raise DeviceCodeError(f"{where} uses unknown compression method {method}")
        data = _Inflated(self, where, name, at + header, at + total)
        bound = f"its uncompressed size ({uncompressed} bytes)"
        self._bundle(_Table(where, uncompressed, bound, data), name)
        return total

    def _bundle(self, table: _Table, compressed: str) -> int:
        """Add the bundle's device entries to the images; the bundle's length (its table's end
        or its furthest entry's end, whichever is further)."""
        if table.read(0, len(MAGIC)) != MAGIC:
            raise DeviceCodeError(f"{table.where} holds no offload bundle magic")
        (count,) = COUNT.unpack(table.read(len(MAGIC), COUNT.size))
        if count > MAX_ENTRIES:
            raise DeviceCodeError(f"{table.where} claims {count} entries: not believed")
        pos = len(MAGIC) + COUNT.size
        entries: list[tuple[int, int, int, bytes]] = []
        for index in range(count):
            self.step()
            offset, size, length = ENTRY.unpack(table.read(pos, ENTRY.size))
            if length == 0 or length > MAX_TRIPLE:
                raise DeviceCodeError(
                    f"entry {index} of {table.where} has a triple of {length} bytes"
                )
            triple = table.read(pos + ENTRY.size, length)
            pos += ENTRY.size + length
            entries.append((index, offset, size, triple))
        furthest = pos
        for index, offset, size, triple in entries:
            where = f"entry {index} of {table.where}"
            if offset + size > table.limit:
                raise DeviceCodeError(
                    f"{where} claims {size} bytes at {offset:#x}, past {table.bound}"
                )
            if size and offset < pos:
                raise DeviceCodeError(f"{where} starts at {offset:#x}, inside the entry table")
            furthest = max(furthest, offset + size)
            arch = _device_arch(triple, where)
            if arch is not None:
                self.images.append(
                    DeviceImage(
                        kind="gfx",
                        arch=arch,
                        size=size,
                        section=self.section.name,
                        compressed=compressed,
                    )
                )
        return furthest


def _device_arch(triple: bytes, where: str) -> str | None:
    """The target ID a device entry's triple names (None: the host's entry)."""
    try:
        text = triple.decode("ascii")
    except UnicodeDecodeError:
        raise DeviceCodeError(f"{where} has a triple that is not text: {triple[:64]!r}") from None
    parts = text.split("-", 5)
    if len(parts) < 2 or not text.isprintable():
        raise DeviceCodeError(f"{where} has a malformed triple {text[:64]!r}")
    if parts[0] == "host":
        return None
    if len(parts) == 6 and parts[5]:
        return parts[5]  # <kind>-<arch>-<vendor>-<os>-<env>-<target id>
    if len(parts) == 5 and parts[4].startswith("gfx"):
        return parts[4]  # older clang: hip-amdgcn-amd-amdhsa-gfx906
    return parts[1]  # no target ID: the triple's arch (amdgcn, spirv64)


class _Table:
    """Reads within the first MAX_TABLE bytes of one bundle of `limit` bytes (`bound` says
    what limits it)."""

    def __init__(self, where: str, limit: int, bound: str, data: _Stored | _Inflated) -> None:
        self.where = where
        self.limit = limit
        self.bound = bound
        self.data = data

    def read(self, offset: int, length: int) -> bytes:
        need = offset + length
        if need > self.limit:
            raise DeviceCodeError(f"the entry table of {self.where} runs past {self.bound}")
        if need > MAX_TABLE:
            raise DeviceCodeError(
                f"the entry table of {self.where} runs past {MAX_TABLE >> 20} MiB: not believed"
            )
        have = self.data.grow(min(max(need, 2 * self.data.size, FIRST_READ), self.limit, MAX_TABLE))
        if len(have) < need:
            raise DeviceCodeError(
                f"{self.where} decompresses to {len(have)} bytes, fewer than its entry table "
                f"needs ({need})"
            )
        return bytes(have[offset:need])


class _Stored:
    """A bundle's first bytes, read from the section as they are."""

    def __init__(self, src: ByteSource, at: int, limit: int) -> None:
        self.src = src
        self.at = at
        self.limit = limit
        self.buf = bytearray()

    @property
    def size(self) -> int:
        return len(self.buf)

    def grow(self, want: int) -> bytearray:
        want = min(want, self.limit)
        if want > len(self.buf):
            self.buf += self.src.read_forward(self.at + len(self.buf), want - len(self.buf))
        return self.buf


class _Inflated:
    """A compressed bundle's first bytes, inflated on demand from compressed data read CHUNK
    bytes at a time (never the whole stream, never more output than asked for)."""

    def __init__(self, walk: _Walk, where: str, method: str, start: int, stop: int) -> None:
        self.walk = walk
        self.where = where
        self.buf = bytearray()
        self.reader: Any = None
        self.inflater: Any = None
        self.pending = b""
        self.chunks = _Chunks(walk.src, start, stop)
        self.error: type[Exception] = zlib.error
        if method == "zlib":
            self.inflater = zlib.decompressobj()
            return
        try:
            zstandard: Any = importlib.import_module("zstandard")
        except ImportError:
            raise DeviceCodeError(
                f"a zstd-compressed offload bundle: {where} cannot be read without the "
                f"zstandard package"
            ) from None
        self.error = zstandard.ZstdError
        self.reader = zstandard.ZstdDecompressor().stream_reader(self.chunks, read_size=CHUNK)

    @property
    def size(self) -> int:
        return len(self.buf)

    def grow(self, want: int) -> bytearray:
        while len(self.buf) < want:
            ask = want - len(self.buf)
            if self.walk.inflated + ask > MAX_INFLATED:
                raise DeviceCodeError(
                    f"more than {MAX_INFLATED >> 20} MiB of entry tables inflated in one "
                    f"section: not believed (at {self.where})"
                )
            out = self._zlib(ask) if self.inflater is not None else self._zstd(ask)
            if not out:
                break  # the stream ended: _Table says what is missing
            self.buf += out
            self.walk.inflated += len(out)
        return self.buf

    def _zlib(self, ask: int) -> bytes:
        # Each turn consumes input or returns output, so it ends within the compressed bytes.
        while not self.inflater.eof:
            if not self.pending:
                self.pending = self.chunks.read(CHUNK)
            try:
                out: bytes = self.inflater.decompress(self.pending, ask)
            except zlib.error as exc:
                raise DeviceCodeError(f"{self.where}: corrupt zlib data ({exc})") from None
            consumed = len(self.pending) - len(self.inflater.unconsumed_tail)
            self.pending = self.inflater.unconsumed_tail
            if out:
                return out
            if not consumed and self.pending:
                raise DeviceCodeError(f"{self.where}: the zlib stream makes no progress")
            if not consumed and self.chunks.done:
                raise DeviceCodeError(f"{self.where}: the zlib stream is cut off")
        return b""

    def _zstd(self, ask: int) -> bytes:
        try:
            return bytes(self.reader.read(ask))
        except self.error as exc:
            raise DeviceCodeError(f"{self.where}: corrupt zstd data ({exc})") from None


class _Chunks:
    """The compressed bytes of one bundle as a stream (what zstandard's stream_reader reads)."""

    def __init__(self, src: ByteSource, start: int, stop: int) -> None:
        self.src = src
        self.at = start
        self.stop = stop

    @property
    def done(self) -> bool:
        return self.at >= self.stop

    def read(self, size: int = -1) -> bytes:
        length = min(CHUNK if size < 0 else size, CHUNK, self.stop - self.at)
        if length <= 0:
            return b""
        data = self.src.read_forward(self.at, length)
        self.at += length
        return data
