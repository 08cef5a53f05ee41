"""The `.hip_fatbin` reader: clang offload bundles (plain, zlib- and zstd-compressed, several in
one section) written here from the documented format, read alone and through the ELF reader of
a real shared object; hostile bundles end in a DeviceCodeError, quickly."""

from __future__ import annotations

import contextlib
import struct
import subprocess
import sys
import zlib
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from relforge.validate.devicecode import DeviceCodeError, DeviceImage, Section
from relforge.validate.elf import read_elf
from relforge.validate.hipbundle import MAX_INFLATED, MAX_TABLE, read_hip_fatbin
from relforge.validate.streams import BytesSource

HOST = "host-x86_64-unknown-linux-gnu-"
MI200 = "hipv4-amdgcn-amd-amdhsa--gfx90a:xnack+"
MI300 = "hip-amdgcn-amd-amdhsa--gfx942:sramecc+:xnack-"
MAGIC = b"__CLANG_OFFLOAD_BUNDLE__"
ZLIB, ZSTD = 0, 1  # llvm::compression::Format


def bundle(entries: list[tuple[str, bytes]], align: int = 4096) -> bytes:
    """An uncompressed bundle as clang-offload-bundler writes it: the entry table, then each
    payload at the next multiple of `align`."""
    header = len(MAGIC) + 8 + sum(24 + len(t) for t, _ in entries)
    offsets, at = [], header
    for _, payload in entries:
        at = -(-at // align) * align if payload else at
        offsets.append(at)
        at += len(payload)
    out = bytearray(MAGIC + struct.pack("<Q", len(entries)))
    for (triple, payload), offset in zip(entries, offsets, strict=True):
        out += struct.pack("<QQQ", offset, len(payload), len(triple)) + triple.encode()
    for (_, payload), offset in zip(entries, offsets, strict=True):
        out += b"\x00" * (offset - len(out)) + payload
    return bytes(out)


def compressed(
    data: bytes,
    version: int = 3,
    method: int = ZLIB,
    *,
    deflated: bytes | None = None,
    size: int | None = None,
) -> bytes:
    """A CCOB bundle holding `data` (or the compressed bytes given as `deflated`, declaring an
    uncompressed `size`)."""
    if deflated is None:
        deflated = zlib.compress(data) if method == ZLIB else _zstd(data)
    size = len(data) if size is None else size
    head = b"CCOB" + struct.pack("<HH", version, method)
    hash_ = 0x0123456789ABCDEF
    if version == 1:
        return head + struct.pack("<IQ", size, hash_) + deflated
    if version == 2:
        total = len(head) + 16 + len(deflated)
        return head + struct.pack("<IIQ", total, size, hash_) + deflated
    total = len(head) + 24 + len(deflated)
    return head + struct.pack("<QQQ", total, size, hash_) + deflated


def _zstd(data: bytes) -> bytes:
    import zstandard  # a dependency of relforge: no skip

    return bytes(zstandard.ZstdCompressor(level=3).compress(data))


def read(section: bytes, before: bytes = b"") -> list[DeviceImage]:
    """The images of `section`, placed after `before` in a buffer (offsets must not matter)."""
    data = before + section + b"\xff" * 16
    return read_hip_fatbin(
        BytesSource(data), Section(".hip_fatbin", len(before), len(section), False), "<"
    )


def archs(images: list[DeviceImage]) -> list[tuple[str, int, str]]:
    return [(i.arch, i.size, i.compressed) for i in images]


def fails(section: bytes, *words: str) -> str:
    with pytest.raises(DeviceCodeError) as caught:
        read(section)
    message = str(caught.value)
    for word in words:
        assert word in message, message
    return message


TWO = bundle([(HOST, b""), (MI200, b"\x7fELF" + b"a" * 5000), (MI300, b"\x7fELF" + b"b" * 300)])


def test_a_plain_bundle_lists_its_device_entries_not_the_host() -> None:
    images = read(TWO, before=b"\xee" * 100)
    assert archs(images) == [("gfx90a:xnack+", 5004, ""), ("gfx942:sramecc+:xnack-", 304, "")]
    assert {(i.kind, i.section) for i in images} == {("gfx", ".hip_fatbin")}


@pytest.mark.parametrize("version", [1, 2, 3])
def test_a_zlib_compressed_bundle_lists_the_entries_it_holds(version: int) -> None:
    images = read(compressed(TWO, version=version))
    assert archs(images) == [
        ("gfx90a:xnack+", 5004, "zlib"),
        ("gfx942:sramecc+:xnack-", 304, "zlib"),
    ]


@pytest.mark.parametrize("version", [2, 3])
def test_a_zstd_compressed_bundle_lists_the_entries_it_holds(version: int) -> None:
    images = read(compressed(TWO, version=version, method=ZSTD))
    assert archs(images) == [
        ("gfx90a:xnack+", 5004, "zstd"),
        ("gfx942:sramecc+:xnack-", 304, "zstd"),
    ]


def test_without_zstandard_a_zstd_bundle_is_a_verdict(monkeypatch: pytest.MonkeyPatch) -> None:
    section = compressed(TWO, method=ZSTD, deflated=b"\x28\xb5\x2f\xfd" + b"\x00" * 40)
    monkeypatch.setitem(sys.modules, "zstandard", None)  # `import zstandard` fails
    fails(section, "zstd-compressed", "at 0x0", "without the zstandard package")


def test_several_bundles_with_padding_are_walked() -> None:
    gfx906 = bundle([(HOST, b""), ("hip-amdgcn-amd-amdhsa-gfx906", b"c" * 10)], align=1)
    parts = [TWO, compressed(TWO, version=2), gfx906, compressed(gfx906, version=3)]
    section = b"".join(p + b"\x00" * (-len(p) % 4096) for p in parts) + b"\x00" * 70000
    images = read(section)
    assert [(i.arch, i.compressed) for i in images] == [
        ("gfx90a:xnack+", ""),
        ("gfx942:sramecc+:xnack-", ""),
        ("gfx90a:xnack+", "zlib"),
        ("gfx942:sramecc+:xnack-", "zlib"),
        ("gfx906", ""),  # an older clang's triple: the target ID is its fifth part
        ("gfx906", "zlib"),
    ]


def test_an_entry_without_a_target_id_is_named_by_its_arch() -> None:
    section = bundle([("hipv4-spirv64-amd-amdhsa--", b"s" * 8), (HOST, b"")])
    assert archs(read(section)) == [("spirv64", 8, "")]


# Hostile bundles.


def table(count: int, *entries: tuple[int, int, int, bytes]) -> bytes:
    """A bundle header with a `count` of its own choosing and raw entries."""
    rows = [struct.pack("<QQQ", offset, size, length) + t for offset, size, length, t in entries]
    return MAGIC + struct.pack("<Q", count) + b"".join(rows)


def test_an_absurd_entry_count_is_not_believed() -> None:
    fails(table(1 << 62), "bundle at 0x0", "claims 4611686018427387904 entries")


def test_an_entry_table_shorter_than_its_count_is_caught() -> None:
    fails(table(4000, (64, 0, 5, b"host-")), "entry table of the bundle at 0x0", "section's end")


def test_a_triple_longer_than_believed_or_past_the_data_is_caught() -> None:
    fails(table(1, (64, 0, 1 << 40, b"hip")), "entry 0 of the bundle at 0x0", "triple of")
    fails(table(1, (64, 0, 1000, b"hip")), "runs past the section's end")


def test_a_triple_that_is_not_text_is_caught() -> None:
    fails(table(1, (64, 1, 4, b"\xff\xfe\x00\x01")) + b"\x00" * 40, "not text")


def test_an_entry_past_its_bundle_is_caught() -> None:
    at = 4096 * 3
    section = b"\x00" * at + table(1, (1 << 60, 16, len(MI200), MI200.encode())) + b"x" * 99
    fails(section, f"entry 0 of the bundle at {at:#x}", "past the section's end")
    inside = table(1, (8, 64, len(MI200), MI200.encode())) + b"x" * 99
    fails(inside, "inside the entry table")


def test_an_entry_past_a_compressed_bundles_uncompressed_size_is_caught() -> None:
    lying = bytearray(TWO)
    struct.pack_into("<Q", lying, len(MAGIC) + 8 + 24 + len(HOST) + 8, 1 << 30)  # MI200's size
    fails(compressed(bytes(lying)), "entry 1 of the compressed bundle", "uncompressed size")


@pytest.mark.parametrize("version", [2, 3])
def test_a_compressed_total_size_of_zero_or_past_the_section_is_caught(version: int) -> None:
    good = compressed(TWO, version=version)
    size = "<I" if version == 2 else "<Q"
    for total, words in ((0, "no more than its"), (len(good) + 1, "past the section's end")):
        bad = bytearray(good)
        struct.pack_into(size, bad, 8, total)
        fails(b"\x00" * 64 + bytes(bad), "compressed bundle at 0x40", words)


def test_unknown_versions_methods_and_magic_are_caught() -> None:
    fails(compressed(TWO, version=9, deflated=b"x" * 40), "unknown version 9")
    fails(compressed(TWO, method=7, deflated=b"x" * 40), "unknown compression method 7")
    fails(b"\x00" * 32 + b"ELF?" + b"\x00" * 60, "no offload bundle magic at 0x20")
    fails(compressed(b"hello, not a bundle" * 10), "holds no offload bundle magic")
    fails(b"CCOB\x03\x00", "cut off")


def test_corrupt_or_cut_off_zlib_data_is_caught() -> None:
    deflated = zlib.compress(TWO)
    fails(compressed(TWO, deflated=deflated[:2] + b"\xff" * 40), "corrupt zlib data")
    fails(compressed(TWO, deflated=deflated[:30]), "zlib stream is cut off")


def test_a_zlib_bomb_inflates_no_more_than_the_header_needs() -> None:
    zeros = zlib.compressobj(9)
    bomb = b"".join(zeros.compress(b"\x00" * (1 << 20)) for _ in range(64)) + zeros.flush()
    fails(compressed(b"", deflated=bomb, size=64 << 20), "holds no offload bundle magic")
    triple = b"hip-amdgcn-amd-amdhsa--gfx" + b"x" * 4000
    huge = table(4096, *[(1 << 30, 1, len(triple), triple)] * 4096)  # a 16 MiB entry table
    fails(compressed(huge), f"runs past {MAX_TABLE >> 20} MiB")


def test_corrupt_zstd_data_and_zstd_bombs_are_caught() -> None:
    frame = _zstd(TWO)
    fails(compressed(TWO, method=ZSTD, deflated=frame[:6] + b"\xff" * 60), "corrupt zstd data")
    fails(compressed(TWO, method=ZSTD, deflated=frame[:40]), "fewer than its entry table needs")
    bomb = _zstd(b"\x00" * (64 << 20))
    fails(compressed(b"", method=ZSTD, deflated=bomb, size=64 << 20), "no offload bundle magic")


def test_the_tables_inflated_for_one_section_are_bounded() -> None:
    triple = b"hip-amdgcn-amd-amdhsa--gfx" + b"x" * 4000
    count = (MAX_TABLE - 64) // (24 + len(triple))
    one = compressed(table(count, *[(64, 0, len(triple), triple)] * count))
    repeats = MAX_INFLATED // MAX_TABLE + 1
    fails(one * repeats, f"more than {MAX_INFLATED >> 20} MiB of entry tables inflated")


SAMPLE = TWO[:600] + compressed(TWO, version=2) + b"\x00" * 30 + compressed(TWO, version=1)


@settings(
    max_examples=300,
    derandomize=True,
    database=None,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(
    st.lists(st.tuples(st.integers(0, len(SAMPLE) - 1), st.integers(0, 255)), max_size=6),
    st.integers(1, len(SAMPLE)),
)
def test_damaged_sections_end_in_a_device_code_error_or_images(
    changes: list[tuple[int, int]], length: int
) -> None:
    data = bytearray(SAMPLE)
    for where, value in changes:
        data[where] = value
    with contextlib.suppress(DeviceCodeError):
        read(bytes(data[:length]))


# Through the ELF reader, in a real shared object.


@pytest.fixture(scope="module")
def library(tmp_path_factory: pytest.TempPathFactory) -> Path:
    work = tmp_path_factory.mktemp("hiplib")
    (work / "x.c").write_text("int answer(void) { return 42; }\n")
    subprocess.run(
        ["gcc", "-shared", "-fPIC", "-o", str(work / "lib.so"), str(work / "x.c")], check=True
    )
    return work / "lib.so"


def with_section(library: Path, contents: bytes, tmp_path: Path) -> bytes:
    (tmp_path / "bundle.bin").write_bytes(contents)
    out = tmp_path / "lib.so"
    subprocess.run(
        [
            "objcopy",
            "--add-section",
            f".hip_fatbin={tmp_path / 'bundle.bin'}",
            "--set-section-flags",
            ".hip_fatbin=alloc,readonly",
            str(library),
            str(out),
        ],
        check=True,
    )
    return out.read_bytes()


def test_the_elf_reader_lists_the_gfx_targets_of_a_library(library: Path, tmp_path: Path) -> None:
    section = TWO + b"\x00" * (-len(TWO) % 4096) + compressed(TWO, version=3)
    device = read_elf(BytesSource(with_section(library, section, tmp_path))).device
    assert device is not None
    assert device.error is None
    assert device.sections == (".hip_fatbin",)
    assert device.gfx() == ("gfx90a:xnack+", "gfx942:sramecc+:xnack-")
    assert device.summary() == "HIP gfx90a:xnack+, gfx942:sramecc+:xnack-"
    assert len(device.images) == 4


def test_a_hostile_bundle_in_a_library_is_a_verdict(library: Path, tmp_path: Path) -> None:
    padded = TWO + b"\x00" * (-len(TWO) % 4096)
    device = read_elf(BytesSource(with_section(library, padded + table(1 << 40), tmp_path))).device
    assert device is not None
    assert device.sections == (".hip_fatbin",)
    assert device.gfx() == ()  # the section's images are dropped with the verdict
    assert device.error == (
        f".hip_fatbin: the bundle at {len(padded):#x} claims {1 << 40} entries: not believed"
    )
