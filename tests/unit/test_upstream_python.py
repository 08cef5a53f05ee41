"""Which upstream versions ship a wheel for a CPython: its own tag, an older stable-ABI tag, a
pure-Python tag; a version without wheels builds anywhere."""

from __future__ import annotations

import pytest
from packaging.version import Version

from relforge.simplepages import PageFile
from relforge.upstream.index import UpstreamVersion
from relforge.upstream.python import ships_for


def _version(*filenames: str) -> UpstreamVersion:
    files = tuple(
        PageFile(
            filename=name,
            url=f"https://f/{name}",
            sha256=None,
            yanked=None,
            metadata=False,
            metadata_sha256=None,
            requires_python=None,
        )
        for name in filenames
    )
    return UpstreamVersion(project="x", version=Version("1.0"), files=files)


@pytest.mark.parametrize(
    ("files", "python", "ships"),
    [
        (("x-1.0-cp314-cp314-manylinux_2_28_x86_64.whl",), "3.14", True),
        (("x-1.0-cp314-cp314t-manylinux_2_28_x86_64.whl",), "3.14", False),  # free-threaded only
        (("x-1.0-cp313-cp313-manylinux_2_28_x86_64.whl",), "3.14", False),
        (("x-1.0-cp39-abi3-manylinux_2_28_x86_64.whl",), "3.14", True),
        (("x-1.0-cp315-abi3-manylinux_2_28_x86_64.whl",), "3.14", False),  # newer stable ABI
        (("x-1.0-py3-none-any.whl",), "3.15", True),
        (("x-1.0.tar.gz",), "3.15", True),  # no wheel: builds from source anywhere
    ],
)
def test_ships_for(files: tuple[str, ...], python: str, ships: bool) -> None:
    assert ships_for(_version(*files), Version(python)) is ships
