"""Memory stays bounded on any input: a 4 MB wheel declaring a 4 GiB member whose headers point
far into it.  Peak RSS is measured in a fresh process (VmHWM of /proc/self/status) — memory is
behaviour, not timing."""

from __future__ import annotations

import json
import struct
import subprocess
import sys
import zlib
from pathlib import Path
from typing import Any

import pytest

from tests.wheelfactory import record_hash

GIB = 1 << 30
MIB = 1 << 20
BOUND = 300 * MIB  # the bound, plus the mapped file (added per wheel below)


def _deflate_zeros_after(head: bytes, size: int) -> tuple[bytes, int]:
    """Raw deflate data of `head` followed by zeros up to `size`, and its CRC-32, built from
    one full-flushed MiB of zeros repeated (identical bytes after each Z_FULL_FLUSH)."""
    assert len(head) <= MIB and size % MIB == 0
    c = zlib.compressobj(9, zlib.DEFLATED, -15)
    first = c.compress(head + bytes(MIB - len(head))) + c.flush(zlib.Z_FULL_FLUSH)
    block = c.compress(bytes(MIB)) + c.flush(zlib.Z_FULL_FLUSH)
    again = c.compress(bytes(MIB)) + c.flush(zlib.Z_FULL_FLUSH)
    assert again == block
    last = c.compress(bytes(MIB)) + c.flush()
    middle = size // MIB - 2
    crc = zlib.crc32(head + bytes(MIB - len(head)))
    zeros = bytes(64 * MIB)
    for _ in range((size - MIB) // len(zeros)):
        crc = zlib.crc32(zeros, crc)
    crc = zlib.crc32(bytes((size - MIB) % len(zeros)), crc)
    return first + block * middle + last, crc


def _zip(path: Path, members: list[tuple[str, bytes, int, int, int]]) -> None:
    """Write a zip by hand: (name, raw deflate data, size, crc, method); zip64 extras for all."""
    out = bytearray()
    central = bytearray()
    for name, data, size, crc, method in members:
        offset = len(out)
        raw = name.encode()
        extra = struct.pack("<HHQQ", 1, 16, size, len(data))
        out += struct.pack(
            "<IHHHHHIIIHH", 0x04034B50, 45, 0, method, 0, 0x21, crc,
            0xFFFFFFFF, 0xFFFFFFFF, len(raw), len(extra),
        )  # fmt: skip
        out += raw + extra + data
        extra = struct.pack("<HHQQQ", 1, 24, size, len(data), offset)
        central += struct.pack(
            "<IHHHHHHIIIHHHHHII", 0x02014B50, 45 | (3 << 8), 45, 0, method, 0, 0x21, crc,
            0xFFFFFFFF, 0xFFFFFFFF, len(raw), len(extra), 0, 0, 0, 0o100644 << 16, 0xFFFFFFFF,
        )  # fmt: skip
        central += raw + extra
    start = len(out)
    out += central
    out += struct.pack(
        "<IHHHHIIH", 0x06054B50, 0, 0, len(members), len(members), len(central), start, 0
    )
    path.write_bytes(bytes(out))


def _deflated(data: bytes) -> tuple[str, bytes, int, int, int]:
    c = zlib.compressobj(6, zlib.DEFLATED, -15)
    return "", c.compress(data) + c.flush(), len(data), zlib.crc32(data), 8


def _elf_header(*, shoff: int, shnum: int, dynamic_at: int, strsz: int) -> bytes:
    """A 64-bit shared object: one PT_LOAD over the first 4 GiB, PT_DYNAMIC at `dynamic_at`
    (DT_STRTAB at 8 KiB, DT_STRSZ `strsz`, DT_SYMTAB), section headers at `shoff`."""
    phoff, phnum = 64, 2
    header = b"\x7fELF" + bytes([2, 1, 1]) + bytes(9)
    header += struct.pack(
        "<HHIQQQIHHHHHH", 3, 62, 1, 0, phoff, shoff, 0, 64, 56, phnum, 64, shnum, 0
    )
    header += struct.pack("<IIQQQQQQ", 1, 5, 0, 0, 0, 4 * GIB, 4 * GIB, 4096)
    header += struct.pack("<IIQQQQQQ", 2, 6, dynamic_at, dynamic_at, 0, 64, 64, 8)
    dynamic = struct.pack("<qQqQqQqQ", 5, 8192, 10, strsz, 6, 12288, 0, 0)
    out = bytearray(header.ljust(4096, b"\0"))
    if dynamic_at == 4096:
        out += dynamic
    return bytes(out)


def hostile_wheel(directory: Path, head: bytes, size: int = 4 * GIB) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    data, crc = _deflate_zeros_after(head, size)
    so = "hostile/_big.cpython-311-x86_64-linux-gnu.so"
    dist_info = "hostile-1.0.dist-info"
    metadata = b"Metadata-Version: 2.1\nName: hostile\nVersion: 1.0\n"
    wheel = (
        b"Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: false\n"
        b"Tag: cp311-cp311-manylinux_2_28_x86_64\n"
    )
    record = "\n".join(
        [
            f"{dist_info}/METADATA,{record_hash(metadata)},{len(metadata)}",
            f"{dist_info}/WHEEL,{record_hash(wheel)},{len(wheel)}",
            f"{so},sha256=unchecked,{size}",
            f"{dist_info}/RECORD,,",
        ]
    ).encode()
    members = [(so, data, size, crc, 8)]
    for member, text in (
        (f"{dist_info}/METADATA", metadata),
        (f"{dist_info}/WHEEL", wheel),
        (f"{dist_info}/RECORD", record),
    ):
        members.append((member, *_deflated(text)[1:]))
    path = directory / "hostile-1.0-cp311-cp311-manylinux_2_28_x86_64.whl"
    _zip(path, members)
    return path


# The peak is read from /proc/self/status (VmHWM: this process image's high-water mark since
# exec).  getrusage's ru_maxrss is not: Linux carries it across fork and exec, so it reports the
# launching pytest worker's own peak when that is the larger.
MEASURE = """
import json, sys
from pathlib import Path
from relforge.validate.inspect import inspect_wheel
found = inspect_wheel(Path(sys.argv[1]))
status = Path("/proc/self/status").read_text()
hwm = next(line for line in status.splitlines() if line.startswith("VmHWM:"))
print(json.dumps({
    "maxrss": int(hwm.split()[1]) * 1024,
    "error": found.facts.error,
    "elves": [[e.path, e.error] for e in found.facts.elves],
    "failed": sorted(v.check for v in found.verdicts if v.status == "fail"),
}))
"""


def measured(wheel: Path) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, "-c", MEASURE, str(wheel)], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr[-3000:]
    result: dict[str, Any] = json.loads(done.stdout)
    return result


@pytest.mark.slow
@pytest.mark.parametrize(
    "case, head",
    [
        # section headers at 2 GiB: reached by inflating 2 GiB (streamed past, not kept)
        ("shoff-2GiB", _elf_header(shoff=2 * GIB, shnum=64, dynamic_at=4096, strsz=64)),
        # section headers near the end: a tail pass over a huge run of zeros
        ("shoff-end", _elf_header(shoff=4 * GIB - 8192, shnum=64, dynamic_at=4096, strsz=64)),
        # the dynamic section at 3 GiB
        ("dynamic-3GiB", _elf_header(shoff=0, shnum=0, dynamic_at=3 * GIB, strsz=64)),
        # a string table of 3 GiB: one read larger than we hold
        ("strsz-3GiB", _elf_header(shoff=0, shnum=0, dynamic_at=4096, strsz=3 * GIB)),
    ],
)
def test_a_4gib_member_is_inspected_in_bounded_memory(
    tmp_path: Path, case: str, head: bytes
) -> None:
    wheel = hostile_wheel(tmp_path, head)
    assert wheel.stat().st_size < 5_000_000
    result = measured(wheel)
    assert result["error"] is None
    assert result["maxrss"] <= BOUND + wheel.stat().st_size, result
    [(path, error)] = result["elves"]
    assert path.endswith("_big.cpython-311-x86_64-linux-gnu.so")
    if case == "strsz-3GiB":
        assert "too large to inspect" in error and "RF-V044" in result["failed"]


@pytest.mark.slow
def test_a_huge_metadata_member_is_a_clear_verdict(tmp_path: Path) -> None:
    """METADATA declared (and inflating) to 1 GiB: refused whole, in bounded memory."""
    big, crc = _deflate_zeros_after(b"Metadata-Version: 2.1\n", GIB)
    directory = tmp_path / "w"
    directory.mkdir()
    path = directory / "huge-1.0-py3-none-any.whl"
    _zip(
        path,
        [
            ("huge-1.0.dist-info/METADATA", big, GIB, crc, 8),
            ("huge-1.0.dist-info/WHEEL", *_deflated(b"Wheel-Version: 1.0\n")[1:]),
            ("huge-1.0.dist-info/RECORD", *_deflated(b"")[1:]),
        ],
    )
    result = measured(path)
    assert "METADATA: too large to inspect" in str(result["error"])
    assert result["maxrss"] <= BOUND + path.stat().st_size
