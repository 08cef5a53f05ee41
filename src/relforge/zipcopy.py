"""Rewrite a zip archive — rename members, replace a few — copying every other member's
compressed bytes as they are.

zipfile can only decompress and recompress, which takes ~21 s for a 190 MB torch wheel; copying
the compressed bytes (runs of untouched members in one `copy_file_range`) takes well under 1 s
(benchmarks/bench_strip_local.py).  Reading the directory is left to zipfile; writing the local
headers, central directory and end records (with ZIP64 when needed) is done here.
"""

from __future__ import annotations

import hashlib
import os
import queue
import struct
import threading
import zipfile
import zlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from relforge.errors import RelforgeError

_LOCAL = struct.Struct("<IHHHHHIIIHH")
_CENTRAL = struct.Struct("<IHHHHHHIIIHHHHHII")
_EOCD = struct.Struct("<IHHHHIIH")
_EOCD64 = struct.Struct("<IQHHIIQQQQ")
_LOCATOR64 = struct.Struct("<IIQI")
_LOCAL_SIG, _CENTRAL_SIG, _EOCD_SIG = 0x04034B50, 0x02014B50, 0x06054B50
_EOCD64_SIG, _LOCATOR64_SIG = 0x06064B50, 0x07064B50
_MAX32, _MAX16 = 0xFFFFFFFF, 0xFFFF
_DESCRIPTOR_FLAG, _UTF8_FLAG, _ENCRYPTED_FLAG = 0x8, 0x800, 0x1


@dataclass(frozen=True, kw_only=True)
class _Central:
    """What the central directory says about one member of the new archive."""

    name: bytes
    info: zipfile.ZipInfo
    flags: int
    method: int
    crc: int
    csize: int
    usize: int
    offset: int


def rewrite_zip(
    src: Path,
    dst: Path,
    *,
    rename: Callable[[str], str],
    replace: Mapping[str, bytes],
    add: Mapping[str, bytes] | None = None,
    add_before: str = "",
) -> str:
    """Write `src` to `dst` with each member named `rename(name)`; members named (by their old
    name) in `replace` get that content, deflated; all others keep their compressed bytes.
    `add` holds new members (new name → content), written just before the member `add_before`
    (e.g. RECORD, which stays last) and dated like it.
    Returns the sha256 of `dst`, computed on a second thread while the kernel copies."""
    with zipfile.ZipFile(src) as zf:
        infos = sorted(zf.infolist(), key=lambda i: i.header_offset)
    if add and not any(i.filename == add_before for i in infos):
        raise RelforgeError(f"{src.name}: no member {add_before} to add new members before")
    with src.open("rb") as fin, dst.open("wb") as fout:
        hasher = _Hasher(fin.fileno())
        writer = _Writer(fin.fileno(), fout.fileno(), hasher)
        try:
            entries = []
            for info in infos:
                if add and info.filename == add_before:
                    entries += [writer.member(info, name, data) for name, data in add.items()]
                entries.append(
                    writer.member(info, rename(info.filename), replace.get(info.filename))
                )
            writer.flush_run()
            writer.finish(entries)
        finally:
            digest = hasher.close()
    return digest


class _Hasher:
    """sha256 of the output, fed in output order: bytes written, and source ranges copied
    (read back from the source; hashlib releases the GIL, so this overlaps the copy)."""

    def __init__(self, fin: int) -> None:
        self.fin = fin
        self.queue: queue.SimpleQueue[bytes | tuple[int, int] | None] = queue.SimpleQueue()
        self.digest = hashlib.sha256()
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        try:
            while (item := self.queue.get()) is not None:
                if isinstance(item, bytes):
                    self.digest.update(item)
                    continue
                offset, count = item
                while count > 0:
                    block = os.pread(self.fin, min(count, 1 << 22), offset)
                    if not block:
                        raise RelforgeError(f"the archive ends early (at byte {offset})")
                    self.digest.update(block)
                    offset += len(block)
                    count -= len(block)
        except BaseException as exc:  # reported by close()
            self.error = exc

    def close(self) -> str:
        self.queue.put(None)
        self.thread.join()
        if self.error is not None:
            raise self.error
        return self.digest.hexdigest()


class _Writer:
    def __init__(self, fin: int, fout: int, hasher: _Hasher) -> None:
        self.fin, self.fout, self.hasher = fin, fout, hasher
        self.pos = 0
        self.run: tuple[int, int] | None = None  # a pending verbatim source range [start, end)

    def member(self, info: zipfile.ZipInfo, new_name: str, content: bytes | None) -> _Central:
        if info.flag_bits & _ENCRYPTED_FLAG:
            raise RelforgeError(f"{info.filename}: encrypted zip members are not supported")
        header = os.pread(self.fin, _LOCAL.size, info.header_offset)
        fields = _LOCAL.unpack(header)
        if fields[0] != _LOCAL_SIG:
            raise RelforgeError(f"{info.filename}: no local header at {info.header_offset}")
        data_start = info.header_offset + _LOCAL.size + fields[9] + fields[10]
        flags = info.flag_bits
        if content is None and new_name == info.filename and not flags & _DESCRIPTOR_FLAG:
            name = os.pread(self.fin, fields[9], info.header_offset + _LOCAL.size)
            # untouched: local header and data go over as they are
            start, end = info.header_offset, data_start + info.compress_size
            offset = self._verbatim(start, end)
            return _Central(
                name=name,
                info=info,
                flags=flags,
                method=info.compress_type,
                crc=info.CRC,
                csize=info.compress_size,
                usize=info.file_size,
                offset=offset,
            )
        self.flush_run()
        name = _encode(new_name)
        flags = (flags & ~_DESCRIPTOR_FLAG & ~_UTF8_FLAG) | (
            _UTF8_FLAG if not new_name.isascii() else 0
        )
        if content is None:
            method, crc, csize, usize = (
                info.compress_type,
                info.CRC,
                info.compress_size,
                info.file_size,
            )
            data: bytes | None = None
        else:
            packer = zlib.compressobj(zlib.Z_DEFAULT_COMPRESSION, zlib.DEFLATED, -15)
            data = packer.compress(content) + packer.flush()
            method, crc, csize, usize = (
                zipfile.ZIP_DEFLATED,
                zlib.crc32(content),
                len(data),
                len(content),
            )
            flags &= ~0x6  # deflate option bits of the old member no longer apply
        offset = self.pos
        zip64 = csize >= _MAX32 or usize >= _MAX32
        extra = _strip_zip64(
            os.pread(self.fin, fields[10], info.header_offset + _LOCAL.size + fields[9])
        )
        if zip64:
            extra = struct.pack("<HHQQ", 1, 16, usize, csize) + extra
        dostime, dosdate = _dos_time(info.date_time)
        self._write(
            _LOCAL.pack(
                _LOCAL_SIG,
                45 if zip64 else max(info.extract_version, 20),
                flags,
                method,
                dostime,
                dosdate,
                crc,
                _MAX32 if zip64 else csize,
                _MAX32 if zip64 else usize,
                len(name),
                len(extra),
            )
            + name
            + extra
        )
        if data is None:
            self._copy(data_start, csize)
        else:
            self._write(data)
        return _Central(
            name=name,
            info=info,
            flags=flags,
            method=method,
            crc=crc,
            csize=csize,
            usize=usize,
            offset=offset,
        )

    def finish(self, entries: list[_Central]) -> None:
        cd_start = self.pos
        chunks = []
        for e in entries:
            info = e.info
            big = (e.usize, e.csize, e.offset)
            zip64 = any(v >= _MAX32 for v in big)
            extra = _strip_zip64(info.extra)
            if zip64:
                extra = struct.pack("<HHQQQ", 1, 24, *big) + extra
            dostime, dosdate = _dos_time(info.date_time)
            comment = info.comment
            chunks.append(
                _CENTRAL.pack(
                    _CENTRAL_SIG,
                    (info.create_system << 8) | (45 if zip64 else info.create_version),
                    45 if zip64 else max(info.extract_version, 20),
                    e.flags,
                    e.method,
                    dostime,
                    dosdate,
                    e.crc,
                    _MAX32 if zip64 else e.csize,
                    _MAX32 if zip64 else e.usize,
                    len(e.name),
                    len(extra),
                    len(comment),
                    0,
                    info.internal_attr,
                    info.external_attr,
                    _MAX32 if zip64 else e.offset,
                )
                + e.name
                + extra
                + comment
            )
        directory = b"".join(chunks)
        self._write(directory)
        count, size = len(entries), len(directory)
        if count >= _MAX16 or size >= _MAX32 or cd_start >= _MAX32:
            eocd64 = self.pos
            self._write(
                _EOCD64.pack(
                    _EOCD64_SIG, _EOCD64.size - 12, 45, 45, 0, 0, count, count, size, cd_start
                )
                + _LOCATOR64.pack(_LOCATOR64_SIG, 0, eocd64, 1)
            )
            self._write(_EOCD.pack(_EOCD_SIG, 0, 0, _MAX16, _MAX16, _MAX32, _MAX32, 0))
        else:
            self._write(_EOCD.pack(_EOCD_SIG, 0, 0, count, count, size, cd_start, 0))

    def _verbatim(self, start: int, end: int) -> int:
        """Queue a source range to copy; returns where it starts in the output."""
        if self.run is not None and self.run[1] == start:
            offset = self.pos + (self.run[1] - self.run[0])
            self.run = (self.run[0], end)
            return offset
        self.flush_run()
        self.run = (start, end)
        return self.pos

    def flush_run(self) -> None:
        if self.run is not None:
            start, end = self.run
            self.run = None
            self._copy(start, end - start)

    def _copy(self, offset: int, count: int) -> None:
        self.hasher.queue.put((offset, count))
        self.pos += count
        while count > 0:
            try:
                done = os.copy_file_range(self.fin, self.fout, count, offset)
            except OSError:  # a file system or kernel without it: plain reads and writes
                done = os.write(self.fout, os.pread(self.fin, min(count, 1 << 22), offset))
            if done <= 0:
                raise RelforgeError(f"the archive ends early (at byte {offset})")
            offset += done
            count -= done

    def _write(self, data: bytes) -> None:
        self.hasher.queue.put(data)
        view = memoryview(data)
        while view:
            view = view[os.write(self.fout, view) :]
        self.pos += len(data)


def _encode(name: str) -> bytes:
    return name.encode("ascii") if name.isascii() else name.encode("utf-8")


def _strip_zip64(extra: bytes) -> bytes:
    """Extra fields without ZIP64 records (they are written fresh when needed)."""
    out, i = [], 0
    while i + 4 <= len(extra):
        tag, size = struct.unpack_from("<HH", extra, i)
        if tag != 1:
            out.append(extra[i : i + 4 + size])
        i += 4 + size
    return b"".join(out)


def _dos_time(date_time: tuple[int, int, int, int, int, int]) -> tuple[int, int]:
    y, mo, d, h, mi, s = date_time
    return (h << 11) | (mi << 5) | (s // 2), ((y - 1980) << 9) | (mo << 5) | d
