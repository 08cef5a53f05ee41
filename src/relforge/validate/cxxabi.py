"""Which libstdc++ string ABI a shared object was built with, from its mangled dynamic symbols.

With `_GLIBCXX_USE_CXX11_ABI=1` std::string and std::list live in the inline namespace
`std::__cxx11` (mangled `NSt7__cxx11…`, or the `B5cxx11` ABI tag on functions returning them);
the old ABI mangles std::string as the abbreviation `Ss` (`Sb` for other basic_strings) and
std::list as `St4list`.  Identifier text is skipped so a name like `Ssl` in user code is no hint.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

_MARKERS = re.compile(rb"St7__cxx11|B5cxx11|Ss|Sb|St4list")
# vtable/typeinfo/guard-variable/thunk/internal-linkage/local-entity prefixes before the name
_SPECIAL_PREFIX = re.compile(r"^(?:T[VIST]|GV|Thn?\d+_|Tvn?\d+_n?\d+_|L|Z)+")
_STD_OWNERS = frozenset({"std", "__gnu_cxx", "__cxxabiv1", "__gnu_debug"})
_BUILTIN_TYPES = frozenset("vwbcahstijlmxynofdegz")
KEEP = 50  # example names kept per kind


@dataclass(frozen=True, kw_only=True)
class CxxSymbols:
    """std::string/std::list ABI evidence: names defined here, counts of references."""

    cxx11_defined: tuple[str, ...] = ()
    pre_cxx11_defined: tuple[str, ...] = ()
    cxx11_references: int = 0
    pre_cxx11_references: int = 0

    @property
    def abi(self) -> str:
        """cxx11, pre-cxx11, mixed, or none (no std::string/std::list in sight)."""
        new = bool(self.cxx11_defined or self.cxx11_references)
        old = bool(self.pre_cxx11_defined or self.pre_cxx11_references)
        if new and old:
            return "mixed"
        return "cxx11" if new else "pre-cxx11" if old else "none"


def scan_cxx_symbols(strtab: bytes, defined_by_name: Mapping[int, bool]) -> CxxSymbols:
    """Classify the dynamic symbols whose names mention a string/list type (std owners skipped)."""
    cxx11: list[str] = []
    pre: list[str] = []
    refs = [0, 0]
    seen: set[int] = set()
    for match in _MARKERS.finditer(strtab):
        start = strtab.rfind(b"\x00", 0, match.start()) + 1
        if start in seen:
            continue
        seen.add(start)
        defined = defined_by_name.get(start)
        if defined is None:
            continue
        end = strtab.find(b"\x00", start)
        name = strtab[start:end].decode("ascii", "replace")
        new, old = abi_markers(name)
        if defined:
            if owner_namespace(name) in _STD_OWNERS:
                continue
            if new:
                cxx11.append(name)
            if old:
                pre.append(name)
        else:
            refs[0] += new
            refs[1] += old
    return CxxSymbols(
        cxx11_defined=tuple(cxx11),
        pre_cxx11_defined=tuple(pre),
        cxx11_references=refs[0],
        pre_cxx11_references=refs[1],
    )


def abi_markers(name: str) -> tuple[bool, bool]:
    """(mentions a std::__cxx11 type, mentions an old-ABI std::string/std::list)."""
    if not name.startswith("_Z"):
        return False, False
    new = "St7__cxx11" in name or "B5cxx11" in name
    if "Ss" not in name and "SbI" not in name and "4list" not in name:
        return new, False
    skeleton, identifiers = _split(name)
    new = "__cxx11" in identifiers or "B5cxx11" in name
    old = "Ss" in skeleton or "SbI" in skeleton
    for i, ident in enumerate(identifiers):
        if ident == "list" and (i == 0 or identifiers[i - 1] != "__cxx11"):
            old = old or _after_std(skeleton, i)
    return new, old


def owner_namespace(name: str) -> str:
    """The outermost namespace (or class) a mangled name belongs to; "" for the global one."""
    rest = name[2:] if name.startswith("_Z") else name
    rest = _SPECIAL_PREFIX.sub("", rest)
    nested = rest.startswith("N")
    if nested:
        rest = rest[1:].lstrip("rVKRO")
    if rest.startswith(("St", "Ss", "Sa", "Sb", "Si", "So", "Sd")):
        return "std"
    digits = re.match(r"\d+", rest)
    if digits is None:
        return ""
    ident = rest[len(digits.group()) : len(digits.group()) + int(digits.group())]
    return ident if nested else ""


def in_namespaces(name: str, namespaces: Iterable[str]) -> bool:
    wanted = set(namespaces)
    return not wanted or owner_namespace(name) in wanted


def _split(name: str) -> tuple[str, list[str]]:
    """Mangling grammar with each identifier replaced by `{}`, and the identifiers in order."""
    skeleton: list[str] = []
    identifiers: list[str] = []
    i, n = 2, len(name)
    while i < n:
        c = name[i]
        if not c.isdigit():
            skeleton.append(c)
            i += 1
            continue
        j = i
        while j < n and name[j].isdigit():
            j += 1
        if not _is_source_name(name, i, j):
            skeleton.append(name[i:j])
            i = j
            continue
        length = int(name[i:j])
        identifiers.append(name[j : j + length])
        skeleton.append("{}")
        i = j + length
    return "".join(skeleton), identifiers


def _is_source_name(name: str, i: int, j: int) -> bool:
    """Whether the digits name[i:j] give the length of an identifier (not a number of the
    grammar: substitution S0_, template parameter T0_, literal Li5E, array A10_, vector Dv4_,
    function parameter fp0_, unnamed type Ut0_, discriminator _1 / __12_)."""
    prev, before = name[i - 1], name[i - 2] if i >= 2 else ""
    if int(name[i:j]) == 0 or prev in "STA":
        return False
    if (prev in _BUILTIN_TYPES and before == "L") or (prev, before) in {
        ("v", "D"),
        ("p", "f"),
        ("L", "f"),
        ("t", "U"),
    }:
        return False
    return not (prev == "_" and (j == len(name) or before == "_"))


def _after_std(skeleton: str, index: int) -> bool:
    """Whether identifier number `index` directly follows `St` (std::) in the skeleton."""
    at = -1
    for _ in range(index + 1):
        at = skeleton.find("{}", at + 1)
    return at >= 2 and skeleton[at - 2 : at] == "St"
