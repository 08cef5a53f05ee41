"""The limited-API check (RF-V047): an abi3 wheel (`cp39-abi3-…`) promises one build for every
CPython from its floor (3.9) on, which holds only when its extension modules import nothing of
the interpreter but the stable ABI as it stood at the floor, and load under any version's name.

Looked at, symbol by symbol, in every ELF file of the wheel (as abi3audit does):
  - an undefined `Py*`/`_Py*` symbol that no file of the wheel defines must be a function or
    data symbol of the stable ABI added at or before the floor (resources/limited_api.yaml,
    refreshed from CPython's Misc/stable_abi.toml by scripts/refresh_limited_api.py);
  - an extension module must be named `*.abi3.so` or plain `*.so`: CPython 3.10 does not import
    `*.cpython-39-x86_64-linux-gnu.so`.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from importlib import resources

import yaml
from packaging.tags import parse_tag

from relforge.validate.checkregistry import Expectation, Outcome, artifact
from relforge.validate.facts import WheelFacts

PREFIXES = ("Py", "_Py")
SHOWN = 12  # symbols named in the message
_VERSION_SPECIFIC = re.compile(r"\.cpython-\d+[^/]*\.so$")


@dataclass(frozen=True, kw_only=True)
class StableSymbol:
    kind: str  # function | data
    added: tuple[int, int]
    abi_only: bool = False


@functools.cache
def stable_abi() -> dict[str, StableSymbol]:
    """Every function and data symbol of the stable ABI, by name (shipped data)."""
    text = resources.files("relforge.resources").joinpath("limited_api.yaml").read_text("utf-8")
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    data = yaml.load(text, Loader=loader)  # a safe loader (the C one when built)
    return {
        name: StableSymbol(
            kind=str(item["kind"]),
            added=_minor(str(item["added"])),
            abi_only=bool(item.get("abi_only", False)),
        )
        for name, item in data["symbols"].items()
    }


def _minor(text: str) -> tuple[int, int]:
    major, minor = text.split(".")[:2]
    return int(major), int(minor)


def abi3_floor(facts: WheelFacts) -> tuple[int, int] | None:
    """(3, 9) for a `cp39-abi3-…` wheel; None for a wheel of one Python (or none)."""
    floors = [
        (int(tag.interpreter[2]), int(tag.interpreter[3:]))
        for text in facts.tags
        for tag in parse_tag(text)
        if tag.abi == "abi3" and tag.interpreter[:2] == "cp" and tag.interpreter[2:].isdigit()
    ]
    return min(floors) if floors else None


def problems(facts: WheelFacts, floor: tuple[int, int]) -> tuple[list[str], int]:
    """What breaks the floor's limited API, and how many interpreter symbols were checked."""
    table = stable_abi()
    shown = f"{floor[0]}.{floor[1]}"
    found: list[str] = []
    defined = [e.info.symbols for e in facts.elves if e.info is not None and e.info.symbols]
    checked = 0
    for elf in facts.elves:
        if _VERSION_SPECIFIC.search(elf.path):
            found.append(f"{elf.path}: named for one CPython version; an abi3 module is *.abi3.so")
        symbols = elf.info.symbols if elf.info is not None else None
        if symbols is None:
            continue
        for ref in symbols.undefined:
            if not ref.name.startswith(PREFIXES) or any(
                t.defines(ref.raw, ref.version) for t in defined if t is not symbols
            ):
                continue
            checked += 1
            known = table.get(ref.name)
            if known is None:
                found.append(f"{elf.path}: {ref.name} is not in the stable ABI")
            elif known.added > floor:
                added = f"{known.added[0]}.{known.added[1]}"
                found.append(f"{elf.path}: {ref.name} came in {added}, after the floor {shown}")
    return found, checked


@artifact("RF-V047", "limited-api",
          "An abi3 wheel's ELF files import only the stable ABI of its floor (cp39-abi3: what "
          "CPython 3.9 offered) and its extension modules are named *.abi3.so, so one build "
          "loads on every later CPython.")  # fmt: skip
def _limited_api(facts: WheelFacts, expect: Expectation) -> Outcome:
    floor = abi3_floor(facts)
    if floor is None:
        return "skip", "not an abi3 wheel"
    if not facts.elves:
        return "skip", "no ELF files"
    if any(e.info is not None and e.info.symbols and e.info.symbols.too_many for e in facts.elves):
        return "skip", "too many undefined symbols to check"
    found, checked = problems(facts, floor)
    if found:
        more = f" (and {len(found) - SHOWN} more)" if len(found) > SHOWN else ""
        return "fail", "; ".join(found[:SHOWN]) + more
    return "pass", (
        f"{checked} interpreter symbol reference(s), all in the stable ABI of {floor[0]}.{floor[1]}"
    )
