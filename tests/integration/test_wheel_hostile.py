"""`relforge wheel inspect` on hostile wheels crafted here: bad metadata encodings, unsafe member
paths, symlinks, fake shared objects, multi-tag wheels.  Nothing is extracted, nothing crashes."""

from __future__ import annotations

import json
import stat
import zipfile
from collections.abc import Mapping
from pathlib import Path

import pytest

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


def inspect(run, path: Path) -> tuple[int, dict[str, object], str]:
    result = run("wheel", "inspect", str(path), "--format", "json")
    assert "Traceback" not in result.err and "internal error" not in result.err, result.err
    return result.code, json.loads(result.out), result.err


def verdict(found: dict[str, object], check: str) -> dict[str, str]:
    verdicts = found["verdicts"]
    assert isinstance(verdicts, list)
    [one] = [v for v in verdicts if v["check"] == check]
    return dict(one)


def failed(found: dict[str, object]) -> set[str]:
    verdicts = found["verdicts"]
    assert isinstance(verdicts, list)
    return {v["check"] for v in verdicts if v["status"] == "fail"}


@pytest.fixture(scope="module")
def ext(tmp_path_factory: pytest.TempPathFactory) -> bytes:
    return compile_extension(Build(), tmp_path_factory.mktemp("ext"))


# -- 1: metadata encodings --------------------------------------------------------------------


def test_non_ascii_requires_dist_is_read_as_utf8(run, tmp_path):
    wheel = craft(
        tmp_path,
        {"hostile/__init__.py": b""},
        tag="py3-none-any",
        metadata="Summary: Größe\nRequires-Dist: numpy; extra == 'é'\n".encode(),
    )
    code, found, _ = inspect(run, wheel)
    assert code == 0, found
    assert verdict(found, "RF-V010")["status"] == "pass"


def test_non_utf8_metadata_fails_readable_without_crashing(run, tmp_path):
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


def test_a_requirement_that_is_not_pep508_is_a_verdict(run, tmp_path):
    wheel = craft(
        tmp_path, {"x.py": b""}, tag="py3-none-any", metadata="Requires-Dist: ñ >= 1\n".encode()
    )
    code, found, _ = inspect(run, wheel)
    assert code == 4 and "Requires-Dist 'ñ >= 1'" in verdict(found, "RF-V010")["message"]


# -- 7: JSON errors ---------------------------------------------------------------------------


def test_json_error_object_for_an_unreadable_wheel(run, tmp_path):
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
    assert code == 4 and "expected one .dist-info" in found["error"]["message"]  # type: ignore[index]


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
def test_member_paths_outside_the_wheel_fail(run, tmp_path, member, why):
    wheel = craft(tmp_path, {"hostile/__init__.py": b"", member: b"x = 1\n"}, tag="py3-none-any")
    code, found, err = inspect(run, wheel)
    assert code == 4 and failed(found) == {"RF-V032"}
    assert why in verdict(found, "RF-V032")["message"] and "RF-V032" in err


def test_a_member_listed_twice_fails(run, tmp_path):
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
def test_symlink_members_fail(run, tmp_path, ext, member, target):
    wheel = craft(tmp_path, {SO: ext}, symlinks={member: target})
    code, found, _ = inspect(run, wheel)
    assert code == 4 and failed(found) == {"RF-V033"}, found["verdicts"]
    assert f"{member} is a symlink to {target!r}" in verdict(found, "RF-V033")["message"]
    elves = found["elf_files"]
    assert isinstance(elves, list) and [e["path"] for e in elves] == [SO]


def test_a_shared_object_that_is_not_elf_fails_in_a_platform_wheel(run, tmp_path, ext):
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
