"""Dynamic symbols with their versions, for the ABI contract check (abi.py).

From .dynsym, .dynstr, .gnu.version (DT_VERSYM: one version index per symbol), .gnu.version_d
(DT_VERDEF: the versions this file defines) and .gnu.version_r (DT_VERNEED: index → library
and version it needs).  Undefined symbols keep their needed library and version; defined ones
are kept as hashes of their names (and of `name@version`): tensorflow's libtensorflow_cc.so.2
defines 436,000 symbols in 77 MiB of names, which as a set of str took 120 MiB more.  Hashes of
bytes are stable within one process, which is all the check needs.
"""

from __future__ import annotations

import array
import struct
import sys
from dataclasses import dataclass, field

STB_LOCAL, STB_WEAK = 0, 2
SHN_UNDEF = 0
VERSYM_HIDDEN = 0x8000


MAX_UNDEFINED = 1 << 18  # undefined references kept with their names (more: not checked)


def name_hash(name: bytes) -> int:
    return hash(name)


def versioned_hash(name: bytes, version: str) -> int:
    return hash(name + b"@" + version.encode())


@dataclass(frozen=True, kw_only=True)
class Undefined:
    name: str
    library: str | None = None  # from the version need, when the reference is versioned
    version: str | None = None

    @property
    def raw(self) -> bytes:
        return self.name.encode("utf-8", "surrogateescape")


@dataclass(frozen=True, kw_only=True)
class SymbolTable:
    undefined: tuple[Undefined, ...] = ()
    defined: frozenset[int] = field(default_factory=frozenset)  # name_hash of each name
    defined_versioned: frozenset[int] = field(default_factory=frozenset)  # versioned_hash
    versions: frozenset[str] = field(default_factory=frozenset)  # versions this file defines
    too_many: bool = False  # more undefined references than MAX_UNDEFINED: not checked

    def defines(self, name: bytes, version: str | None) -> bool:
        """Whether a reference to `name` (with `version`, if versioned) binds here."""
        if version is None or not self.versions:
            return name_hash(name) in self.defined
        return versioned_hash(name, version) in self.defined_versioned


def read_symbols(
    symbols: bytes,
    strtab: bytes,
    versym: bytes | None,
    version_names: dict[int, tuple[str | None, str]],
    *,
    endian: str,
    bits: int,
    syment: int,
) -> SymbolTable:
    """Split the dynamic symbols into undefined references and definitions.

    `version_names`: version index → (library needed or None for a definition, version name).
    Weak undefined symbols may stay undefined at run time and are left out; local symbols too.
    """
    fmt = endian + ("IBBHQQ" if bits == 64 else "IIIBBH")
    width = struct.calcsize(fmt)
    if syment < width:
        return SymbolTable()
    count = len(symbols) // syment
    if syment == width:
        entries = struct.iter_unpack(fmt, symbols[: count * syment])
    else:
        entries = (struct.unpack_from(fmt, symbols, i * syment) for i in range(count))
    versions = array.array("H")
    if versym is not None and len(versym) >= 2 * count:
        versions.frombytes(versym[: 2 * count])
        if (endian == "<") != (sys.byteorder == "little"):
            versions.byteswap()
    undefined: list[Undefined] = []
    defined: set[int] = set()
    defined_versioned: set[int] = set()
    text = strtab
    too_many = False
    for i, entry in enumerate(entries):
        if bits == 64:
            offset, info, _, shndx = entry[:4]
        else:
            offset, _, _, info, _, shndx = entry
        if not offset or offset >= len(text):
            continue
        bind = info >> 4
        if bind == STB_LOCAL:
            continue
        end = text.find(b"\x00", offset)
        name = bytes(text[offset : end if end >= 0 else len(text)])
        index = versions[i] & ~VERSYM_HIDDEN if versions else 0
        library, version = version_names.get(index, (None, None)) if index > 1 else (None, None)
        if shndx == SHN_UNDEF:
            if bind != STB_WEAK and len(undefined) < MAX_UNDEFINED:
                text_name = name.decode("utf-8", "surrogateescape")
                undefined.append(Undefined(name=text_name, library=library, version=version))
            elif bind != STB_WEAK:
                too_many = True
            continue
        defined.add(name_hash(name))
        if version is not None:
            defined_versioned.add(versioned_hash(name, version))
    return SymbolTable(
        undefined=tuple(undefined),
        defined=frozenset(defined),
        defined_versioned=frozenset(defined_versioned),
        versions=frozenset(v for lib, v in version_names.values() if lib is None),
        too_many=too_many,
    )
