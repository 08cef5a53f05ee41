"""CUDA device code read off real fat binaries: shared objects and a relocatable object built by
nvcc 13.0 (two sets of `-gencode`, every `-compress-mode`, `-rdc=true`), a host-only library, and
hostile `.nv_fatbin` sections (written into a gcc-built library, or patched into a real one) that
end in `DeviceCode.error` naming the fault, never in another exception or a long loop."""

from __future__ import annotations

import struct
import subprocess
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from relforge.validate.devicecode import DeviceCode
from relforge.validate.elf import ElfError, read_elf
from relforge.validate.fatbin import MAX_ENTRIES
from relforge.validate.streams import BytesSource

NVCC = "/usr/local/cuda-13.0/bin/nvcc"
KERNEL = """\
__global__ void k(float *x) { x[0] = 1; }
extern "C" void launch(float *x) { k<<<1, 1>>>(x); }
"""
HOST = "int host_only(void) { return 1; }\n"
SHARED = ["-shared", "-Xcompiler", "-fPIC"]
SM80_PTX = ["-gencode", "arch=compute_80,code=[sm_80,compute_80]"]
# -compress-mode → what nvcc 13.0 writes into every entry's flags (checked by building)
MODES = {"default": "zstd", "size": "zstd", "speed": "lz4", "balance": "zstd", "none": ""}
NVCC_BUILDS: dict[str, list[str]] = {
    "plain.so": [
        *SHARED,
        "-gencode", "arch=compute_80,code=sm_80",
        "-gencode", "arch=compute_90,code=[sm_90,compute_90]",
    ],
    "suffixed.so": [
        *SHARED,
        "-gencode", "arch=compute_90a,code=sm_90a",
        "-gencode", "arch=compute_100f,code=[sm_100f,compute_100f]",
        "-gencode", "arch=compute_120,code=compute_120",
    ],
    **{
        f"compress-{mode}.so": [
            *SHARED, "-Xfatbin", "-compress-all", f"-compress-mode={mode}", *SM80_PTX
        ]
        for mode in MODES
    },
    "relocatable.o": ["-rdc=true", "-c", "-Xcompiler", "-fPIC", *SM80_PTX],
}  # fmt: skip

# The fat binary format, written out here independently of relforge.validate.fatbin.
MAGIC = 0xBA55ED50
PTX, ELF = 1, 2
ABSURD = 70_000  # empty containers: more than MAX_ENTRIES
ROOM = ABSURD * 16 + 4096  # the placeholder section of the template library


@dataclass(frozen=True)
class Template:
    """A gcc-built shared object with a `.nv_fatbin` placeholder section: any content of up to
    `room` bytes becomes its section (its sh_size is set to the content's length)."""

    data: bytes
    header: int  # file offset of the section's header
    offset: int  # file offset of the section's content
    room: int

    def with_fatbin(self, blob: bytes) -> bytes:
        assert len(blob) <= self.room
        out = bytearray(self.data)
        out[self.offset : self.offset + len(blob)] = blob
        struct.pack_into("<Q", out, self.header + 32, len(blob))
        return bytes(out)


@dataclass(frozen=True)
class Built:
    binaries: dict[str, bytes]  # NVCC_BUILDS' outputs
    host: bytes  # gcc, no device code
    template: Template


def _compile(folder: Path, name: str, options: Sequence[str]) -> bytes:
    out = folder / name
    subprocess.run(
        [NVCC, *options, str(folder / "kernel.cu"), "-o", str(out)],
        check=True,
        capture_output=True,
    )
    return out.read_bytes()


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Built:
    folder = tmp_path_factory.mktemp("fatbin")
    (folder / "kernel.cu").write_text(KERNEL)
    (folder / "host.c").write_text(HOST)
    with ThreadPoolExecutor(2) as pool:  # nvcc waits on its own subprocesses
        jobs = {n: pool.submit(_compile, folder, n, o) for n, o in NVCC_BUILDS.items()}
        host = folder / "host.so"
        subprocess.run(["gcc", "-shared", "-fPIC", str(folder / "host.c"), "-o", str(host)],
                       check=True)  # fmt: skip
        (folder / "room.bin").write_bytes(b"\xff" * ROOM)
        subprocess.run(
            ["objcopy", "--add-section", f".nv_fatbin={folder / 'room.bin'}",
             "--set-section-flags", ".nv_fatbin=alloc,readonly",
             str(host), str(folder / "template.so")],
            check=True,
            capture_output=True,  # warns that the section is in no segment
        )  # fmt: skip
        binaries = {n: job.result() for n, job in jobs.items()}
    template = (folder / "template.so").read_bytes()
    header, offset, size = sections(template)[".nv_fatbin"]
    assert size == ROOM
    return Built(binaries, host.read_bytes(), Template(template, header, offset, ROOM))


def sections(data: bytes) -> dict[str, tuple[int, int, int]]:
    """name → (file offset of its section header, sh_offset, sh_size) of a 64-bit
    little-endian ELF file."""
    (shoff,) = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3A)

    def header(index: int) -> tuple[int, int, int, int]:
        at = shoff + index * shentsize
        name, _, _, _, offset, size = struct.unpack_from("<IIQQQQ", data, at)
        return at, name, offset, size

    names = header(shstrndx)[2]
    out = {}
    for index in range(shnum):
        at, name, offset, size = header(index)
        end = data.index(b"\x00", names + name)
        out[data[names + name : end].decode()] = (at, offset, size)
    return out


def device_of(data: bytes) -> DeviceCode:
    code = read_elf(BytesSource(data)).device
    assert code is not None
    return code


def container(entries: bytes = b"", *, magic: int = MAGIC, header: int = 16,
              size: int | None = None) -> bytes:  # fmt: skip
    """A container header (magic, version 1, header size, size of what follows) and entries."""
    declared = len(entries) if size is None else size
    return struct.pack("<IHHQ", magic, 1, header, declared) + b"\x00" * (header - 16) + entries


def entry(
    *,
    kind: int = ELF,
    arch: int = 80,
    flags: int = 0x11,
    header: int = 64,
    payload: bytes = b"",
    declared: int | None = None,
    compressed: int = 0,
) -> bytes:
    """One entry: its 64-byte header (padded to `header` bytes when larger, up to 4 KiB), then
    `payload`; `declared`: the payload size written in the header instead of the real one."""
    size = len(payload) if declared is None else declared
    fields = (kind, 0x101, header, size, compressed, 0, 8, 1, arch, 0, 0, flags, 0, 0)
    head = struct.pack("<HHIQIIHHIIIQQQ", *fields)
    return head + b"\x00" * max(0, min(header, 4096) - 64) + payload


def images(code: DeviceCode) -> list[tuple[str, str, str, tuple[int, int]]]:
    return [(i.kind, i.arch, i.suffix, i.capability) for i in code.images]


# --- fat binaries as nvcc 13.0 writes them ---------------------------------------------------


def test_two_gencodes(built: Built) -> None:
    data = built.binaries["plain.so"]
    info = read_elf(BytesSource(data))
    code = info.device
    assert info.kind == "shared object" and code is not None
    assert code.error is None
    assert code.sections == (".nv_fatbin",)
    assert code.sass() == ("sm_80", "sm_90")
    assert code.ptx() == ("compute_90",)
    assert code.summary() == "SASS sm_80, sm_90; PTX compute_90"
    assert {i.section for i in code.images} == {".nv_fatbin"}
    assert {(i.arch, i.capability, i.suffix) for i in code.images} == {
        ("sm_80", (8, 0), ""), ("sm_90", (9, 0), ""), ("compute_90", (9, 0), "")
    }  # fmt: skip
    # Without -compress-all nvcc 13.0 stores the cubins as they are but compresses the PTX.
    assert {i.compressed for i in code.images if i.kind == "sass"} == {""}
    assert {i.compressed for i in code.images if i.kind == "ptx"} == {"zstd"}
    assert code.to_json()["sass"] == ["sm_80", "sm_90"]
    assert code.to_json()["error"] is None


def test_arch_specific_and_family_suffixes(built: Built) -> None:
    code = device_of(built.binaries["suffixed.so"])
    assert code.error is None
    assert code.sass() == ("sm_90a", "sm_100f")
    assert code.ptx() == ("compute_100f", "compute_120")
    assert set(images(code)) == {
        ("sass", "sm_90a", "a", (9, 0)),
        ("sass", "sm_100f", "f", (10, 0)),
        ("ptx", "compute_100f", "f", (10, 0)),
        ("ptx", "compute_120", "", (12, 0)),
    }
    assert code.summary() == "SASS sm_90a, sm_100f; PTX compute_100f, compute_120"


@pytest.mark.parametrize("mode", list(MODES))
def test_compress_modes(built: Built, mode: str) -> None:
    code = device_of(built.binaries[f"compress-{mode}.so"])
    assert code.error is None
    assert code.sass() == ("sm_80",)
    assert code.ptx() == ("compute_80",)
    assert {i.compressed for i in code.images} == {MODES[mode]}
    stored = sum(i.size for i in code.images)
    if MODES[mode]:  # compressed payloads are smaller than the same payloads stored as they are
        assert stored < sum(i.size for i in device_of(built.binaries["compress-none.so"]).images)


def test_relocatable_object(built: Built) -> None:
    data = built.binaries["relocatable.o"]
    assert "__nv_relfatbin" in sections(data)
    assert ".nv_fatbin" not in sections(data)  # nvcc 13.0 -rdc=true -c: only __nv_relfatbin
    info = read_elf(BytesSource(data))
    assert info.kind == "relocatable" and not info.dynamic
    code = info.device
    assert code is not None and code.error is None
    assert code.sections == ("__nv_relfatbin",)
    assert {i.section for i in code.images} == {"__nv_relfatbin"}
    assert code.sass() == ("sm_80",)
    assert code.ptx() == ("compute_80",)
    # what nvcc 13.0 writes for -rdc=true even without -compress-all
    assert {i.compressed for i in code.images} == {"zstd"}


def test_host_only_library_has_no_device_code(built: Built) -> None:
    info = read_elf(BytesSource(built.host))
    assert info.kind == "shared object"
    assert info.device is None


def test_device_false_reads_no_device_code(built: Built) -> None:
    assert read_elf(BytesSource(built.binaries["plain.so"]), device=False).device is None


def test_handmade_fat_binary_reads_like_nvcc_output(built: Built) -> None:
    """The helpers below write what nvcc writes: two containers with padding between them."""
    blob = (
        container(entry(arch=86, payload=b"\x01" * 32))
        + b"\x00" * 8
        + container(
            entry(kind=PTX, arch=86, header=80, flags=0x2011, payload=b"\x02" * 24, compressed=20)
            + entry(arch=100, flags=0x1200011, header=96, payload=b"\x03" * 16)
        )
    )
    code = device_of(built.template.with_fatbin(blob))
    assert code.error is None
    assert images(code) == [
        ("sass", "sm_86", "", (8, 6)),
        ("ptx", "compute_86", "", (8, 6)),
        ("sass", "sm_100f", "f", (10, 0)),
    ]
    assert [i.compressed for i in code.images] == ["", "lz4", ""]
    assert [i.size for i in code.images] == [32, 24, 16]


# --- hostile fat binaries ---------------------------------------------------------------------

HOSTILE: dict[str, tuple[bytes, str]] = {
    "payload past its container": (
        container(entry(declared=1 << 20)),
        "the entry at 0x10 claims 1048576 bytes, past its container's end",
    ),
    "container past the section": (
        container(entry(), size=1 << 20),
        "the container at 0x0 claims 1048576 bytes, past the section's end",
    ),
    "container header of 0": (container(entry(), header=0), "a container header of 0 bytes"),
    "entry header of 0": (container(entry(header=0)), "the entry at 0x10 has a header of 0 bytes"),
    "entry header of 2**31": (
        container(entry(header=1 << 31)),
        "the entry at 0x10 has a header of 2147483648 bytes",
    ),
    "unknown kind": (container(entry(kind=7)), "the entry at 0x10 is of unknown kind 7"),
    "capability 0": (container(entry(arch=0)), "the entry at 0x10 names compute capability 0"),
    "bad magic": (container(entry(), magic=0xDEADBEEF), "no fat binary magic at 0x0"),
    "bad magic after a container": (
        container(entry()) + container(entry(), magic=0x12345678),
        "no fat binary magic at 0x50",
    ),
    "absurd count": (
        container() * ABSURD,
        f"more than {MAX_ENTRIES} entries and containers: not believed",
    ),
}


@pytest.mark.parametrize("case", list(HOSTILE))
def test_hostile_section_ends_in_an_error(built: Built, case: str) -> None:
    blob, message = HOSTILE[case]
    code = device_of(built.template.with_fatbin(blob))
    assert code.sections == (".nv_fatbin",)
    assert code.error == f".nv_fatbin: {message}"


class CountingSource:
    """BytesSource counting the reads that start inside [start, end)."""

    def __init__(self, data: bytes, start: int, end: int) -> None:
        self.inner = BytesSource(data)
        self.start, self.end = start, end
        self.reads = 0

    @property
    def size(self) -> int:
        return self.inner.size

    @property
    def guessed(self) -> bool:
        return False

    def read(self, offset: int, length: int) -> bytes:
        if self.start <= offset < self.end:
            self.reads += 1
        return self.inner.read(offset, length)

    def read_forward(self, offset: int, length: int) -> bytes:
        return self.read(offset, length)

    def set_interest(self, spans: Sequence[tuple[int, int]]) -> None:
        self.inner.set_interest(spans)


def test_absurd_count_stops_at_max_entries_reads(built: Built) -> None:
    t = built.template
    src = CountingSource(t.with_fatbin(container() * ABSURD), t.offset, t.offset + t.room)
    code = read_elf(src).device
    assert code is not None and code.error is not None and "not believed" in code.error
    assert src.reads == MAX_ENTRIES


def test_a_megabyte_of_padding_is_not_believed(built: Built) -> None:
    """Zero bytes between containers are padding, 8 at a time; each costs one read (the header
    read tells padding from a bad magic), and counts against the bound."""
    t = built.template
    src = CountingSource(t.with_fatbin(b"\x00" * (1 << 20)), t.offset, t.offset + t.room)
    code = read_elf(src).device
    assert code is not None
    assert code.error == f".nv_fatbin: more than {MAX_ENTRIES} entries and containers: not believed"
    assert src.reads == MAX_ENTRIES


def _patched(data: bytes, at: int, fmt: str, value: int) -> bytes:
    out = bytearray(data)
    struct.pack_into(fmt, out, at, value)
    return bytes(out)


def test_real_binary_with_a_broken_second_container(built: Built) -> None:
    data = built.binaries["plain.so"]
    _, offset, _ = sections(data)[".nv_fatbin"]
    _, _, header, size = struct.unpack_from("<IHHQ", data, offset)
    second = header + size
    assert struct.unpack_from("<I", data, offset + second) == (MAGIC,)
    code = device_of(_patched(data, offset + second, "<I", 0xDEADBEEF))
    assert code.error == f".nv_fatbin: no fat binary magic at {second:#x}"


def test_images_read_before_a_fault_are_kept(built: Built) -> None:
    """DeviceCode's contract: "the images read before the fault are kept" — here the first
    container's cubins, read before the second container's bad magic."""
    data = built.binaries["plain.so"]
    _, offset, _ = sections(data)[".nv_fatbin"]
    _, _, header, size = struct.unpack_from("<IHHQ", data, offset)
    code = device_of(_patched(data, offset + header + size, "<I", 0xDEADBEEF))
    assert code.error is not None
    assert code.sass() == ("sm_80", "sm_90")
    assert code.ptx() == ()


def test_real_relocatable_object_with_an_unknown_entry_kind(built: Built) -> None:
    data = built.binaries["relocatable.o"]
    _, offset, _ = sections(data)["__nv_relfatbin"]
    code = device_of(_patched(data, offset + 16, "<H", 9))
    assert code.error == "__nv_relfatbin: the entry at 0x10 is of unknown kind 9"
    assert code.sections == ("__nv_relfatbin",)


def test_section_offset_past_the_end_of_the_file(built: Built) -> None:
    data = built.binaries["plain.so"]
    header, _, size = sections(data)[".nv_fatbin"]
    code = device_of(_patched(data, header + 24, "<Q", len(data) + 4096))
    assert code.error == (
        f".nv_fatbin: {size} bytes at {len(data) + 4096} run past the end of the file "
        f"({len(data)} bytes)"
    )
    assert code.images == ()


def test_section_size_past_the_end_of_the_file(built: Built) -> None:
    data = built.binaries["plain.so"]
    header, offset, _ = sections(data)[".nv_fatbin"]
    code = device_of(_patched(data, header + 32, "<Q", 1 << 62))
    assert code.error is not None
    assert code.error.startswith(f".nv_fatbin: {1 << 62} bytes at {offset} run past the end")


def test_section_name_table_past_the_end_of_the_file(built: Built) -> None:
    data = built.binaries["plain.so"]
    (shoff,) = struct.unpack_from("<Q", data, 0x28)
    shentsize, _, shstrndx = struct.unpack_from("<HHH", data, 0x3A)
    names_header = shoff + shstrndx * shentsize
    code = device_of(_patched(data, names_header + 24, "<Q", len(data)))
    assert code.error == "section headers: the section name table lies past the end of the file"


SECTION_TABLE_FAULTS: dict[str, Callable[[bytes], bytes]] = {
    "shoff past the end": lambda d: _patched(d, 0x28, "<Q", len(d) + 64),
    "shentsize of 65535": lambda d: _patched(d, 0x3A, "<H", 0xFFFF),
}


@pytest.mark.parametrize("fault", list(SECTION_TABLE_FAULTS))
@pytest.mark.parametrize("name", ["plain.so", "relocatable.o"])
def test_corrupt_section_header_table(built: Built, name: str, fault: str) -> None:
    """A section header table that cannot be read: a verdict on the device code (DeviceCode's
    error), or an ElfError when the file needs the table otherwise — never another exception."""
    data = SECTION_TABLE_FAULTS[fault](built.binaries[name])
    try:
        info = read_elf(BytesSource(data))
    except ElfError:
        return
    assert info.device is not None and info.device.error is not None


# --- random section contents ------------------------------------------------------------------


@st.composite
def fat_binaries(draw: st.DrawFn) -> bytes:
    """Containers and entries mostly as nvcc writes them, one field in a few drawn at or past
    its limits."""

    def field(usual: st.SearchStrategy[Any], hostile: st.SearchStrategy[Any]) -> Any:
        return draw(hostile if draw(st.integers(0, 15)) == 15 else usual)

    anything = st.integers(0, 2**64 - 1)
    out = b""
    for _ in range(draw(st.integers(1, 4))):
        entries = b""
        for _ in range(draw(st.integers(0, 4))):
            entries += entry(
                kind=field(st.sampled_from([PTX, ELF]), st.sampled_from([0, 3, 0xFFFF])),
                arch=field(st.sampled_from([75, 80, 90, 100, 120]),
                           st.sampled_from([0, 9, 10, 999, 1000, 2**32 - 1])),
                flags=field(st.sampled_from([0x11, 0x2011, 0x8011, 0x100011, 0x1200011]), anything),
                header=field(st.sampled_from([64, 80, 96]),
                             st.sampled_from([0, 63, 4096, 4097, 2**32 - 1])),
                payload=draw(st.binary(max_size=64)),
                declared=field(st.none(), anything),
            )  # fmt: skip
        out += container(
            entries,
            magic=field(st.just(MAGIC), st.sampled_from([0, 0xBA55ED51])),
            header=field(st.just(16), st.sampled_from([0, 8, 24])),
            size=field(st.none(), anything),
        )
        out += b"\x00" * draw(st.sampled_from([0, 0, 8, 16]))
    junk: bytes = field(st.just(b""), st.binary(max_size=24))
    return out + junk


def _check_random_section(built: Built, blob: bytes) -> None:
    t = built.template
    src = CountingSource(t.with_fatbin(blob), t.offset, t.offset + t.room)
    try:
        info = read_elf(src)
    except ElfError:
        return
    code = info.device
    assert code is not None and code.sections == (".nv_fatbin",)
    assert src.reads <= MAX_ENTRIES
    for image in code.images:
        assert image.section == ".nv_fatbin"
        assert image.size <= len(blob)
        assert image.arch.startswith("sm_" if image.kind == "sass" else "compute_")
    if code.error is None:
        assert sum(i.size for i in code.images) <= len(blob)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(blob=st.binary(min_size=1, max_size=2048))
def test_random_bytes_as_a_section(built: Built, blob: bytes) -> None:
    _check_random_section(built, blob)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(blob=fat_binaries())
def test_random_fat_binaries(built: Built, blob: bytes) -> None:
    _check_random_section(built, blob)
