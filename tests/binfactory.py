"""Binaries of other operating systems written byte by byte from their formats' public layouts
(no macOS or Windows toolchain here): Mach-O files (<mach-o/loader.h>, <mach-o/fat.h>) and PE
images (Microsoft's PE format specification), for the readers' tests and the archive and wheel
tests that need a believable macOS or Windows binary."""

from __future__ import annotations

import struct
from collections.abc import Sequence
from dataclasses import dataclass

# --- Mach-O -----------------------------------------------------------------------------------

ARM64, X86_64, I386, PPC = 0x0100000C, 0x01000007, 7, 18
CPU_SUBTYPE_ARM64E = 2
MH_OBJECT, MH_EXECUTE, MH_DYLIB, MH_BUNDLE = 1, 2, 6, 8
LC_REQ_DYLD = 0x80000000
LC_SEGMENT_64, LC_UUID = 0x19, 0x1B
LC_LOAD_DYLIB, LC_ID_DYLIB = 0xC, 0xD
LC_LOAD_WEAK_DYLIB = 0x18 | LC_REQ_DYLD
LC_RPATH = 0x1C | LC_REQ_DYLD
LC_CODE_SIGNATURE = 0x1D
LC_REEXPORT_DYLIB = 0x1F | LC_REQ_DYLD
LC_LAZY_LOAD_DYLIB = 0x20
LC_LOAD_UPWARD_DYLIB = 0x23 | LC_REQ_DYLD
LC_VERSION_MIN_MACOSX = 0x24
LC_BUILD_VERSION = 0x32
PLATFORM_MACOS, PLATFORM_IOS = 1, 2
V11_0, V10_9, V10_13, SDK_14_5 = 0x000B0000, 0x000A0900, 0x000A0D00, 0x000E0500
SIGNATURE = 64


def command(cmd: int, body: bytes, *, e: str = "<", align: int = 8) -> bytes:
    """A load command: (cmd, cmdsize) then `body`, padded with zeros to `align`."""
    size = 8 + len(body)
    padded = size + -size % align
    return struct.pack(e + "II", cmd, padded) + body + bytes(padded - size)


def dylib_command(
    cmd: int, path: str | bytes, *, e: str = "<", align: int = 8, name_offset: int = 24
) -> bytes:
    """dylib_command: name (lc_str), timestamp, current_version, compatibility_version."""
    body = struct.pack(e + "IIII", name_offset, 2, 0x00010300, 0x00010000)
    raw = path.encode() if isinstance(path, str) else path
    return command(cmd, body + raw + b"\0", e=e, align=align)


def rpath_command(path: str, *, e: str = "<", align: int = 8) -> bytes:
    return command(LC_RPATH, struct.pack(e + "I", 12) + path.encode() + b"\0", e=e, align=align)


def build_version(
    platform: int, minos: int, sdk: int, *, ntools: int = 1, e: str = "<", align: int = 8
) -> bytes:
    tools = struct.pack(e + "II", 3, 0x03F80000) * ntools  # TOOL_LD 1016.0
    body = struct.pack(e + "IIII", platform, minos, sdk, ntools) + tools
    return command(LC_BUILD_VERSION, body, e=e, align=align)


def version_min_macosx(version: int, sdk: int, *, e: str = "<") -> bytes:
    return command(LC_VERSION_MIN_MACOSX, struct.pack(e + "II", version, sdk), e=e, align=4)


def code_signature(dataoff: int, datasize: int, *, e: str = "<") -> bytes:
    return command(LC_CODE_SIGNATURE, struct.pack(e + "II", dataoff, datasize), e=e)


def macho(
    cputype: int,
    commands: Sequence[bytes],
    *,
    filetype: int = MH_DYLIB,
    bits: int = 64,
    e: str = "<",
    cpusubtype: int = 0,
    ncmds: int | None = None,
    sizeofcmds: int | None = None,
    payload: bytes = b"",
) -> bytes:
    """A thin file: mach_header(_64), the load commands, then `payload` (the segments)."""
    cmds = b"".join(commands)
    magic = 0xFEEDFACF if bits == 64 else 0xFEEDFACE
    header = struct.pack(
        e + "7I",
        magic,
        cputype,
        cpusubtype,
        filetype,
        len(commands) if ncmds is None else ncmds,
        len(cmds) if sizeofcmds is None else sizeofcmds,
        0x00200085,  # MH_NOUNDEFS | MH_DYLDLINK | MH_TWOLEVEL | MH_PIE
    )
    reserved = struct.pack(e + "I", 0) if bits == 64 else b""
    return header + reserved + cmds + payload


def fat(slices: Sequence[tuple[int, int, bytes]], *, wide: bool = False, align: int = 12) -> bytes:
    """A universal file of (cputype, cpusubtype, slice) with fat_arch (or fat_arch_64) records;
    each slice starts at a multiple of 2**align."""
    record = 32 if wide else 20
    step = 1 << align
    table_end = 8 + record * len(slices)
    offset = table_end + -table_end % step
    records, body = b"", b""
    for cputype, cpusubtype, data in slices:
        if wide:
            records += struct.pack(">IIQQII", cputype, cpusubtype, offset, len(data), align, 0)
        else:
            records += struct.pack(">IIIII", cputype, cpusubtype, offset, len(data), align)
        gap = -len(data) % step
        body += data + bytes(gap)
        offset += len(data) + gap
    header = struct.pack(">II", 0xCAFEBABF if wide else 0xCAFEBABE, len(slices)) + records
    return header + bytes(-len(header) % step) + body


def demo_dylib(cputype: int = ARM64, *, e: str = "<", cpusubtype: int = 0) -> bytes:
    """What clang/ld64 write for a small arm64 library: minos 11.0, an install name, libraries
    loaded, weakly loaded and re-exported, an rpath and an (ad hoc) code signature, whose data
    are the last SIGNATURE bytes of the file."""
    commands = [
        command(LC_SEGMENT_64, bytes(64), e=e),  # not read: skipped by its cmdsize
        command(LC_UUID, bytes(range(16)), e=e),
        build_version(PLATFORM_MACOS, V11_0, SDK_14_5, e=e),
        dylib_command(LC_ID_DYLIB, "@rpath/libdemo.1.dylib", e=e),
        dylib_command(LC_LOAD_DYLIB, "@rpath/libfoo.2.dylib", e=e),
        dylib_command(LC_LOAD_WEAK_DYLIB, "/System/Library/Frameworks/Metal.framework/Metal", e=e),
        dylib_command(LC_REEXPORT_DYLIB, "@loader_path/libbar.dylib", e=e),
        dylib_command(LC_LOAD_DYLIB, "/usr/lib/libSystem.B.dylib", e=e),
        rpath_command("@loader_path/../lib", e=e),
    ]
    text = b"\xcc" * 256  # the segments' contents, never read
    signature_at = 32 + sum(map(len, commands)) + 16 + len(text)
    commands.append(code_signature(signature_at, SIGNATURE, e=e))
    payload = text + b"\xfa\xde\x0c\xc0" + bytes(SIGNATURE - 4)  # CSMAGIC_EMBEDDED_SIGNATURE
    return macho(cputype, commands, e=e, cpusubtype=cpusubtype, payload=payload)


def x86_64_bundle() -> bytes:
    """An x86_64 extension module for macOS 10.13 the way ld64 writes one: LC_VERSION_MIN_MACOSX
    (below 10.14 there is no LC_BUILD_VERSION), no code signature."""
    return macho(
        X86_64,
        [
            version_min_macosx(V10_13, SDK_14_5),
            dylib_command(LC_LOAD_DYLIB, "/usr/lib/libSystem.B.dylib"),
        ],
        filetype=MH_BUNDLE,
        cpusubtype=3,  # CPU_SUBTYPE_X86_64_ALL, as in its fat_arch record
    )


def universal2(*, wide: bool = False, align: int = 12) -> bytes:
    return fat([(X86_64, 3, x86_64_bundle()), (ARM64, 0, demo_dylib())], wide=wide, align=align)


# --- PE ---------------------------------------------------------------------------------------

AMD64, PE_ARM64, PE_I386 = 0x8664, 0xAA64, 0x14C
LFANEW = 0x40
OPTIONAL_AT = LFANEW + 4 + 20
SECTION_RVA, SECTION_AT = 0x1000, 0x200
IMAGE_BASE = {True: 0x180000000, False: 0x10000000}
IMPORTS = ("KERNEL32.dll", "python312.dll", "vcruntime140.dll")
DELAY = ("foo.dll",)


@dataclass(frozen=True)
class Built:
    """A PE image written here, and where its parts are (file offsets, RVAs)."""

    data: bytes
    plus: bool
    section_header_at: int
    delay_at: int  # file offset of the delay-load descriptors
    extra_rva: int  # RVA of the bytes passed as `extra` (the section's last bytes)

    def directory_at(self, index: int) -> int:
        return OPTIONAL_AT + (112 if self.plus else 96) + 8 * index


def build_pe(
    *,
    machine: int = AMD64,
    plus: bool = True,
    imports: Sequence[str] = IMPORTS,
    delay: Sequence[str] = DELAY,
    delay_va: bool = False,
    dll: bool = True,
    subsystem: int = 2,
    directories: int = 16,
    extra: bytes = b"",
) -> Built:
    """A minimal PE32/PE32+ image with one section holding the import directory (with lookup and
    address tables), the delay-load directory, the DLL names, then `extra`."""
    word = 8 if plus else 4
    base = IMAGE_BASE[plus]
    imports_size = 20 * (len(imports) + 1)
    delay_at = imports_size
    delay_size = 32 * (len(delay) + 1) if delay else 0
    thunks_at = delay_at + delay_size
    # per import: a lookup table and an address table of two entries each (ordinal 1, end);
    # per delay import: a module handle slot, a name table and an address table
    per_import, per_delay = 4 * word, 5 * word
    names_at = thunks_at + per_import * len(imports) + per_delay * len(delay)
    names = b""
    name_rvas = []
    for name in (*imports, *delay):
        name_rvas.append(SECTION_RVA + names_at + len(names))
        names += name.encode() + b"\0"
    body = bytearray(names_at) + names
    extra_rva = SECTION_RVA + len(body)
    body += extra
    ordinal = (1 << (8 * word - 1)) | 1
    entry = "<Q" if plus else "<I"
    for i in range(len(imports)):
        lookup = thunks_at + per_import * i
        struct.pack_into(entry, body, lookup, ordinal)
        struct.pack_into(entry, body, lookup + 2 * word, ordinal)
        struct.pack_into(
            "<IIIII", body, 20 * i, SECTION_RVA + lookup, 0, 0, name_rvas[i],
            SECTION_RVA + lookup + 2 * word,
        )  # fmt: skip
    for i in range(len(delay)):
        slots = thunks_at + per_import * len(imports) + per_delay * i
        struct.pack_into(entry, body, slots + word, ordinal)
        struct.pack_into(entry, body, slots + 3 * word, ordinal)
        name_rva = name_rvas[len(imports) + i]
        struct.pack_into(
            "<IIIIIIII", body, delay_at + 32 * i, 0 if delay_va else 1,
            name_rva + base if delay_va else name_rva, SECTION_RVA + slots,
            SECTION_RVA + slots + 3 * word, SECTION_RVA + slots + word, 0, 0, 0,
        )  # fmt: skip
    raw_size = -(-len(body) // 0x200) * 0x200
    optional_size = (112 if plus else 96) + 8 * directories
    header = bytearray(SECTION_AT)
    header[:2] = b"MZ"
    struct.pack_into("<I", header, 0x3C, LFANEW)
    characteristics = 0x0002 | (0x2000 if dll else 0) | (0x0020 if plus else 0x0100)
    struct.pack_into(
        "<4sHHIIIHH", header, LFANEW, b"PE\0\0", machine, 1, 0, 0, 0, optional_size,
        characteristics,
    )  # fmt: skip
    struct.pack_into("<H", header, OPTIONAL_AT, 0x20B if plus else 0x10B)
    struct.pack_into("<Q" if plus else "<I", header, OPTIONAL_AT + (24 if plus else 28), base)
    struct.pack_into("<II", header, OPTIONAL_AT + 32, 0x1000, 0x200)  # section/file alignment
    size_of_image = SECTION_RVA + -(-len(body) // 0x1000) * 0x1000
    struct.pack_into("<II", header, OPTIONAL_AT + 56, size_of_image, SECTION_AT)
    struct.pack_into("<H", header, OPTIONAL_AT + 68, subsystem)
    directories_at = OPTIONAL_AT + (112 if plus else 96)
    struct.pack_into("<I", header, directories_at - 4, directories)
    if directories > 1:
        struct.pack_into("<II", header, directories_at + 8, SECTION_RVA, imports_size)
    if delay and directories > 13:
        struct.pack_into("<II", header, directories_at + 8 * 13, SECTION_RVA + delay_at, 32)
    section_header_at = OPTIONAL_AT + optional_size
    struct.pack_into(
        "<8sIIII", header, section_header_at, b".idata", len(body), SECTION_RVA, raw_size,
        SECTION_AT,
    )  # fmt: skip
    data = bytes(header) + bytes(body) + bytes(raw_size - len(body))
    return Built(data, plus, section_header_at, SECTION_AT + delay_at, extra_rva)


# --- believable binaries for wheel and archive tests ------------------------------------------


def plain_dylib(cputype: int) -> bytes:
    """A small macOS 11.0 library loading only libSystem, signed (ad hoc)."""
    commands = [
        build_version(PLATFORM_MACOS, V11_0, SDK_14_5),
        dylib_command(LC_ID_DYLIB, "@rpath/libdemo.dylib"),
        dylib_command(LC_LOAD_DYLIB, "/usr/lib/libSystem.B.dylib"),
    ]
    text = b"\xcc" * 64
    signature_at = 32 + sum(map(len, commands)) + 16 + len(text)
    commands.append(code_signature(signature_at, SIGNATURE))
    payload = text + b"\xfa\xde\x0c\xc0" + bytes(SIGNATURE - 4)
    return macho(cputype, commands, payload=payload)


def plain_macho(*cpus: int) -> bytes:
    """`plain_dylib` thin for one CPU, universal (fat_arch records) for more."""
    if len(cpus) == 1:
        return plain_dylib(cpus[0])
    return fat([(cpu, 0, plain_dylib(cpu)) for cpu in cpus])


def plain_pe(machine: int, header_at: int = LFANEW) -> bytes:
    """A DLL for `machine` importing only KERNEL32.dll, its PE header at `header_at` (the MS-DOS
    stub's e_lfanew) and its section's raw data after the headers."""
    built = build_pe(machine=machine, plus=machine != PE_I386, imports=("KERNEL32.dll",), delay=())
    headers = built.data[LFANEW:SECTION_AT]
    raw_at = header_at + len(headers)
    raw_at += -raw_at % 0x200
    out = bytearray(raw_at)
    out[:2] = b"MZ"
    struct.pack_into("<I", out, 0x3C, header_at)
    out[header_at : header_at + len(headers)] = headers
    struct.pack_into("<I", out, header_at + built.section_header_at - LFANEW + 20, raw_at)
    struct.pack_into("<I", out, header_at + OPTIONAL_AT - LFANEW + 60, raw_at)  # SizeOfHeaders
    return bytes(out) + built.data[SECTION_AT:]
