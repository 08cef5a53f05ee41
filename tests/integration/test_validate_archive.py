"""`relforge validate` on native archives (libtorch-style zips) built by the tests from shared
libraries this machine's gcc/g++ compiles, and every way we could think of to make one lie."""

from __future__ import annotations

import contextlib
import functools
import http.server
import json
import os
import stat
import struct
import subprocess
import textwrap
import threading
import warnings
import zipfile
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest

from relforge.manifest import ArtifactManifest, ManifestEntry, load_manifest, sha256_file
from relforge.validate.checks import CHECKS
from tests.conftest import Result

Run = Callable[..., Result]

PROJECT = "demo-lib"
VERSION = "1.0.0+cpu"
CELL = "libtorch-linux-x86_64-cpu-shared-with-deps-release"
NAME = f"{PROJECT}-linux-x86_64-shared-with-deps-release-{VERSION}.zip"
MATRIX = """\
schema_version: 1
project:
  name: demo-lib
  size_limit_mb: 1
releases:
  "1.0":
    python: ["3.11"]
    platforms:
      linux-x86_64: {os: linux, arch: x86_64, platform_tag: manylinux_2_28_x86_64}
    accelerators:
      cpu:
        kind: cpu
        platforms: {linux-x86_64: {}}
    libtorch:
      platforms: [linux-x86_64]
      accelerators: [cpu]
      variants: [shared-with-deps]
"""
ARCHIVES = ("--select", "package_type=libtorch")

pytestmark = pytest.mark.slow

# A C helper library and a C++ library using it; `demo::measure` takes a std::string, so its
# mangled name shows the string ABI.  Only reads the string (see tests/wheelfactory.py).
HELPER = "int helper_value(void) { return 41; }\n"
LIBRARY = textwrap.dedent("""\
    #include <string>
    #ifdef NEEDS_THREADS
    #include <pthread.h>
    static void *run(void *) { return nullptr; }
    #endif
    extern "C" int helper_value(void);
    #ifdef NEEDS_MISSING
    extern "C" int function_of_another_build(void);
    #define helper_value function_of_another_build
    #endif
    namespace demo {
    __attribute__((visibility("default"))) std::size_t measure(const std::string &what) {
    #ifdef NEEDS_THREADS
        pthread_t t;
        pthread_create(&t, nullptr, run, nullptr);
        pthread_join(t, nullptr);
    #endif
        return what.size() + helper_value();
    }
    }
    """)


@dataclass(frozen=True, kw_only=True)
class Lib:
    """How to compile libdemo.so."""

    cxx11_abi: bool = True
    runpath: str | None = "$ORIGIN"
    threads: bool = False  # pthread_create: GLIBC_2.34 on glibc >= 2.34, above manylinux_2_28
    undefined: bool = False  # calls a function no library defines (links: -shared allows it)


@dataclass(frozen=True, kw_only=True)
class Built:
    helper: bytes
    demo: bytes


Compile = Callable[[Lib], Built]


@pytest.fixture(scope="module")
def compiled(tmp_path_factory: pytest.TempPathFactory) -> Compile:
    """Compile libhelper.so once and libdemo.so once per distinct build."""
    root = tmp_path_factory.mktemp("libs")
    (root / "helper.c").write_text(HELPER)
    (root / "demo.cpp").write_text(LIBRARY)
    helper = root / "libhelper.so"
    subprocess.run(
        ["gcc", "-shared", "-fPIC", "-Wl,-soname,libhelper.so", str(root / "helper.c"),
         "-o", str(helper)],
        check=True, capture_output=True,
    )  # fmt: skip
    cache: dict[Lib, Built] = {}

    def get(lib: Lib) -> Built:
        if lib not in cache:
            out = root / f"libdemo{len(cache)}.so"
            argv = [
                "g++", "-shared", "-fPIC", "-O1", "-std=c++17", "-Wl,--enable-new-dtags",
                f"-D_GLIBCXX_USE_CXX11_ABI={int(lib.cxx11_abi)}", str(root / "demo.cpp"),
                "-o", str(out), f"-L{root}", "-lhelper",
            ]  # fmt: skip
            if lib.runpath is not None:
                argv.append(f"-Wl,-rpath,{lib.runpath}")
            if lib.threads:
                argv += ["-DNEEDS_THREADS", "-pthread"]
            if lib.undefined:
                argv.append("-DNEEDS_MISSING")
            subprocess.run(argv, check=True, capture_output=True)
            cache[lib] = Built(helper=helper.read_bytes(), demo=out.read_bytes())
        return cache[lib]

    return get


def good_files(built: Built, top: str = "libtorch") -> dict[str, bytes]:
    return {
        f"{top}/build-version": f"{VERSION}\n".encode(),
        f"{top}/include/demo/demo.h": b"#include <string>\nnamespace demo {\n"
        b"std::size_t measure(const std::string &what);\n}\n",
        f"{top}/lib/libdemo.so": built.demo,
        f"{top}/lib/libhelper.so": built.helper,
        f"{top}/share/cmake/demo/demoConfig.cmake": b"# cmake config\n",
    }


def write_archive(
    directory: Path,
    files: Mapping[str, bytes],
    *,
    symlinks: Mapping[str, str] | None = None,
    twice: Sequence[tuple[str, bytes]] = (),
    name: str = NAME,
) -> Path:
    """Zip the files deflated, directory entries first, as `zip -r` does."""
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / name
    dirs = sorted(
        {"/".join(n.split("/")[:i]) + "/" for n in files for i in range(1, n.count("/") + 1)}
    )
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        for d in dirs:
            if not d.startswith(("/", "..")) and "/../" not in d:
                zf.writestr(d, b"")
        for arcname, data in files.items():
            zf.writestr(arcname, data)
        for arcname, target in (symlinks or {}).items():
            info = zipfile.ZipInfo(arcname)
            info.external_attr = (stat.S_IFLNK | 0o777) << 16
            zf.writestr(info, target)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # "Duplicate name": that is the point
            for arcname, data in twice:
                zf.writestr(arcname, data)
    return path


def machine(elf: bytes, e_machine: int) -> bytes:
    """The ELF with another e_machine (183: aarch64) in its header."""
    return elf[:18] + e_machine.to_bytes(2, "little") + elf[20:]


def declare_size(path: Path, member: str, size: int) -> None:
    """Make the zip's local and central headers of `member` declare `size` uncompressed bytes."""
    data = bytearray(path.read_bytes())
    encoded = member.encode()
    patched = 0
    for signature, name_at, size_at in ((b"PK\x03\x04", 30, 22), (b"PK\x01\x02", 46, 24)):
        at = data.find(signature)
        while at != -1:
            if data[at + name_at : at + name_at + len(encoded)] == encoded:
                data[at + size_at : at + size_at + 4] = size.to_bytes(4, "little")
                patched += 1
            at = data.find(signature, at + 1)
    assert patched == 2, f"{member}: {patched} headers patched"
    path.write_bytes(bytes(data))


@pytest.fixture
def matrix(tmp_path: Path) -> Path:
    path = tmp_path / "matrix.yaml"
    path.write_text(MATRIX)
    return path


def validate_json(run: Run, matrix: Path, *args: str) -> tuple[int, dict[str, object]]:
    result = run("validate", str(matrix), "-r", "1.0", "-c", "test", *ARCHIVES, *args,
                 "--format", "json")  # fmt: skip
    return result.code, json.loads(result.out)


def verdicts(report: dict[str, object], subject: str = CELL) -> dict[str, dict[str, str]]:
    """check id → verdict of one subject."""
    artifacts = report["artifacts"]
    assert isinstance(artifacts, list)
    [found] = [a for a in artifacts if a["subject"] == subject]
    return {v["check"]: v for v in found["verdicts"]}


def failing(report: dict[str, object], subject: str = CELL) -> set[str]:
    return {c for c, v in verdicts(report, subject).items() if v["status"] == "fail"}


# -- a good archive ---------------------------------------------------------------------------


def test_a_good_archive_passes_every_check(run: Run, matrix: Path, compiled: Compile,
                                           tmp_path: Path) -> None:  # fmt: skip
    dist = tmp_path / "dist"
    write_archive(dist, good_files(compiled(Lib())))
    code, report = validate_json(run, matrix, "--dist", str(dist))
    assert code == 0, report
    got = verdicts(report)
    assert {c for c, v in got.items() if v["status"] == "pass"} >= {
        "RF-V100", "RF-V102", "RF-V060", "RF-V061", "RF-V062", "RF-V063", "RF-V032", "RF-V033",
        "RF-V040", "RF-V041", "RF-V042", "RF-V043", "RF-V044", "RF-V045", "RF-V046", "RF-V050",
        "RF-V064",
    }  # fmt: skip
    assert got["RF-V064"]["message"] == "2 ELF files for linux x86_64"
    # libdemo.so is needed by no file of the archive, yet its symbols are all checked: a
    # program links it, and the linker refuses a library with undefined symbols
    assert "unchecked" not in got["RF-V046"]["message"], got["RF-V046"]
    assert got["RF-V040"]["message"] == "within manylinux_2_28"
    assert got["RF-V062"]["message"] == f"libtorch/build-version: {VERSION}"
    assert "libtorch/ with include/ (1 files), lib/ (2 files)" in got["RF-V061"]["message"]
    # wheel-only checks do not run on an archive
    assert not {"RF-V010", "RF-V011", "RF-V013", "RF-V030", "RF-V031"} & set(got)


def test_any_top_directory_name_and_trailing_newline_free_version(
    run: Run, matrix: Path, compiled: Compile, tmp_path: Path
) -> None:
    dist = tmp_path / "dist"
    files = good_files(compiled(Lib()), top="demo-lib")
    files["demo-lib/build-version"] = VERSION.encode()
    write_archive(dist, files)
    code, report = validate_json(run, matrix, "--dist", str(dist))
    assert code == 0, failing(report)


# -- broken archives: each fires exactly its checks -------------------------------------------


def _files(compiled: Compile, lib: Lib = Lib(), **changes: bytes | None) -> dict[str, bytes]:
    """The good files with some replaced (`lib__libdemo_so` → libtorch/lib/libdemo.so)."""
    files = good_files(compiled(lib))
    for key, value in changes.items():
        name = "libtorch/" + key.replace("__", "/").replace("_so", ".so").replace("_", "-")
        if value is None:
            files.pop(name)
        else:
            files[name] = value
    return files


BuildArchive = Callable[[Compile, Path], Path]
BROKEN: dict[str, tuple[BuildArchive, set[str]]] = {
    "build-version-of-another-variant": (
        lambda c, d: write_archive(d, _files(c, build_version=b"1.0.0+cu130\n")),
        {"RF-V062"},
    ),
    "build-version-unnormalized": (
        lambda c, d: write_archive(d, _files(c, build_version=b"1.0+cpu\n")),
        {"RF-V062"},
    ),
    "build-version-missing": (
        lambda c, d: write_archive(d, _files(c, build_version=None)),
        {"RF-V062"},
    ),
    "build-version-not-utf8": (
        lambda c, d: write_archive(d, _files(c, build_version=b"\xff\xfe1.0.0")),
        {"RF-V062"},
    ),
    "build-version-a-symlink": (
        lambda c, d: write_archive(
            d, _files(c, build_version=None), symlinks={"libtorch/build-version": "/etc/hostname"}
        ),
        {"RF-V033", "RF-V062"},
    ),
    "zip-slip": (
        lambda c, d: write_archive(
            d, {**_files(c), "libtorch/lib/../../../../tmp/evil.sh": b"#!/bin/sh\n"}
        ),
        {"RF-V032"},
    ),
    "absolute-member": (
        lambda c, d: write_archive(d, {**_files(c), "/etc/cron.d/evil": b"* * * * * root x\n"}),
        {"RF-V032", "RF-V061", "RF-V062"},
    ),
    "zip-slip-directory-entry": (
        lambda c, d: write_archive(d, {**_files(c), "libtorch/../../../../etc/evil.d/": b""}),
        {"RF-V032"},
    ),
    "symlink-member": (
        lambda c, d: write_archive(
            d, _files(c), symlinks={"libtorch/lib/libc.so.6": "/lib/x86_64-linux-gnu/libc.so.6"}
        ),
        {"RF-V033"},
    ),
    "duplicate-name": (
        lambda c, d: write_archive(d, _files(c), twice=[("libtorch/build-version", b"9.9.9\n")]),
        {"RF-V032", "RF-V062"},  # the last entry is what unzip leaves: 9.9.9
    ),
    "shared-object-not-elf": (
        lambda c, d: write_archive(d, {**_files(c), "libtorch/lib/libfake.so.1": b"GROUP ( x )\n"}),
        {"RF-V045"},
    ),
    "elf-for-another-machine": (
        lambda c, d: write_archive(d, _files(c, lib__libdemo_so=machine(c(Lib()).demo, 183))),
        {"RF-V044"},
    ),
    "glibc-above-the-platform-ceiling": (
        lambda c, d: write_archive(d, _files(c, Lib(threads=True))),
        {"RF-V040"},
    ),
    "pre-cxx11-abi-in-a-cxx11-cell": (
        lambda c, d: write_archive(d, _files(c, Lib(cxx11_abi=False))),
        {"RF-V042"},
    ),
    "needed-library-not-on-runpath": (
        lambda c, d: write_archive(d, _files(c, Lib(runpath=None))),
        {"RF-V041"},
    ),
    "runpath-leaves-the-archive": (
        lambda c, d: write_archive(d, _files(c, Lib(runpath="$ORIGIN:$ORIGIN/../../../opt/lib"))),
        {"RF-V063"},
    ),
    "undefined-symbol-in-a-library-nothing-needs": (
        lambda c, d: write_archive(d, _files(c, Lib(undefined=True))),
        {"RF-V046"},
    ),
    "windows-dll-in-a-linux-archive": (
        lambda c, d: write_archive(d, {**_files(c), "libtorch/lib/demo.dll": pe(0x8664)}),
        {"RF-V064"},
    ),
    "absolute-runpath": (
        lambda c, d: write_archive(d, _files(c, Lib(runpath="$ORIGIN:/home/builder/lib"))),
        {"RF-V043"},
    ),
    "no-lib-directory": (
        lambda c, d: write_archive(
            d, {n.replace("/lib/", "/bin/"): b for n, b in _files(c).items()}
        ),
        {"RF-V061"},
    ),
    "two-top-directories": (
        lambda c, d: write_archive(d, {**_files(c), "extra/README": b"hello\n"}),
        {"RF-V061", "RF-V062"},
    ),
    "over-the-size-limit": (
        lambda c, d: write_archive(
            d, {**_files(c), "libtorch/share/blob.bin": os.urandom(1_200_000)}
        ),
        {"RF-V050"},
    ),
}


@pytest.mark.parametrize("case", sorted(BROKEN))
def test_a_broken_archive_fires_its_checks(run: Run, matrix: Path, compiled: Compile,
                                           tmp_path: Path, case: str) -> None:  # fmt: skip
    make, expected = BROKEN[case]
    make(compiled, tmp_path / "dist")
    code, report = validate_json(run, matrix, "--dist", str(tmp_path / "dist"))
    assert code == 4
    assert failing(report) == expected


# -- damaged zips and lying headers -----------------------------------------------------------


def test_a_corrupt_or_truncated_zip_is_reported_not_raised(
    run: Run, matrix: Path, compiled: Compile, tmp_path: Path
) -> None:
    dist = tmp_path / "dist"
    good = write_archive(dist, _files(compiled))
    good.write_bytes(good.read_bytes()[: good.stat().st_size // 2])  # the central directory gone
    code, report = validate_json(run, matrix, "--dist", str(dist))
    assert code == 4
    got = verdicts(report)
    assert failing(report) == {"RF-V060"}
    assert "not a zip archive" in got["RF-V060"]["message"]
    assert {got[c]["status"] for c in ("RF-V061", "RF-V062", "RF-V040", "RF-V044")} == {"skip"}

    good.write_bytes(os.urandom(4096))
    code, report = validate_json(run, matrix, "--dist", str(dist))
    assert (code, failing(report)) == (4, {"RF-V060"})

    good.write_bytes(b"")
    code, report = validate_json(run, matrix, "--dist", str(dist))
    assert (code, failing(report)) == (4, {"RF-V060"})


def test_corrupt_member_data_fails_the_crc_check(
    run: Run, matrix: Path, compiled: Compile, tmp_path: Path
) -> None:
    dist = tmp_path / "dist"
    path = write_archive(dist, {**_files(compiled), "libtorch/include/demo/big.h": b"x" * 5000})
    data = bytearray(path.read_bytes())
    with zipfile.ZipFile(path) as zf:
        info = zf.getinfo("libtorch/include/demo/big.h")
    # flip a byte inside the member's deflate stream (past its local header)
    at = info.header_offset + 30 + len(info.filename) + info.compress_size // 2
    data[at] ^= 0xFF
    path.write_bytes(bytes(data))
    code, report = validate_json(run, matrix, "--dist", str(dist))
    assert code == 4
    assert failing(report) == {"RF-V060"}
    assert "libtorch/include/demo/big.h" in verdicts(report)["RF-V060"]["message"]


@pytest.mark.parametrize("member", ["libtorch/lib/libdemo.so", "libtorch/build-version"])
def test_a_member_declaring_gigabytes_is_not_inflated_for_them(
    run: Run, matrix: Path, compiled: Compile, tmp_path: Path, member: str
) -> None:
    """The zip says 3 GiB; the data holds a few KiB.  Reported, never believed or allocated."""
    dist = tmp_path / "dist"
    path = write_archive(dist, _files(compiled))
    declare_size(path, member, 3 << 30)
    code, report = validate_json(run, matrix, "--dist", str(dist))
    assert code == 4
    got = verdicts(report)
    assert "RF-V060" in failing(report)
    assert f"{member} inflates to " in got["RF-V060"]["message"]
    assert "the zip declares 3221225472" in got["RF-V060"]["message"]
    if member.endswith("build-version"):
        assert failing(report) == {"RF-V060", "RF-V062"}
        assert "declares 3221225472 bytes" in got["RF-V062"]["message"]


def test_a_deflate_bomb_named_like_a_library_is_cheap(
    run: Run, matrix: Path, compiled: Compile, tmp_path: Path
) -> None:
    """64 MiB of zeros deflate to 64 KiB: sniffed (4 bytes) and CRC-checked in bounded steps."""
    dist = tmp_path / "dist"
    write_archive(dist, {**_files(compiled), "libtorch/lib/libbomb.so": bytes(64 << 20)})
    code, report = validate_json(run, matrix, "--dist", str(dist))
    assert (code, failing(report)) == (4, {"RF-V045"})
    assert verdicts(report)["RF-V060"]["status"] == "pass"


# -- through the CLI: text, JSON, manifest, strays, wheels beside archives ---------------------


def test_cli_table_names_the_archive_and_exits_4(
    run: Run, matrix: Path, compiled: Compile, tmp_path: Path
) -> None:
    dist = tmp_path / "dist"
    write_archive(dist, _files(compiled, build_version=b"0.9.0+cpu\n"))
    result = run("validate", str(matrix), "-r", "1.0", "-c", "test", *ARCHIVES, "--dist", str(dist))
    assert result.code == 4
    assert CELL in result.out
    assert "RF-V062" in result.out
    assert "0.9.0+cpu" in result.out
    assert "Traceback" not in result.out + result.err
    assert "checks failed on 1 of 1 artifacts" in result.err
    assert CELL in result.err


def test_cli_json_shape_for_an_archive(
    run: Run, matrix: Path, compiled: Compile, tmp_path: Path
) -> None:
    dist = tmp_path / "dist"
    write_archive(dist, _files(compiled, build_version=b"0.9.0+cpu\n"))
    code, report = validate_json(run, matrix, "--dist", str(dist))
    assert code == 4
    assert report["status"] == "fail"
    artifacts = report["artifacts"]
    assert isinstance(artifacts, list)
    [entry] = artifacts
    assert (entry["subject"], entry["cell_id"], entry["file"], entry["status"]) == (
        CELL, CELL, NAME, "fail"
    )  # fmt: skip
    names = {v["check"]: v["name"] for v in entry["verdicts"]}
    assert names["RF-V062"] == "build-version"
    assert names["RF-V061"] == "archive-layout"
    checks = report["checks"]
    assert isinstance(checks, dict)
    assert checks["RF-V060"]["name"] == "archive-readable"


def test_missing_and_stray_archives(
    run: Run, matrix: Path, compiled: Compile, tmp_path: Path
) -> None:
    dist = tmp_path / "dist"
    dist.mkdir()
    code, report = validate_json(run, matrix, "--dist", str(dist))
    assert code == 4
    assert failing(report) == {"RF-V100"}
    assert NAME in verdicts(report)["RF-V100"]["message"]
    stray = write_archive(dist, _files(compiled), name="libtorch-shared-with-deps-1.0.0+cpu.zip")
    code, report = validate_json(run, matrix, "--dist", str(dist))
    assert code == 4
    assert failing(report) == {"RF-V100"}
    # the stray is still read as an archive (no cell: its version is shown, not judged)
    assert failing(report, stray.name) == {"RF-V101"}
    assert verdicts(report, stray.name)["RF-V062"]["status"] == "skip"
    assert VERSION in verdicts(report, stray.name)["RF-V062"]["message"]


def test_manifest_binds_an_archive_of_any_name_and_gets_its_verdicts(
    run: Run, matrix: Path, compiled: Compile, tmp_path: Path
) -> None:
    out = tmp_path / "out"
    path = write_archive(out, _files(compiled), name="libtorch-shared-with-deps-1.0.0+cpu.zip")
    entry = ManifestEntry(
        cell_id=CELL, file=path.name, size=path.stat().st_size, sha256=sha256_file(path),
        version=VERSION, package_type="libtorch", variant="cpu", upload_subfolder="cpu",
    )  # fmt: skip
    manifest = ArtifactManifest(project=PROJECT, release="1.0", channel="test")
    manifest = manifest.with_entries([entry])
    manifest.save(out / "manifest.json")
    code, report = validate_json(run, matrix, "--manifest", str(out / "manifest.json"))
    assert code == 0, failing(report)
    assert "the manifest's" in verdicts(report)["RF-V100"]["message"]
    entry = load_manifest(out / "manifest.json").entries[CELL]
    assert entry.validated
    assert {v.check for v in entry.verdicts} >= {"RF-V060", "RF-V062", "RF-V040"}

    write_archive(out, _files(compiled, Lib(cxx11_abi=False)), name=path.name)
    code, report = validate_json(run, matrix, "--manifest", str(out / "manifest.json"))
    assert (code, failing(report)) == (4, {"RF-V042"})
    assert not load_manifest(out / "manifest.json").entries[CELL].validated


def test_wheel_and_archive_cells_validate_together(
    run: Run, matrix: Path, compiled: Compile, tmp_path: Path
) -> None:
    """Without --select the release's wheel cell is expected too; an archive does not stand in."""
    dist = tmp_path / "dist"
    write_archive(dist, _files(compiled))
    result = run("validate", str(matrix), "-r", "1.0", "-c", "test", "--dist", str(dist),
                 "--format", "json")  # fmt: skip
    report = json.loads(result.out)
    assert result.code == 4
    assert failing(report) == set()
    assert failing(report, "wheel-linux-x86_64-py3.11-cpu") == {"RF-V100"}


def test_every_archive_check_is_documented_in_the_readme() -> None:
    readme = (Path(__file__).parents[2] / "README.md").read_text()
    section = readme.split("## Validating artifacts", 1)[1].split("\n## ", 1)[0]
    for check_id in ("RF-V060", "RF-V061", "RF-V062", "RF-V063", "RF-V064"):
        spec = CHECKS[check_id]
        assert f"| {check_id} | {spec.name} |" in section, check_id


def _patch_local_name(path: Path, member: str, name: str) -> None:
    """Give the member's local file header another name of the same length."""
    assert len(name) == len(member)
    data = bytearray(path.read_bytes())
    with zipfile.ZipFile(path) as zf:
        at = zf.getinfo(member).header_offset
    assert data[at + 30 : at + 30 + len(member)] == member.encode()
    data[at + 30 : at + 30 + len(member)] = name.encode()
    path.write_bytes(bytes(data))


def test_a_local_header_naming_another_path_is_caught(
    run: Run, matrix: Path, compiled: Compile, tmp_path: Path
) -> None:
    """The central directory says include/demo/demo.h; the local header, a path up and out.
    Python's zipfile refuses such a member, some unzippers follow the local header."""
    dist = tmp_path / "dist"
    path = write_archive(dist, _files(compiled))
    member = "libtorch/include/demo/demo.h"
    _patch_local_name(path, member, "../../../../../../../tmp/x.h")
    code, report = validate_json(run, matrix, "--dist", str(dist))
    assert (code, failing(report)) == (4, {"RF-V060"})
    assert "'../../../../../../../tmp/x.h'" in verdicts(report)["RF-V060"]["message"]


def test_overlapping_entries_are_caught(
    run: Run, matrix: Path, compiled: Compile, tmp_path: Path
) -> None:
    """Two central entries pointing at one local header (the overlapping-entry bomb)."""
    dist = tmp_path / "dist"
    path = write_archive(dist, _files(compiled))
    data = bytearray(path.read_bytes())
    with zipfile.ZipFile(path) as zf:
        header = zf.getinfo("libtorch/lib/libdemo.so").header_offset
        victim = zf.getinfo("libtorch/share/cmake/demo/demoConfig.cmake")
    # point the cmake file's central entry at libdemo.so's local header
    at = data.find(b"PK\x01\x02")
    while data[at + 46 : at + 46 + len(victim.filename)] != victim.filename.encode():
        at = data.find(b"PK\x01\x02", at + 1)
    data[at + 42 : at + 46] = header.to_bytes(4, "little")
    path.write_bytes(bytes(data))
    code, report = validate_json(run, matrix, "--dist", str(dist))
    assert code == 4
    assert "RF-V060" in failing(report)
    assert "shares its data with" in verdicts(report)["RF-V060"]["message"]


WINDOWS_MATRIX = """\
schema_version: 1
project:
  name: demo-lib
  size_limit_mb: 1
releases:
  "1.0":
    python: ["3.11"]
    platforms:
      windows-x86_64: {os: windows, arch: x86_64, platform_tag: win_amd64}
    accelerators:
      cpu:
        kind: cpu
        platforms: {windows-x86_64: {}}
    libtorch:
      platforms: [windows-x86_64]
      accelerators: [cpu]
      variants: [shared-with-deps]
      configs: [release, debug]
"""


def pe(machine: int, header_at: int = 0x80) -> bytes:
    """A PE file's first bytes: the MS-DOS stub pointing at "PE\\0\\0" and the COFF Machine."""
    stub = b"MZ" + bytes(0x3A) + header_at.to_bytes(4, "little")
    return stub.ljust(header_at, b"\0") + b"PE\0\0" + machine.to_bytes(2, "little") + bytes(256)


def macho(*cpus: int) -> bytes:
    """A Mach-O file's first bytes: thin (64-bit little-endian) for one CPU, universal for more."""
    if len(cpus) == 1:
        return struct.pack("<IiI", 0xFEEDFACF, cpus[0], 3) + bytes(256)
    arches = b"".join(
        struct.pack(">iiIII", cpu, 0, 0x4000 * (i + 1), 256, 14) for i, cpu in enumerate(cpus)
    )
    return struct.pack(">II", 0xCAFEBABE, len(cpus)) + arches + bytes(256)


X86_64, ARM64 = 0x01000007, 0x0100000C


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


@pytest.mark.parametrize(
    ("extra", "problem"),
    [
        ({"libtorch/lib/demo_arm.dll": pe(0xAA64)}, "is for aarch64, the cell for x86_64"),
        ({"libtorch/lib/evil.dll": pe(0x8664, header_at=0x80000)}, None),  # not believed
        ({"libtorch/lib/libdemo.so": b""}, "is ELF, the cell builds for windows"),
        ({"libtorch/lib/demo.dylib": macho(X86_64)}, "is Mach-O, the cell builds for windows"),
    ],
)
def test_windows_archive_binaries_of_another_kind(
    run: Run, tmp_path: Path, compiled: Compile, extra: dict[str, bytes], problem: str | None
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
    assert code == 4
    assert failing(report, "libtorch-windows-x86_64-cpu-shared-with-deps-release") == {"RF-V064"}
    assert problem in got["RF-V064"]["message"]


MACOS_MATRIX = (
    WINDOWS_MATRIX.replace(
        "windows-x86_64: {os: windows, arch: x86_64, platform_tag: win_amd64}",
        "macos-arm64: {os: macos, arch: arm64, platform_tag: macosx_14_0_arm64}",
    )
    .replace("windows-x86_64", "macos-arm64")
    .replace("configs: [release, debug]", "configs: [release]")
)


@pytest.mark.parametrize(
    ("dylib", "ok"),
    [(macho(ARM64), True), (macho(X86_64, ARM64), True), (macho(X86_64), False),
     (pe(0xAA64), False)],
)  # fmt: skip
def test_macos_archive_binaries(run: Run, tmp_path: Path, dylib: bytes, ok: bool) -> None:
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
    assert (code, failing(report, subject)) == ((0, set()) if ok else (4, {"RF-V064"}))
    if ok:
        assert verdicts(report, subject)["RF-V064"]["message"] == "1 Mach-O files for macos aarch64"


@contextlib.contextmanager
def serving(root: Path) -> Iterator[str]:
    """A static HTTP server on 127.0.0.1 for `root`; yields its base URL."""
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(root))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05})
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


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


def test_runtime_and_junit_leave_archives_to_their_static_checks(
    run: Run, matrix: Path, compiled: Compile, tmp_path: Path
) -> None:
    """--runtime installs wheels; an archive is not pip-installed, its verdicts stay static."""
    dist = tmp_path / "dist"
    write_archive(dist, _files(compiled))
    code, report = validate_json(run, matrix, "--dist", str(dist), "--runtime")
    assert code == 0, failing(report)
    assert not [c for c in verdicts(report) if c.startswith("RF-R")]
    result = run("validate", str(matrix), "-r", "1.0", "-c", "test", *ARCHIVES, "--dist",
                 str(dist), "--format", "junit")  # fmt: skip
    assert result.code == 0
    assert CELL in result.out and "RF-V062" in result.out


def test_names_differing_in_case_collide_on_windows_not_on_linux(
    run: Run, matrix: Path, compiled: Compile, tmp_path: Path
) -> None:
    headers = {"libtorch/include/demo/Config.h": b"// a\n", "libtorch/include/demo/config.h": b""}
    dist = tmp_path / "dist"
    write_archive(dist, {**_files(compiled), **headers})
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


def test_a_member_in_a_method_relforge_cannot_read_is_reported(
    run: Run, matrix: Path, compiled: Compile, tmp_path: Path
) -> None:
    dist = tmp_path / "dist"
    path = write_archive(dist, _files(compiled))
    with zipfile.ZipFile(path, "a") as zf:
        zf.writestr("libtorch/share/notes.txt", b"bzip2\n" * 100, compress_type=zipfile.ZIP_BZIP2)
    code, report = validate_json(run, matrix, "--dist", str(dist))
    assert (code, failing(report)) == (4, {"RF-V060"})
    assert "compression method 12" in verdicts(report)["RF-V060"]["message"]


def test_a_pre_cxx11_cell_refuses_cxx11_symbols(
    run: Run, tmp_path: Path, compiled: Compile
) -> None:
    matrix = tmp_path / "matrix.yaml"
    matrix.write_text(MATRIX + "      cxx11_abi: false\n")
    dist = tmp_path / "dist"
    write_archive(dist, _files(compiled, Lib(cxx11_abi=False)))
    code, report = validate_json(run, matrix, "--dist", str(dist))
    assert code == 0, failing(report)
    assert "pre-C++11" in verdicts(report)["RF-V042"]["message"]
    write_archive(dist, _files(compiled, Lib(cxx11_abi=True)))
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
        _files(compiled),
        name=f"{PROJECT}-linux-aarch64-shared-with-deps-release-{VERSION}.zip",
    )
    code, report = validate_json(run, matrix, "--dist", str(dist))
    subject = "libtorch-linux-aarch64-cpu-shared-with-deps-release"
    assert code == 4
    assert "RF-V044" in failing(report, subject)
    assert "is x86_64, the tags say aarch64" in verdicts(report, subject)["RF-V044"]["message"]
