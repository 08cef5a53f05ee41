"""Which name and platform tag a native archive of a cell is held to (matrix/pytorch.yaml)."""

from __future__ import annotations

from pathlib import Path

import pytest

from relforge.matrix.expand import expand_cells
from relforge.matrix.load import load_matrix
from relforge.matrix.schema import Matrix
from relforge.validate.archive import archive_filename, archive_platform_tags
from relforge.validate.binaries import identify, normal_arch
from relforge.validate.cellmatch import expected_filename

PYTORCH = Path(__file__).parents[2] / "matrix" / "pytorch.yaml"


@pytest.fixture(scope="module")
def pytorch() -> Matrix:
    return load_matrix(PYTORCH)


def test_archive_names_are_unique_in_every_upload_folder(pytorch: Matrix) -> None:
    """Archives of one variant (cpu: Linux, Windows release and debug, macOS) share a folder."""
    for release in ("2.6", "2.9"):
        cells = expand_cells(pytorch, release, channel="test")
        archives = [c for c in cells if c.package_type == "archive"]
        assert archives
        names = [(c.upload_subfolder, expected_filename(c, "torch")) for c in archives]
        assert len(set(names)) == len(names)
        for cell in archives:
            assert cell.version is not None
            name = archive_filename(cell, "torch")
            assert name.endswith(f"-{cell.version}.zip")
            assert f"-{cell.libtorch_config}-" in name and f"-{cell.platform}-" in name


def test_an_archive_gets_the_tag_its_variants_wheels_get_on_the_platform(pytorch: Matrix) -> None:
    rel = pytorch.release("2.6")
    by_id = {c.id: c for c in expand_cells(pytorch, "2.6", channel="test")}
    # 2.6: the platform is manylinux2014, CUDA 12.6 moved to manylinux_2_28
    assert archive_platform_tags(
        rel, by_id["libtorch-linux-x86_64-cpu-shared-with-deps-release"]
    ) == ("manylinux2014_x86_64",)
    cu126 = by_id["libtorch-linux-x86_64-cu126-shared-with-deps-release"]
    wheel = by_id["wheel-linux-x86_64-py3.12-cu126"]
    assert archive_platform_tags(rel, cu126) == (wheel.platform_tag,) == ("manylinux_2_28_x86_64",)
    rel = pytorch.release("2.9")
    cells = {c.id: c for c in expand_cells(pytorch, "2.9", channel="test")}
    assert archive_platform_tags(
        rel, cells["libtorch-windows-arm64-cpu-shared-with-deps-debug"]
    ) == ("win_arm64",)
    assert archive_platform_tags(
        rel, cells["libtorch-macos-arm64-cpu-shared-with-deps-release"]
    ) == ("macosx_14_0_arm64",)


def test_identify_refuses_look_alikes() -> None:
    assert identify("x", b"MZ" + bytes(100)) is None  # an MS-DOS program: no PE header
    assert identify("x", b"\xca\xfe\xba\xbe\x00\x00\x00\x3d" + bytes(64)) is None  # Java class
    assert identify("x", b"\x7fEL") is None
    assert identify("x", b"") is None
    assert normal_arch("ARM64") == "aarch64" and normal_arch("x86_64") == "x86_64"
