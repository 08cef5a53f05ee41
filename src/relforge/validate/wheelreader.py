"""A wheel read in place: the zip directory, METADATA/WHEEL/RECORD, and members as byte sources.

Nothing is extracted to disk.  The archive is memory-mapped; small members are inflated whole,
large ones through `relforge.validate.inflate.DeflateSource` so ELF checks read only a part.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import mmap
import re
import stat
import struct
import zipfile
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from email.message import Message
from pathlib import Path
from types import TracebackType

from packaging.tags import Tag
from packaging.utils import (
    InvalidWheelFilename,
    NormalizedName,
    parse_wheel_filename,
)
from packaging.version import Version

from relforge.record import record_digest
from relforge.validate.binaries import binary_format
from relforge.validate.inflate import (
    ByteSource,
    BytesSource,
    DeflateSource,
    MemberError,
    bounded,
)
from relforge.wheelformat import (
    METADATA,
    RECORD,
    WHEEL,
    RecordRow,
    WheelError,
    dist_info_dir,
    parse_headers,
    parse_record,
)

# Members with these endings are never ELF files; everything else is sniffed for the magic.
NOT_ELF = (
    ".py", ".pyi", ".pyc", ".h", ".hpp", ".hh", ".cuh", ".inl", ".txt", ".md", ".json", ".yaml",
    ".yml", ".toml", ".typed", ".cmake", ".rst", ".html", ".css", ".js", ".cpp", ".c", ".cu",
    "/METADATA", "/RECORD", "/WHEEL", "/LICENSE", ".pxd", ".pyx", ".ini", ".cfg", ".csv",
)  # fmt: skip


_FILE_TYPES = {
    stat.S_IFLNK: "symlink",
    stat.S_IFDIR: "directory",
    stat.S_IFCHR: "character device",
    stat.S_IFBLK: "block device",
    stat.S_IFIFO: "fifo",
    stat.S_IFSOCK: "socket",
}


_SHARED_OBJECT = re.compile(r".+\.so(\.\d+)*")  # libfoo.so, libfoo.so.1.2, _core.cpython-….so


def is_shared_object_name(name: str) -> bool:
    return _SHARED_OBJECT.fullmatch(name.rsplit("/", 1)[-1]) is not None


@dataclass(frozen=True)
class Member:
    name: str
    size: int
    compressed_size: int
    method: int
    header_offset: int
    mode: int = 0  # st_mode from the zip entry's external attributes (0: none recorded)

    @property
    def file_type(self) -> str | None:
        """None for a regular file (or no type recorded), else `symlink`, `directory`, …"""
        kind = stat.S_IFMT(self.mode)
        if kind in (0, stat.S_IFREG):
            return None
        return _FILE_TYPES.get(kind, f"file type {kind:#o}")


class WheelArchive:
    """An open wheel.  Use as a context manager; sources it hands out die with it."""

    _binaries: dict[str, list[Member]] | None = None  # binary_members(), once read

    def __init__(self, path: Path) -> None:
        self.path = path
        try:
            self.name, self.version, self.build, self.tags = parse_wheel_filename(path.name)
        except InvalidWheelFilename as exc:
            raise WheelError(f"{path.name}: not a wheel file name ({exc})") from None
        self._read_zip(path, WheelError)

    def _read_zip(self, path: Path, error: Callable[[str], Exception]) -> None:
        """Map the file and read its central directory: the members (by name, last entry wins),
        the names listed twice, the directory entries and each member's declared CRC-32;
        `error` makes the exception for a file that cannot be opened or is not a zip."""
        try:
            self._fh = path.open("rb")
        except OSError as exc:
            raise error(f"{path}: {exc.strerror}") from None
        try:
            self._map = mmap.mmap(self._fh.fileno(), 0, access=mmap.ACCESS_READ)
            with zipfile.ZipFile(self._fh) as zf:
                infos = zf.infolist()
        except (OSError, ValueError, zipfile.BadZipFile) as exc:
            self._fh.close()
            raise error(f"{path.name}: not a zip archive ({exc})") from None
        self._view = memoryview(self._map)
        self.members: dict[str, Member] = {}
        self.duplicates: list[str] = []  # names the central directory lists more than once
        self.directories: list[str] = []
        self.crcs: dict[str, int] = {}  # CRC-32 the zip declares for each member
        for info in infos:
            if info.is_dir():
                self.directories.append(info.filename)
                continue
            if info.filename in self.members:
                self.duplicates.append(info.filename)
            self.members[info.filename] = Member(
                info.filename,
                info.file_size,
                info.compress_size,
                info.compress_type,
                info.header_offset,
                info.external_attr >> 16,
            )
            self.crcs[info.filename] = info.CRC
        self.size = path.stat().st_size

    def __enter__(self) -> WheelArchive:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def close(self) -> None:
        self._view.release()
        with contextlib.suppress(BufferError):  # a source still holds a view of the map
            self._map.close()
        self._fh.close()

    # -- members ------------------------------------------------------------------------------

    def _compressed(self, member: Member) -> memoryview:
        at = member.header_offset
        if bytes(self._view[at : at + 4]) != b"PK\x03\x04" or at + 30 > len(self._view):
            raise MemberError(f"{member.name}: no local file header at {at}")
        name_len, extra_len = struct.unpack_from("<HH", self._view, at + 26)
        start = at + 30 + name_len + extra_len
        return self._view[start : start + member.compressed_size]

    def source(self, member: Member, *, exact: bool = False) -> ByteSource:
        """Random-access reads of a member's bytes (`exact`: never from a searched boundary)."""
        data = self._compressed(member)
        if member.method == zipfile.ZIP_STORED:
            return BytesSource(data)
        if member.method != zipfile.ZIP_DEFLATED:
            raise MemberError(f"{member.name}: compression method {member.method} not supported")
        return DeflateSource(data, member.size, exact=exact)

    def head(self, member: Member, length: int) -> bytes:
        """The first bytes of a member, inflating only those."""
        data = self._compressed(member)
        if member.method == zipfile.ZIP_STORED:
            return bytes(data[:length])
        inflater = zlib.decompressobj(-15)
        try:
            return inflater.decompress(data[: max(4096, length * 2)], length)
        except zlib.error:
            return b""

    def read(self, name: str) -> bytes:
        member = self.members.get(name)
        if member is None:
            raise WheelError(f"{self.path.name}: no member {name}")
        try:
            return self.source(member).read(0, member.size)
        except MemberError as exc:
            raise WheelError(f"{self.path.name}: {name}: {exc}") from None

    def chunks(self, member: Member, size: int = 1 << 20) -> Iterator[bytes]:
        """The member's bytes in order (for hashing); raises MemberError on corrupt data."""
        data = self._compressed(member)
        if member.method == zipfile.ZIP_STORED:
            for at in range(0, len(data), size):
                yield bytes(data[at : at + size])
            return
        inflater = zlib.decompressobj(-15)
        for at in range(0, len(data), size):
            try:
                yield from bounded(inflater, data[at : at + size])
            except zlib.error as exc:
                raise MemberError(f"{member.name}: corrupt deflate data: {exc}") from None

    def digest(self, member: Member) -> tuple[str, int]:
        """RECORD-style sha256 (urlsafe base64, no padding) and size of a member's bytes."""
        sha = hashlib.sha256()
        size = 0
        for chunk in self.chunks(member):
            sha.update(chunk)
            size += len(chunk)
        return record_digest(sha.digest()), size

    # -- .dist-info ---------------------------------------------------------------------------

    @functools.cached_property
    def dist_info(self) -> str:
        """The one `<name>-<version>.dist-info` directory."""
        return dist_info_dir(self.members, self.path.name)

    def metadata(self) -> tuple[Message, tuple[str, ...]]:
        """METADATA's headers (str values) and what is wrong with its encoding, if anything."""
        name = f"{self.dist_info}/{METADATA}"
        return parse_headers(self.read(name), name)

    def wheel_file(self) -> tuple[Message, tuple[str, ...]]:
        """WHEEL's headers and what is wrong with its encoding, if anything."""
        name = f"{self.dist_info}/{WHEEL}"
        return parse_headers(self.read(name), name)

    def record(self) -> list[RecordRow]:
        """RECORD's rows (undecodable bytes replaced); WheelError when it cannot be read."""
        name = f"{self.dist_info}/{RECORD}"
        text = self.read(name).decode("utf-8", "replace")
        return parse_record(text, f"{self.path.name}: {name}")

    def special_members(self) -> list[tuple[str, str, str]]:
        """(path, file type, symlink target) of members that are not regular files."""
        found = []
        for member in self.members.values():
            if member.file_type is None:
                continue
            target = ""
            if member.file_type == "symlink" and member.size <= 4096:
                target = self.head(member, member.size).decode("utf-8", "replace")
            found.append((member.name, member.file_type, target))
        return found

    def elf_members(self) -> list[Member]:
        """Members that are ELF files, largest first."""
        return self.binary_members()["ELF"]

    def binary_members(self) -> dict[str, list[Member]]:
        """Members that are ELF, Mach-O (thin or universal) or PE files by their first bytes,
        each format's largest first."""
        if self._binaries is None:
            found: dict[str, list[Member]] = {"ELF": [], "Mach-O": [], "PE": []}
            for member in self.members.values():
                if member.size < 52 or member.name.endswith(NOT_ELF) or member.file_type:
                    continue
                kind = binary_format(self.head(member, 8))
                if kind is not None:
                    found[kind].append(member)
            self._binaries = {k: sorted(v, key=lambda m: -m.size) for k, v in found.items()}
        return self._binaries


def wheel_tags(path: Path) -> tuple[NormalizedName, Version, frozenset[Tag]]:
    """Name, version and tags from a wheel file name (no I/O)."""
    name, version, _, tags = parse_wheel_filename(path.name)
    return name, version, tags
