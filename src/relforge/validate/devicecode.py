"""The device code an ELF file carries: CUDA fat binaries and HIP offload bundles, found by
their sections and read entry header by entry header (never a payload).

Sections: `.nv_fatbin` (device code linked into a program or library), `__nv_relfatbin`
(relocatable device code: `nvcc -rdc=true` objects), `.hip_fatbin` (HIP's clang offload
bundles).  The readers are fatbin.py (CUDA) and hipbundle.py (ROCm); both are bounded like the
rest of the ELF reader: a size past its section, a loop, an absurd count ends in a `DeviceCode`
with an `error`, never a hang or an exception.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from relforge.validate.streams import ByteSource

ImageKind = Literal["sass", "ptx", "gfx"]
CUDA_SECTIONS = (".nv_fatbin", "__nv_relfatbin")
HIP_SECTIONS = (".hip_fatbin",)
DEVICE_SECTIONS = (*CUDA_SECTIONS, *HIP_SECTIONS)
# Section tables of real files have tens of entries (libtorch_cuda.so: 34); more than this is
# not a file a compiler wrote.
MAX_SECTIONS = 1 << 16


class DeviceCodeError(Exception):
    """The device code cannot be read as it stands (the message says where and why);
    `images`: the entries read before the fault."""

    def __init__(self, message: str, *, images: Sequence[DeviceImage] = ()) -> None:
        super().__init__(message)
        self.images = tuple(images)


@dataclass(frozen=True, kw_only=True)
class DeviceImage:
    """One entry of a fat binary or offload bundle.

    CUDA: `kind` "sass" (a cubin for `sm_XY`) or "ptx" (`compute_XY`, JIT-compiled by the
    driver), `capability` (X, Y) and `suffix` "" / "a" (arch-specific: runs only on exactly
    X.Y) / "f" (family-specific).  ROCm: kind "gfx", `arch` the target ID (`gfx90a:xnack+`).
    """

    kind: ImageKind
    arch: str  # sm_90a, compute_120, gfx942:sramecc+:xnack-
    capability: tuple[int, int] = (0, 0)
    suffix: str = ""
    compressed: str = ""  # "", "lz4", "zstd", "zlib", "compressed"
    size: int = 0  # payload bytes as stored
    section: str = ""

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "arch": self.arch,
            "compressed": self.compressed or None,
            "size": self.size,
            "section": self.section,
        }


@dataclass(frozen=True, kw_only=True)
class DeviceCode:
    """What one ELF file carries (`images` in file order); `error` when a section could not be
    read to its end (the images read before the fault are kept)."""

    images: tuple[DeviceImage, ...] = ()
    sections: tuple[str, ...] = field(default=())  # the device sections found
    error: str | None = None

    @property
    def present(self) -> bool:
        """Whether there is something to judge: device code, or sections that failed."""
        return bool(self.images or self.sections or self.error)

    def sass(self) -> tuple[str, ...]:
        return _unique(i.arch for i in self.images if i.kind == "sass")

    def ptx(self) -> tuple[str, ...]:
        return _unique(i.arch for i in self.images if i.kind == "ptx")

    def gfx(self) -> tuple[str, ...]:
        return _unique(i.arch for i in self.images if i.kind == "gfx")

    def summary(self) -> str:
        """`SASS sm_80, sm_90; PTX compute_90` (what `cuobjdump --list-elf --list-ptx` lists)."""
        parts = []
        for label, names in (("SASS", self.sass()), ("PTX", self.ptx()), ("HIP", self.gfx())):
            if names:
                parts.append(f"{label} {', '.join(names)}")
        return "; ".join(parts) or "no device code"

    def to_json(self) -> dict[str, Any]:
        return {
            "sections": list(self.sections),
            "sass": list(self.sass()),
            "ptx": list(self.ptx()),
            "gfx": list(self.gfx()),
            "images": [i.to_json() for i in self.images],
            "error": self.error,
        }


def _unique(names: Any) -> tuple[str, ...]:
    return tuple(sorted(set(names), key=_arch_order))


def _arch_order(name: str) -> tuple[int, str]:
    digits = "".join(c for c in name.split("_")[-1] if c.isdigit())
    return (int(digits) if digits else 0, name)


@dataclass(frozen=True)
class Section:
    name: str
    offset: int
    size: int
    nobits: bool


SectionReader = Callable[[ByteSource, Section, str], list[DeviceImage]]


def read_sections(
    src: ByteSource, endian: str, bits: int, table: tuple[int, int], entsize: int, strndx: int
) -> list[Section]:
    """Every section's name, file offset and size, from the section header table at `table`
    (offset, bytes) and its string table (section `strndx`)."""
    offset, size = table
    fmt = endian + ("IIQQQQIIQQ" if bits == 64 else "IIIIIIIIII")
    if not size or entsize < struct.calcsize(fmt):
        return []
    count = size // entsize
    if count > MAX_SECTIONS:
        raise DeviceCodeError(f"{count} section headers: not believed")
    if offset + count * entsize > src.size:
        raise DeviceCodeError(
            f"the section header table ({count} x {entsize} bytes at {offset}) runs past the "
            f"end of the file ({src.size} bytes)"
        )
    data = src.read(offset, count * entsize)
    raw = [struct.unpack_from(fmt, data, i * entsize) for i in range(count)]
    if not 0 < strndx < count:
        return []
    names_at, names_size = raw[strndx][4], raw[strndx][5]
    if names_at + names_size > src.size:
        raise DeviceCodeError("the section name table lies past the end of the file")
    names = src.read(names_at, names_size)
    out = []
    for fields in raw:
        name_offset, kind, sh_offset, sh_size = fields[0], fields[1], fields[4], fields[5]
        end = names.find(b"\x00", name_offset)
        if name_offset >= len(names) or end < 0:
            continue
        name = names[name_offset:end].decode("utf-8", "replace")
        out.append(Section(name, sh_offset, sh_size, kind == 8))  # SHT_NOBITS
    return out


def read_device_code(
    src: ByteSource, sections: list[Section], endian: str, readers: dict[str, SectionReader]
) -> DeviceCode | None:
    """The device code of the sections `readers` knows (None: the file has none of them)."""
    found = [s for s in sections if s.name in readers and not s.nobits and s.size]
    if not found:
        return None
    images: list[DeviceImage] = []
    for section in found:
        if section.offset + section.size > src.size:
            return DeviceCode(
                images=tuple(images),
                sections=tuple(s.name for s in found),
                error=f"{section.name}: {section.size} bytes at {section.offset} run past the "
                f"end of the file ({src.size} bytes)",
            )
        try:
            images += readers[section.name](src, section, endian)
        except DeviceCodeError as exc:
            return DeviceCode(
                images=(*images, *exc.images),
                sections=tuple(s.name for s in found),
                error=f"{section.name}: {exc}",
            )
        except (struct.error, ValueError) as exc:
            return DeviceCode(
                images=tuple(images),
                sections=tuple(s.name for s in found),
                error=f"{section.name}: malformed ({exc})",
            )
    return DeviceCode(images=tuple(images), sections=tuple(dict.fromkeys(s.name for s in found)))
