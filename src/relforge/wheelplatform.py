"""A wheel's platform tag, parsed: the one reader of `manylinux_2_28_x86_64`, the legacy
`manylinux1`/`manylinux2010`/`manylinux2014` aliases (PEP 600), `musllinux_1_2_aarch64`
(PEP 656), `macosx_11_0_arm64`, `win_amd64`/`win32` and `linux_x86_64`.

packaging parses a wheel's file name into tags but not a platform tag into its parts; every
module that needs the glibc, musl or macOS version or the architecture of a tag asks here.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

Family = Literal["manylinux", "musllinux", "macosx", "win", "linux"]
_FAMILIES: dict[str, Family] = {
    "manylinux": "manylinux",
    "musllinux": "musllinux",
    "macosx": "macosx",
    "win": "win",
    "linux": "linux",
}

# Legacy manylinux names and the glibc version they stand for (PEP 600).
LEGACY_MANYLINUX: dict[str, tuple[int, int]] = {
    "manylinux1": (2, 5),
    "manylinux2010": (2, 12),
    "manylinux2014": (2, 17),
}
_ARCH = r"([a-z0-9]+(?:_[a-z0-9]+)*)"
_VERSIONED = re.compile(r"(manylinux|musllinux|macosx)_(\d+)_(\d+)_" + _ARCH + r"\Z")
_LEGACY = re.compile(r"(manylinux1|manylinux2010|manylinux2014)_" + _ARCH + r"\Z")
_OTHER = re.compile(r"(win|linux)_" + _ARCH + r"\Z")


@dataclass(frozen=True, kw_only=True)
class ParsedPlatform:
    """`manylinux_2_28_x86_64` → family manylinux, version (2, 28), arch x86_64.

    `version` is the glibc version (manylinux, also for a legacy alias, which `legacy` then
    names), the musl version (musllinux) or the macOS version (macosx); None for win and linux.
    `arch` is written as the tag writes it (`arm64`, `universal2`, `amd64`; `x86` for win32).
    """

    tag: str
    family: Family
    arch: str
    version: tuple[int, int] | None = None
    legacy: str | None = None  # "manylinux2014" when the tag is written with that alias


def parse_platform_tag(tag: str) -> ParsedPlatform | None:
    """The parts of one platform tag; None for anything else (`any`, junk, a compressed tag
    set such as `a.b`: split it at the dots first)."""
    if tag == "win32":
        return ParsedPlatform(tag=tag, family="win", arch="x86")
    if found := _VERSIONED.match(tag):
        family, major, minor, arch = found.groups()
        version = (int(major), int(minor))
        return ParsedPlatform(tag=tag, family=_FAMILIES[family], arch=arch, version=version)
    if found := _LEGACY.match(tag):
        name, arch = found.groups()
        return ParsedPlatform(
            tag=tag, family="manylinux", arch=arch, version=LEGACY_MANYLINUX[name], legacy=name
        )
    if found := _OTHER.match(tag):
        family, arch = found.groups()
        return ParsedPlatform(tag=tag, family=_FAMILIES[family], arch=arch)
    return None


def legacy_manylinux(glibc: tuple[int, int]) -> str | None:
    """The legacy alias of a glibc version (2.17 → manylinux2014), if it has one."""
    return next((name for name, v in LEGACY_MANYLINUX.items() if v == glibc), None)
