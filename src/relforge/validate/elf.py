"""An ELF reader that asks a ByteSource for only the bytes the checks need.

Read, in this order: the ELF header and program headers (first bytes of the file), the dynamic
section (DT_NEEDED, DT_SONAME, DT_RPATH/RUNPATH and where the rest lives), the dynamic string
table, the version needs (.gnu.version_r: GLIBC_2.28, GLIBCXX_3.4.22, …) and the dynamic symbols
(for the C++ ABI of std::string/std::list).  Section headers are read only to size .dynsym.
"""

from __future__ import annotations

import array
import struct
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from relforge.validate.cxxabi import CxxSymbols, scan_cxx_symbols
from relforge.validate.devicecode import (
    DeviceCode,
    DeviceCodeError,
    SectionReader,
    read_device_code,
    read_sections,
)
from relforge.validate.fatbin import read_fatbin
from relforge.validate.hipbundle import read_hip_fatbin
from relforge.validate.inflate import ByteSource
from relforge.validate.symbols import SymbolTable, read_symbols

PT_LOAD, PT_DYNAMIC = 1, 2
DT_NULL, DT_NEEDED, DT_HASH, DT_STRTAB, DT_SYMTAB, DT_STRSZ, DT_SYMENT = 0, 1, 4, 5, 6, 10, 11
DT_SONAME, DT_RPATH, DT_RUNPATH = 14, 15, 29
DT_GNU_HASH, DT_VERNEED, DT_VERNEEDNUM = 0x6FFFFEF5, 0x6FFFFFFE, 0x6FFFFFFF
DT_VERSYM, DT_VERDEF, DT_VERDEFNUM = 0x6FFFFFF0, 0x6FFFFFFC, 0x6FFFFFFD
VER_FLG_BASE = 1
# Version tables of real libraries list tens of entries (glibc's libc: 40); a hostile one could
# chain 65535 needs of 65535 versions each: 4 billion reads.
MAX_VERSION_ENTRIES = 1 << 10
SHT_DYNSYM = 11
MACHINES = {3: "i686", 62: "x86_64", 183: "aarch64", 40: "armv7l", 21: "ppc64le", 22: "s390x"}
MACHINES |= {243: "riscv64"}
KINDS = {1: "relocatable", 2: "executable", 3: "shared object", 4: "core"}
ELF_MAGIC = b"\x7fELF"


class ElfError(Exception):
    """Not a well-formed ELF file (the message says what is wrong)."""


@dataclass(frozen=True, kw_only=True)
class ElfInfo:
    bits: int
    machine: str
    kind: str
    soname: str | None = None
    needed: tuple[str, ...] = ()
    rpath: tuple[str, ...] = ()
    runpath: tuple[str, ...] = ()
    version_needs: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    cxx: CxxSymbols = field(default_factory=CxxSymbols)
    dynamic: bool = True
    symbols: SymbolTable | None = None  # only when read with symbols=True
    device: DeviceCode | None = None  # CUDA/HIP device code; None: none (or not read)


@dataclass(frozen=True)
class _Layout:
    endian: str
    bits: int
    loads: tuple[tuple[int, int, int], ...]  # (vaddr, offset, filesz)

    def offset_of(self, vaddr: int) -> int:
        for start, offset, size in self.loads:
            if start <= vaddr < start + size:
                return offset + vaddr - start
        raise ElfError(f"address {vaddr:#x} is in no loaded segment")


def is_elf(head: bytes) -> bool:
    return head[:4] == ELF_MAGIC


DEVICE_READERS: dict[str, SectionReader] = {
    ".nv_fatbin": read_fatbin,
    "__nv_relfatbin": read_fatbin,
    ".hip_fatbin": read_hip_fatbin,
}


@dataclass(frozen=True)
class _Header:
    bits: int
    endian: str
    e_type: int
    e_machine: int
    phoff: int
    phentsize: int
    phnum: int
    shoff: int
    shentsize: int
    shnum: int
    strndx: int

    @property
    def sections(self) -> tuple[int, int]:
        """(offset, bytes) of the section header table; (0, 0) when there is none."""
        if self.shoff and self.shnum and self.shentsize:
            return self.shoff, self.shnum * self.shentsize
        return 0, 0


def _header(src: ByteSource) -> _Header:
    if src.size < 52:
        raise ElfError("too short for an ELF header")
    ident = src.read(0, 64 if src.size >= 64 else 52)
    if not is_elf(ident):
        raise ElfError("no ELF magic")
    bits = {1: 32, 2: 64}.get(ident[4])
    endian = {1: "<", 2: ">"}.get(ident[5])
    if bits is None or endian is None:
        raise ElfError(f"unknown ELF class {ident[4]} or data encoding {ident[5]}")
    fmt = "HHIQQQIHHHHHH" if bits == 64 else "HHIIIIIHHHHHH"
    (e_type, e_machine, _, _, phoff, shoff, _, _, phentsize, phnum, shentsize, shnum, strndx) = (
        struct.unpack_from(endian + fmt, ident, 16)
    )
    return _Header(
        bits, endian, e_type, e_machine, phoff, phentsize, phnum, shoff, shentsize, shnum, strndx
    )


def read_elf_device(src: ByteSource) -> DeviceCode | None:
    """The entry headers of an ELF file's CUDA fat binaries and HIP offload bundles (None: it
    has none); a section table that cannot be read is a verdict on the device code, not on the
    whole file (the loader never reads section headers).  Read after `read_elf` on the same
    source, the headers and section table are in hand."""
    head = _header(src)
    offset, size = head.sections
    if not DEVICE_READERS or not size:
        return None
    if offset + size > src.size:
        return DeviceCode(
            error=f"section headers: {head.shnum} x {head.shentsize} bytes at {offset} run "
            f"past the end of the file ({src.size} bytes)"
        )
    try:
        found = read_sections(src, head.endian, head.bits, (offset, size), head.shentsize,
                              head.strndx)  # fmt: skip
    except (DeviceCodeError, struct.error) as exc:
        return DeviceCode(error=f"section headers: {exc}")
    return read_device_code(src, found, head.endian, DEVICE_READERS)


def read_elf(src: ByteSource, *, symbols: bool = False, device: bool = True) -> ElfInfo:
    """Parse what the checks need; raises ElfError on a malformed file.  `symbols`: also every
    dynamic symbol with its version (for the ABI contract check); `device`: also the entry
    headers of its CUDA fat binaries and HIP offload bundles (`read_elf_device`, read last:
    the dynamic reads plan their tail passes as they always did)."""
    head = _header(src)
    bits, endian = head.bits, head.endian
    machine = MACHINES.get(head.e_machine, f"machine-{head.e_machine}")
    kind = KINDS.get(head.e_type, f"type-{head.e_type}")
    phdrs = _program_headers(src, endian, bits, head.phoff, head.phentsize, head.phnum)
    loads = tuple((v, o, s) for t, o, v, s in phdrs if t == PT_LOAD)
    layout = _Layout(endian, bits, loads)
    dynamic = next(((o, s) for t, o, _, s in phdrs if t == PT_DYNAMIC), None)
    sections = head.sections
    if sections[0] + sections[1] > src.size:  # the loader never reads section headers
        sections = (0, 0)
    shentsize = head.shentsize
    src.set_interest([(o, s) for _, o, s in loads] + ([dynamic] if dynamic else []) + [sections])

    def device_code() -> DeviceCode | None:
        return read_elf_device(src) if device else None

    if dynamic is None:
        return ElfInfo(bits=bits, machine=machine, kind=kind, dynamic=False, device=device_code())
    entries = _dynamic_entries(src.read(*dynamic), endian, bits)
    tags: dict[int, int] = {}
    for tag, value in entries:
        tags.setdefault(tag, value)
    if DT_STRTAB not in tags or DT_STRSZ not in tags:
        raise ElfError("the dynamic section has no string table")
    strtab = src.read(layout.offset_of(tags[DT_STRTAB]), tags[DT_STRSZ])

    def string(offset: int) -> str:
        end = strtab.find(b"\x00", offset)
        if offset >= len(strtab) or end < 0:
            raise ElfError(f"string offset {offset} is outside the dynamic string table")
        return strtab[offset:end].decode("utf-8", "replace")

    def paths(tag: int) -> tuple[str, ...]:
        return tuple(p for v in (string(x) for t, x in entries if t == tag) for p in v.split(":"))

    needs = _version_needs(src, layout, tags, string)
    cxx = CxxSymbols()
    table = SymbolTable() if symbols else None
    count = _symbol_count(src, layout, tags, sections, shentsize)
    if DT_SYMTAB in tags and count:
        syment = tags.get(DT_SYMENT, 24 if bits == 64 else 16)
        raw = src.read(layout.offset_of(tags[DT_SYMTAB]), count * syment)
        cxx = scan_cxx_symbols(strtab, _defined_by_name(raw, endian, bits, syment))
        if symbols:
            versym = (
                src.read(layout.offset_of(tags[DT_VERSYM]), 2 * count)
                if DT_VERSYM in tags
                else None
            )
            table = read_symbols(
                raw,
                strtab,
                versym,
                _version_indexes(src, layout, tags, string),
                endian=endian,
                bits=bits,
                syment=syment,
            )
    soname = string(tags[DT_SONAME]) if DT_SONAME in tags else None
    code = device_code()
    return ElfInfo(
        bits=bits,
        machine=machine,
        kind=kind,
        soname=soname,
        needed=tuple(string(v) for t, v in entries if t == DT_NEEDED),
        rpath=paths(DT_RPATH),
        runpath=paths(DT_RUNPATH),
        version_needs=needs,
        cxx=cxx,
        symbols=table,
        device=code,
    )


def _program_headers(
    src: ByteSource, endian: str, bits: int, phoff: int, entsize: int, count: int
) -> list[tuple[int, int, int, int]]:
    """(type, file offset, vaddr, file size) of each program header."""
    fmt = endian + ("IIQQQQQQ" if bits == 64 else "IIIIIIII")
    if count == 0 or entsize < struct.calcsize(fmt):
        return []
    data = src.read(phoff, entsize * count)
    out = []
    for i in range(count):
        fields = struct.unpack_from(fmt, data, i * entsize)
        if bits == 64:
            p_type, _, p_offset, p_vaddr, _, p_filesz, _, _ = fields
        else:
            p_type, p_offset, p_vaddr, _, p_filesz, _, _, _ = fields
        out.append((p_type, p_offset, p_vaddr, p_filesz))
    return out


def _dynamic_entries(data: bytes, endian: str, bits: int) -> list[tuple[int, int]]:
    fmt = endian + ("qQ" if bits == 64 else "iI")
    entries: list[tuple[int, int]] = []
    for tag, value in struct.iter_unpack(fmt, data[: len(data) - len(data) % struct.calcsize(fmt)]):
        if tag == DT_NULL:
            return entries
        entries.append((tag, value))
    raise ElfError("the dynamic section has no DT_NULL terminator")


def _version_needs(
    src: ByteSource, layout: _Layout, tags: Mapping[int, int], string: Callable[[int], str]
) -> dict[str, tuple[str, ...]]:
    """Library → version names it needs (from .gnu.version_r), e.g. libc.so.6 → GLIBC_2.28."""
    if DT_VERNEED not in tags:
        return {}
    offset = layout.offset_of(tags[DT_VERNEED])
    out: dict[str, tuple[str, ...]] = {}
    e = layout.endian
    for _ in range(min(tags.get(DT_VERNEEDNUM, 1 << 16), MAX_VERSION_ENTRIES)):
        _, count, file_name, aux, following = struct.unpack(e + "HHIII", src.read(offset, 16))
        names = []
        at = offset + aux
        for _ in range(min(count, MAX_VERSION_ENTRIES)):
            _, _, _, name, next_aux = struct.unpack(e + "IHHII", src.read(at, 16))
            names.append(string(name))
            if not next_aux:
                break
            at += next_aux
        library = string(file_name)
        out[library] = (*out.get(library, ()), *names)
        if not following:
            break
        offset += following
    return out


def _version_indexes(
    src: ByteSource, layout: _Layout, tags: Mapping[int, int], string: Callable[[int], str]
) -> dict[int, tuple[str | None, str]]:
    """Version index → (library it is needed from, or None: defined here; version name)."""
    e = layout.endian
    out: dict[int, tuple[str | None, str]] = {}
    if DT_VERNEED in tags:
        offset = layout.offset_of(tags[DT_VERNEED])
        for _ in range(min(tags.get(DT_VERNEEDNUM, 1 << 16), MAX_VERSION_ENTRIES)):
            _, count, file_name, aux, following = struct.unpack(e + "HHIII", src.read(offset, 16))
            library = string(file_name)
            at = offset + aux
            for _ in range(min(count, MAX_VERSION_ENTRIES)):
                _, _, index, name, next_aux = struct.unpack(e + "IHHII", src.read(at, 16))
                out[index & 0x7FFF] = (library, string(name))
                if not next_aux:
                    break
                at += next_aux
            if not following:
                break
            offset += following
    if DT_VERDEF in tags:
        offset = layout.offset_of(tags[DT_VERDEF])
        for _ in range(min(tags.get(DT_VERDEFNUM, 1 << 16), MAX_VERSION_ENTRIES)):
            _, flags, index, count, _, aux, following = struct.unpack(
                e + "HHHHIII", src.read(offset, 20)
            )
            if count and not flags & VER_FLG_BASE:
                (name,) = struct.unpack(e + "I", src.read(offset + aux, 4))
                out[index & 0x7FFF] = (None, string(name))
            if not following:
                break
            offset += following
    return out


def _symbol_count(
    src: ByteSource,
    layout: _Layout,
    tags: Mapping[int, int],
    sections: tuple[int, int],
    shentsize: int,
) -> int:
    """Number of dynamic symbols: from the section headers, DT_HASH, or walking DT_GNU_HASH."""
    e = layout.endian
    if sections[1]:
        table = src.read(*sections)
        fmt = e + ("IIQQQQIIQQ" if layout.bits == 64 else "IIIIIIIIII")
        for i in range(sections[1] // shentsize):
            fields = struct.unpack_from(fmt, table, i * shentsize)
            if fields[1] == SHT_DYNSYM:
                size, entsize = fields[5], fields[9]
                return int(size // entsize) if entsize else 0
    if DT_HASH in tags:
        _, nchain = struct.unpack(e + "II", src.read(layout.offset_of(tags[DT_HASH]), 8))
        return int(nchain)
    if DT_GNU_HASH in tags:
        return _gnu_hash_count(src, layout, tags[DT_GNU_HASH])
    return 0


def _gnu_hash_count(src: ByteSource, layout: _Layout, vaddr: int) -> int:
    e = layout.endian
    base = layout.offset_of(vaddr)
    nbuckets, symoffset, bloom_size, _ = struct.unpack(e + "IIII", src.read(base, 16))
    buckets_at = base + 16 + bloom_size * (layout.bits // 8)
    buckets = struct.unpack(e + f"{nbuckets}I", src.read(buckets_at, 4 * nbuckets))
    last = max(buckets, default=0)
    if last < symoffset:
        return int(symoffset)
    chains_at = buckets_at + 4 * nbuckets
    index = last
    for _ in range(1 << 20):  # a hash chain longer than this is no real library's
        (value,) = struct.unpack(e + "I", src.read(chains_at + 4 * (index - symoffset), 4))
        if value & 1:
            return index + 1
        index += 1
    raise ElfError("the GNU hash table's last chain does not end")


def _defined_by_name(data: bytes, endian: str, bits: int, syment: int) -> dict[int, bool]:
    """st_name → defined here (st_shndx != SHN_UNDEF), for every dynamic symbol."""
    usable = len(data) - len(data) % syment
    words = array.array("I", data[:usable])
    halves = array.array("H", data[:usable])
    if (endian == "<") != (sys.byteorder == "little"):
        words.byteswap()
        halves.byteswap()
    names = words[0 :: syment // 4]
    shndx_at = 6 if bits == 64 else 14  # byte offset of st_shndx in Elf64_Sym / Elf32_Sym
    shndx = halves[shndx_at // 2 :: syment // 2]
    return {name: index != 0 for name, index in zip(names, shndx, strict=False) if name}
