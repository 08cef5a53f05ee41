"""Axis wheels are fetched once per requirement + index + platform + Python, then offline."""

from __future__ import annotations

import shutil
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from relforge.axiswheels import cached_folders, download_argv, platforms
from relforge.builders.control.failures import BuildFailure
from relforge.builders.inputs.depwheels import REQUIREMENTS, fetch_axis_wheels
from relforge.matrix.cell import Cell
from relforge.matrix.expand import expand_cells
from relforge.matrix.load import load_matrix
from tests.wheelfactory import WheelSpec, serve_index, write_wheel

MATRIX = """\
schema_version: 1
project: {name: consumer}
releases:
  "1.0":
    python: ["3.12"]
    local_label: "+{variant}.dep{dep_lib_minor}"
    platforms:
      linux-x86_64: {os: linux, arch: x86_64, platform_tag: manylinux_2_28_x86_64}
    accelerators:
      cpu: {kind: cpu, platforms: {linux-x86_64: {}}}
    axes:
      dep_lib:
        "2.8":
          install: ["dep-lib==2.8.*"]
          index: INDEX
          requires: ["dep-lib==2.8.*"]
        "2.9":
          install: ["dep-lib==2.9.*"]
          index: INDEX
          requires: ["dep-lib==2.9.*"]
        "3.0":
          install: ["dep-lib==3.0.*"]
          index: INDEX
"""


def test_manylinux_tags_accept_older_glibc() -> None:
    tags = platforms("manylinux_2_28_x86_64")
    assert tags[0] == "manylinux_2_28_x86_64"
    for older in ("manylinux_2_27_x86_64", "manylinux_2_17_x86_64", "manylinux2014_x86_64"):
        assert older in tags
    assert "manylinux1_x86_64" in tags and "manylinux_2_29_x86_64" not in tags
    assert platforms("win_amd64") == ["win_amd64"]
    assert "manylinux2010_aarch64" not in platforms("manylinux_2_28_aarch64")


@pytest.fixture
def cells(tmp_path: Path, write: Callable[[str], Path]) -> list[Cell]:
    built = tmp_path / "built"
    wheels = [
        write_wheel(
            WheelSpec(
                name="dep-lib",
                version=v,
                python_tag="py3",
                abi_tag="none",
                platform_tag="any",
            ),
            built,
        )
        for v in ("2.8.0", "2.9.0", "2.9.1")
    ]
    serve_index(tmp_path / "index", "dep-lib", wheels)
    url = (tmp_path / "index" / "simple").as_uri()
    matrix = load_matrix(write(MATRIX.replace("INDEX", url)))
    return expand_cells(matrix, "1.0", channel="test")


def fetch(cell: Cell, dest: Path, cache: Path, log: Path) -> list[str]:
    got = fetch_axis_wheels(
        cell, dest, env={}, log=log, deadline=time.monotonic() + 300, cache_root=cache
    )
    assert got is not None
    return list(got.files)


def test_fetches_each_value_once_then_works_offline(tmp_path: Path, cells: list[Cell]) -> None:
    cache, log = tmp_path / "cache", tmp_path / "fetch.log"
    first = fetch(cells[1], tmp_path / "a", cache, log)
    assert first == ["dep_lib-2.9.1-py3-none-any.whl"]  # the newest 2.9, nothing else
    assert (tmp_path / "a" / REQUIREMENTS).read_text() == "dep-lib==2.9.*\n"
    assert fetch(cells[0], tmp_path / "b", cache, log) == ["dep_lib-2.8.0-py3-none-any.whl"]
    assert cached_folders(cells[1], cache)
    shutil.rmtree(tmp_path / "index")  # the index is gone: the cache answers
    assert fetch(cells[1], tmp_path / "c", cache, log) == first
    assert "pip" in log.read_text() and "download" in log.read_text()


def test_a_value_nothing_provides_fails_the_cell(tmp_path: Path, cells: list[Cell]) -> None:
    assert cells[2].axes == {"dep_lib": "3.0"}
    with pytest.raises(BuildFailure, match="fetching the axis wheels"):
        fetch(cells[2], tmp_path / "d", tmp_path / "cache", tmp_path / "fetch.log")
    assert not cached_folders(cells[2], tmp_path / "cache")  # no half-filled cache entry
    assert not list((tmp_path / "cache" / "axis-wheels").glob(".*"))


def test_download_is_for_the_cells_python_and_platform(cells: list[Cell], tmp_path: Path) -> None:
    argv = download_argv(cells[0], ["dep-lib==2.8.*"], cells[0].axis_index["dep_lib"], tmp_path)
    assert argv[argv.index("--python-version") + 1] == "3.12"
    assert argv[argv.index("--abi") + 1] == "cp312"
    assert "--only-binary=:all:" in argv and "--isolated" in argv
    assert argv[argv.index("--index-url") + 1].startswith("file://")
    assert argv[-1] == "dep-lib==2.8.*"


def test_no_axes_no_fetch(tmp_path: Path) -> None:
    from relforge.matrix.load import load_matrix as load

    root = Path(__file__).resolve().parents[2]
    cell = expand_cells(load(root / "matrix/example.yaml"), "1.0")[0]
    assert fetch_axis_wheels(cell, tmp_path, env={}, log=tmp_path / "l", deadline=0) is None
