"""The ABI contract (RF-V046): every undefined dynamic symbol of every ELF file in the wheel is
defined, with a compatible version, by the wheel itself, the system libraries its policy allows,
the interpreter, or the dependency wheels at hand (`--with`).

The classic break it catches: an extension built against one torch and installed with another
(`undefined symbol: _ZN3c10…` at import).  What is sound to say statically:

  - a versioned reference (`foo@LIB_1.2`) binds to a definition of `foo` with that version in
    any loaded object: it is looked up among everything at hand;
  - an unversioned reference binds to any global definition in the process: it is missing only
    when nothing at hand defines it *and* every library the file loads (transitively) is at
    hand — otherwise a library we cannot see might define it, and the symbol is left unchecked;
  - system libraries are read from this machine (same architecture only); a reference to a
    version this machine's library does not define at all (a newer glibc) is left to RF-V040;
  - `Py*`/`_Py*` symbols are the interpreter's; weak references may stay undefined;
  - a shared object that is neither needed by another file of the wheel nor a Python extension
    module (nor an executable) is a plugin of some other program (cocotb's simulator plugins
    use ModelSim's `mti_*`): what it cannot resolve here is left unchecked.
"""

from __future__ import annotations

import functools
import mmap
import platform
import posixpath
import re
import shutil
import subprocess
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from relforge.validate.checkregistry import Expectation, Outcome, artifact
from relforge.validate.elf import ElfError, read_elf
from relforge.validate.facts import ElfMember, WheelFacts
from relforge.validate.inflate import BytesSource, MemberError
from relforge.validate.libraries import resolve
from relforge.validate.providers import DependencyWheel, site_path
from relforge.validate.symbols import SymbolTable, contains, name_hash
from relforge.validate.tagpolicy import LOADER_PREFIXES, policy_for_tag, tag_arch

INTERPRETER_PREFIXES = ("Py", "_Py")
# Loaded by every CPython process (the interpreter links them): an extension module may use
# libm's sin() without needing libm.so.6 itself.
INTERPRETER_LIBRARIES = ("libc.so.6", "libm.so.6", "libpthread.so.0", "libdl.so.2", "libutil.so.1")
SYSTEM_DIRS = {
    "x86_64": ("/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu", "/lib64", "/usr/lib64"),
    "aarch64": ("/lib/aarch64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/lib64", "/usr/lib64"),
}
SHOWN = 12  # symbols named per library in the message
_EXTENSION = re.compile(r"\.(cpython-[^.]+|abi3|pypy[^.]*)\.so$")


@dataclass(frozen=True, kw_only=True)
class MissingSymbol:
    library: str  # where the symbol was expected (a version need's library, or the candidates)
    symbol: str
    version: str | None
    needed_by: str


@dataclass(frozen=True, kw_only=True)
class Contract:
    missing: tuple[MissingSymbol, ...]
    checked: int
    unchecked: int
    not_at_hand: tuple[str, ...]  # libraries whose absence left symbols unchecked
    in_plugins: int = 0  # unchecked references of plugins (loaded by an unknown program)


@dataclass(frozen=True)
class _Provider:
    """A library at hand: its symbols and what it needs in turn."""

    name: str
    path: str | None  # member path (None: this machine's system library)
    symbols: SymbolTable
    needed: tuple[str, ...]


@functools.cache
def system_library(arch: str, name: str) -> _Provider | None:
    """This machine's copy of an allowed system library (None: other arch, or not installed)."""
    if arch != platform.machine():
        return None
    for directory in SYSTEM_DIRS.get(arch, ()):
        path = Path(directory) / name
        if not path.is_file():
            continue
        try:
            with path.open("rb") as fh, mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as m:
                info = read_elf(BytesSource(m[:]), symbols=True, device=False)
        except (OSError, ElfError, MemberError, ValueError):
            continue
        if info.symbols is not None:
            return _Provider(name, None, info.symbols, info.needed)
    return None


def check_contract(
    facts: WheelFacts, dependencies: Sequence[DependencyWheel] = (), *, linked: bool = False
) -> Contract:
    """Missing symbols of every ELF file of the wheel (see the module docstring); `linked`: the
    shared objects are linked into programs (a native archive's), none is a plugin."""
    arch = next((a for a in (tag_arch(t) for t in facts.platform_tags) if a), None)
    arch = arch or next((e.info.machine for e in facts.elves if e.info), "x86_64")
    policies = [p for p in (policy_for_tag(t) for t in facts.platform_tags) if p is not None]
    allowed = set.intersection(*(set(p.libraries) for p in policies)) if policies else set()
    own = {site_path(e.path): e for e in facts.elves}
    by_dep_path = {p: e for d in dependencies for p, e in d.elves_by_site_path.items()}
    # which file each (needing file, library) pair resolves to, as RF-V041 found it
    found_at = {(n.needed_by, n.library): n.found_at for n in resolve(facts, dependencies)}

    by_file_name: dict[str, ElfMember] = {}
    for elf in [*(e for d in dependencies for e in d.facts.elves), *facts.elves]:
        by_file_name[posixpath.basename(elf.path)] = elf  # the wheel's own win

    def provider_for(needing: str, library: str) -> _Provider | None:
        if library.startswith(LOADER_PREFIXES) or library in allowed:
            return system_library(arch, library)
        target = found_at.get((needing, library))
        elf = own.get(target or "") or by_dep_path.get(target or "")
        elf = elf or by_file_name.get(library)  # a library's own needs, or outside the path
        if elf is None or elf.info is None or elf.info.symbols is None:
            return None
        return _Provider(library, elf.path, elf.info.symbols, elf.info.needed)

    tables = [e.info.symbols for e in facts.elves if e.info is not None and e.info.symbols]
    tables += [
        e.info.symbols
        for d in dependencies
        for e in d.facts.elves
        if e.info is not None and e.info.symbols is not None
    ]
    system_names = {n for e in facts.elves if e.info for n in e.info.needed if n in allowed}
    system = [system_library(arch, n) for n in sorted(system_names | set(INTERPRETER_LIBRARIES))]
    tables += [p.symbols for p in system if p is not None]
    host_versions = {v for p in system if p is not None for v in p.symbols.versions}
    at_hand = _Definitions(tables)

    missing: list[MissingSymbol] = []
    checked = unchecked = plugins = 0
    absent: set[str] = set()
    needed_here = {n for e in facts.elves if e.info is not None for n in e.info.needed}
    for elf in facts.elves:
        if elf.info is None or elf.info.symbols is None:
            continue
        base = posixpath.basename(elf.path)
        hosted = (
            linked
            or base in needed_here
            or elf.info.soname in needed_here
            or elf.info.kind == "executable"
            or _EXTENSION.search(base) is not None
            or elf.info.symbols.defines(b"PyInit_" + base.split(".")[0].encode(), None)
        )
        if elf.info.symbols.too_many:
            unchecked += 1
            continue
        closure, lacking = _closure(elf, provider_for)
        absent |= lacking
        candidates = [n for n in elf.info.needed if n not in allowed] or list(elf.info.needed)
        for ref in elf.info.symbols.undefined:
            if ref.name.startswith(INTERPRETER_PREFIXES):
                continue
            raw = ref.raw
            if at_hand.define(raw, ref.version) or any(
                p.symbols.defines(raw, ref.version) for p in closure
            ):
                checked += 1
                continue
            system_ref = ref.library is not None and (
                ref.library in allowed or ref.library.startswith(LOADER_PREFIXES)
            )
            if ref.version is not None and system_ref and ref.version not in host_versions:
                unchecked += 1  # a version this machine's library lacks: RF-V040's concern
            elif ref.library is not None and ref.library not in {p.name for p in closure}:
                unchecked += 1
                absent.add(ref.library)
            elif ref.library is None and (lacking or not hosted):
                unchecked += 1  # a library not at hand, or the unknown program of a plugin
                plugins += not hosted
            else:
                checked += 1
                missing.append(
                    MissingSymbol(
                        library=ref.library or " or ".join(candidates) or "no library",
                        symbol=ref.name,
                        version=ref.version,
                        needed_by=elf.path,
                    )
                )
    return Contract(
        missing=tuple(missing),
        checked=checked,
        unchecked=unchecked,
        not_at_hand=tuple(sorted(absent)),
        in_plugins=plugins,
    )


class _Definitions:
    """Many symbol tables asked at once."""

    def __init__(self, tables: Iterable[SymbolTable]) -> None:
        self.tables = list(tables)

    def define(self, name: bytes, version: str | None) -> bool:
        if version is None:
            hashed = name_hash(name)
            return any(contains(t.defined, hashed) for t in self.tables)
        return any(t.defines(name, version) for t in self.tables)


def _closure(
    elf: ElfMember, provider_for: Callable[[str, str], _Provider | None]
) -> tuple[list[_Provider], set[str]]:
    """The libraries `elf` loads, transitively, that are at hand; and the names not at hand."""
    assert elf.info is not None
    seen: set[str] = set()
    found: list[_Provider] = []
    lacking: set[str] = set()
    queue = [(elf.path, n) for n in elf.info.needed]
    while queue:
        needing, name = queue.pop(0)
        if name in seen:
            continue
        seen.add(name)
        provider = provider_for(needing, name)
        if provider is None:
            lacking.add(name)
            continue
        found.append(provider)
        queue += [(provider.path or name, n) for n in provider.needed]
    return found, lacking


def demangle(names: Iterable[str]) -> dict[str, str]:
    """C++ names demangled with binutils' c++filt when it is installed (else as they are)."""
    names = list(dict.fromkeys(names))
    tool = shutil.which("c++filt")
    if not names or tool is None:
        return {n: n for n in names}
    try:
        done = subprocess.run(
            [tool], input="\n".join(names) + "\n", capture_output=True, text=True, check=True
        )
    except (OSError, subprocess.CalledProcessError):
        return {n: n for n in names}
    lines = done.stdout.splitlines()
    if len(lines) != len(names):
        return {n: n for n in names}
    return dict(zip(names, lines, strict=True))


def describe(contract: Contract) -> list[str]:
    """One line per library: how many symbols are missing, the first ones demangled, and a file
    that needs them."""
    grouped: dict[str, list[MissingSymbol]] = {}
    for item in contract.missing:
        grouped.setdefault(item.library, []).append(item)
    pretty = demangle(m.symbol for group in grouped.values() for m in group[:SHOWN])
    out = []
    for library, group in sorted(grouped.items()):
        shown = ", ".join(
            pretty.get(m.symbol, m.symbol) + (f"@{m.version}" if m.version else "")
            for m in group[:SHOWN]
        )
        more = f" (+{len(group) - SHOWN} more)" if len(group) > SHOWN else ""
        files = sorted({m.needed_by for m in group})
        out.append(
            f"{library}: {len(group)} missing: {shown}{more} — needed by {files[0]}"
            + (f" and {len(files) - 1} more files" if len(files) > 1 else "")
        )
    return out


@artifact("RF-V046", "abi-contract",
          "Every undefined dynamic symbol of every ELF file is defined (with its version) by the "
          "wheel, an allowed system library, the interpreter or a dependency wheel at hand "
          "(--with); missing symbols are named demangled, by library.")  # fmt: skip
def _abi_contract(facts: WheelFacts, expect: Expectation) -> Outcome:
    if not facts.elves:
        return "skip", "no ELF files"
    if not any(e.info is not None and e.info.symbols is not None for e in facts.elves):
        return "skip", "symbols not read"
    contract = check_contract(facts, expect.dependencies, linked=expect.linked)
    if contract.missing:
        return "fail", "; ".join(describe(contract))
    reasons = []
    if contract.not_at_hand:
        reasons.append(f"{', '.join(contract.not_at_hand[:6])} not at hand")
    if contract.in_plugins:
        reasons.append(f"{contract.in_plugins} in plugins of another program")
    note = f", {contract.unchecked} unchecked: {'; '.join(reasons)}" if contract.unchecked else ""
    return "pass", f"{contract.checked} symbol references resolved{note}"
