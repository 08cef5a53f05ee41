"""`relforge wheel strip-local`: METADATA Version, .dist-info name, RECORD and file name
rewritten; every other member's compressed bytes copied as they are."""

from __future__ import annotations

import base64
import csv
import hashlib
import io
import zipfile
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import Result
from tests.promote_kit import build_wheel


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    return build_wheel(out, version="2.9.0+cu128", plat="manylinux_2_28_x86_64", payload="x" * 5000)


def raw_members(path: Path) -> dict[str, tuple[int, int, bytes]]:
    """name → (CRC, compress type, compressed bytes) as stored in the archive."""
    out = {}
    with zipfile.ZipFile(path) as zf, path.open("rb") as fh:
        for info in zf.infolist():
            fh.seek(info.header_offset + 26)
            name_len, extra_len = (
                int.from_bytes(fh.read(2), "little"),
                int.from_bytes(fh.read(2), "little"),
            )
            fh.seek(info.header_offset + 30 + name_len + extra_len)
            out[info.filename] = (info.CRC, info.compress_type, fh.read(info.compress_size))
    return out


def test_strip_local_rewrites_the_version_and_keeps_the_rest(
    wheel: Path, tmp_path: Path, run: Callable[..., Result]
) -> None:
    result = run("wheel", "strip-local", str(wheel), "--out", str(tmp_path / "out"))
    assert result.code == 0, result.err
    out = tmp_path / "out" / "rfdemo-2.9.0-py3-none-manylinux_2_28_x86_64.whl"
    assert out.is_file() and f"sha256 {hashlib.sha256(out.read_bytes()).hexdigest()}" in result.out
    assert "removed classifier 'Private :: Do Not Upload'" in result.out
    with zipfile.ZipFile(out) as zf:
        assert zf.testzip() is None
        names = zf.namelist()
        assert "rfdemo-2.9.0.dist-info/METADATA" in names
        assert not any("+cu128" in n for n in names)
        metadata = zf.read("rfdemo-2.9.0.dist-info/METADATA").decode()
        assert "\nVersion: 2.9.0\n" in metadata
        assert "Private :: Do Not Upload" not in metadata
        assert "Classifier: Programming Language :: Python :: 3\n" in metadata
        rows = list(csv.reader(io.StringIO(zf.read("rfdemo-2.9.0.dist-info/RECORD").decode())))
        assert sorted(r[0] for r in rows) == sorted(names)
        for path, digest, size in rows:
            if path.endswith("RECORD"):
                assert digest == size == ""
                continue
            data = zf.read(path)
            expected = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
            assert digest == f"sha256={expected}" and int(size) == len(data), path
    before, after = raw_members(wheel), raw_members(out)
    untouched = [n for n in before if ".dist-info/" not in n]
    assert untouched and all(before[n] == after[n] for n in untouched)  # not recompressed
    for name in ("WHEEL", "top_level.txt"):
        assert (
            before[f"rfdemo-2.9.0+cu128.dist-info/{name}"]
            == after[f"rfdemo-2.9.0.dist-info/{name}"]
        )


def test_strip_local_is_deterministic_and_never_overwrites(
    wheel: Path, tmp_path: Path, run: Callable[..., Result]
) -> None:
    out = tmp_path / "out"
    assert run("wheel", "strip-local", str(wheel), "--out", str(out)).code == 0
    target = next(out.iterdir())
    first = target.read_bytes()
    again = run("wheel", "strip-local", str(wheel), "--out", str(out))
    assert again.code == 0 and "already there" in again.out
    assert target.read_bytes() == first
    target.write_bytes(b"someone else's file")
    refused = run("wheel", "strip-local", str(wheel), "--out", str(out))
    assert refused.code == 5 and "not overwritten" in refused.err
    assert target.read_bytes() == b"someone else's file"
    assert sorted(p.name for p in out.iterdir()) == [target.name]  # no temporary left


def test_strip_local_errors(tmp_path: Path, run: Callable[..., Result]) -> None:
    missing = run("wheel", "strip-local", str(tmp_path / "nope.whl"), "--out", str(tmp_path))
    assert missing.code == 2 and "IN.whl" in missing.err
    bogus = tmp_path / "bogus-1.0+cpu-py3-none-any.whl"
    bogus.write_bytes(b"not a zip")
    bad = run("wheel", "strip-local", str(bogus), "--out", str(tmp_path / "o"))
    assert bad.code == 2 and "not a readable wheel" in bad.err and "Traceback" not in bad.err
