"""Cells → job matrices: grouping per (OS, package type), 256-entry shards, the PR subset."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from relforge.matrix.expand import expand_cells
from relforge.matrix.load import load_matrix
from relforge.workflows.layout import (
    ENTRY_FIELDS,
    MAX_MATRIX_JOBS,
    condensed,
    group_cells,
    matrix_entry,
    runner_labels,
    split,
)
from tests.conftest import PYTORCH, SMALL
from tests.workflows_support import big_matrix


@pytest.mark.parametrize(
    ("count", "limit", "sizes"),
    [
        (0, 256, []),
        (1, 256, [1]),
        (256, 256, [256]),
        (257, 256, [129, 128]),
        (600, 256, [200, 200, 200]),
        (513, 256, [171, 171, 171]),
        (10, 3, [3, 3, 2, 2]),
    ],
)
def test_split_is_balanced_and_bounded(count: int, limit: int, sizes: list[int]) -> None:
    items = list(range(count))
    chunks = split(items, limit)
    assert [len(c) for c in chunks] == sizes
    assert [x for chunk in chunks for x in chunk] == items  # order kept, nothing lost


def test_split_rejects_a_zero_limit() -> None:
    with pytest.raises(ValueError, match="at least 1"):
        split([1], 0)


def test_pytorch_29_groups_per_os_and_package_type() -> None:
    cells = expand_cells(load_matrix(PYTORCH), "2.9")
    groups = group_cells(cells)
    assert [(g.name, len(g.cells)) for g in groups] == [
        ("linux-wheel", 84),
        ("windows-wheel", 38),
        ("macos-wheel", 7),
        ("linux-archive", 6),
        ("windows-archive", 10),
        ("macos-archive", 1),
    ]
    for group in groups:
        ids = [e["id"] for s in group.shards for e in s.entries]
        assert ids == [c.id for c in group.cells]
        assert all(len(s.entries) <= MAX_MATRIX_JOBS for s in group.shards)
        assert [s.job_id for s in group.shards] == ["build-1"]


def test_pr_subset_is_newest_python_per_platform_and_accelerator() -> None:
    cells = expand_cells(load_matrix(PYTORCH), "2.9")
    subset = condensed(cells)
    wheels = [c for c in subset if c.package_type == "wheel"]
    pairs = {(c.platform, c.variant) for c in cells if c.package_type == "wheel"}
    assert sorted((c.platform, c.variant) for c in wheels) == sorted(pairs)  # each exactly once
    by_platform = {c.platform: c.python for c in wheels}
    assert by_platform["linux-x86_64"] == "3.14"  # newest, GIL-enabled over 3.14t
    assert by_platform["windows-arm64"] == "3.13"  # 3.14 is excluded there: the newest it has
    libtorch = [c for c in subset if c.package_type == "archive"]
    assert [(c.platform, c.variant) for c in libtorch] == [
        *(("linux-x86_64", v) for v in ("cpu", "cu126", "cu128", "cu130", "rocm6.3", "rocm6.4")),
        *(("windows-x86_64", v) for v in ("cpu", "cu126", "cu128", "cu130")),
        ("windows-arm64", "cpu"),
        ("macos-arm64", "cpu"),
    ]
    assert {c.libtorch_config for c in libtorch} == {"release"}  # one config each


def test_pr_subset_leaves_out_one_off_extra_cells(write: Callable[[str], Path]) -> None:
    cells = expand_cells(load_matrix(write(SMALL)), "1.0")
    assert any(c.extra_of for c in cells)  # SMALL's `-full` include rule
    assert not any(c.extra_of for c in condensed(cells))


def test_matrix_entry_is_a_projection_of_the_cell_contract() -> None:
    cells = expand_cells(load_matrix(PYTORCH), "2.9")
    for cell in cells:
        entry = matrix_entry(cell)
        contract = cell.to_json()
        assert list(entry) == [*ENTRY_FIELDS, "builder"]  # + where it builds: its image or not
        assert entry["builder"] == ("docker" if cell.image else "host")
        for key in ENTRY_FIELDS:
            if key != "test_runner":
                assert entry[key] == ("" if contract[key] is None else contract[key])
    aarch64_cuda = next(c for c in cells if c.id == "wheel-linux-aarch64-py3.12-cu128")
    assert aarch64_cuda.test_runner is None  # the matrix names no aarch64 GPU runner
    assert matrix_entry(aarch64_cuda)["test_runner"] == aarch64_cuda.build_runner
    archive = next(c for c in cells if c.package_type == "archive")
    assert matrix_entry(archive)["python"] == ""  # GitHub's schema allows no null


def test_a_big_group_is_sharded_under_the_limit(write: Callable[[str], Path]) -> None:
    cells = expand_cells(load_matrix(write(big_matrix(20, ("3.11", "3.12", "3.13")))), "1.0")
    assert len(cells) == 120
    (group,) = group_cells(cells, limit=50)
    assert [s.job_id for s in group.shards] == ["build-1", "build-2", "build-3"]
    assert [len(s.entries) for s in group.shards] == [40, 40, 40]
    assert [e["id"] for s in group.shards for e in s.entries] == [c.id for c in cells]


def test_runner_labels_lists_every_build_and_test_runner() -> None:
    cells = expand_cells(load_matrix(PYTORCH), "2.9")
    labels = runner_labels(cells)
    assert labels == sorted(set(labels))
    assert {"linux.12xlarge", "linux.g5.4xlarge.nvidia.gpu", "macos-14-xlarge"} <= set(labels)
