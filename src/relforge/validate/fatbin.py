"""CUDA fat binaries (`.nv_fatbin`, `__nv_relfatbin`): the list of entries, from their headers.

A fat binary section holds one or more containers, each a 16-byte header — magic 0xBA55ED50,
version (u16), header size (u16), size of the entries that follow (u64) — then its entries.
Every entry starts with a header of its own, read here field by field (little-endian):

    0  u16 kind            1 = PTX, 2 = ELF (a cubin: SASS)
    4  u32 header size     the payload starts this far from the entry's start (64 and up)
    8  u64 payload size    bytes stored after the header (padded)
    16 u32 compressed size 0 when stored as is
    28 u32 arch            compute capability as XY (90 for 9.0, 120 for 12.0)
    40 u64 flags           0x1 64-bit, 0x10 Linux, 0x2000 LZ4, 0x8000 zstd compressed,
                           0x100000 arch-specific (`sm_90a`), 0x200000 family (`sm_100f`)
    56 u64 uncompressed size

Facts read off nvcc 13.0's output (`-gencode`, `-Xfatbin -compress-all`, `-compress-mode`
default/size/speed/balance/none, `-rdc=true` objects) by the tests, which build real fat
binaries; no payload is ever read or inflated.
"""

from __future__ import annotations

import struct

from relforge.validate.devicecode import DeviceCodeError, DeviceImage, Section
from relforge.validate.streams import ByteSource

MAGIC = 0xBA55ED50
CONTAINER = struct.Struct("<IHHQ")
ENTRY = struct.Struct("<HHIQIIHHIIIQQQ")
KIND_PTX, KIND_ELF = 1, 2
FLAG_LZ4, FLAG_ZSTD = 0x2000, 0x8000
FLAG_ARCH_SPECIFIC, FLAG_FAMILY = 0x100000, 0x200000
# torch 2.14.1's libtorch_cuda.so: 475 containers, 2,975 entries.  A section claiming more
# entries than this is not believed (each costs a read).
MAX_ENTRIES = 1 << 16
MAX_HEADER = 1 << 12


def read_fatbin(src: ByteSource, section: Section, endian: str) -> list[DeviceImage]:
    """Every entry of the section's containers; DeviceCodeError on anything malformed (with
    the entries read before it).  Reads walk forward: `ByteSource.read_forward`."""
    images: list[DeviceImage] = []
    try:
        _walk(src, section, images)
    except DeviceCodeError as exc:
        raise DeviceCodeError(str(exc), images=images) from None
    return images


def _walk(src: ByteSource, section: Section, images: list[DeviceImage]) -> None:
    at, end = section.offset, section.offset + section.size
    reads = 0
    while at + CONTAINER.size <= end:
        reads += 1
        if reads > MAX_ENTRIES:
            raise DeviceCodeError(f"more than {MAX_ENTRIES} entries and containers: not believed")
        head = src.read_forward(at, CONTAINER.size)
        magic, _, header, size = CONTAINER.unpack(head)
        if magic != MAGIC:
            if not any(head[:8]):
                at += 8  # alignment padding between or after containers
                continue
            raise DeviceCodeError(f"no fat binary magic at {at - section.offset:#x}")
        if header < CONTAINER.size:
            raise DeviceCodeError(f"a container header of {header} bytes")
        entry, stop = at + header, at + header + size
        if stop > end:
            raise DeviceCodeError(
                f"the container at {at - section.offset:#x} claims {size} bytes, past the "
                f"section's end"
            )
        while entry + ENTRY.size <= stop:
            reads += 1
            if reads > MAX_ENTRIES:
                raise DeviceCodeError(
                    f"more than {MAX_ENTRIES} entries and containers: not believed"
                )
            image, entry = _entry(src, entry, stop, section)
            images.append(image)
        at = stop


def _entry(src: ByteSource, at: int, stop: int, section: Section) -> tuple[DeviceImage, int]:
    """The entry at `at` and where the next one starts."""
    fields = ENTRY.unpack(src.read_forward(at, ENTRY.size))
    kind, _, header, payload, compressed_size, _, _, _, arch, _, _, flags, _, _ = fields
    where = f"the entry at {at - section.offset:#x}"
    if header < ENTRY.size or header > MAX_HEADER:
        raise DeviceCodeError(f"{where} has a header of {header} bytes")
    if at + header + payload > stop:
        raise DeviceCodeError(f"{where} claims {payload} bytes, past its container's end")
    if kind not in (KIND_PTX, KIND_ELF):
        raise DeviceCodeError(f"{where} is of unknown kind {kind}")
    major, minor = divmod(arch, 10)
    if not 1 <= major <= 99:
        raise DeviceCodeError(f"{where} names compute capability {arch}")
    suffix = "a" if flags & FLAG_ARCH_SPECIFIC else "f" if flags & FLAG_FAMILY else ""
    prefix = "sm" if kind == KIND_ELF else "compute"
    compressed = "zstd" if flags & FLAG_ZSTD else "lz4" if flags & FLAG_LZ4 else ""
    if not compressed and compressed_size:
        compressed = "compressed"
    image = DeviceImage(
        kind="sass" if kind == KIND_ELF else "ptx",
        arch=f"{prefix}_{arch}{suffix}",
        capability=(major, minor),
        suffix=suffix,
        compressed=compressed,
        size=payload,
        section=section.name,
    )
    return image, at + header + payload
