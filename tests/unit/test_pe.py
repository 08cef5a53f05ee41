"""The PE/COFF reader: real DLLs built by mingw-w64 when it is installed, PE images written here
from the specification's layout, hostile images (each must end in PEError, reading little), and
mutations of a valid image that only ever end in a PEInfo or a PEError."""

from __future__ import annotations

import shutil
import struct
import subprocess
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from relforge.validate.pe import (
    MAX_DESCRIPTORS,
    MAX_NAME,
    PEError,
    PEInfo,
    is_system_dll,
    msvc_runtime,
    python_dll,
    read_pe,
)
from relforge.validate.streams import BytesSource
from tests.binfactory import (
    AMD64,
    DELAY,
    IMPORTS,
    LFANEW,
    OPTIONAL_AT,
    SECTION_AT,
    SECTION_RVA,
    build_pe,
)
from tests.binfactory import PE_ARM64 as ARM64
from tests.binfactory import PE_I386 as I386

MINGW = "x86_64-w64-mingw32-gcc"


def poke(data: bytes, offset: int, fmt: str, *values: int | bytes) -> bytes:
    out = bytearray(data)
    struct.pack_into(fmt, out, offset, *values)
    return bytes(out)


class CountingSource(BytesSource):
    """A BytesSource that keeps the length of every read."""

    def __init__(self, data: bytes) -> None:
        super().__init__(data)
        self.reads: list[int] = []

    def read(self, offset: int, length: int) -> bytes:
        self.reads.append(length)
        return super().read(offset, length)


def fails(data: bytes, *words: str) -> str:
    """The PEError message for `data`, checked to name every one of `words`; the reads it took
    stay small (no allocation grows with what a hostile header claims)."""
    src = CountingSource(data)
    with pytest.raises(PEError) as caught:
        read_pe(src)
    message = str(caught.value)
    for word in words:
        assert word in message, message
    assert max(src.reads, default=0) <= 64 << 10
    assert sum(src.reads) <= 160 << 10
    return message


# Images written from the specification's layout.


@pytest.mark.parametrize(("machine", "arch"), [(AMD64, "x86_64"), (ARM64, "aarch64")])
def test_pe32_plus_dll_with_imports_and_delay_imports(machine: int, arch: str) -> None:
    info = read_pe(BytesSource(build_pe(machine=machine).data))
    assert info == PEInfo(
        machine=arch,
        machine_code=machine,
        dll=True,
        pe32_plus=True,
        imports=("KERNEL32.dll", "python312.dll", "vcruntime140.dll"),
        delay_imports=("foo.dll",),
        subsystem=2,
    )


def test_pe32_i386_dll() -> None:
    info = read_pe(BytesSource(build_pe(machine=I386, plus=False).data))
    assert (info.machine, info.machine_code, info.pe32_plus) == ("i686", I386, False)
    assert info.imports == IMPORTS
    assert info.delay_imports == DELAY


def test_machines_and_characteristics() -> None:
    assert read_pe(BytesSource(build_pe(machine=0x1C4).data)).machine == "armv7l"
    assert read_pe(BytesSource(build_pe(machine=0xA641).data)).machine == "aarch64"  # ARM64EC
    unknown = read_pe(BytesSource(build_pe(machine=0x5064).data))  # RISC-V 64
    assert (unknown.machine, unknown.machine_code) == ("pe-0x5064", 0x5064)
    program = read_pe(BytesSource(build_pe(dll=False, subsystem=3).data))
    assert (program.dll, program.subsystem) == (False, 3)


def test_import_names_as_written_in_file_order() -> None:
    names = ("ZLIB1.DLL", "api-ms-win-crt-runtime-l1-1-0.dll", "Kernel32.DLL", "a.dll")
    assert read_pe(BytesSource(build_pe(imports=names, delay=()).data)).imports == names


def test_no_import_directories() -> None:
    info = read_pe(BytesSource(build_pe(imports=(), delay=()).data))
    assert (info.imports, info.delay_imports) == ((), ())


def test_directories_past_number_of_rva_and_sizes_are_absent() -> None:
    info = read_pe(BytesSource(build_pe(directories=13).data))  # 0..12: no delay-load entry
    assert (info.imports, info.delay_imports) == (IMPORTS, ())
    info = read_pe(BytesSource(build_pe(directories=1).data))  # the export directory only
    assert (info.imports, info.delay_imports) == ((), ())


def test_delay_load_name_as_a_virtual_address() -> None:
    """Attributes bit 0 clear (linkers before Visual C++ 7, PE32 only): DllNameRVA is a VA."""
    info = read_pe(BytesSource(build_pe(plus=False, delay_va=True).data))
    assert info.delay_imports == DELAY


def test_reads_only_headers_and_import_tables() -> None:
    built = build_pe(extra=bytes(range(256)) * 4096)  # a 1 MiB section behind the tables
    src = CountingSource(built.data)
    assert read_pe(src).imports == IMPORTS
    assert sum(src.reads) < 16 << 10


# Hostile images: each ends in PEError naming what is wrong, and where.


def test_not_pe() -> None:
    fails(b"MZ", "too short")
    fails(b"\x7fELF" + bytes(60), "no MZ magic")
    data = build_pe().data
    fails(poke(data, LFANEW, "<4s", b"NE\0\0"), "no PE signature", "0x40")


def test_e_lfanew_past_the_file() -> None:
    data = build_pe().data
    fails(poke(data, 0x3C, "<I", len(data) - 8), "e_lfanew", "past the end of the file")
    fails(poke(data, 0x3C, "<I", 0x7FFFFFFF), "e_lfanew", "further in than 64 KiB")


def test_number_of_sections_over_the_limit() -> None:
    fails(poke(build_pe().data, LFANEW + 6, "<H", 65535), "NumberOfSections 65535", "96")


def test_section_table_past_the_file() -> None:
    data = build_pe().data[:SECTION_AT]
    fails(poke(data, LFANEW + 6, "<H", 96), "section table", "past the end")


def test_optional_header_broken() -> None:
    data = build_pe().data
    fails(poke(data, LFANEW + 20, "<H", 0xFFFF), "SizeOfOptionalHeader 65535", "past the end")
    fails(poke(data, LFANEW + 20, "<H", 0), "no optional header", "object file")
    fails(poke(data, LFANEW + 20, "<H", 100), "shorter than the PE32+ fields")
    fails(poke(data, OPTIONAL_AT, "<H", 0x107), "magic 0x107")
    fails(poke(data, OPTIONAL_AT + 108, "<I", 0xFFFFFFFF), "NumberOfRvaAndSizes 4294967295")


def test_import_rva_in_no_section() -> None:
    built = build_pe()
    data = poke(built.data, built.directory_at(1), "<I", 0x9000)
    fails(data, "import directory", "RVA 0x9000 is in no section")
    data = poke(built.data, built.directory_at(13), "<I", 0xFFFFFFF0)
    fails(data, "delay-load import directory", "in no section")


def test_descriptor_table_without_terminator_filling_its_section() -> None:
    built = build_pe(extra=b"\x01" * 200)
    data = poke(built.data, built.directory_at(1), "<I", built.extra_rva)
    fails(data, "import directory", "run past the end of its section", "terminator")
    # the section is filled to its end by DELAY descriptors too
    data = poke(built.data, built.directory_at(13), "<I", built.extra_rva)
    fails(data, "delay-load import directory", "past the end of its section")


def test_more_descriptors_than_believed() -> None:
    built = build_pe(extra=b"\x01" * 20 * (MAX_DESCRIPTORS + 100))
    data = poke(built.data, built.directory_at(1), "<I", built.extra_rva)
    fails(data, f"more than {MAX_DESCRIPTORS} descriptors")


def test_name_rva_past_the_file() -> None:
    built = build_pe()
    # the section claims 1 MiB of raw data the (truncated) file does not have
    data = poke(built.data, built.section_header_at + 8, "<II", 1 << 20, SECTION_RVA)
    data = poke(data, built.section_header_at + 16, "<I", 1 << 20)
    data = poke(data, SECTION_AT + 12, "<I", SECTION_RVA + (1 << 19))
    fails(data, "descriptor 0", f"RVA {SECTION_RVA + (1 << 19):#x}", "past the end of the file")


def test_import_table_in_the_zeros_past_the_raw_data() -> None:
    built = build_pe()
    data = poke(built.data, built.section_header_at + 8, "<I", 0x3000)  # VirtualSize
    data = poke(data, built.directory_at(1), "<I", SECTION_RVA + 0x2000)
    fails(data, "import directory", "RVA 0x3000", "'.idata'", "past its SizeOfRawData")


def test_name_rva_in_no_section() -> None:
    data = poke(build_pe().data, SECTION_AT + 20 + 12, "<I", 0x50000)
    fails(data, "import directory, descriptor 1", "RVA 0x50000 is in no section")


def test_name_without_nul() -> None:
    built = build_pe(delay=())  # the last import's name ends the section
    data = bytearray(built.data)
    end = SECTION_AT + built.extra_rva - SECTION_RVA - 1
    assert data[end] == 0
    data[end] = ord("x")
    fails(bytes(data), "descriptor 2", "past the end of its section", "without a NUL")


def test_name_longer_than_believed() -> None:
    built = build_pe(extra=b"A" * 5000)
    data = poke(built.data, SECTION_AT + 12, "<I", built.extra_rva)
    fails(data, "descriptor 0", f"no NUL within {MAX_NAME} bytes")


def test_names_empty_or_not_ascii() -> None:
    built = build_pe(extra=b"\0\xe9t\xe9.dll\0")
    fails(poke(built.data, SECTION_AT + 12, "<I", built.extra_rva), "is empty")
    fails(poke(built.data, SECTION_AT + 12, "<I", built.extra_rva + 1), "not ASCII")
    fails(poke(built.data, SECTION_AT + 12, "<I", 0), "descriptor 0 has no Name")
    fails(poke(built.data, built.delay_at + 4, "<I", 0), "descriptor 0 has no DllNameRVA")


def test_delay_load_virtual_address_below_image_base() -> None:
    built = build_pe(plus=False, delay_va=True)
    fails(poke(built.data, built.delay_at + 4, "<I", 0x1234), "below ImageBase 0x10000000")


FUZZ = settings(
    max_examples=1500,
    derandomize=True,
    database=None,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
VALID = {
    "pe32+": build_pe().data,
    "pe32": build_pe(machine=I386, plus=False, delay_va=True).data,
}


@FUZZ
@given(
    which=st.sampled_from(sorted(VALID)),
    edits=st.lists(
        st.tuples(st.integers(0, 0x3FF), st.sampled_from([0, 1, 0x7F, 0x80, 0xFF, 0x10, 0x20])),
        min_size=1,
        max_size=8,
    ),
    keep=st.one_of(st.none(), st.integers(0, 0x400)),
)
def test_mutated_images_end_in_info_or_pe_error(
    which: str, edits: list[tuple[int, int]], keep: int | None
) -> None:
    """Bytes of the headers, the section table and the import tables changed (and the file
    perhaps cut short): the reader returns or raises PEError, and never reads much."""
    data = bytearray(VALID[which])
    for offset, value in edits:
        data[offset] = value
    src = CountingSource(bytes(data[:keep] if keep is not None else data))
    try:
        info = read_pe(src)
    except PEError:
        pass
    else:
        assert isinstance(info, PEInfo)
    assert max(src.reads, default=0) <= 64 << 10


# DLLs built by mingw-w64 (GNU ld): what a real linker writes.


@pytest.fixture(scope="module")
def mingw_dlls(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if shutil.which(MINGW) is None:
        pytest.skip(f"{MINGW} is not installed (Debian: apt-get install gcc-mingw-w64-x86-64)")
    root = tmp_path_factory.mktemp("mingw")
    (root / "helper.c").write_text("__declspec(dllexport) int helper(int x) { return x + 1; }\n")
    (root / "main.c").write_text(
        "#include <windows.h>\n"
        "__declspec(dllimport) int helper(int x);\n"
        "__declspec(dllexport) int entry(int x) {\n"
        "    return helper(x) + (int)GetCurrentProcessId();\n"
        "}\n"
    )
    (root / "prog.c").write_text(
        "#include <windows.h>\n"
        "int WINAPI WinMain(HINSTANCE a, HINSTANCE b, LPSTR c, int d) {\n"
        '    return MessageBoxA(NULL, "hi", "hi", 0);\n'
        "}\n"
    )
    for command in (
        [MINGW, "-shared", "-o", "helper.dll", "helper.c"],
        [MINGW, "-shared", "-o", "main.dll", "main.c", "helper.dll"],
        [MINGW, "-mwindows", "-o", "prog.exe", "prog.c"],
    ):
        subprocess.run(command, cwd=root, check=True, capture_output=True)
    return root


def test_mingw_dll_imports_kernel32_and_a_second_dll(mingw_dlls: Path) -> None:
    info = read_pe(BytesSource((mingw_dlls / "main.dll").read_bytes()))
    assert (info.machine, info.machine_code, info.dll, info.pe32_plus) == (
        "x86_64",
        AMD64,
        True,
        True,
    )
    assert "KERNEL32.dll" in info.imports  # as written by the import library
    assert sorted(name.lower() for name in info.imports) == [
        "helper.dll",
        "kernel32.dll",
        "msvcrt.dll",
    ]
    assert info.delay_imports == ()
    assert [name for name in info.imports if not is_system_dll(name)] == ["helper.dll"]


def test_mingw_gui_program(mingw_dlls: Path) -> None:
    info = read_pe(BytesSource((mingw_dlls / "prog.exe").read_bytes()))
    assert (info.dll, info.subsystem, info.machine) == (False, 2, "x86_64")  # Windows GUI
    assert {"kernel32.dll", "user32.dll"} <= {name.lower() for name in info.imports}


def test_mingw_dll_cut_short_is_a_pe_error(mingw_dlls: Path) -> None:
    data = (mingw_dlls / "main.dll").read_bytes()
    info = read_pe(BytesSource(data))
    assert info.imports
    for keep in (0x40, 0x100, 0x400):  # headers whole, no section's data
        try:
            read_pe(BytesSource(data[:keep]))
        except PEError:
            continue
        pytest.fail(f"a DLL cut to {keep} bytes read as a whole one")


# Classifying DLL names.


@pytest.mark.parametrize(
    "name",
    [
        "KERNEL32.dll", "kernel32.DLL", "USER32.dll", "ADVAPI32.dll", "WS2_32.dll", "ntdll.dll",
        "bcrypt.dll", "CRYPT32.dll", "VERSION.dll", "SHLWAPI.dll", "IPHLPAPI.DLL", "MSVCRT.dll",
        "ucrtbase.dll", "api-ms-win-crt-runtime-l1-1-0.dll", "API-MS-WIN-CORE-SYNCH-L1-2-0.DLL",
        "ext-ms-win-ntuser-window-l1-1-0.dll",
    ],
)  # fmt: skip
def test_system_dlls(name: str) -> None:
    assert is_system_dll(name)
    assert not msvc_runtime(name)


@pytest.mark.parametrize(
    "name",
    ["vcruntime140.dll", "python312.dll", "libzmq.dll", "zlib1.dll", "kernel32", "api-ms.dll"],
)
def test_not_system_dlls(name: str) -> None:
    assert not is_system_dll(name)


@pytest.mark.parametrize(
    "name",
    [
        "vcruntime140.dll", "VCRUNTIME140_1.dll", "msvcp140.dll", "MSVCP140_2.dll",
        "msvcp140_atomic_wait.dll", "concrt140.dll", "vcomp140.dll",
    ],
)  # fmt: skip
def test_msvc_runtime(name: str) -> None:
    assert msvc_runtime(name)
    assert not is_system_dll(name)


@pytest.mark.parametrize(
    "name", ["msvcrt.dll", "msvcp120.dll", "vcruntime140.so", "ucrtbase.dll", "vcomp.dll"]
)
def test_not_msvc_runtime(name: str) -> None:
    assert not msvc_runtime(name)


@pytest.mark.parametrize(
    ("name", "version"),
    [
        ("python312.dll", "3.12"),
        ("PYTHON39.DLL", "3.9"),
        ("python3.dll", "3"),
        ("python313t.dll", "3.13t"),
        ("python312_d.dll", "3.12"),
        ("python.dll", None),
        ("pythoncom312.dll", None),
        ("pywintypes312.dll", None),
        ("python312.pyd", None),
    ],
)
def test_python_dll(name: str, version: str | None) -> None:
    assert python_dll(name) == version
