"""A Mach-O reader (macOS binaries, thin or universal) that reads only headers and load commands.

Layouts are those of Apple's public <mach-o/loader.h> and <mach-o/fat.h>:

- a thin file starts with a mach_header (28 bytes: magic, cputype, cpusubtype, filetype, ncmds,
  sizeofcmds, flags) or a mach_header_64 (32 bytes: the same and a reserved word), in the byte
  order its magic says: MH_MAGIC 0xFEEDFACE / MH_MAGIC_64 0xFEEDFACF read as written,
  MH_CIGAM / MH_CIGAM_64 (the same bytes reversed) byte-swapped.  Its load commands follow the
  header: `ncmds` records of (cmd, cmdsize, …) filling at most `sizeofcmds` bytes.
- a universal ("fat") file starts with a big-endian fat_header (magic, nfat_arch) and
  `nfat_arch` records: fat_arch (FAT_MAGIC 0xCAFEBABE: cputype, cpusubtype, offset, size, align:
  20 bytes) or fat_arch_64 (FAT_MAGIC_64 0xCAFEBABF: offset and size 64-bit, then align and a
  reserved word: 32 bytes); each names a thin slice by its offset and size.
- strings in load commands (lc_str) are an offset from the start of their command to a
  NUL-terminated string inside it; versions are packed as X.Y.Z in nibbles xxxx.yy.zz
  (11.0 is 0x000B0000).

Every count and offset is checked against the file before it is used: a hostile file ends in
MachOError naming what is wrong and where, after at most MAX_FAT_ARCHES slices of at most
MAX_COMMANDS load commands each, and no read is larger than MAX_COMMANDS_SIZE.  Errors of the
ByteSource itself (corrupt deflate data in a zip member) pass through as MemberError, as they do
from read_elf.
"""

from __future__ import annotations

import itertools
import re
import struct
from dataclasses import dataclass
from typing import Literal

from relforge.validate.binaries import MACHO_CPUS
from relforge.validate.streams import ByteSource

LC_REQ_DYLD = 0x80000000
LC_LOAD_DYLIB = 0xC
LC_ID_DYLIB = 0xD
LC_LOAD_WEAK_DYLIB = 0x18 | LC_REQ_DYLD
LC_RPATH = 0x1C | LC_REQ_DYLD
LC_CODE_SIGNATURE = 0x1D
LC_REEXPORT_DYLIB = 0x1F | LC_REQ_DYLD
LC_LAZY_LOAD_DYLIB = 0x20
LC_LOAD_UPWARD_DYLIB = 0x23 | LC_REQ_DYLD
LC_VERSION_MIN_MACOSX = 0x24
LC_VERSION_MIN_IPHONEOS = 0x25
LC_VERSION_MIN_TVOS = 0x2F
LC_VERSION_MIN_WATCHOS = 0x30
LC_BUILD_VERSION = 0x32
PLATFORM_MACOS = 1
CPU_TYPE_ARM64 = 0x0100000C
CPU_SUBTYPE_ARM64E = 2
CPU_SUBTYPE_MASK = 0xFF000000  # capability bits of cpusubtype (pointer authentication ABI, …)

MAX_FAT_ARCHES = 30  # more "architectures" is a Java class file (same magic, then its version)
MAX_COMMANDS = 1 << 16
MAX_COMMANDS_SIZE = 16 << 20  # real libraries' load commands take a few KiB
SLICE_INTEREST = 1 << 20  # bytes of each slice's start a zip member's tail pass keeps

_THIN = {  # the first four bytes as written → (byte order, bits)
    b"\xce\xfa\xed\xfe": ("<", 32),  # MH_MAGIC written little-endian
    b"\xcf\xfa\xed\xfe": ("<", 64),  # MH_MAGIC_64 written little-endian
    b"\xfe\xed\xfa\xce": (">", 32),  # MH_CIGAM as read by a little-endian host
    b"\xfe\xed\xfa\xcf": (">", 64),  # MH_CIGAM_64
}
_FAT = {b"\xca\xfe\xba\xbe": 20, b"\xca\xfe\xba\xbf": 32}  # → size of one fat_arch record
_HEADER_SIZE = {32: 28, 64: 32}
_EXTRA_CPUS = {0x0200000C: "arm64_32", 18: "ppc", 0x01000012: "ppc64"}
FILETYPES = {1: "object", 2: "execute", 3: "fvmlib", 4: "core", 5: "preload", 6: "dylib",
             7: "dylinker", 8: "bundle", 9: "dylib_stub", 10: "dsym", 11: "kext_bundle",
             12: "fileset"}  # fmt: skip
PLATFORMS = {1: "macos", 2: "ios", 3: "tvos", 4: "watchos", 5: "bridgeos", 6: "maccatalyst",
             7: "iossimulator", 8: "tvossimulator", 9: "watchossimulator", 10: "driverkit",
             11: "visionos", 12: "visionossimulator"}  # fmt: skip
_VERSION_MIN_PLATFORMS = {
    LC_VERSION_MIN_MACOSX: "macos",
    LC_VERSION_MIN_IPHONEOS: "ios",
    LC_VERSION_MIN_TVOS: "tvos",
    LC_VERSION_MIN_WATCHOS: "watchos",
}

DylibKind = Literal["load", "weak", "reexport", "lazy", "upward"]
DYLIB_KINDS: dict[int, DylibKind] = {
    LC_LOAD_DYLIB: "load",
    LC_LOAD_WEAK_DYLIB: "weak",
    LC_REEXPORT_DYLIB: "reexport",
    LC_LAZY_LOAD_DYLIB: "lazy",
    LC_LOAD_UPWARD_DYLIB: "upward",
}
COMMAND_NAMES = {LC_LOAD_DYLIB: "LC_LOAD_DYLIB", LC_ID_DYLIB: "LC_ID_DYLIB",
                 LC_LOAD_WEAK_DYLIB: "LC_LOAD_WEAK_DYLIB", LC_RPATH: "LC_RPATH",
                 LC_CODE_SIGNATURE: "LC_CODE_SIGNATURE", LC_REEXPORT_DYLIB: "LC_REEXPORT_DYLIB",
                 LC_LAZY_LOAD_DYLIB: "LC_LAZY_LOAD_DYLIB",
                 LC_LOAD_UPWARD_DYLIB: "LC_LOAD_UPWARD_DYLIB",
                 LC_VERSION_MIN_MACOSX: "LC_VERSION_MIN_MACOSX",
                 LC_VERSION_MIN_IPHONEOS: "LC_VERSION_MIN_IPHONEOS",
                 LC_VERSION_MIN_TVOS: "LC_VERSION_MIN_TVOS",
                 LC_VERSION_MIN_WATCHOS: "LC_VERSION_MIN_WATCHOS",
                 LC_BUILD_VERSION: "LC_BUILD_VERSION"}  # fmt: skip
# Size of the fixed part of the commands read here (a string may follow it, never precede it).
_FIXED = {LC_ID_DYLIB: 24, LC_RPATH: 12, LC_CODE_SIGNATURE: 16, LC_BUILD_VERSION: 24}
_FIXED |= dict.fromkeys(DYLIB_KINDS, 24) | dict.fromkeys(_VERSION_MIN_PLATFORMS, 16)


class MachOError(Exception):
    """Not a well-formed Mach-O file (the message says what is wrong and where)."""


@dataclass(frozen=True)
class Dylib:
    """A library a slice links: its install name as recorded, and how it is linked."""

    path: str
    kind: DylibKind = "load"


@dataclass(frozen=True, kw_only=True)
class MachOSlice:
    """One architecture's binary: a thin file, or one slice of a universal file."""

    arch: str  # relforge naming: aarch64, x86_64, i686, …; arm64e for arm64 with pointer auth
    cputype: int  # unsigned, as the header holds it (arm64: 0x0100000C)
    cpusubtype: int = 0
    filetype: str  # dylib, bundle, execute, object, …
    platform: str | None = None  # macos, ios, maccatalyst, … (LC_BUILD_VERSION/_VERSION_MIN_*)
    minos: str | None = None  # minimum macOS, "11.0", "10.9" (None: no macOS version recorded)
    sdk: str | None = None  # the macOS SDK it was built with (None: not recorded, or 0)
    install_name: str | None = None  # LC_ID_DYLIB
    dylibs: tuple[Dylib, ...] = ()
    rpaths: tuple[str, ...] = ()
    signed: bool = False  # has LC_CODE_SIGNATURE (arm64 binaries must be, ad hoc at least)


@dataclass(frozen=True)
class MachOInfo:
    """A Mach-O file: its slices in the order the file lists them."""

    slices: tuple[MachOSlice, ...]
    fat: bool  # a universal file (even one holding a single slice)

    @property
    def arches(self) -> tuple[str, ...]:
        return tuple(s.arch for s in self.slices)


def macos_version(text: str) -> tuple[int, int, int]:
    """(major, minor, patch) of "11.0", "10.9.2" or a wheel tag's "10_13", for comparisons."""
    if not re.fullmatch(r"\d+(?:[._]\d+){0,2}", text):
        raise ValueError(f"not a macOS version: {text!r}")
    parts = [int(p) for p in re.split(r"[._]", text)]
    major, minor, patch = [*parts, 0, 0][:3]
    return major, minor, patch


def format_version(packed: int) -> str:
    """A version packed as xxxx.yy.zz → "11.0", "10.9.2" (the patch only when it is not 0)."""
    major, minor, patch = packed >> 16, (packed >> 8) & 0xFF, packed & 0xFF
    return f"{major}.{minor}.{patch}" if patch else f"{major}.{minor}"


def arch_name(cputype: int, cpusubtype: int = 0) -> str:
    """relforge's name for a Mach-O cputype (binaries.MACHO_CPUS), arm64e for pointer auth."""
    cputype &= 0xFFFFFFFF
    if cputype == CPU_TYPE_ARM64 and cpusubtype & ~CPU_SUBTYPE_MASK == CPU_SUBTYPE_ARM64E:
        return "arm64e"
    name = MACHO_CPUS.get(cputype) or _EXTRA_CPUS.get(cputype)
    return name or f"macho-{cputype:#x}"


def read_macho(src: ByteSource) -> MachOInfo:
    """The slices of a thin or universal Mach-O file, from their headers and load commands
    only; raises MachOError on a malformed file."""
    if src.size < 4:
        raise MachOError(f"too short for a Mach-O header ({src.size} bytes)")
    magic = src.read(0, 4)
    if magic in _FAT:
        return _read_fat(src, _FAT[magic])
    if magic in _THIN:
        return MachOInfo(slices=(_read_slice(src, 0, src.size, "", None),), fat=False)
    raise MachOError(f"no Mach-O magic (the file starts with {magic.hex()})")


def _read_fat(src: ByteSource, record: int) -> MachOInfo:
    kind = "fat_arch" if record == 20 else "fat_arch_64"
    if src.size < 8:
        raise MachOError(f"universal header: too short ({src.size} bytes of 8)")
    (count,) = struct.unpack(">I", src.read(4, 4))
    if count == 0:
        raise MachOError("universal header: nfat_arch is 0 (no architectures)")
    if count > MAX_FAT_ARCHES:
        raise MachOError(
            f"universal header: nfat_arch {count} is more than {MAX_FAT_ARCHES} architectures; "
            "not Mach-O (a Java class file starts with the same magic 0xCAFEBABE)"
        )
    table_end = 8 + count * record
    if table_end > src.size:
        raise MachOError(
            f"universal header: {count} {kind} records of {record} bytes end at {table_end}, "
            f"past the end of the file ({src.size} bytes)"
        )
    table = src.read(8, count * record)
    spans: list[tuple[int, int, int, int, int]] = []  # (offset, size, index, cputype, subtype)
    for index in range(count):
        if record == 20:
            cputype, subtype, offset, size, _ = struct.unpack_from(">IIIII", table, index * 20)
        else:
            cputype, subtype, offset, size, _, _ = struct.unpack_from(">IIQQII", table, index * 32)
        where = f"slice {index} ({arch_name(cputype, subtype)}, {kind} at {8 + index * record})"
        if offset < table_end:
            raise MachOError(
                f"{where}: offset {offset} lies inside the universal header (which ends at "
                f"{table_end})"
            )
        if offset + size > src.size:
            raise MachOError(
                f"{where}: {size} bytes at offset {offset} run past the end of the file "
                f"({src.size} bytes)"
            )
        spans.append((offset, size, index, cputype, subtype))
    ordered = sorted(spans)
    for first, second in itertools.pairwise(ordered):
        if first[0] + first[1] > second[0]:
            raise MachOError(
                f"slices {first[2]} and {second[2]} overlap: {first[1]} bytes at {first[0]} "
                f"and {second[1]} bytes at {second[0]}"
            )
    src.set_interest([(offset, min(size, SLICE_INTEREST)) for offset, size, *_ in ordered])
    slices: dict[int, MachOSlice] = {}
    for offset, size, index, cputype, subtype in ordered:  # in file order: reads move forward
        where = f"slice {index} ({arch_name(cputype, subtype)}) at offset {offset}: "
        slices[index] = _read_slice(src, offset, offset + size, where, cputype)
    return MachOInfo(slices=tuple(slices[i] for i in range(count)), fat=True)


def _read_slice(
    src: ByteSource, base: int, limit: int, where: str, fat_cputype: int | None
) -> MachOSlice:
    size = limit - base
    head = src.read(base, min(size, 32))
    if head[:4] in _FAT:
        raise MachOError(f"{where}is itself a universal file (nested fat header)")
    if len(head) < 4 or head[:4] not in _THIN:
        raise MachOError(f"{where}no Mach-O magic (starts with {head[:4].hex() or 'nothing'})")
    endian, bits = _THIN[head[:4]]
    header_size = _HEADER_SIZE[bits]
    if size < header_size:
        raise MachOError(
            f"{where}{size} bytes are too short for a {bits}-bit Mach-O header ({header_size})"
        )
    cputype, subtype, filetype, ncmds, sizeofcmds, _ = struct.unpack_from(endian + "6I", head, 4)
    if fat_cputype is not None and cputype != fat_cputype:
        raise MachOError(
            f"{where}the header's cputype {cputype:#x} differs from the universal header's "
            f"{fat_cputype:#x}"
        )
    if ncmds > MAX_COMMANDS:
        raise MachOError(f"{where}ncmds {ncmds} is more than {MAX_COMMANDS} load commands")
    if ncmds * 8 > sizeofcmds:
        raise MachOError(
            f"{where}ncmds {ncmds} load commands cannot fit in sizeofcmds {sizeofcmds} bytes "
            "(each takes at least 8)"
        )
    if sizeofcmds > MAX_COMMANDS_SIZE:
        raise MachOError(
            f"{where}sizeofcmds {sizeofcmds} is more than {MAX_COMMANDS_SIZE >> 20} MiB of "
            "load commands"
        )
    if header_size + sizeofcmds > size:
        raise MachOError(
            f"{where}sizeofcmds {sizeofcmds} runs past the end of the "
            f"{'slice' if where else 'file'} ({size} bytes, header {header_size})"
        )
    commands = _Commands(endian, size)
    data = memoryview(src.read(base + header_size, sizeofcmds))
    position = 0
    for number in range(ncmds):
        at = base + header_size + position
        if position + 8 > sizeofcmds:
            raise MachOError(
                f"{where}load command {number} at offset {at}: its header runs past the end of "
                f"the load commands (sizeofcmds {sizeofcmds})"
            )
        cmd, cmdsize = struct.unpack_from(endian + "II", data, position)
        label = f"{where}load command {number} ({_command_name(cmd)}) at offset {at}"
        least = _FIXED.get(cmd, 8)  # 0 would walk the same command forever
        if cmdsize < least:
            raise MachOError(
                f"{label}: cmdsize {cmdsize} is smaller than the command's fixed part "
                f"({least} bytes)"
            )
        if cmdsize % 4:  # loader.h asks 64-bit files for multiples of 8 (ld64 and LLVM check);
            # dyld checks only cmdsize >= 8 and the bounds, so a 4-aligned one loads: accepted
            raise MachOError(f"{label}: cmdsize {cmdsize} is not a multiple of 4")
        if position + cmdsize > sizeofcmds:
            raise MachOError(
                f"{label}: cmdsize {cmdsize} runs past the end of the load commands "
                f"(sizeofcmds {sizeofcmds}, {sizeofcmds - position} bytes left)"
            )
        commands.add(cmd, data[position : position + cmdsize], label)
        position += cmdsize
    return MachOSlice(
        arch=arch_name(cputype, subtype),
        cputype=cputype,
        cpusubtype=subtype,
        filetype=FILETYPES.get(filetype, f"filetype-{filetype}"),
        platform=commands.platform(),
        minos=commands.minos,
        sdk=commands.sdk,
        install_name=commands.install_name,
        dylibs=tuple(commands.dylibs),
        rpaths=tuple(commands.rpaths),
        signed=commands.signed,
    )


def _command_name(cmd: int) -> str:
    return COMMAND_NAMES.get(cmd, f"cmd {cmd:#x}")


class _Commands:
    """What the load commands of one slice say, gathered as they are walked."""

    def __init__(self, endian: str, size: int) -> None:
        self.endian = endian
        self.size = size  # of the slice (or the thin file)
        self.install_name: str | None = None
        self.dylibs: list[Dylib] = []
        self.rpaths: list[str] = []
        self.signed = False
        self.minos: str | None = None
        self.sdk: str | None = None
        self.build_platform: str | None = None  # the first LC_BUILD_VERSION's
        self.min_platform: str | None = None  # the first LC_VERSION_MIN_*'s
        self.from_build = False  # minos/sdk came from LC_BUILD_VERSION (it wins)

    def platform(self) -> str | None:
        if self.minos is not None:  # a macOS version was recorded (either way)
            return "macos"
        return self.build_platform or self.min_platform

    def add(self, cmd: int, body: memoryview, label: str) -> None:
        e = self.endian
        if cmd in DYLIB_KINDS:
            self.dylibs.append(Dylib(self._string(body, 8, cmd, label), DYLIB_KINDS[cmd]))
        elif cmd == LC_ID_DYLIB:
            name = self._string(body, 8, cmd, label)
            self.install_name = self.install_name if self.install_name is not None else name
        elif cmd == LC_RPATH:
            self.rpaths.append(self._string(body, 8, cmd, label))
        elif cmd == LC_CODE_SIGNATURE:  # its data are not read, only checked to be there
            dataoff, datasize = struct.unpack_from(e + "II", body, 8)
            if dataoff + datasize > self.size:
                raise MachOError(
                    f"{label}: the signature's {datasize} bytes at {dataoff} run past the end "
                    f"of the binary ({self.size} bytes): truncated?"
                )
            self.signed = True
        elif cmd == LC_BUILD_VERSION:
            platform, minos, sdk, ntools = struct.unpack_from(e + "IIII", body, 8)
            if 24 + ntools * 8 > len(body):
                raise MachOError(
                    f"{label}: {ntools} build tool records of 8 bytes do not fit in cmdsize "
                    f"{len(body)}"
                )
            self.build_platform = self.build_platform or PLATFORMS.get(
                platform, f"platform-{platform}"
            )
            if platform == PLATFORM_MACOS and not self.from_build:
                self.minos, self.sdk = _versions(minos, sdk)
                self.from_build = True
        elif cmd in _VERSION_MIN_PLATFORMS:
            self.min_platform = self.min_platform or _VERSION_MIN_PLATFORMS[cmd]
            if cmd == LC_VERSION_MIN_MACOSX and self.minos is None:
                version, sdk = struct.unpack_from(e + "II", body, 8)
                self.minos, self.sdk = _versions(version, sdk)

    def _string(self, body: memoryview, field: int, cmd: int, label: str) -> str:
        """The lc_str whose offset is at `field` of the command: inside it, NUL-terminated."""
        (offset,) = struct.unpack_from(self.endian + "I", body, field)
        fixed = _FIXED[cmd]
        if not fixed <= offset < len(body):
            raise MachOError(
                f"{label}: string offset {offset} lies outside the command's string area "
                f"({fixed}..{len(body)})"
            )
        raw = bytes(body[offset:])
        end = raw.find(b"\0")
        if end < 0:
            raise MachOError(f"{label}: the string at {offset} has no NUL before the command ends")
        return raw[:end].decode("utf-8", "backslashreplace")


def _versions(minos: int, sdk: int) -> tuple[str, str | None]:
    return format_version(minos), format_version(sdk) if sdk else None
