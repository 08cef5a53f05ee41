"""Dynamic symbols with their versions, for the ABI contract check (abi.py).

From .dynsym, .dynstr, .gnu.version (DT_VERSYM: one version index per symbol), .gnu.version_d
(DT_VERDEF: the versions this file defines) and .gnu.version_r (DT_VERNEED: index → library
and version it needs).  Undefined symbols keep their needed library and version; defined ones
are kept as sorted arrays of 64-bit hashes of their names (and of `name@version`):
tensorflow's libtensorflow_cc.so.2 defines 436,000 symbols in 77 MiB of names, which took
120 MiB more as a set of str and 60 MiB as a set of int; as an array 3.5 MiB.  Hashes of bytes
are stable within one process, which is all the check needs.
"""

from __future__ import annotations

import array
import bisect
import struct
import sys
from dataclasses import dataclass, field

STB_LOCAL, STB_WEAK = 0, 2
SHN_UNDEF = 0
VERSYM_HIDDEN = 0x8000


MAX_UNDEFINED = 1 << 18  # undefined references kept with their names (more: not checked)


def contains(hashes: array.array[int], value: int) -> bool:
    """Whether a sorted array of hashes holds `value`."""
    at = bisect.bisect_left(hashes, value)
    return at < len(hashes) and hashes[at] == value


def _sorted(values: array.array[int]) -> array.array[int]:
    return array.array("q", sorted(values))


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
    defined: array.array[int] = field(default_factory=lambda: array.array("q"))  # sorted
    defined_versioned: array.array[int] = field(default_factory=lambda: array.array("q"))
    versions: frozenset[str] = field(default_factory=frozenset)  # versions this file defines
    too_many: bool = False  # more undefined references than MAX_UNDEFINED: not checked

    def defines(self, name: bytes, version: str | None) -> bool:
        """Whether a reference to `name` (with `version`, if versioned) binds here."""
        if version is None or not self.versions:
            return contains(self.defined, name_hash(name))
        return contains(self.defined_versioned, versioned_hash(name, version))


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
    defined = array.array("q")
    defined_versioned = array.array("q")
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
        defined.append(name_hash(name))
        if version is not None:
            defined_versioned.append(versioned_hash(name, version))
    return SymbolTable(
        undefined=tuple(undefined),
        defined=_sorted(defined),
        defined_versioned=_sorted(defined_versioned),
        versions=frozenset(v for lib, v in version_names.values() if lib is None),
        too_many=too_many,
    )
