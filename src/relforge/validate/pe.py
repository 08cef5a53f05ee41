"""A PE/COFF reader (Windows DLLs, .pyd extension modules) that asks a ByteSource for the headers,
the section table and the import tables only, with every count and length bounded.

Layout (Microsoft's PE format specification): the MS-DOS header's e_lfanew at 0x3C gives the
offset of "PE\\0\\0"; the 20-byte COFF header follows (Machine +0, NumberOfSections +2,
SizeOfOptionalHeader +16, Characteristics +18), then the optional header: Magic 0x10B (PE32) or
0x20B (PE32+); ImageBase at +28 (4 bytes) or +24 (8 bytes); Subsystem at +68;
NumberOfRvaAndSizes at +92 or +108, the data directories (8 bytes each: RVA, size) from +96 or
+112.  Directory 1 is the import table: 20-byte IMAGE_IMPORT_DESCRIPTORs (Name RVA at +12) up to
an all-zero one; directory 13 the delay-load table: 32-byte ImgDelayDescr (Attributes +0,
DllNameRVA +4) up to an all-zero one, whose name is an RVA when Attributes bit 0 is set and a VA
(ImageBase added) in files of the oldest linkers.  The section table (40-byte headers:
VirtualSize +8, VirtualAddress +12, SizeOfRawData +16, PointerToRawData +20) follows the
optional header and maps RVAs to file offsets.

Hostile input ends in PEError naming what and where; reads of a source that cannot inflate its
own bytes (MemberError: corrupt deflate data) are the member's fault and pass through.
"""

from __future__ import annotations

import re
import struct
from collections.abc import Sequence
from dataclasses import dataclass

from relforge.validate.binaries import PE_HEAD_LIMIT, PE_MACHINES, pe_header_offset
from relforge.validate.streams import ByteSource

MAX_SECTIONS = 96  # the specification's limit on NumberOfSections for images
MAX_DESCRIPTORS = 4096  # import descriptors read before a table without terminator is refused
MAX_NAME = 1024  # longest DLL name believed (a Windows path has at most 260: MAX_PATH)
DESCRIPTOR_CHUNK = 32  # descriptors asked of the source per read
COFF_HEADER = 20
SECTION_HEADER = 40
IMPORT_DESCRIPTOR = 20
DELAY_DESCRIPTOR = 32
PE32, PE32_PLUS = 0x10B, 0x20B
IMAGE_FILE_DLL = 0x2000
DIRECTORY_IMPORT, DIRECTORY_DELAY_IMPORT = 1, 13
DELAY_RVA_BASED = 1  # ImgDelayDescr.Attributes bit 0: DllNameRVA is an RVA (else a VA)


class PEError(Exception):
    """Not a well-formed PE image (the message says what is wrong and where)."""


@dataclass(frozen=True)
class PEInfo:
    """What the checks need of a DLL or .pyd: its machine and the DLLs it loads."""

    machine: str  # relforge naming: x86_64, aarch64, i686, armv7l, or pe-0x…
    machine_code: int  # the COFF Machine field
    dll: bool  # IMAGE_FILE_DLL in the COFF Characteristics
    pe32_plus: bool  # optional header magic 0x20B (64-bit images)
    imports: tuple[str, ...]  # DLL names of the import directory, in file order, as written
    delay_imports: tuple[str, ...]  # DLL names of the delay-load import directory
    subsystem: int  # the optional header's Subsystem (2: GUI, 3: console)


@dataclass(frozen=True)
class _Section:
    name: str
    rva: int
    size: int  # bytes of the section backed by the file
    offset: int  # PointerToRawData
    mapped: int  # bytes of the section in memory (the rest of it is zeros)


@dataclass(frozen=True)
class _Image:
    src: ByteSource
    sections: tuple[_Section, ...]
    image_base: int

    def locate(self, rva: int, what: str) -> tuple[int, int]:
        """(file offset of `rva`, bytes of its section readable from there)."""
        for s in self.sections:
            if s.rva <= rva < s.rva + s.size:
                offset = s.offset + rva - s.rva
                end = min(s.offset + s.size, self.src.size)
                if offset >= end:
                    raise PEError(
                        f"{what}: RVA {rva:#x} is at file offset {offset:#x} in section "
                        f"{s.name!r}, past the end of the file ({self.src.size} bytes)"
                    )
                return offset, end - offset
        for s in self.sections:
            if s.rva <= rva < s.rva + s.mapped:
                raise PEError(
                    f"{what}: RVA {rva:#x} is in the part of section {s.name!r} the file does not "
                    "hold (past its SizeOfRawData)"
                )
        raise PEError(f"{what}: RVA {rva:#x} is in no section")

    def name(self, rva: int, what: str) -> str:
        """The NUL-terminated ASCII string at `rva`."""
        offset, available = self.locate(rva, what)
        data = _read(self.src, offset, min(available, MAX_NAME + 1), what)
        end = data.find(b"\0")
        if end < 0:
            if available > MAX_NAME:
                raise PEError(
                    f"{what}: the name at RVA {rva:#x} (file offset {offset:#x}) has no NUL "
                    f"within {MAX_NAME} bytes"
                )
            raise PEError(
                f"{what}: the name at RVA {rva:#x} (file offset {offset:#x}) runs past the end "
                "of its section (or of the file) without a NUL"
            )
        if end == 0:
            raise PEError(f"{what}: the name at RVA {rva:#x} (file offset {offset:#x}) is empty")
        try:
            return data[:end].decode("ascii")
        except UnicodeDecodeError:
            raise PEError(
                f"{what}: the name at RVA {rva:#x} (file offset {offset:#x}) is not ASCII: "
                f"{data[:end]!r}"
            ) from None


def read_pe(src: ByteSource) -> PEInfo:
    """Parse the headers, the section table and the import tables of a PE image; raises PEError
    on a malformed one."""
    if src.size < 0x40:
        raise PEError(f"too short for an MS-DOS header ({src.size} bytes)")
    lfanew = pe_header_offset(_read(src, 0, 0x40, "MS-DOS header"))
    if lfanew is None:
        raise PEError("no MZ magic at offset 0")
    if lfanew > PE_HEAD_LIMIT:
        raise PEError(
            f"e_lfanew (at 0x3c) puts the PE header at {lfanew:#x}, further in than "
            f"{PE_HEAD_LIMIT >> 10} KiB"
        )
    if lfanew + 4 + COFF_HEADER > src.size:
        raise PEError(
            f"e_lfanew (at 0x3c) puts the PE header at {lfanew:#x}, past the end of the file "
            f"({src.size} bytes)"
        )
    head = _read(src, lfanew, 4 + COFF_HEADER, "COFF header")
    if head[:4] != b"PE\0\0":
        raise PEError(f"no PE signature at {lfanew:#x} (e_lfanew): {head[:4]!r}")
    code, count, _, _, _, optional_size, characteristics = struct.unpack_from("<HHIIIHH", head, 4)
    if count > MAX_SECTIONS:
        raise PEError(
            f"NumberOfSections {count} (COFF header at {lfanew + 4:#x}) is over the "
            f"specification's limit of {MAX_SECTIONS}"
        )
    optional_at = lfanew + 4 + COFF_HEADER
    if optional_at + optional_size > src.size:
        raise PEError(
            f"SizeOfOptionalHeader {optional_size} (optional header at {optional_at:#x}) runs "
            f"past the end of the file ({src.size} bytes)"
        )
    if optional_size < 2:
        raise PEError(f"no optional header at {optional_at:#x}: an object file, not an image")
    optional = _read(src, optional_at, optional_size, "optional header")
    (magic,) = struct.unpack_from("<H", optional)
    if magic not in (PE32, PE32_PLUS):
        raise PEError(
            f"optional header magic {magic:#x} at {optional_at:#x} is neither PE32 nor PE32+"
        )
    plus = magic == PE32_PLUS
    directories_at = 112 if plus else 96
    if optional_size < directories_at:
        raise PEError(
            f"SizeOfOptionalHeader {optional_size} (at {optional_at:#x}) is shorter than the "
            f"{'PE32+' if plus else 'PE32'} fields ({directories_at} bytes)"
        )
    image_base = struct.unpack_from("<Q" if plus else "<I", optional, 24 if plus else 28)[0]
    (subsystem,) = struct.unpack_from("<H", optional, 68)
    (directory_count,) = struct.unpack_from("<I", optional, directories_at - 4)
    if directories_at + 8 * directory_count > optional_size:
        raise PEError(
            f"NumberOfRvaAndSizes {directory_count} (optional header at {optional_at:#x}) does "
            f"not fit in SizeOfOptionalHeader {optional_size}"
        )

    def directory(index: int) -> tuple[int, int]:
        if index >= directory_count:
            return 0, 0
        rva, size = struct.unpack_from("<II", optional, directories_at + 8 * index)
        return int(rva), int(size)

    table_at = optional_at + optional_size
    if table_at + SECTION_HEADER * count > src.size:
        raise PEError(
            f"the section table ({count} x {SECTION_HEADER} bytes at {table_at:#x}) runs past the "
            f"end of the file ({src.size} bytes)"
        )
    image = _Image(src, _sections(_read(src, table_at, SECTION_HEADER * count, "section table")),
                   image_base)  # fmt: skip
    imports_rva, _ = directory(DIRECTORY_IMPORT)
    delay_rva, _ = directory(DIRECTORY_DELAY_IMPORT)
    src.set_interest(_spans(image, (imports_rva, delay_rva)))
    return PEInfo(
        machine=PE_MACHINES.get(code, f"pe-{code:#x}"),
        machine_code=code,
        dll=bool(characteristics & IMAGE_FILE_DLL),
        pe32_plus=plus,
        imports=_imports(image, imports_rva),
        delay_imports=_delay_imports(image, delay_rva),
        subsystem=subsystem,
    )


def _read(src: ByteSource, offset: int, length: int, what: str) -> bytes:
    if offset < 0 or length < 0 or offset + length > src.size:
        raise PEError(
            f"{what}: {length} bytes at {offset:#x} run past the end of the file ({src.size} bytes)"
        )
    return src.read(offset, length)


def _sections(table: bytes) -> tuple[_Section, ...]:
    out = []
    for name, virtual_size, rva, raw_size, raw_offset in (
        struct.unpack_from("<8sIIII", table, at) for at in range(0, len(table), SECTION_HEADER)
    ):
        # Bytes past SizeOfRawData are zeros in memory, not in the file; a VirtualSize of 0
        # (some linkers) means the raw size.
        size = min(raw_size, virtual_size) if virtual_size else raw_size
        label = name.rstrip(b"\0").decode("ascii", "replace")
        out.append(_Section(label, rva, size, raw_offset, max(virtual_size, raw_size)))
    return tuple(out)


def _spans(image: _Image, rvas: Sequence[int]) -> list[tuple[int, int]]:
    """The file spans of the sections holding the import tables (and so, usually, their names)."""
    return [
        (s.offset, s.size)
        for s in image.sections
        if any(rva and s.rva <= rva < s.rva + s.size for rva in rvas)
    ]


def _descriptors(image: _Image, rva: int, size: int, what: str) -> list[bytes]:
    """The entries of a descriptor table at `rva`, up to (not including) the all-zero one; read
    DESCRIPTOR_CHUNK entries at a time (a table of real DLLs has tens)."""
    offset, available = image.locate(rva, what)
    out: list[bytes] = []
    at = offset
    while at + size <= offset + available:
        length = min(DESCRIPTOR_CHUNK * size, offset + available - at)
        data = _read(image.src, at, length - length % size, what)
        for start in range(0, len(data), size):
            entry = data[start : start + size]
            if not any(entry):
                return out
            if len(out) == MAX_DESCRIPTORS:
                raise PEError(
                    f"{what} at RVA {rva:#x} (file offset {offset:#x}): more than "
                    f"{MAX_DESCRIPTORS} descriptors without a terminator"
                )
            out.append(entry)
        at += len(data)
    raise PEError(
        f"{what} at RVA {rva:#x} (file offset {offset:#x}): {len(out)} descriptors run past the "
        "end of its section without an all-zero terminator"
    )


def _imports(image: _Image, rva: int) -> tuple[str, ...]:
    if not rva:
        return ()
    what = "import directory"
    names = []
    for i, entry in enumerate(_descriptors(image, rva, IMPORT_DESCRIPTOR, what)):
        (name_rva,) = struct.unpack_from("<I", entry, 12)
        if not name_rva:
            raise PEError(f"{what} at RVA {rva:#x}: descriptor {i} has no Name")
        names.append(image.name(name_rva, f"{what}, descriptor {i}"))
    return tuple(names)


def _delay_imports(image: _Image, rva: int) -> tuple[str, ...]:
    if not rva:
        return ()
    what = "delay-load import directory"
    names = []
    for i, entry in enumerate(_descriptors(image, rva, DELAY_DESCRIPTOR, what)):
        attributes, name_at = struct.unpack_from("<II", entry)
        where = f"{what}, descriptor {i}"
        if not name_at:
            raise PEError(f"{what} at RVA {rva:#x}: descriptor {i} has no DllNameRVA")
        if not attributes & DELAY_RVA_BASED:  # a VA, written by linkers before Visual C++ 7
            if name_at < image.image_base:
                raise PEError(
                    f"{where}: DllName {name_at:#x} is a VA (Attributes bit 0 clear) below "
                    f"ImageBase {image.image_base:#x}"
                )
            name_at -= image.image_base
        names.append(image.name(name_at, where))
    return tuple(names)


# Windows system DLLs: a subset of delvewheel's list of the DLLs present on every vanilla
# Windows 7 SP1 and later (delvewheel/_dll_list.py, `ignore_names_*`: the .dll files of
# C:\Windows\System32 and SysWOW64), the ones native extensions commonly link.  msvcrt.dll is the
# operating system's own C runtime (not the redistributable Visual C++ one) and ucrtbase.dll the
# Universal CRT, part of Windows since Windows 10.
SYSTEM_DLLS = frozenset(
    {
        "advapi32.dll", "bcrypt.dll", "bcryptprimitives.dll", "cabinet.dll", "cfgmgr32.dll",
        "comctl32.dll", "comdlg32.dll", "crypt32.dll", "cryptbase.dll", "cryptnet.dll",
        "cryptsp.dll", "d2d1.dll", "d3d11.dll", "d3d12.dll", "d3d9.dll", "dbgeng.dll",
        "dbghelp.dll", "dnsapi.dll", "dwmapi.dll", "dwrite.dll", "dxgi.dll", "gdi32.dll",
        "gdiplus.dll", "glu32.dll", "hid.dll", "imagehlp.dll", "imm32.dll", "iphlpapi.dll",
        "kernel32.dll", "kernelbase.dll", "mpr.dll", "msimg32.dll", "msvcrt.dll", "mswsock.dll",
        "ncrypt.dll", "netapi32.dll", "normaliz.dll", "ntdll.dll", "ole32.dll", "oleaut32.dll",
        "opengl32.dll", "powrprof.dll", "psapi.dll", "rpcrt4.dll", "secur32.dll",
        "setupapi.dll", "shell32.dll", "shlwapi.dll", "sspicli.dll", "ucrtbase.dll",
        "urlmon.dll", "user32.dll", "userenv.dll", "uxtheme.dll", "version.dll", "winhttp.dll",
        "wininet.dll", "winmm.dll", "winspool.drv", "wintrust.dll", "wldap32.dll", "ws2_32.dll",
        "wsock32.dll", "wtsapi32.dll",
    }
)  # fmt: skip
# API sets (Windows API set documentation: "API set contract names" start with api- or ext-,
# e.g. api-ms-win-crt-runtime-l1-1-0.dll); the loader resolves them, no such file ships.
_API_SET = re.compile(r"(api|ext)-ms-win-[a-z0-9-]+\.dll", re.IGNORECASE)
# The Visual C++ redistributable (what delvewheel's `vc_redist` matches of the 14.x runtime):
# not part of Windows, so a wheel either relies on Python's own vcruntime140 or ships them.
_MSVC_RUNTIME = re.compile(
    r"(vcruntime140\w*|msvcp140\w*|concrt140d?|vcomp140d?)\.dll", re.IGNORECASE
)
# CPython's DLLs: python3.dll (the stable ABI), python3XX.dll, python3XXt.dll (free-threaded),
# with _d for debug builds (delvewheel's `python[0-9]+t?(_d)?\.dll`).
_PYTHON_DLL = re.compile(r"python(\d)(\d{1,2})?(t?)(?:_d)?\.dll", re.IGNORECASE)


def is_system_dll(name: str) -> bool:
    """Whether Windows itself provides `name` (an API set or a DLL of System32)."""
    return bool(_API_SET.fullmatch(name)) or name.lower() in SYSTEM_DLLS


def msvc_runtime(name: str) -> bool:
    """Whether `name` is a DLL of the Visual C++ 2015+ redistributable (vcruntime140*.dll,
    msvcp140*.dll, concrt140.dll, vcomp140.dll) — not a system DLL, as delvewheel treats them."""
    return bool(_MSVC_RUNTIME.fullmatch(name))


def python_dll(name: str) -> str | None:
    """The Python version a CPython DLL is of: "3.12" for python312.dll, "3" for python3.dll
    (the stable ABI), "3.13t" for python313t.dll; None for any other name."""
    match = _PYTHON_DLL.fullmatch(name)
    if match is None:
        return None
    major, minor, threaded = match.groups()
    return f"{major}.{minor}{threaded}" if minor else f"{major}{threaded}"
