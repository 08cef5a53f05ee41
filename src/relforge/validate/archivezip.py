"""A native archive (libtorch-style zip) read in place, with the wheel reader's member access.

`NativeArchive` is a `WheelArchive` without the wheel file name and .dist-info: the zip is
memory-mapped the same way and members come out through the same bounded sources (`source`,
`head`, `chunks`, `elf_members`, `special_members`), so every ELF member is read exactly as a
wheel's is.  Its .dist-info methods do not apply and are never called on it.
"""

from __future__ import annotations

import struct
import zipfile
import zlib
from pathlib import Path

from relforge.validate.inflate import MemberError
from relforge.validate.wheelreader import Member, WheelArchive


class ArchiveError(Exception):
    """The file is not a readable zip archive."""


class NativeArchive(WheelArchive):
    """An open native archive.  Use as a context manager; sources it hands out die with it."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._read_zip(path, ArchiveError)

    def intact(self, member: Member) -> str | None:
        """Why the member's bytes are not what its entry declares (size, CRC-32), if they are
        not; inflation stops at the first byte past the declared size."""
        local = self._local_name(member)
        if local is None:
            return f"{member.name}: no local file header at offset {member.header_offset}"
        if local != member.name:
            return (
                f"{member.name}: its local header names it {local!r} (tools that read local "
                "headers would unpack it there)"
            )
        if member.method not in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED):
            return f"{member.name}: compression method {member.method} (only stored and deflate)"
        crc, size = 0, 0
        try:
            for chunk in self.chunks(member):
                size += len(chunk)
                if size > member.size:
                    return f"{member.name} inflates past the {member.size} bytes the zip declares"
                crc = zlib.crc32(chunk, crc)
        except MemberError as exc:
            return str(exc)
        if size != member.size:
            return f"{member.name} inflates to {size} bytes, the zip declares {member.size}"
        if crc != self.crcs.get(member.name, crc):
            return f"{member.name}: CRC-32 {crc:08x}, the zip declares {self.crcs[member.name]:08x}"
        return None

    def _local_name(self, member: Member) -> str | None:
        """The name the member's local file header carries (decoded as the zip module does)."""
        at = member.header_offset
        if at + 30 > len(self._view) or bytes(self._view[at : at + 4]) != b"PK\x03\x04":
            return None
        flags, name_len = (
            struct.unpack_from("<H", self._view, at + 6)[0],
            struct.unpack_from("<H", self._view, at + 26)[0],
        )
        raw = bytes(self._view[at + 30 : at + 30 + name_len])
        return raw.decode("utf-8" if flags & 0x800 else "cp437", "replace")

    def overlapping(self) -> list[str]:
        """Members whose entries share one local header (one stored body, unpacked twice or
        more: the classic overlapping-entry zip bomb)."""
        first: dict[int, str] = {}
        found = []
        for member in self.members.values():
            other = first.setdefault(member.header_offset, member.name)
            if other != member.name:
                found.append(f"{member.name} shares its data with {other}")
        return found

    def __enter__(self) -> NativeArchive:
        return self
