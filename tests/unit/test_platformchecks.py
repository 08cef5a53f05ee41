"""macOS and Windows wheels validated like Linux ones (RF-V070-V072): real wheels from PyPI
pass; wheels derived from them by editing bytes — a minimum macOS above the tag, an
architecture that is not the tag's, a dependency on Homebrew's libomp, an unsigned arm64
file, a DLL import that is neither in the wheel nor a system DLL, a PE machine changed, an ELF
file in a macOS wheel — fail with a message naming the file and the fact."""

from __future__ import annotations

import struct
import zipfile
from collections.abc import Callable
from pathlib import Path

import pytest

from relforge.manifest import Verdict
from relforge.validate import inspect_wheel
from tests.foreignwheels import Role, foreign_wheel

MACHO_SUFFIX = ".so"
PYD_SUFFIX = ".pyd"
LC_BUILD_VERSION, LC_CODE_SIGNATURE, LC_LOAD_DYLIB = 0x32, 0x1D, 0xC
LC_FUNCTION_STARTS = 0x26  # a linkedit_data_command like LC_CODE_SIGNATURE, ignored by checks


def verdicts(wheel: Path) -> dict[str, Verdict]:
    return {v.check: v for v in inspect_wheel(wheel).verdicts}


def derived(
    source: Path,
    folder: Path,
    edit: Callable[[bytes], bytes],
    *,
    suffix: str,
    name: str | None = None,
    tag: tuple[str, str] | None = None,
) -> Path:
    """A copy of `source` whose first member ending in `suffix` went through `edit` (and whose
    file name and WHEEL Tag lines say `tag[1]` instead of `tag[0]`)."""
    target = folder / (name or source.name)
    with zipfile.ZipFile(source) as zin, zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as out:
        done = False
        for info in zin.infolist():
            data = zin.read(info)
            if not done and info.filename.endswith(suffix):
                data, done = edit(data), True
            if tag and info.filename.endswith(".dist-info/WHEEL"):
                data = data.replace(tag[0].encode(), tag[1].encode())
            out.writestr(info, data)
    assert done, f"no {suffix} member in {source.name}"
    return target


def without(source: Path, folder: Path, part: str) -> Path:
    """A copy of `source` without the members whose name contains `part`."""
    target = folder / source.name
    with zipfile.ZipFile(source) as zin, zipfile.ZipFile(target, "w") as out:
        for info in zin.infolist():
            if part not in info.filename:
                out.writestr(info, zin.read(info))
    return target


def commands(data: bytes) -> list[tuple[int, int, int]]:
    """(offset, cmd, cmdsize) of each load command of a thin 64-bit little-endian Mach-O."""
    ncmds = struct.unpack_from("<I", data, 16)[0]
    at, out = 32, []
    for _ in range(ncmds):
        cmd, size = struct.unpack_from("<II", data, at)
        out.append((at, cmd, size))
        at += size
    return out


@pytest.fixture(scope="module")
def wheels() -> Callable[[Role], Path]:
    return foreign_wheel


@pytest.mark.parametrize(
    ("role", "check"),
    [
        ("macos-arm64", "RF-V070"),
        ("macos-universal2", "RF-V070"),
        ("macos-x86_64", "RF-V070"),
        ("macos-bundled-dylib", "RF-V070"),
        ("win-amd64", "RF-V071"),
        ("win-arm64", "RF-V071"),
        ("win-bundled-dll", "RF-V071"),
    ],
)
def test_real_wheels_pass(wheels: Callable[[Role], Path], role: Role, check: str) -> None:
    got = verdicts(wheels(role))
    assert got[check].status == "pass", got[check]
    assert got["RF-V072"].status == "pass", got["RF-V072"]
    failed = [v for v in got.values() if v.status == "fail"]
    assert failed == []


def test_what_inspect_shows_of_each_binary(wheels: Callable[[Role], Path]) -> None:
    found = inspect_wheel(wheels("macos-bundled-dylib")).to_json()
    by_path = {m["path"]: m for m in found["macho_files"]}
    geos_c = next(p for p in by_path if "libgeos_c" in p)
    (piece,) = by_path[geos_c]["slices"]
    assert piece["arch"] == "aarch64" and piece["minos"] == "11.0" and piece["signed"]
    assert any(d["path"].startswith("@loader_path/libgeos.") for d in piece["dylibs"])
    windows = inspect_wheel(wheels("win-bundled-dll")).to_json()
    pyds = [p for p in windows["pe_files"] if p["path"].endswith(".pyd")]
    assert pyds and all(p["machine"] == "x86_64" for p in pyds)
    assert any(i.startswith("geos_c-") for p in pyds for i in p["imports"])
    universal = inspect_wheel(wheels("macos-universal2")).to_json()
    (fat,) = universal["macho_files"]
    assert fat["fat"] and [s["arch"] for s in fat["slices"]] == ["x86_64", "aarch64"]
    assert [s["minos"] for s in fat["slices"]] == ["10.13", "11.0"]


def test_a_minimum_macos_above_the_tag_fails(
    wheels: Callable[[Role], Path], tmp_path: Path
) -> None:
    def raise_minos(data: bytes) -> bytes:
        out = bytearray(data)
        (at,) = [a for a, cmd, _ in commands(data) if cmd == LC_BUILD_VERSION]
        struct.pack_into("<I", out, at + 12, 14 << 16)  # minos 14.0
        return bytes(out)

    wheel = derived(wheels("macos-arm64"), tmp_path, raise_minos, suffix=MACHO_SUFFIX)
    got = verdicts(wheel)["RF-V070"]
    assert got.status == "fail"
    assert "simplejson/_speedups.cpython-313-darwin.so (aarch64) needs macOS 14.0" in got.message
    assert "the tag says 11.0" in got.message


def test_an_architecture_that_is_not_the_tags_fails(
    wheels: Callable[[Role], Path], tmp_path: Path
) -> None:
    source = wheels("macos-arm64")
    wheel = derived(
        source,
        tmp_path,
        lambda data: data,
        suffix=MACHO_SUFFIX,
        name=source.name.replace("macosx_11_0_arm64", "macosx_11_0_x86_64"),
        tag=("macosx_11_0_arm64", "macosx_11_0_x86_64"),
    )
    got = verdicts(wheel)["RF-V070"]
    assert got.status == "fail"
    assert "_speedups.cpython-313-darwin.so is for aarch64" in got.message
    assert "asks for x86_64" in got.message


def test_a_homebrew_dependency_fails(wheels: Callable[[Role], Path], tmp_path: Path) -> None:
    def homebrew(data: bytes) -> bytes:
        system = b"/usr/lib/libSystem.B.dylib\x00"
        brew = b"/opt/homebrew/lib/libomp.dylib\x00"
        at = data.index(system)
        room = len(system)
        while data[at + room] == 0:  # the command's padding after the name
            room += 1
        assert len(brew) <= room
        return data[:at] + brew + bytes(room - len(brew)) + data[at + room :]

    wheel = derived(wheels("macos-arm64"), tmp_path, homebrew, suffix=MACHO_SUFFIX)
    got = verdicts(wheel)["RF-V070"]
    assert got.status == "fail"
    assert "loads /opt/homebrew/lib/libomp.dylib from outside the wheel" in got.message
    shown = inspect_wheel(wheel).to_json()["macho_files"][0]["slices"][0]["dylibs"]
    assert {"path": "/opt/homebrew/lib/libomp.dylib", "kind": "load"} in shown


def test_an_unsigned_arm64_file_fails(wheels: Callable[[Role], Path], tmp_path: Path) -> None:
    def unsign(data: bytes) -> bytes:
        out = bytearray(data)
        (at,) = [a for a, cmd, _ in commands(data) if cmd == LC_CODE_SIGNATURE]
        struct.pack_into("<I", out, at, LC_FUNCTION_STARTS)
        return bytes(out)

    wheel = derived(wheels("macos-arm64"), tmp_path, unsign, suffix=MACHO_SUFFIX)
    got = verdicts(wheel)["RF-V070"]
    assert got.status == "fail"
    assert "(arm64) is not signed" in got.message


def test_a_missing_bundled_dylib_fails(wheels: Callable[[Role], Path], tmp_path: Path) -> None:
    """delocate's copy of libgeos_c taken out: the @loader_path dependencies resolve nowhere."""
    target = without(wheels("macos-bundled-dylib"), tmp_path, "libgeos_c")
    got = verdicts(target)["RF-V070"]
    assert got.status == "fail"
    assert "loads @loader_path/.dylibs/libgeos_c" in got.message
    assert "which is not in the wheel" in got.message


def test_a_dll_neither_bundled_nor_system_fails(
    wheels: Callable[[Role], Path], tmp_path: Path
) -> None:
    def rename(data: bytes) -> bytes:
        at = data.index(b"KERNEL32.dll\x00")
        return data[:at] + b"KERNEL99.dll" + data[at + 12 :]

    wheel = derived(wheels("win-amd64"), tmp_path, rename, suffix=PYD_SUFFIX)
    got = verdicts(wheel)["RF-V071"]
    assert got.status == "fail"
    assert (
        "simplejson/_speedups.cp313-win_amd64.pyd imports KERNEL99.dll, which is neither in "
        "the wheel nor a Windows DLL"
    ) in got.message


def test_a_pe_machine_changed_fails(wheels: Callable[[Role], Path], tmp_path: Path) -> None:
    def to_arm64(data: bytes) -> bytes:
        out = bytearray(data)
        (pe,) = struct.unpack_from("<I", data, 0x3C)
        assert struct.unpack_from("<H", data, pe + 4) == (0x8664,)
        struct.pack_into("<H", out, pe + 4, 0xAA64)
        return bytes(out)

    wheel = derived(wheels("win-amd64"), tmp_path, to_arm64, suffix=PYD_SUFFIX)
    got = verdicts(wheel)["RF-V071"]
    assert got.status == "fail"
    assert "_speedups.cp313-win_amd64.pyd is a aarch64 binary, the tag says x86_64" in got.message


def test_another_pythons_dll_fails(wheels: Callable[[Role], Path], tmp_path: Path) -> None:
    def python312(data: bytes) -> bytes:
        return data.replace(b"python313.dll", b"python312.dll")

    wheel = derived(wheels("win-amd64"), tmp_path, python312, suffix=PYD_SUFFIX)
    got = verdicts(wheel)["RF-V071"]
    assert got.status == "fail"
    assert "imports python312.dll, the tags' Python needs python313.dll" in got.message


def test_a_missing_delvewheel_dll_fails(wheels: Callable[[Role], Path], tmp_path: Path) -> None:
    target = without(wheels("win-bundled-dll"), tmp_path, "/geos_c-")
    got = verdicts(target)["RF-V071"]
    assert got.status == "fail"
    assert "imports geos_c-" in got.message and "neither in the wheel" in got.message


def test_a_binary_of_another_os_fails(wheels: Callable[[Role], Path], tmp_path: Path) -> None:
    source = wheels("macos-arm64")
    target = tmp_path / source.name
    elf = Path("/bin/true").read_bytes()
    with zipfile.ZipFile(source) as zin, zipfile.ZipFile(target, "w") as out:
        for info in zin.infolist():
            out.writestr(info, zin.read(info))
        out.writestr("simplejson/helper.so", elf)
    got = verdicts(target)["RF-V072"]
    assert got.status == "fail"
    assert "simplejson/helper.so is ELF" in got.message


def test_a_hostile_macho_header_is_a_verdict(
    wheels: Callable[[Role], Path], tmp_path: Path
) -> None:
    def absurd(data: bytes) -> bytes:
        out = bytearray(data)
        struct.pack_into("<I", out, 16, 0xFFFFFFFF)  # ncmds
        return bytes(out)

    wheel = derived(wheels("macos-arm64"), tmp_path, absurd, suffix=MACHO_SUFFIX)
    got = verdicts(wheel)["RF-V070"]
    assert got.status == "fail"
    assert "unreadable Mach-O" in got.message


@pytest.mark.parametrize(
    ("dll", "requires", "status"),
    [
        (b"c10.dll", "torch>=2.9", "pass"),  # a torch extension: torch's wheel ships c10.dll
        (b"c10.dll", "", "fail"),  # … but only when the wheel requires torch
        (b"nvcuda.dll", "", "pass"),  # the GPU driver's: never in a wheel
    ],
)
def test_dlls_of_dependencies_and_the_driver(
    wheels: Callable[[Role], Path], tmp_path: Path, dll: bytes, requires: str, status: str
) -> None:
    def rename(data: bytes) -> bytes:
        at = data.index(b"KERNEL32.dll\x00")
        return data[:at] + dll.ljust(12, b"\x00") + data[at + 12 :]

    wheel = derived(wheels("win-amd64"), tmp_path, rename, suffix=PYD_SUFFIX)
    if requires:
        edited = tmp_path / "with-requires" / wheel.name
        edited.parent.mkdir()
        derived(
            wheel,
            edited.parent,
            lambda data: data.replace(b"\n", f"\nRequires-Dist: {requires}\n".encode(), 1),
            suffix=".dist-info/METADATA",
        )
        wheel = edited
    got = verdicts(wheel)["RF-V071"]
    assert got.status == status, got
    if status == "fail":
        assert f"imports {dll.decode()}, which is neither in the wheel" in got.message
