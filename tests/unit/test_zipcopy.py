"""rewrite_zip on archives zipfile writes in unusual ways: data descriptors, stored members,
ZIP64 extra fields, non-ASCII names."""

from __future__ import annotations

import hashlib
import io
import zipfile
from pathlib import Path
from typing import TYPE_CHECKING

from relforge.zipcopy import rewrite_zip

if TYPE_CHECKING:
    from typing_extensions import Buffer  # collections.abc.Buffer from Python 3.12


class Unseekable(io.RawIOBase):
    """A write-only stream: zipfile then writes data descriptors (flag bit 3)."""

    def __init__(self, sink: io.BytesIO) -> None:
        self.sink = sink

    def writable(self) -> bool:
        return True

    def write(self, data: Buffer) -> int:
        return self.sink.write(data)


def test_odd_members_survive_renames_and_replacements(tmp_path: Path) -> None:
    sink = io.BytesIO()
    with zipfile.ZipFile(Unseekable(sink), "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("pkg/described.py", b"x = 1\n" * 100)  # data descriptor
        zf.writestr("pkg/stored.bin", b"\x00\x01" * 50, compress_type=zipfile.ZIP_STORED)
        with zf.open("pkg/big64.txt", "w", force_zip64=True) as fh:  # ZIP64 extra field
            fh.write(b"zip64 " * 1000)
        zf.writestr("pkg/naïve.txt", "ünïcode".encode())
        zf.writestr("old.dist-info/METADATA", b"Version: 1+a\n")
    src = tmp_path / "src.zip"
    src.write_bytes(sink.getvalue())
    dst = tmp_path / "dst.zip"

    digest = rewrite_zip(
        src,
        dst,
        rename=lambda n: n.replace("old.dist-info", "new.dist-info"),
        replace={"old.dist-info/METADATA": b"Version: 1\n"},
    )
    assert digest == hashlib.sha256(dst.read_bytes()).hexdigest()
    with zipfile.ZipFile(src) as before, zipfile.ZipFile(dst) as after:
        assert after.testzip() is None
        assert after.namelist() == [
            "pkg/described.py",
            "pkg/stored.bin",
            "pkg/big64.txt",
            "pkg/naïve.txt",
            "new.dist-info/METADATA",
        ]
        for name in after.namelist()[:4]:
            assert after.read(name) == before.read(name)
            assert after.getinfo(name).compress_type == before.getinfo(name).compress_type
        assert after.read("new.dist-info/METADATA") == b"Version: 1\n"
