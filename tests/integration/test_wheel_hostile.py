"""`relforge wheel inspect` on hostile wheels crafted here: bad metadata encodings, unsafe member
paths, symlinks, fake shared objects, multi-tag wheels.  Nothing is extracted, nothing crashes."""

from __future__ import annotations

import json
import stat
import subprocess
import zipfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import Run
from tests.wheelfactory import Build, compile_extension, record_hash

TAG = "cp311-cp311-manylinux_2_28_x86_64"


def craft(
    directory: Path,
    files: Mapping[str, bytes] = {},
    *,
    tag: str = TAG,
    metadata: bytes = b"",
    symlinks: Mapping[str, str] = {},
    name: str = "hostile",
) -> Path:
    """A wheel with these members (RECORD lists them all); `metadata`: extra METADATA lines."""
    directory.mkdir(parents=True, exist_ok=True)
    dist_info = f"{name}-1.0.dist-info"
    tags = tag.split("-")
    wheel_tags = [f"{tags[0]}-{tags[1]}-{p}" for p in tags[2].split(".")]
    members = {
        **files,
        f"{dist_info}/METADATA": b"Metadata-Version: 2.1\nName: "
        + name.encode()
        + b"\nVersion: 1.0\n"
        + metadata,
        f"{dist_info}/WHEEL": (
            "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: false\n"
            + "".join(f"Tag: {t}\n" for t in wheel_tags)
        ).encode(),
    }
    rows = [f"{n},{record_hash(d)},{len(d)}" for n, d in members.items()]
    rows += [f"{n},{record_hash(t.encode())},{len(t)}" for n, t in symlinks.items()]
    rows.append(f"{dist_info}/RECORD,,")
    path = directory / f"{name}-1.0-{tag}.whl"
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        for arcname, data in members.items():
            info = zipfile.ZipInfo(arcname)
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = (stat.S_IFREG | 0o644) << 16
            zf.writestr(info, data)
        for arcname, target in symlinks.items():
            info = zipfile.ZipInfo(arcname)
            info.create_system = 3
            info.external_attr = (stat.S_IFLNK | 0o777) << 16
            zf.writestr(info, target)
        zf.writestr(f"{dist_info}/RECORD", "\n".join(rows) + "\n")
    return path


def inspect(run: Run, path: Path) -> tuple[int, dict[str, Any], str]:
    result = run("wheel", "inspect", str(path), "--format", "json")
    assert "Traceback" not in result.err and "internal error" not in result.err, result.err
    return result.code, json.loads(result.out), result.err


def verdict(found: dict[str, Any], check: str) -> dict[str, str]:
    verdicts = found["verdicts"]
    assert isinstance(verdicts, list)
    [one] = [v for v in verdicts if v["check"] == check]
    return dict(one)


def failed(found: dict[str, Any]) -> set[str]:
    verdicts = found["verdicts"]
    assert isinstance(verdicts, list)
    return {v["check"] for v in verdicts if v["status"] == "fail"}


@pytest.fixture(scope="module")
def ext(tmp_path_factory: pytest.TempPathFactory) -> bytes:
    return compile_extension(Build(), tmp_path_factory.mktemp("ext"))


# -- 1: metadata encodings --------------------------------------------------------------------


def test_non_ascii_requires_dist_is_read_as_utf8(run: Run, tmp_path: Path) -> None:
    wheel = craft(
        tmp_path,
        {"hostile/__init__.py": b""},
        tag="py3-none-any",
        metadata="Summary: Größe\nRequires-Dist: numpy; extra == 'é'\n".encode(),
    )
    code, found, _ = inspect(run, wheel)
    assert code == 0, found
    assert verdict(found, "RF-V010")["status"] == "pass"


def test_non_utf8_metadata_fails_readable_without_crashing(run: Run, tmp_path: Path) -> None:
    wheel = craft(
        tmp_path,
        {"hostile/__init__.py": b""},
        tag="py3-none-any",
        metadata=b"Summary: caf\xe9\nRequires-Dist: numpy; extra == '\xe9'\n",
    )
    code, found, err = inspect(run, wheel)
    assert code == 4
    message = verdict(found, "RF-V010")["message"]
    assert "METADATA is not UTF-8" in message and "0xe9" in message
    assert "RF-V010" in err


def test_a_requirement_that_is_not_pep508_is_a_verdict(run: Run, tmp_path: Path) -> None:
    wheel = craft(
        tmp_path, {"x.py": b""}, tag="py3-none-any", metadata="Requires-Dist: ñ >= 1\n".encode()
    )
    code, found, _ = inspect(run, wheel)
    assert code == 4 and "Requires-Dist 'ñ >= 1'" in verdict(found, "RF-V010")["message"]


# -- 7: JSON errors ---------------------------------------------------------------------------


def test_json_error_object_for_an_unreadable_wheel(run: Run, tmp_path: Path) -> None:
    junk = tmp_path / "junk-1.0-py3-none-any.whl"
    junk.write_bytes(b"PK\x03\x04 not really a zip")
    code, found, err = inspect(run, junk)
    assert code == 4 and "not a zip archive" in err
    assert found["status"] == "error" and found["file"] == junk.name
    error = found["error"]
    assert isinstance(error, dict)
    assert error["exit_code"] == 4 and "not a zip archive" in error["message"]

    missing = run(
        "wheel", "inspect", str(tmp_path / "nope-1.0-py3-none-any.whl"), "--format", "json"
    )
    assert missing.code == 2
    assert json.loads(missing.out)["error"]["exit_code"] == 2

    no_dist_info = tmp_path / "bare-1.0-py3-none-any.whl"
    with zipfile.ZipFile(no_dist_info, "w") as zf:
        zf.writestr("bare.py", "")
    code, found, _ = inspect(run, no_dist_info)
    assert code == 4 and "expected one .dist-info" in found["error"]["message"]


# -- 3: unsafe members ------------------------------------------------------------------------

SO = "demo_ext/_core.cpython-311-x86_64-linux-gnu.so"


@pytest.mark.parametrize(
    "member, why",
    [
        ("../escape.py", "climbs out with '..'"),
        ("hostile/../../escape.py", "climbs out with '..'"),
        ("/etc/cron.d/hostile", "is an absolute path"),
        ("C:/Windows/hostile.dll", "is an absolute path"),
        ("hostile\\..\\..\\escape.py", "climbs out with '..'"),
    ],
)
def test_member_paths_outside_the_wheel_fail(
    run: Run, tmp_path: Path, member: str, why: str
) -> None:
    wheel = craft(tmp_path, {"hostile/__init__.py": b"", member: b"x = 1\n"}, tag="py3-none-any")
    code, found, err = inspect(run, wheel)
    assert code == 4 and failed(found) == {"RF-V032"}
    assert why in verdict(found, "RF-V032")["message"] and "RF-V032" in err


def test_a_member_listed_twice_fails(run: Run, tmp_path: Path) -> None:
    wheel = craft(tmp_path, {"hostile/__init__.py": b""}, tag="py3-none-any")
    with pytest.warns(UserWarning), zipfile.ZipFile(wheel, "a") as zf:
        zf.writestr("hostile/__init__.py", b"import os; os.system('true')\n")
    code, found, _ = inspect(run, wheel)
    assert code == 4 and "RF-V032" in failed(found)
    assert "more than once" in verdict(found, "RF-V032")["message"]


@pytest.mark.parametrize(
    "member, target",
    [
        ("hostile/passwd", "/etc/passwd"),
        ("hostile/libc.so.6", "/lib/x86_64-linux-gnu/libc.so.6"),
        ("hostile/up", "../../../../etc/shadow"),
    ],
)
def test_symlink_members_fail(
    run: Run, tmp_path: Path, ext: bytes, member: str, target: str
) -> None:
    wheel = craft(tmp_path, {SO: ext}, symlinks={member: target})
    code, found, _ = inspect(run, wheel)
    assert code == 4 and failed(found) == {"RF-V033"}, found["verdicts"]
    assert f"{member} is a symlink to {target!r}" in verdict(found, "RF-V033")["message"]
    elves = found["elf_files"]
    assert isinstance(elves, list) and [e["path"] for e in elves] == [SO]


def test_a_shared_object_that_is_not_elf_fails_in_a_platform_wheel(
    run: Run, tmp_path: Path, ext: bytes
) -> None:
    fakes = {"hostile/libfake.so.1": b"#!/bin/sh\necho not a library\n", "hostile/tiny.so": b"x"}
    wheel = craft(tmp_path / "platform", {SO: ext, **fakes})
    code, found, _ = inspect(run, wheel)
    assert code == 4 and failed(found) == {"RF-V045"}
    message = verdict(found, "RF-V045")["message"]
    assert "hostile/libfake.so.1 is named like" in message and "hostile/tiny.so" in message

    pure = craft(tmp_path / "pure", {"hostile/__init__.py": b"", **fakes}, tag="py3-none-any")
    code, found, _ = inspect(run, pure)
    assert code == 0 and verdict(found, "RF-V045")["status"] == "skip"

    named_so_but_python = craft(tmp_path / "ok", {SO: ext, "hostile/so.py": b""})
    code, found, _ = inspect(run, named_so_but_python)
    assert code == 0 and verdict(found, "RF-V045")["status"] == "pass"


# -- 4: multi-tag wheels ----------------------------------------------------------------------


def _linked(workdir: Path, library: str, rpath: str | None = None) -> tuple[bytes, bytes]:
    """(extension needing `library`, the stub library's bytes)."""
    ext = compile_extension(Build(needs_library=library, rpath=rpath), workdir)
    return ext, (workdir / library).read_bytes()


def test_multi_tag_wheels_are_held_to_the_strictest_tag(run: Run, tmp_path: Path) -> None:
    (tmp_path / "m.c").write_text("int f(void) { return 0; }\n")
    subprocess.run(
        ["gcc", "-shared", "-fPIC", str(tmp_path / "m.c"), "-o", str(tmp_path / "m.so"),
         "-Wl,--no-as-needed", "-lmvec"],
        check=True,
    )  # fmt: skip
    ext = (tmp_path / "m.so").read_bytes()
    newer = craft(tmp_path / "newer", {SO: ext}, tag="cp311-cp311-manylinux_2_28_x86_64")
    code, found, _ = inspect(run, newer)
    assert code == 0 and found["external_libraries"]["libmvec.so.1"]["status"] == "allowed"

    both = craft(
        tmp_path / "both", {SO: ext}, tag="cp311-cp311-manylinux_2_17_x86_64.manylinux_2_28_x86_64"
    )
    code, found, _ = inspect(run, both)
    assert code == 4 and failed(found) == {"RF-V041"}
    assert "libmvec.so.1" in verdict(found, "RF-V041")["message"]


def test_an_elf_must_match_every_tags_architecture(run: Run, tmp_path: Path, ext: bytes) -> None:
    wheel = craft(
        tmp_path, {SO: ext}, tag="cp311-cp311-manylinux_2_28_x86_64.manylinux_2_28_aarch64"
    )
    code, found, _ = inspect(run, wheel)
    assert code == 4 and "RF-V044" in failed(found)
    assert "is x86_64, the tags say aarch64, x86_64" in verdict(found, "RF-V044")["message"]


# -- 5: bundled means reachable ---------------------------------------------------------------


def test_a_bundled_library_counts_only_where_the_loader_looks(run: Run, tmp_path: Path) -> None:
    ext, stub = _linked(tmp_path / "build", "libstub.so.1", rpath="$ORIGIN/.libs")
    reached = craft(tmp_path / "reached", {SO: ext, "demo_ext/.libs/libstub.so.1": stub})
    code, found, _ = inspect(run, reached)
    assert code == 0, found["verdicts"]
    assert "libstub.so.1" not in found["external_libraries"]

    elsewhere = craft(tmp_path / "elsewhere", {SO: ext, "demo_ext.libs/libstub.so.1": stub})
    code, found, _ = inspect(run, elsewhere)
    assert code == 4 and failed(found) == {"RF-V041"}
    message = verdict(found, "RF-V041")["message"]
    assert "bundled as demo_ext.libs/libstub.so.1" in message
    assert "search path (demo_ext/.libs/, then the system path)" in message

    no_rpath, stub2 = _linked(tmp_path / "build2", "libstub.so.1")
    same_dir = craft(tmp_path / "same", {SO: no_rpath, "demo_ext/libstub.so.1": stub2})
    code, found, _ = inspect(run, same_dir)
    assert code == 4  # no RUNPATH: the loader does not look next to the file
    assert (
        "(no directory in the wheel, then the system path)" in verdict(found, "RF-V041")["message"]
    )


def test_rpath_of_the_loading_file_is_searched_too(run: Run, tmp_path: Path) -> None:
    """DT_RPATH (not RUNPATH) of the file that loaded a library also serves its needs."""
    build = tmp_path / "build"
    # `-Wl,-rpath,X,--disable-new-dtags`: DT_RPATH, as old toolchains and auditwheel write it
    ext, _ = _linked(build, "libmid.so.1", rpath="$ORIGIN/.libs,--disable-new-dtags")
    runpath_ext, _ = _linked(tmp_path / "build2", "libmid.so.1", rpath="$ORIGIN/.libs")
    # libmid.so.1 needs libleaf.so.1 but has no RPATH of its own
    (build / "leaf.c").write_text("int leaf(void) { return 2; }\n")
    subprocess.run(
        ["gcc", "-shared", "-fPIC", "-Wl,-soname,libleaf.so.1", str(build / "leaf.c"),
         "-o", str(build / "libleaf.so.1")],
        check=True,
    )  # fmt: skip
    (build / "mid.c").write_text("int leaf(void);\nint stub_function(void) { return leaf(); }\n")
    subprocess.run(
        ["gcc", "-shared", "-fPIC", "-Wl,-soname,libmid.so.1", str(build / "mid.c"),
         str(build / "libleaf.so.1"), "-o", str(build / "libmid.so.1")],
        check=True,
    )  # fmt: skip
    files = {
        SO: ext,
        "demo_ext/.libs/libmid.so.1": (build / "libmid.so.1").read_bytes(),
        "demo_ext/.libs/libleaf.so.1": (build / "libleaf.so.1").read_bytes(),
    }
    with_rpath = craft(tmp_path / "rpath", files)
    code, found, _ = inspect(run, with_rpath)
    assert code == 0, found["verdicts"]

    with_runpath = craft(tmp_path / "runpath", {**files, SO: runpath_ext})
    code, found, _ = inspect(run, with_runpath)
    assert code == 4  # DT_RUNPATH serves only the file's own needs
    message = verdict(found, "RF-V041")["message"]
    assert "libleaf.so.1 (needed by demo_ext/.libs/libmid.so.1; bundled as" in message


# -- 6: providers -----------------------------------------------------------------------------


def test_dependency_wheels_provide_libraries(run: Run, tmp_path: Path) -> None:
    ext, stub = _linked(tmp_path / "build", "libprov.so.1", rpath="$ORIGIN/../provider/lib")
    provider = craft(tmp_path / "prov", {"provider/lib/libprov.so.1": stub}, name="provider")
    declared = craft(tmp_path / "c1", {SO: ext}, metadata=b"Requires-Dist: provider>=1\n")
    undeclared = craft(tmp_path / "c2", {SO: ext})

    code, found, _ = inspect(run, declared)  # no --with, the catalogue does not know libprov
    assert code == 4 and "libprov.so.1" in verdict(found, "RF-V041")["message"]

    result = run("wheel", "inspect", str(declared), "--with", str(provider), "--format", "json")
    assert result.code == 0, result.out
    entry = json.loads(result.out)["external_libraries"]["libprov.so.1"]
    assert entry["status"] == "declared by provider (provider 1.0, --with)"
    assert entry["found_at"] == "provider/lib/libprov.so.1"

    result = run("wheel", "inspect", str(undeclared), "--with", str(provider), "--format", "json")
    assert result.code == 4
    assert "Requires-Dist does not name" in verdict(json.loads(result.out), "RF-V041")["message"]

    broken = run("wheel", "inspect", str(declared), "--with", str(tmp_path / "nope.whl"))
    assert broken.code == 2 and "--with" in broken.err


def test_a_dependency_wheel_at_hand_overrides_the_catalogue(run: Run, tmp_path: Path) -> None:
    ext, stub = _linked(tmp_path / "build", "libc10.so")
    consumer = craft(tmp_path / "c", {SO: ext}, metadata=b"Requires-Dist: torch==2.14.1\n")
    code, found, _ = inspect(run, consumer)
    assert code == 0
    assert found["external_libraries"]["libc10.so"]["status"] == "declared by torch==2.14.1"

    fake_torch = craft(tmp_path / "t", {"torch/lib/libother.so": stub}, name="torch")
    result = run("wheel", "inspect", str(consumer), "--with", str(fake_torch), "--format", "json")
    assert result.code == 4
    assert (
        "torch 1.0 (--with) ships no libc10.so"
        in verdict(json.loads(result.out), "RF-V041")["message"]
    )


@pytest.mark.parametrize(
    "library, requirement",
    [
        ("libtorch_cpu.so", "torch"),
        ("libshiboken6.abi3.so.6.11", "shiboken6"),
        ("libboost_python311.so.1.90.0", "cmeel-boost"),
    ],
)
def test_the_catalogue_knows_common_providers(library: str, requirement: str) -> None:
    from relforge.providedlibs import providers_of

    assert requirement in providers_of(library)


def test_a_marker_that_cannot_be_evaluated_is_not_a_crash(run: Run, tmp_path: Path) -> None:
    ext, _ = _linked(tmp_path / "build", "libc10.so")
    wheel = craft(
        tmp_path / "w", {SO: ext}, metadata=b"Requires-Dist: torch; python_version ~= 'abc'\n"
    )
    code, found, _ = inspect(run, wheel)
    assert code == 4 and "libc10.so" in verdict(found, "RF-V041")["message"]
    provider = craft(tmp_path / "t", {"torch/lib/libc10.so": b"\x7fELF" + bytes(60)}, name="torch")
    result = run("wheel", "inspect", str(wheel), "--with", str(provider), "--format", "json")
    assert result.code == 4 and "Traceback" not in result.err


def test_a_record_with_a_nul_byte_and_a_truncated_header_are_verdicts(
    run: Run, tmp_path: Path
) -> None:
    wheel = craft(tmp_path / "nul", {"hostile/__init__.py": b""}, tag="py3-none-any")
    with zipfile.ZipFile(wheel) as zf:
        members = {i.filename: zf.read(i) for i in zf.infolist()}
    members["hostile-1.0.dist-info/RECORD"] += b"x\x00y,,\n"
    with zipfile.ZipFile(wheel, "w") as zf:
        for name, data in members.items():
            zf.writestr(name, data)
    code, found, err = inspect(run, wheel)
    assert code == 4 and found["status"] == "error" and "NUL byte" in err

    truncated = craft(tmp_path / "cut", {"hostile/__init__.py": b""}, tag="py3-none-any")
    raw = bytearray(truncated.read_bytes())
    at = raw.rfind(b"PK\x01\x02")  # the last central directory entry: RECORD
    raw[at + 42 : at + 46] = (len(raw) - 10).to_bytes(4, "little")  # its local header offset
    raw[len(raw) - 10 : len(raw) - 6] = b"PK\x03\x04"
    truncated.write_bytes(bytes(raw))
    code, found, err = inspect(run, truncated)
    assert code == 4 and "Traceback" not in err


def test_a_with_wheel_brought_in_by_a_declared_meta_package_is_not_undeclared(
    run: Run, tmp_path: Path
) -> None:
    """torch 2.14 requires cuda-toolkit[cupti], which brings nvidia-cuda-cupti: a --with wheel
    of nvidia-cuda-cupti ships libcupti.so.13 without torch naming it."""
    ext, stub = _linked(tmp_path / "build", "libcupti.so.13")
    consumer = craft(
        tmp_path / "c", {SO: ext}, metadata=b"Requires-Dist: cuda-toolkit[cupti]==13.0.2\n"
    )
    cupti = craft(
        tmp_path / "p", {"nvidia/cu13/lib/libcupti.so.13": stub}, name="nvidia_cuda_cupti"
    )
    result = run("wheel", "inspect", str(consumer), "--with", str(cupti), "--format", "json")
    assert result.code == 0, result.out
    status = json.loads(result.out)["external_libraries"]["libcupti.so.13"]["status"]
    assert status == "declared by cuda-toolkit[cupti]==13.0.2"
