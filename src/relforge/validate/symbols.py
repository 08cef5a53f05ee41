"""Dynamic symbols with their versions, for the ABI contract check (abi.py).

From .dynsym, .dynstr, .gnu.version (DT_VERSYM: one version index per symbol), .gnu.version_d
(DT_VERDEF: the versions this file defines) and .gnu.version_r (DT_VERNEED: index → library
and version it needs).  Undefined symbols keep their needed library and version; defined ones
are kept as a set of names plus a set of `name@version`.
"""

from __future__ import annotations

import array
import struct
import sys
from dataclasses import dataclass, field

STB_LOCAL, STB_WEAK = 0, 2
SHN_UNDEF = 0
VERSYM_HIDDEN = 0x8000


@dataclass(frozen=True, kw_only=True)
class Undefined:
    name: str
    library: str | None = None  # from the version need, when the reference is versioned
    version: str | None = None


@dataclass(frozen=True, kw_only=True)
class SymbolTable:
    undefined: tuple[Undefined, ...] = ()
    defined: frozenset[str] = field(default_factory=frozenset)
    defined_versioned: frozenset[str] = field(default_factory=frozenset)  # "name@VERSION"
    versions: frozenset[str] = field(default_factory=frozenset)  # versions this file defines

    def defines(self, name: str, version: str | None) -> bool:
        """Whether a reference to `name` (with `version`, if versioned) binds here."""
        if version is None or not self.versions:
            return name in self.defined
        return f"{name}@{version}" in self.defined_versioned


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
    defined: set[str] = set()
    defined_versioned: set[str] = set()
    text = strtab
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
        name = text[offset : end if end >= 0 else len(text)].decode("utf-8", "replace")
        index = versions[i] & ~VERSYM_HIDDEN if versions else 0
        library, version = version_names.get(index, (None, None)) if index > 1 else (None, None)
        if shndx == SHN_UNDEF:
            if bind != STB_WEAK:
                undefined.append(Undefined(name=name, library=library, version=version))
            continue
        defined.add(name)
        if version is not None:
            defined_versioned.add(f"{name}@{version}")
    return SymbolTable(
        undefined=tuple(undefined),
        defined=frozenset(defined),
        defined_versioned=frozenset(defined_versioned),
        versions=frozenset(v for lib, v in version_names.values() if lib is None),
    )
