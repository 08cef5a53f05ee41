"""What a macOS or Windows platform tag promises about the binaries of its wheel: the macOS
version and architectures of `macosx_11_0_arm64` / `macosx_10_13_universal2`, the machine of
`win_amd64` / `win_arm64` / `win32`, and which binary format a tag's OS loads.

The macOS architecture groups are those of packaging's `mac_platforms` (universal2 = x86_64 and
arm64; intel = x86_64 and i386); architectures are named as the binary readers name them
(`aarch64` for arm64, `i686` for i386).
"""

from __future__ import annotations

from dataclasses import dataclass

from relforge.wheelplatform import parse_platform_tag

MACOS_ARCHES: dict[str, frozenset[str]] = {
    "arm64": frozenset({"aarch64"}),
    "x86_64": frozenset({"x86_64"}),
    "universal2": frozenset({"x86_64", "aarch64"}),
    "intel": frozenset({"x86_64", "i686"}),
    "i386": frozenset({"i686"}),
    "universal": frozenset({"x86_64", "i686"}),  # ppc and ppc64 too, which no one builds now
}
WINDOWS_MACHINES = {"win_amd64": "x86_64", "win_arm64": "aarch64", "win32": "i686"}


@dataclass(frozen=True)
class MacosTag:
    version: tuple[int, int]
    arches: frozenset[str]

    @property
    def version_text(self) -> str:
        return f"{self.version[0]}.{self.version[1]}"


def macos_tag(platform_tag: str) -> MacosTag | None:
    """`macosx_11_0_arm64` → MacosTag((11, 0), {aarch64}); None for other tags."""
    tag = parse_platform_tag(platform_tag)
    if tag is None or tag.family != "macosx" or tag.version is None:
        return None
    arches = MACOS_ARCHES.get(tag.arch)
    return None if arches is None else MacosTag(tag.version, arches)


def windows_machine(platform_tag: str) -> str | None:
    """`win_amd64` → x86_64; None for other tags."""
    return WINDOWS_MACHINES.get(platform_tag)


def tag_format(platform_tag: str) -> str | None:
    """The binary format a tag's OS loads: ELF, Mach-O or PE (None: `any` and unknown tags)."""
    if platform_tag.startswith(("manylinux", "musllinux", "linux_")):
        return "ELF"
    if platform_tag.startswith("macosx_"):
        return "Mach-O"
    if platform_tag.startswith("win"):
        return "PE"
    return None
