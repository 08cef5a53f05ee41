"""The Mach-O reader on files written here from the layouts of <mach-o/loader.h> and
<mach-o/fat.h> (no macOS toolchain on this machine): thin dylibs of either byte order and word
size, universal files with fat_arch and fat_arch_64 records, and hostile files that must end in
MachOError naming the fault after a handful of reads, never in another exception or a long loop.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Sequence

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from relforge.validate.binaries import binary_format
from relforge.validate.inflate import DeflateSource
from relforge.validate.macho import (
    MAX_FAT_ARCHES,
    Dylib,
    MachOError,
    MachOInfo,
    format_version,
    macos_version,
    read_macho,
)
from relforge.validate.streams import BytesSource
from tests.binfactory import (
    ARM64,
    CPU_SUBTYPE_ARM64E,
    I386,
    LC_ID_DYLIB,
    LC_LAZY_LOAD_DYLIB,
    LC_LOAD_DYLIB,
    LC_LOAD_UPWARD_DYLIB,
    LC_RPATH,
    LC_UUID,
    MH_BUNDLE,
    MH_EXECUTE,
    PLATFORM_IOS,
    PLATFORM_MACOS,
    PPC,
    SIGNATURE,
    V10_9,
    V11_0,
    X86_64,
    build_version,
    command,
    demo_dylib,
    dylib_command,
    fat,
    macho,
    rpath_command,
    universal2,
    version_min_macosx,
    x86_64_bundle,
)

FUZZ = settings(
    max_examples=600,
    derandomize=True,
    database=None,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)


class Spy:
    """A BytesSource that records every read."""

    def __init__(self, data: bytes) -> None:
        self.inner = BytesSource(data)
        self.reads: list[tuple[int, int]] = []

    @property
    def size(self) -> int:
        return self.inner.size

    @property
    def guessed(self) -> bool:
        return False

    def read(self, offset: int, length: int) -> bytes:
        self.reads.append((offset, length))
        return self.inner.read(offset, length)

    def read_forward(self, offset: int, length: int) -> bytes:
        return self.read(offset, length)

    def set_interest(self, spans: Sequence[tuple[int, int]]) -> None:
        """Nothing to keep: every byte is at hand."""


def read(data: bytes) -> MachOInfo:
    return read_macho(BytesSource(data))


# --- well-formed files ------------------------------------------------------------------------


def test_thin_arm64_dylib() -> None:
    info = read(demo_dylib())
    assert not info.fat
    assert info.arches == ("aarch64",)
    (lib,) = info.slices
    assert (lib.arch, lib.cputype, lib.filetype) == ("aarch64", ARM64, "dylib")
    assert (lib.platform, lib.minos, lib.sdk) == ("macos", "11.0", "14.5")
    assert lib.install_name == "@rpath/libdemo.1.dylib"
    assert lib.dylibs == (
        Dylib("@rpath/libfoo.2.dylib", "load"),
        Dylib("/System/Library/Frameworks/Metal.framework/Metal", "weak"),
        Dylib("@loader_path/libbar.dylib", "reexport"),
        Dylib("/usr/lib/libSystem.B.dylib", "load"),
    )
    assert lib.rpaths == ("@loader_path/../lib",)
    assert lib.signed


def test_lazy_and_upward_dylibs_and_several_rpaths() -> None:
    data = macho(
        X86_64,
        [
            dylib_command(LC_LAZY_LOAD_DYLIB, "/usr/lib/liblazy.dylib"),
            dylib_command(LC_LOAD_UPWARD_DYLIB, "@rpath/libup.dylib"),
            rpath_command("@loader_path"),
            rpath_command("/opt/homebrew/lib"),
        ],
        filetype=MH_EXECUTE,
    )
    (exe,) = read(data).slices
    assert exe.filetype == "execute"
    assert [(d.kind, d.path) for d in exe.dylibs] == [
        ("lazy", "/usr/lib/liblazy.dylib"),
        ("upward", "@rpath/libup.dylib"),
    ]
    assert exe.rpaths == ("@loader_path", "/opt/homebrew/lib")
    assert exe.install_name is None
    assert (exe.minos, exe.sdk, exe.platform, exe.signed) == (None, None, None, False)


def test_version_min_macosx_of_older_binaries() -> None:
    data = macho(
        X86_64,
        [
            version_min_macosx(V10_9, 0x000A0C00),
            dylib_command(LC_LOAD_DYLIB, "/usr/lib/libc++.1.dylib"),
        ],
        filetype=MH_BUNDLE,
    )
    (bundle,) = read(data).slices
    assert (bundle.arch, bundle.filetype) == ("x86_64", "bundle")
    assert (bundle.platform, bundle.minos, bundle.sdk) == ("macos", "10.9", "10.12")
    assert not bundle.signed


def test_build_version_wins_and_other_platforms_give_no_minos() -> None:
    both = macho(ARM64, [version_min_macosx(V10_9, 0), build_version(PLATFORM_MACOS, V11_0, 0)])
    (s,) = read(both).slices
    assert (s.minos, s.sdk) == ("11.0", None)  # an sdk of 0 is "n/a", as otool prints it
    ios = macho(ARM64, [build_version(PLATFORM_IOS, 0x000D0000, 0x00110000)])
    (s,) = read(ios).slices
    assert (s.platform, s.minos, s.sdk) == ("ios", None, None)
    catalyst_and_macos = macho(  # a "zippered" library: macOS wins whatever the order
        ARM64, [build_version(6, 0x000D0100, 0), build_version(PLATFORM_MACOS, 0x000A0F00, 0)]
    )
    (s,) = read(catalyst_and_macos).slices
    assert (s.platform, s.minos) == ("macos", "10.15")


def test_version_nibbles() -> None:
    assert format_version(0x000B0000) == "11.0"
    assert format_version(0x000A0902) == "10.9.2"
    assert format_version(0x000E0500) == "14.5"
    assert format_version(0x00100000) == "16.0"


def test_macos_version_compares_like_the_os() -> None:
    assert macos_version("11.0") == (11, 0, 0)
    assert macos_version("10.9.2") == (10, 9, 2)
    assert macos_version("10_13") == (10, 13, 0)  # as in macosx_10_13_universal2
    assert macos_version("11") == macos_version("11.0")
    assert macos_version("10.9") < macos_version("10.13") < macos_version("11.0")
    for bad in ("", "eleven", "11.0.0.1", "11..0", "-1"):
        with pytest.raises(ValueError, match="not a macOS version"):
            macos_version(bad)


@pytest.mark.parametrize("wide", [False, True], ids=["fat_arch", "fat_arch_64"])
def test_universal2(wide: bool) -> None:
    info = read(universal2(wide=wide))
    assert info.fat
    assert info.arches == ("x86_64", "aarch64")
    intel, arm = info.slices
    assert (intel.filetype, intel.minos, intel.signed) == ("bundle", "10.13", False)
    assert intel.dylibs == (Dylib("/usr/lib/libSystem.B.dylib"),)
    assert arm == read(demo_dylib()).slices[0]  # a slice reads as the same file alone does


def test_a_universal_file_with_one_slice_is_fat() -> None:
    info = read(fat([(ARM64, 0, demo_dylib())]))
    assert (info.fat, info.arches) == (True, ("aarch64",))


def test_big_endian_and_32_bit() -> None:
    swapped = read(demo_dylib(e=">"))
    assert swapped.slices == read(demo_dylib()).slices
    ppc = macho(
        PPC,
        [
            version_min_macosx(0x000A0400, 0, e=">"),
            dylib_command(LC_LOAD_DYLIB, "/usr/lib/libSystem.B.dylib", e=">", align=4),
        ],
        bits=32,
        e=">",
        filetype=MH_BUNDLE,
    )
    intel = macho(
        I386,
        [dylib_command(LC_ID_DYLIB, "/usr/local/lib/libold.dylib", align=4)],
        bits=32,
        cpusubtype=3,  # CPU_SUBTYPE_I386_ALL
    )
    info = read(fat([(PPC, 0, ppc), (I386, 3, intel)]))
    assert info.arches == ("ppc", "i686")
    assert info.slices[0].minos == "10.4"
    assert info.slices[0].dylibs == (Dylib("/usr/lib/libSystem.B.dylib"),)
    assert info.slices[1].install_name == "/usr/local/lib/libold.dylib"


def test_arm64e() -> None:
    ptrauth_abi = 0x80000000  # capability bit of cpusubtype
    (s,) = read(demo_dylib(cpusubtype=CPU_SUBTYPE_ARM64E | ptrauth_abi)).slices
    assert (s.arch, s.cputype) == ("arm64e", ARM64)


def test_64_bit_commands_aligned_to_4_are_read() -> None:
    """loader.h asks 64-bit files for cmdsizes that are multiples of 8, but dyld loads a file
    whose commands are multiples of 4 only: read, not refused."""
    data = macho(ARM64, [dylib_command(LC_LOAD_DYLIB, "/usr/lib/libz.dylib", align=4)])
    assert len(data) % 8 == 4
    assert read(data).slices[0].dylibs == (Dylib("/usr/lib/libz.dylib"),)


def test_strings_are_read_up_to_their_nul() -> None:
    cmd = dylib_command(LC_LOAD_DYLIB, "/usr/lib/libfoo.dylib", name_offset=28)
    cmd = cmd[:24] + b"junk" + cmd[24:]  # a string need not start right after the struct
    cmd = struct.pack("<II", LC_LOAD_DYLIB, len(cmd) + -len(cmd) % 8) + cmd[8:]
    cmd += bytes(-len(cmd) % 8)
    assert read(macho(ARM64, [cmd])).slices[0].dylibs == (Dylib("/usr/lib/libfoo.dylib"),)
    odd = dylib_command(LC_LOAD_DYLIB, b"/tmp/caf\xe9.dylib")  # latin-1: kept, escaped
    (s,) = read(macho(ARM64, [odd])).slices
    assert s.dylibs[0].path == "/tmp/caf\\xe9.dylib"


def test_only_headers_and_load_commands_are_read() -> None:
    data = universal2()
    spy = Spy(data + bytes(1 << 20))
    read_macho(spy)
    intel_at, arm_at = 4096, 8192
    intel_cmds = len(x86_64_bundle()) - 32
    arm_cmds = len(demo_dylib()) - 32 - 256 - SIGNATURE
    allowed = [(0, 48), (intel_at, 32 + intel_cmds), (arm_at, 32 + arm_cmds)]
    for offset, length in spy.reads:
        assert any(s <= offset and offset + length <= s + n for s, n in allowed), (offset, length)
    assert len(spy.reads) <= 8


def test_read_from_a_deflated_zip_member() -> None:
    data = universal2() + bytes(300_000)
    packer = zlib.compressobj(9, zlib.DEFLATED, -15)
    compressed = packer.compress(data) + packer.flush()
    assert read_macho(DeflateSource(memoryview(compressed), len(data))) == read(data)


def test_recognised_as_macho_by_their_first_bytes() -> None:
    assert binary_format(demo_dylib()[:8]) == "Mach-O"
    assert binary_format(demo_dylib(e=">")[:8]) == "Mach-O"
    assert binary_format(universal2(wide=True)[:8]) == "Mach-O"
    assert binary_format(universal2()[:8]) == "Mach-O"
    java = struct.pack(">IHH", 0xCAFEBABE, 0, 61)  # a class file: same magic, then its version
    assert binary_format(java) is None
    assert binary_format(b"\x7fELF\x02\x01\x01\x00") == "ELF"


# --- hostile files ----------------------------------------------------------------------------


def with_header(data: bytes, **fields: int) -> bytes:
    """`data` (a thin 64-bit little-endian file) with header fields replaced."""
    names = ["magic", "cputype", "cpusubtype", "filetype", "ncmds", "sizeofcmds", "flags"]
    values = list(struct.unpack_from("<7I", data))
    for name, value in fields.items():
        values[names.index(name)] = value
    return struct.pack("<7I", *values) + data[28:]


def patched_fat(records: Sequence[tuple[int, int, int, int]], size: int) -> bytes:
    """A universal header whose fat_arch records say (cputype, subtype, offset, size)."""
    table = b"".join(struct.pack(">IIIII", c, s, o, n, 12) for c, s, o, n in records)
    head = struct.pack(">II", 0xCAFEBABE, len(records)) + table
    return head + bytes(size - len(head))


def _lc_str_past_its_command() -> bytes:
    cmd = dylib_command(LC_LOAD_DYLIB, "/usr/lib/libSystem.B.dylib", name_offset=4096)
    return macho(ARM64, [cmd])


def _lc_str_into_its_own_fields() -> bytes:
    return macho(ARM64, [dylib_command(LC_LOAD_DYLIB, "/usr/lib/x.dylib", name_offset=8)])


def _no_nul() -> bytes:
    cmd = struct.pack("<IIIIII", LC_RPATH, 16, 12, 0, 0, 0)[:12] + b"abcd"
    return macho(ARM64, [cmd])


def _cmdsize(value: int) -> bytes:
    data = demo_dylib()
    at = 32 + 72 + 24  # the third command (LC_BUILD_VERSION) after LC_SEGMENT_64 and LC_UUID
    return data[: at + 4] + struct.pack("<I", value) + data[at + 8 :]


HOSTILE: dict[str, tuple[bytes, str]] = {
    "empty file": (b"", r"too short"),
    "truncated header": (demo_dylib()[:20], r"too short for a 64-bit Mach-O header"),
    "truncated 32-bit header": (
        macho(I386, [], bits=32)[:27],
        r"too short for a 32-bit Mach-O header",
    ),
    "not Mach-O": (b"\x7fELF" + bytes(60), r"no Mach-O magic"),
    "cmdsize 0": (_cmdsize(0), r"load command 2 \(LC_BUILD_VERSION\) at offset 128: cmdsize 0"),
    "cmdsize not a multiple of 4": (_cmdsize(34), r"cmdsize 34 is not a multiple of 4"),
    "cmdsize past sizeofcmds": (
        _cmdsize(1 << 20),
        r"cmdsize 1048576 runs past the end of the load commands \(sizeofcmds \d+",
    ),
    "cmdsize below the command's fixed part": (
        macho(ARM64, [command(LC_LOAD_DYLIB, bytes(8))]),
        r"LC_LOAD_DYLIB.*cmdsize 16 is smaller than the command's fixed part \(24",
    ),
    "ncmds 2**32-1 in tiny sizeofcmds": (
        with_header(demo_dylib(), ncmds=2**32 - 1, sizeofcmds=16),
        r"ncmds 4294967295 is more than 65536",
    ),
    "ncmds larger than sizeofcmds holds": (
        with_header(demo_dylib(), ncmds=1000, sizeofcmds=16),
        r"ncmds 1000 load commands cannot fit in sizeofcmds 16",
    ),
    "more commands than their headers fill": (
        with_header(macho(ARM64, [command(LC_UUID, bytes(16))]), ncmds=3),
        r"load command 1 at offset 56: its header runs past the end of the load commands",
    ),
    "sizeofcmds past the file": (
        with_header(demo_dylib(), sizeofcmds=1 << 20),
        r"sizeofcmds 1048576 runs past the end of the file",
    ),
    "sizeofcmds huge": (
        with_header(demo_dylib(), sizeofcmds=2**32 - 8),
        r"sizeofcmds 4294967288 is more than 16 MiB",
    ),
    "lc_str offset past its command": (
        _lc_str_past_its_command(),
        r"load command 0 \(LC_LOAD_DYLIB\) at offset 32: string offset 4096 lies outside",
    ),
    "lc_str offset into the command's own fields": (
        _lc_str_into_its_own_fields(),
        r"string offset 8 lies outside the command's string area \(24\.\.",
    ),
    "string without NUL": (_no_nul(), r"LC_RPATH.*no NUL before the command ends"),
    "too many build tools": (
        macho(ARM64, [build_version(PLATFORM_MACOS, V11_0, 0, ntools=1)]).replace(
            struct.pack("<I", 1) + struct.pack("<II", 3, 0x03F80000),
            struct.pack("<I", 2**32 - 1) + struct.pack("<II", 3, 0x03F80000),
        ),
        r"4294967295 build tool records",
    ),
    "code signature past the end": (
        demo_dylib()[:-1],
        r"LC_CODE_SIGNATURE\) at offset \d+: the signature's 64 bytes at 752 run past the end "
        r"of the binary \(815 bytes\)",
    ),
    "nfat_arch 10**6": (
        struct.pack(">II", 0xCAFEBABE, 10**6) + bytes(64),
        r"nfat_arch 1000000 is more than 30 architectures; not Mach-O \(a Java class file",
    ),
    "a Java class file": (
        bytes.fromhex("cafebabe00000041") + bytes(200),  # minor 0, major 65 (Java 21)
        r"nfat_arch 65 is more than 30.*Java class file",
    ),
    "nfat_arch 0": (struct.pack(">II", 0xCAFEBABE, 0) + bytes(64), r"nfat_arch is 0"),
    "fat_arch records past the file": (
        struct.pack(">II", 0xCAFEBABE, 3) + bytes(30),
        r"3 fat_arch records of 20 bytes end at 68, past the end of the file \(38 bytes\)",
    ),
    "a slice past the end of the file": (
        patched_fat([(ARM64, 0, 4096, 1 << 30)], 8192),
        r"slice 0 \(aarch64, fat_arch at 8\): 1073741824 bytes at offset 4096 run past the "
        r"end of the file \(8192 bytes\)",
    ),
    "a 64-bit slice offset past the file": (
        universal2(wide=True)[:8]
        + struct.pack(">IIQQII", X86_64, 3, 2**63, 64, 12, 0)
        + universal2(wide=True)[40:],
        r"slice 0 \(x86_64, fat_arch_64 at 8\): 64 bytes at offset 9223372036854775808 run past",
    ),
    "a slice overlapping the fat header": (
        patched_fat([(ARM64, 0, 16, 64)], 4096),
        r"slice 0 \(aarch64, fat_arch at 8\): offset 16 lies inside the universal header "
        r"\(which ends at 28\)",
    ),
    "overlapping slices": (
        patched_fat([(ARM64, 0, 4096, 2048), (X86_64, 3, 5000, 512)], 8192),
        r"slices 0 and 1 overlap",
    ),
    "a fat slice that is fat again": (
        fat([(ARM64, 0, fat([(ARM64, 0, demo_dylib())]))]),
        r"slice 0 \(aarch64\) at offset 4096: is itself a universal file \(nested fat",
    ),
    "a slice that is no Mach-O": (
        fat([(ARM64, 0, b"\x7fELF" + bytes(100))]),
        r"slice 0 \(aarch64\) at offset 4096: no Mach-O magic \(starts with 7f454c46",
    ),
    "a slice too short for its header": (
        fat([(ARM64, 0, demo_dylib()[:16])]),
        r"slice 0 \(aarch64\) at offset 4096: 16 bytes are too short for a 64-bit",
    ),
    "a slice whose cputype differs from its record": (
        fat([(X86_64, 3, demo_dylib())]),
        r"slice 0 \(x86_64\).*cputype 0x100000c differs from the universal header's 0x1000007",
    ),
    "sizeofcmds past its slice": (
        fat([(ARM64, 0, demo_dylib()[:200]), (X86_64, 3, x86_64_bundle())]),
        r"slice 0 \(aarch64\) at offset 4096: sizeofcmds \d+ runs past the end of the slice "
        r"\(200 bytes",
    ),
}


@pytest.mark.parametrize("name", HOSTILE)
def test_hostile_files_end_in_macho_error(name: str) -> None:
    data, message = HOSTILE[name]
    spy = Spy(data)
    with pytest.raises(MachOError, match=message):
        read_macho(spy)
    assert len(spy.reads) <= 2 * MAX_FAT_ARCHES + 2  # bounded: no read per claimed command
    assert sum(n for _, n in spy.reads) <= len(data) + 64  # no read past what is there


FUZZ_BASES = {
    "thin": demo_dylib(),
    "big-endian": demo_dylib(e=">"),
    "fat": universal2(align=4),  # slices packed close: more of the bytes are headers
    "fat64": universal2(wide=True, align=4),
}


@settings(FUZZ)
@given(
    base=st.sampled_from(sorted(FUZZ_BASES)),
    edits=st.lists(st.tuples(st.integers(0, 1 << 16), st.integers(0, 255)), max_size=8),
    cut=st.one_of(st.none(), st.integers(0, 1 << 16)),
)
def test_mutated_files_end_in_info_or_macho_error(
    base: str, edits: list[tuple[int, int]], cut: int | None
) -> None:
    data = bytearray(FUZZ_BASES[base])
    for at, value in edits:
        data[at % len(data)] = value
    if cut is not None:
        del data[cut % (len(data) + 1) :]
    spy = Spy(bytes(data))
    try:
        info = read_macho(spy)
    except MachOError:
        pass
    else:
        assert isinstance(info, MachOInfo)
        assert 1 <= len(info.slices) <= MAX_FAT_ARCHES
    assert len(spy.reads) <= 2 * MAX_FAT_ARCHES + 2
