"""`relforge validate` on native archives (libtorch-style zips) built by the tests from shared
libraries this machine's gcc/g++ compiles, and every way we could think of to make one lie."""

from __future__ import annotations

import json
import os
import subprocess
import zipfile
from collections.abc import Callable
from pathlib import Path

import pytest

from relforge.manifest import ArtifactManifest, ManifestEntry, load_manifest, sha256_file
from relforge.validate.checklist import CHECKS
from tests.archivefactory import (
    ARCHIVES,
    CELL,
    MATRIX,
    NAME,
    PROJECT,
    VERSION,
    Compile,
    Lib,
    Run,
    compiler,
    declare_size,
    failing,
    files_with,
    good_files,
    machine,
    patch_local_name,
    pe,
    validate_json,
    verdicts,
    write_archive,
)
from tests.wheelfactory import device_code

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def compiled(tmp_path_factory: pytest.TempPathFactory) -> Compile:
    return compiler(tmp_path_factory.mktemp("libs"))


@pytest.fixture
def matrix(tmp_path: Path) -> Path:
    path = tmp_path / "matrix.yaml"
    path.write_text(MATRIX)
    return path


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


BuildArchive = Callable[[Compile, Path], Path]


def with_device_code(compiled: Compile, folder: Path) -> bytes:
    """The demo library with a real fat binary (nvcc) in its `.nv_fatbin` section."""
    folder.mkdir(parents=True, exist_ok=True)
    library = folder / "libdemo.so"
    library.write_bytes(compiled(Lib()).demo)
    subprocess.run(
        ["objcopy", "--add-section", f".nv_fatbin={device_code(folder)}",
         "--set-section-flags", ".nv_fatbin=alloc,readonly", str(library)],
        check=True, capture_output=True,
    )  # fmt: skip
    return library.read_bytes()


BROKEN: dict[str, tuple[BuildArchive, set[str]]] = {
    "build-version-of-another-variant": (
        lambda c, d: write_archive(d, files_with(c, build_version=b"1.0.0+cu130\n")),
        {"RF-V062"},
    ),
    "build-version-unnormalized": (
        lambda c, d: write_archive(d, files_with(c, build_version=b"1.0+cpu\n")),
        {"RF-V062"},
    ),
    "build-version-missing": (
        lambda c, d: write_archive(d, files_with(c, build_version=None)),
        {"RF-V062"},
    ),
    "build-version-not-utf8": (
        lambda c, d: write_archive(d, files_with(c, build_version=b"\xff\xfe1.0.0")),
        {"RF-V062"},
    ),
    "build-version-a-symlink": (
        lambda c, d: write_archive(
            d,
            files_with(c, build_version=None),
            symlinks={"libtorch/build-version": "/etc/hostname"},
        ),
        {"RF-V033", "RF-V062"},
    ),
    "zip-slip": (
        lambda c, d: write_archive(
            d, {**files_with(c), "libtorch/lib/../../../../tmp/evil.sh": b"#!/bin/sh\n"}
        ),
        {"RF-V032"},
    ),
    "absolute-member": (
        lambda c, d: write_archive(d, {**files_with(c), "/etc/cron.d/evil": b"* * * * * root x\n"}),
        {"RF-V032", "RF-V061", "RF-V062"},
    ),
    "zip-slip-directory-entry": (
        lambda c, d: write_archive(d, {**files_with(c), "libtorch/../../../../etc/evil.d/": b""}),
        {"RF-V032"},
    ),
    "symlink-member": (
        lambda c, d: write_archive(
            d, files_with(c), symlinks={"libtorch/lib/libc.so.6": "/lib/x86_64-linux-gnu/libc.so.6"}
        ),
        {"RF-V033"},
    ),
    "duplicate-name": (
        lambda c, d: write_archive(
            d, files_with(c), twice=[("libtorch/build-version", b"9.9.9\n")]
        ),
        {"RF-V032", "RF-V062"},  # the last entry is what unzip leaves: 9.9.9
    ),
    "shared-object-not-elf": (
        lambda c, d: write_archive(
            d, {**files_with(c), "libtorch/lib/libfake.so.1": b"GROUP ( x )\n"}
        ),
        {"RF-V045"},
    ),
    "device-code-in-a-cpu-archive": (  # a CUDA build of the library under a CPU cell
        lambda c, d: write_archive(
            d, files_with(c, lib__libdemo_so=with_device_code(c, d.parent / "device"))
        ),
        {"RF-V048"},
    ),
    "elf-for-another-machine": (
        lambda c, d: write_archive(d, files_with(c, lib__libdemo_so=machine(c(Lib()).demo, 183))),
        {"RF-V044"},
    ),
    "glibc-above-the-platform-ceiling": (
        lambda c, d: write_archive(d, files_with(c, Lib(threads=True))),
        {"RF-V040"},
    ),
    "pre-cxx11-abi-in-a-cxx11-cell": (
        lambda c, d: write_archive(d, files_with(c, Lib(cxx11_abi=False))),
        {"RF-V042"},
    ),
    "needed-library-not-on-runpath": (
        lambda c, d: write_archive(d, files_with(c, Lib(runpath=None))),
        {"RF-V041"},
    ),
    "runpath-leaves-the-archive": (
        lambda c, d: write_archive(
            d, files_with(c, Lib(runpath="$ORIGIN:$ORIGIN/../../../opt/lib"))
        ),
        {"RF-V063"},
    ),
    "undefined-symbol-in-a-library-nothing-needs": (
        lambda c, d: write_archive(d, files_with(c, Lib(undefined=True))),
        {"RF-V046"},
    ),
    "windows-dll-in-a-linux-archive": (
        lambda c, d: write_archive(d, {**files_with(c), "libtorch/lib/demo.dll": pe(0x8664)}),
        {"RF-V064", "RF-V072"},  # the cell's OS, and the tags' binary format
    ),
    "absolute-runpath": (
        lambda c, d: write_archive(d, files_with(c, Lib(runpath="$ORIGIN:/home/builder/lib"))),
        {"RF-V043"},
    ),
    "no-lib-directory": (
        lambda c, d: write_archive(
            d, {n.replace("/lib/", "/bin/"): b for n, b in files_with(c).items()}
        ),
        {"RF-V061"},
    ),
    "two-top-directories": (
        lambda c, d: write_archive(d, {**files_with(c), "extra/README": b"hello\n"}),
        {"RF-V061", "RF-V062"},
    ),
    "over-the-size-limit": (
        lambda c, d: write_archive(
            d, {**files_with(c), "libtorch/share/blob.bin": os.urandom(1_200_000)}
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
    good = write_archive(dist, files_with(compiled))
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
    path = write_archive(dist, {**files_with(compiled), "libtorch/include/demo/big.h": b"x" * 5000})
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
    path = write_archive(dist, files_with(compiled))
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
    write_archive(dist, {**files_with(compiled), "libtorch/lib/libbomb.so": bytes(64 << 20)})
    code, report = validate_json(run, matrix, "--dist", str(dist))
    assert (code, failing(report)) == (4, {"RF-V045"})
    assert verdicts(report)["RF-V060"]["status"] == "pass"


# -- through the CLI: text, JSON, manifest, strays, wheels beside archives ---------------------


def test_cli_table_names_the_archive_and_exits_4(
    run: Run, matrix: Path, compiled: Compile, tmp_path: Path
) -> None:
    dist = tmp_path / "dist"
    write_archive(dist, files_with(compiled, build_version=b"0.9.0+cpu\n"))
    result = run("validate", str(matrix), "-r", "1.0", "-c", "test", *ARCHIVES, "--dist", str(dist))
    assert result.code == 4
    assert CELL in result.out
    assert "RF-V062" in result.out
    assert "0.9.0+cpu" in result.out
    assert "Traceback" not in result.out + result.err
    assert "checks failed on 1 of 1 artifacts" in result.err
    assert CELL in result.err
    # the hint links the failing check's reference entry
    assert "RF-V062 is explained at docs/reference/checks.md#rf-v062" in result.err


def test_cli_json_shape_for_an_archive(
    run: Run, matrix: Path, compiled: Compile, tmp_path: Path
) -> None:
    dist = tmp_path / "dist"
    write_archive(dist, files_with(compiled, build_version=b"0.9.0+cpu\n"))
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
    stray = write_archive(
        dist, files_with(compiled), name="libtorch-shared-with-deps-1.0.0+cpu.zip"
    )
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
    path = write_archive(out, files_with(compiled), name="libtorch-shared-with-deps-1.0.0+cpu.zip")
    entry = ManifestEntry(
        cell_id=CELL, file=path.name, size=path.stat().st_size, sha256=sha256_file(path),
        version=VERSION, package_type="archive", variant="cpu", upload_subfolder="cpu",
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

    write_archive(out, files_with(compiled, Lib(cxx11_abi=False)), name=path.name)
    code, report = validate_json(run, matrix, "--manifest", str(out / "manifest.json"))
    assert (code, failing(report)) == (4, {"RF-V042"})
    assert not load_manifest(out / "manifest.json").entries[CELL].validated


def test_wheel_and_archive_cells_validate_together(
    run: Run, matrix: Path, compiled: Compile, tmp_path: Path
) -> None:
    """Without --select the release's wheel cell is expected too; an archive does not stand in."""
    dist = tmp_path / "dist"
    write_archive(dist, files_with(compiled))
    result = run("validate", str(matrix), "-r", "1.0", "-c", "test", "--dist", str(dist),
                 "--format", "json")  # fmt: skip
    report = json.loads(result.out)
    assert result.code == 4
    assert failing(report) == set()
    assert failing(report, "wheel-linux-x86_64-py3.11-cpu") == {"RF-V100"}


def test_every_archive_check_is_documented_in_the_reference() -> None:
    reference = (Path(__file__).parents[2] / "docs" / "reference" / "checks.md").read_text()
    for check_id in ("RF-V060", "RF-V061", "RF-V062", "RF-V063", "RF-V064"):
        spec = CHECKS[check_id]
        assert f"### {check_id} {spec.name} {{#{check_id.lower()}}}" in reference, check_id


def test_a_local_header_naming_another_path_is_caught(
    run: Run, matrix: Path, compiled: Compile, tmp_path: Path
) -> None:
    """The central directory says include/demo/demo.h; the local header, a path up and out.
    Python's zipfile refuses such a member, some unzippers follow the local header."""
    dist = tmp_path / "dist"
    path = write_archive(dist, files_with(compiled))
    member = "libtorch/include/demo/demo.h"
    patch_local_name(path, member, "../../../../../../../tmp/x.h")
    code, report = validate_json(run, matrix, "--dist", str(dist))
    assert (code, failing(report)) == (4, {"RF-V060"})
    assert "'../../../../../../../tmp/x.h'" in verdicts(report)["RF-V060"]["message"]


def test_overlapping_entries_are_caught(
    run: Run, matrix: Path, compiled: Compile, tmp_path: Path
) -> None:
    """Two central entries pointing at one local header (the overlapping-entry bomb)."""
    dist = tmp_path / "dist"
    path = write_archive(dist, files_with(compiled))
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


def test_runtime_and_junit_leave_archives_to_their_static_checks(
    run: Run, matrix: Path, compiled: Compile, tmp_path: Path
) -> None:
    """--runtime installs wheels; an archive is not pip-installed, its verdicts stay static."""
    dist = tmp_path / "dist"
    write_archive(dist, files_with(compiled))
    code, report = validate_json(run, matrix, "--dist", str(dist), "--runtime")
    assert code == 0, failing(report)
    assert not [c for c in verdicts(report) if c.startswith("RF-R")]
    result = run("validate", str(matrix), "-r", "1.0", "-c", "test", *ARCHIVES, "--dist",
                 str(dist), "--format", "junit")  # fmt: skip
    assert result.code == 0
    assert CELL in result.out and "RF-V062" in result.out


def test_a_member_in_a_method_relforge_cannot_read_is_reported(
    run: Run, matrix: Path, compiled: Compile, tmp_path: Path
) -> None:
    dist = tmp_path / "dist"
    path = write_archive(dist, files_with(compiled))
    with zipfile.ZipFile(path, "a") as zf:
        zf.writestr("libtorch/share/notes.txt", b"bzip2\n" * 100, compress_type=zipfile.ZIP_BZIP2)
    code, report = validate_json(run, matrix, "--dist", str(dist))
    assert (code, failing(report)) == (4, {"RF-V060"})
    assert "compression method 12" in verdicts(report)["RF-V060"]["message"]


def test_a_release_without_archive_cells_ignores_zips(
    run: Run, compiled: Compile, tmp_path: Path
) -> None:
    """A zip beside the wheels of a wheel-only release (an sdist, docs) is none of ours."""
    matrix = tmp_path / "matrix.yaml"
    matrix.write_text(MATRIX.split("    libtorch:")[0])
    dist = tmp_path / "dist"
    write_archive(dist, files_with(compiled))
    result = run("validate", str(matrix), "-r", "1.0", "-c", "test", "--dist", str(dist),
                 "--format", "json")  # fmt: skip
    report = json.loads(result.out)
    assert {a["subject"] for a in report["artifacts"]} == {"wheel-linux-x86_64-py3.11-cpu"}
