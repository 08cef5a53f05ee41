"""relforge.wheelformat: the one `.dist-info` lookup, METADATA/WHEEL read as UTF-8, and one
WheelError that every stage (builder, validation, publishing) reports the same way."""

from __future__ import annotations

import zipfile
from collections.abc import Callable
from pathlib import Path

import pytest

from relforge.builders.artifacts.wheelfile import add_requires_dist
from relforge.errors import ConfigError
from relforge.promote.pypi.wheels import strip_local
from relforge.validate.wheelreader import WheelArchive
from relforge.wheelformat import (
    RecordRow,
    WheelError,
    WheelName,
    core_metadata,
    dist_info_dir,
    metadata_headers,
    parse_headers,
    parse_record,
    record_rows,
    requires_python,
)
from tests.conftest import Result

METADATA = b"Metadata-Version: 2.1\nName: x\nVersion: 1.0+cpu\nRequires-Python: >=3.10\n\nbody\n"


def wheel(
    tmp_path: Path, members: dict[str, bytes], name: str = "x-1.0+cpu-py3-none-any.whl"
) -> Path:
    path = tmp_path / name
    with zipfile.ZipFile(path, "w") as zf:
        for member, data in members.items():
            zf.writestr(member, data)
    return path


def good(tmp_path: Path, metadata: bytes = METADATA) -> Path:
    return wheel(
        tmp_path,
        {
            "x/__init__.py": b"",
            "x-1.0+cpu.dist-info/METADATA": metadata,
            "x-1.0+cpu.dist-info/WHEEL": b"Wheel-Version: 1.0\nTag: py3-none-any\n",
            "x-1.0+cpu.dist-info/RECORD": b"",
        },
    )


def test_wheel_error_keeps_exit_2_and_a_bare_message() -> None:
    exc = WheelError("x.whl: expected one .dist-info directory, found none")
    assert isinstance(exc, ConfigError) and exc.exit_code == 2
    assert str(exc) == "x.whl: expected one .dist-info directory, found none"
    assert exc.render().startswith("config error: x.whl: expected one")


def test_the_one_dist_info_directory() -> None:
    names = ["x/__init__.py", "x-1.0.dist-info/METADATA", "x-1.0.data/scripts/run"]
    assert dist_info_dir(names, "x.whl") == "x-1.0.dist-info"


@pytest.mark.parametrize(
    "names, found",
    [
        ([], "none"),
        (["x/__init__.py", "x/y.dist-info/METADATA"], "none"),  # nested: not the wheel's
        (["a-1.dist-info/METADATA", "b-1.dist-info/METADATA"], "a-1.dist-info, b-1.dist-info"),
        # a second directory without METADATA still makes the wheel ambiguous (pip refuses it)
        (["a-1.dist-info/METADATA", "a-2.dist-info/RECORD"], "a-1.dist-info, a-2.dist-info"),
    ],
)
def test_no_or_two_dist_info_directories_are_refused(names: list[str], found: str) -> None:
    with pytest.raises(
        WheelError, match=f"x.whl: expected one .dist-info directory, found {found}"
    ):
        dist_info_dir(names, "x.whl")


def test_headers_are_read_as_utf8_and_bad_bytes_reported() -> None:
    headers, problems = parse_headers("Name: x\nSummary: café\n".encode(), "M")
    assert headers["Summary"] == "café" and problems == ()
    headers, problems = parse_headers(b"Name: x\nSummary: caf\xe9\n", "x.dist-info/METADATA")
    assert headers["Name"] == "x" and isinstance(headers["Summary"], str)
    assert problems == ("x.dist-info/METADATA is not UTF-8 (byte 0xe9 at offset 20)",)


def test_core_metadata_is_the_bytes_as_stored(tmp_path: Path) -> None:
    path = good(tmp_path)
    assert core_metadata(path) == METADATA
    assert requires_python(METADATA) == ">=3.10"
    assert requires_python(b"Name: x\n") is None
    assert metadata_headers(path)["Version"] == "1.0+cpu"


def test_unreadable_wheels_are_wheel_errors_everywhere(tmp_path: Path) -> None:
    not_zip = tmp_path / "x-1.0-py3-none-any.whl"
    not_zip.write_bytes(b"not a zip")
    with pytest.raises(WheelError, match="not a readable wheel"):
        core_metadata(not_zip)
    no_metadata = wheel(tmp_path, {"x-1.0.dist-info/RECORD": b""}, "y-1.0-py3-none-any.whl")
    with pytest.raises(WheelError, match=r"no member x-1.0.dist-info/METADATA"):
        core_metadata(no_metadata)
    with pytest.raises(WheelError, match="no member"):
        add_requires_dist(no_metadata, ["numpy"])
    two = wheel(
        tmp_path,
        {"a-1.dist-info/METADATA": METADATA, "b-1.dist-info/METADATA": METADATA},
        "z-1.0+cpu-py3-none-any.whl",
    )
    for read in (core_metadata, lambda p: add_requires_dist(p, ["numpy"])):
        with pytest.raises(WheelError, match=r"expected one \.dist-info directory"):
            read(two)
    with pytest.raises(WheelError, match=r"expected one \.dist-info directory"):
        strip_local(two, tmp_path / "out")
    with WheelArchive(two) as archive, pytest.raises(WheelError, match="expected one"):
        archive.metadata()


def test_a_non_utf8_metadata_is_not_rewritten(tmp_path: Path) -> None:
    path = good(tmp_path, METADATA.replace(b"body", b"caf\xe9"))
    before = path.read_bytes()
    with pytest.raises(WheelError, match=r"METADATA is not UTF-8 \(byte 0xe9"):
        add_requires_dist(path, ["numpy"])
    assert path.read_bytes() == before
    with pytest.raises(WheelError, match="not UTF-8"):
        metadata_headers(path)
    with WheelArchive(path) as archive:
        headers, problems = archive.metadata()
    assert headers["Name"] == "x" and problems and "0xe9" in problems[0]


def test_wheel_name_keeps_the_text_as_written() -> None:
    name = WheelName.parse("Torch-2.9.0+cu128-1-cp312-cp312-linux_x86_64.whl")
    assert (name.distribution, name.version, name.public_version) == (
        "Torch",
        "2.9.0+cu128",
        "2.9.0",
    )
    assert name.filename == "Torch-2.9.0+cu128-1-cp312-cp312-linux_x86_64.whl"
    with pytest.raises(WheelError, match="not a wheel file name") as caught:
        WheelName.parse("torch.tar.gz")
    assert caught.value.exit_code == 2


def test_record_rows_as_written() -> None:
    text = "x/__init__.py,sha256=abc,0\n\nx-1.0.dist-info/RECORD,,\nshort\n"
    assert parse_record(text, "RECORD") == [
        RecordRow("x/__init__.py", "sha256", "abc", 0),
        RecordRow("x-1.0.dist-info/RECORD", "", "", None),
        RecordRow("short", "", "", None),
    ]
    with pytest.raises(WheelError, match="RECORD holds a NUL byte"):
        parse_record("a,b\x00,1\n", "RECORD")


def oversized_record(tmp_path: Path) -> Path:
    """A RECORD whose hash field is over the csv module's field limit (128 KiB)."""
    return wheel(
        tmp_path,
        {
            "x/__init__.py": b"",
            "x-1.0+cpu.dist-info/METADATA": METADATA,
            "x-1.0+cpu.dist-info/WHEEL": b"Wheel-Version: 1.0\nTag: py3-none-any\n",
            "x-1.0+cpu.dist-info/RECORD": b"x/__init__.py,sha256=" + b"A" * 200_000 + b",0\n",
        },
    )


def test_a_record_csv_cannot_read_is_a_finding_not_a_crash(
    tmp_path: Path, run: Callable[..., Result]
) -> None:
    """Every reader of RECORD (validation, PyPI staging, the builder's edit) reports it; before
    one module read RECORD, `wheel inspect` exited 1 ("internal error") on this wheel."""
    path = oversized_record(tmp_path)
    with pytest.raises(WheelError, match=r"RECORD is not CSV \(field larger than field limit"):
        record_rows("x/__init__.py,sha256=" + "A" * 200_000 + ",0\n", "RECORD")
    inspected = run("wheel", "inspect", str(path))
    assert inspected.code == 4 and "RECORD is not CSV" in inspected.err, inspected.err
    assert "internal error" not in inspected.err and "Traceback" not in inspected.err
    stripped = run("wheel", "strip-local", str(path), "--out", str(tmp_path / "out"))
    assert stripped.code == 2 and "RECORD is not CSV" in stripped.err, stripped.err
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").iterdir())
    before = path.read_bytes()
    with pytest.raises(WheelError, match="RECORD is not CSV"):
        add_requires_dist(path, ["numpy"])
    assert path.read_bytes() == before
