"""Which operating system and architecture a binary is for, from its first bytes: ELF (Linux),
PE/COFF (Windows DLLs and executables), Mach-O (macOS, thin or universal).

Field offsets are those of the formats' public specifications: the PE signature offset at 0x3C
of the MS-DOS stub and the COFF Machine after "PE\\0\\0"; Mach-O's magic and cputype, and the
big-endian fat header with its fat_arch (20 bytes) / fat_arch_64 (32 bytes) records.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from relforge.validate.elf import ELF_MAGIC, MACHINES

HEAD = 4096  # bytes read of each candidate member; enough for every header below but a PE's
PE_HEAD_LIMIT = 64 << 10  # a PE header further in than this is not believed

PE_MACHINES = {0x14C: "i686", 0x8664: "x86_64", 0xAA64: "aarch64", 0x1C4: "armv7l",
               0xA641: "aarch64"}  # fmt: skip  # 0xA641: ARM64EC, arm64 code callable from x64
MACHO_CPUS = {7: "i686", 0x01000007: "x86_64", 12: "armv7l", 0x0100000C: "aarch64"}
_MACHO_THIN = {0xFEEDFACE: "<", 0xFEEDFACF: "<", 0xCEFAEDFE: ">", 0xCFFAEDFE: ">"}
_FAT = {0xCAFEBABE: 20, 0xCAFEBABF: 32}
_FAT_MAX = 30  # more "architectures" is a Java class file (same magic, then its version)
ARCH_ALIASES = {"arm64": "aarch64", "amd64": "x86_64", "x64": "x86_64", "win32": "i686"}


@dataclass(frozen=True, kw_only=True)
class Binary:
    """A member recognised as a binary: its format and the architectures it holds code for."""

    path: str
    format: str  # ELF | PE | Mach-O
    arches: tuple[str, ...]


def normal_arch(arch: str) -> str:
    """A platform's arch as the formats name it (macOS/Windows `arm64` is `aarch64`)."""
    return ARCH_ALIASES.get(arch.lower(), arch.lower())


def pe_header_offset(head: bytes) -> int | None:
    """Where an MS-DOS stub says the PE header is (None: not an MZ file)."""
    if len(head) < 0x40 or head[:2] != b"MZ":
        return None
    return int.from_bytes(head[0x3C:0x40], "little")


def binary_format(head: bytes) -> str | None:
    """ "ELF", "Mach-O" (thin or universal) or "PE" by a file's first 8 bytes; None for anything
    else (a universal header counting more than 30 architectures is a Java class file).  An MZ
    file is a PE candidate: whether its PE header is believable needs more than 8 bytes."""
    if head[:4] == ELF_MAGIC:
        return "ELF"
    if len(head) < 8:
        return "PE" if head[:2] == b"MZ" else None
    (little,) = struct.unpack_from("<I", head, 0)
    magic, count = struct.unpack_from(">II", head, 0)
    if little in _MACHO_THIN or (magic in _FAT and 0 < count <= _FAT_MAX):
        return "Mach-O"
    return "PE" if head[:2] == b"MZ" else None


def identify(path: str, head: bytes) -> Binary | None:
    """The binary `head` (the member's first bytes) starts, or None when it is none of ours."""
    if head[:4] == ELF_MAGIC and len(head) >= 20:
        little = head[5] != 2
        (machine,) = struct.unpack_from("<H" if little else ">H", head, 18)
        return Binary(path=path, format="ELF", arches=(MACHINES.get(machine, f"elf-{machine}"),))
    offset = pe_header_offset(head)
    if offset is not None:
        if len(head) < offset + 6 or head[offset : offset + 4] != b"PE\0\0":
            return None  # an MS-DOS program, or a header beyond what was read
        (machine,) = struct.unpack_from("<H", head, offset + 4)
        return Binary(
            path=path, format="PE", arches=(PE_MACHINES.get(machine, f"pe-{machine:#x}"),)
        )
    if len(head) < 8:
        return None
    (magic,) = struct.unpack_from("<I", head, 0)
    if magic in _MACHO_THIN:
        (cpu,) = struct.unpack_from(f"{_MACHO_THIN[magic]}i", head, 4)
        return Binary(path=path, format="Mach-O", arches=(_cpu(cpu),))
    (magic, count) = struct.unpack_from(">II", head, 0)
    if magic in _FAT and 0 < count <= _FAT_MAX:
        size = _FAT[magic]
        if len(head) < 8 + count * size:
            return None
        arches = tuple(_cpu(struct.unpack_from(">i", head, 8 + i * size)[0]) for i in range(count))
        return Binary(path=path, format="Mach-O", arches=arches)
    return None


def _cpu(cpu: int) -> str:
    return MACHO_CPUS.get(cpu & 0xFFFFFFFF, f"macho-{cpu & 0xFFFFFFFF:#x}")
