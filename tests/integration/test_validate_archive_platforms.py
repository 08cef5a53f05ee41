"""`relforge validate` on native archives of other platforms: Windows (release and debug), macOS,
Linux aarch64, a pre-C++11 cell; and an index, which serves no archives."""

from __future__ import annotations

import json
import struct
from pathlib import Path

import pytest

from tests.archivefactory import (
    ARCHIVES,
    ARM64,
    MACOS_MATRIX,
    MATRIX,
    PROJECT,
    VERSION,
    WINDOWS_MATRIX,
    X86_64,
    Compile,
    Lib,
    Run,
    compiler,
    failing,
    files_with,
    macho,
    pe,
    serving,
    validate_json,
    verdicts,
    write_archive,
)

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def compiled(tmp_path_factory: pytest.TempPathFactory) -> Compile:
    return compiler(tmp_path_factory.mktemp("libs"))


@pytest.fixture
def matrix(tmp_path: Path) -> Path:
    path = tmp_path / "matrix.yaml"
    path.write_text(MATRIX)
    return path


def test_windows_archives_release_and_debug(run: Run, tmp_path: Path) -> None:
    """No ELF to read: layout, build-version, members and size still hold; each config binds
    to its own cell by name."""
    matrix = tmp_path / "matrix.yaml"
    matrix.write_text(WINDOWS_MATRIX)
    dist = tmp_path / "dist"
    files = {
        "libtorch/build-version": f"{VERSION}\r\n".encode(),
        "libtorch/include/demo/demo.h": b"#pragma once\n",
        "libtorch/lib/demo.dll": pe(0x8664),
        "libtorch/bin/demo-tool.exe": pe(0x8664, header_at=0x2400),  # past the first 4 KiB
        "libtorch/lib/demo.lib": b"!<arch>\n",
    }
    for config in ("release", "debug"):
        write_archive(
            dist, files, name=f"{PROJECT}-windows-x86_64-shared-with-deps-{config}-{VERSION}.zip"
        )
    code, report = validate_json(run, matrix, "--dist", str(dist))
    assert code == 0, report
    for config in ("release", "debug"):
        got = verdicts(report, f"libtorch-windows-x86_64-cpu-shared-with-deps-{config}")
        assert got["RF-V062"]["status"] == "pass"
        assert got["RF-V040"]["status"] == "skip"
        assert got["RF-V064"]["message"] == "2 PE files for windows x86_64"
    write_archive(
        dist,
        {**files, "libtorch/build-version": b"1.0.0+cpu-debug\n"},
        name=f"{PROJECT}-windows-x86_64-shared-with-deps-debug-{VERSION}.zip",
    )
    code, report = validate_json(run, matrix, "--dist", str(dist))
    assert code == 4
    assert failing(report, "libtorch-windows-x86_64-cpu-shared-with-deps-debug") == {"RF-V062"}
    assert failing(report, "libtorch-windows-x86_64-cpu-shared-with-deps-release") == set()


# The member checks name the same binary: RF-V071 (a PE for another machine), RF-V072 (a binary
# of another OS's format).
@pytest.mark.parametrize(
    ("extra", "problem", "member"),
    [
        ({"libtorch/lib/demo_arm.dll": pe(0xAA64)}, "is for aarch64, the cell for x86_64",
         ("RF-V071", "libtorch/lib/demo_arm.dll is a aarch64 binary, the tag says x86_64")),
        ({"libtorch/lib/evil.dll": pe(0x8664, header_at=0x80000)}, None, None),  # not believed
        ({"libtorch/lib/libdemo.so": b""}, "is ELF, the cell builds for windows",
         ("RF-V072", "libtorch/lib/libdemo.so is ELF")),
        ({"libtorch/lib/demo.dylib": macho(X86_64)}, "is Mach-O, the cell builds for windows",
         ("RF-V072", "libtorch/lib/demo.dylib is Mach-O")),
    ],
)  # fmt: skip
def test_windows_archive_binaries_of_another_kind(
    run: Run,
    tmp_path: Path,
    compiled: Compile,
    extra: dict[str, bytes],
    problem: str | None,
    member: tuple[str, str] | None,
) -> None:
    matrix = tmp_path / "matrix.yaml"
    matrix.write_text(WINDOWS_MATRIX.replace("configs: [release, debug]", "configs: [release]"))
    files = {
        "libtorch/build-version": f"{VERSION}\n".encode(),
        "libtorch/include/demo/demo.h": b"#pragma once\n",
        "libtorch/lib/demo.dll": pe(0x8664),
        **{k: v or compiled(Lib()).demo for k, v in extra.items()},
    }
    dist = tmp_path / "dist"
    write_archive(
        dist, files, name=f"{PROJECT}-windows-x86_64-shared-with-deps-release-{VERSION}.zip"
    )
    code, report = validate_json(run, matrix, "--dist", str(dist))
    got = verdicts(report, "libtorch-windows-x86_64-cpu-shared-with-deps-release")
    if problem is None:
        assert code == 0, got
        return
    assert code == 4 and member is not None
    subject = "libtorch-windows-x86_64-cpu-shared-with-deps-release"
    assert failing(report, subject) == {"RF-V064", member[0]}
    assert problem in got["RF-V064"]["message"]
    assert member[1] in got[member[0]]["message"]


@pytest.mark.parametrize(
    ("dylib", "ok", "member"),
    [(macho(ARM64), True, ""), (macho(X86_64, ARM64), True, ""),
     (macho(X86_64), False, "RF-V070"), (pe(0xAA64), False, "RF-V072")],
)  # fmt: skip
def test_macos_archive_binaries(
    run: Run, tmp_path: Path, dylib: bytes, ok: bool, member: str
) -> None:
    matrix = tmp_path / "matrix.yaml"
    matrix.write_text(MACOS_MATRIX)
    files = {
        "libtorch/build-version": f"{VERSION}\n".encode(),
        "libtorch/include/demo/demo.h": b"#pragma once\n",
        "libtorch/lib/libdemo.dylib": dylib,
        # a Java class file shares the universal binary's magic; its "count" is its version
        "libtorch/share/java/Demo.class": struct.pack(">IHH", 0xCAFEBABE, 0, 61) + bytes(64),
    }
    dist = tmp_path / "dist"
    write_archive(dist, files, name=f"{PROJECT}-macos-arm64-shared-with-deps-release-{VERSION}.zip")
    code, report = validate_json(run, matrix, "--dist", str(dist))
    subject = "libtorch-macos-arm64-cpu-shared-with-deps-release"
    assert (code, failing(report, subject)) == ((0, set()) if ok else (4, {"RF-V064", member}))
    if ok:
        assert verdicts(report, subject)["RF-V064"]["message"] == "1 Mach-O files for macos aarch64"


def test_an_index_serves_no_archives_so_none_is_expected_from_it(
    run: Run, matrix: Path, tmp_path: Path
) -> None:
    root = tmp_path / "index"
    (root / "simple" / PROJECT).mkdir(parents=True)
    (root / "simple" / PROJECT / "index.html").write_text("<html><body></body></html>\n")
    with serving(root) as url:
        result = run("validate", str(matrix), "-r", "1.0", "-c", "test", "--index",
                     f"{url}/simple", "--format", "json")  # fmt: skip
    report = json.loads(result.out)
    subjects = {a["subject"] for a in report["artifacts"]}
    assert subjects == {"wheel-linux-x86_64-py3.11-cpu"}  # missing, but no archive cell
    assert result.code == 4
    with serving(root) as url:
        result = run("validate", str(matrix), "-r", "1.0", "-c", "test", *ARCHIVES, "--index",
                     f"{url}/simple")  # fmt: skip
    assert result.code == 3
    assert "no cell of release 1.0 is selected" in result.err


def test_names_differing_in_case_collide_on_windows_not_on_linux(
    run: Run, matrix: Path, compiled: Compile, tmp_path: Path
) -> None:
    headers = {"libtorch/include/demo/Config.h": b"// a\n", "libtorch/include/demo/config.h": b""}
    dist = tmp_path / "dist"
    write_archive(dist, {**files_with(compiled), **headers})
    code, report = validate_json(run, matrix, "--dist", str(dist))
    assert code == 0, failing(report)

    windows = tmp_path / "windows.yaml"
    windows.write_text(WINDOWS_MATRIX.replace("configs: [release, debug]", "configs: [release]"))
    files = {
        "libtorch/build-version": f"{VERSION}\n".encode(),
        "libtorch/lib/demo.dll": pe(0x8664),
        **headers,
    }
    dist = tmp_path / "windows"
    write_archive(
        dist, files, name=f"{PROJECT}-windows-x86_64-shared-with-deps-release-{VERSION}.zip"
    )
    code, report = validate_json(run, windows, "--dist", str(dist))
    subject = "libtorch-windows-x86_64-cpu-shared-with-deps-release"
    assert (code, failing(report, subject)) == (4, {"RF-V061"})
    message = verdicts(report, subject)["RF-V061"]["message"]
    assert "libtorch/include/demo/config.h and libtorch/include/demo/Config.h" in message


def test_a_pre_cxx11_cell_refuses_cxx11_symbols(
    run: Run, tmp_path: Path, compiled: Compile
) -> None:
    matrix = tmp_path / "matrix.yaml"
    matrix.write_text(MATRIX + "      cxx11_abi: false\n")
    dist = tmp_path / "dist"
    write_archive(dist, files_with(compiled, Lib(cxx11_abi=False)))
    code, report = validate_json(run, matrix, "--dist", str(dist))
    assert code == 0, failing(report)
    assert "pre-C++11" in verdicts(report)["RF-V042"]["message"]
    write_archive(dist, files_with(compiled, Lib(cxx11_abi=True)))
    code, report = validate_json(run, matrix, "--dist", str(dist))
    assert (code, failing(report)) == (4, {"RF-V042"})


def test_an_x86_64_build_in_an_aarch64_cell(run: Run, tmp_path: Path, compiled: Compile) -> None:
    matrix = tmp_path / "matrix.yaml"
    text = MATRIX.replace("arch: x86_64", "arch: aarch64").replace("x86_64", "aarch64")
    assert "platform_tag: manylinux_2_28_aarch64" in text
    matrix.write_text(text)
    dist = tmp_path / "dist"
    write_archive(
        dist,
        files_with(compiled),
        name=f"{PROJECT}-linux-aarch64-shared-with-deps-release-{VERSION}.zip",
    )
    code, report = validate_json(run, matrix, "--dist", str(dist))
    subject = "libtorch-linux-aarch64-cpu-shared-with-deps-release"
    assert code == 4
    assert "RF-V044" in failing(report, subject)
    assert "is x86_64, the tags say aarch64" in verdicts(report, subject)["RF-V044"]["message"]
