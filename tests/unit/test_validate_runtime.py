"""build_info() against the cell (RF-R003): which keys are compared and how."""

from __future__ import annotations

import pytest

from relforge.matrix.cell import Cell
from relforge.matrix.expand import expand_cells
from relforge.matrix.load import load_matrix
from relforge.validate.runtime import build_info_problems
from tests.conftest import EXAMPLE


@pytest.fixture(scope="module")
def cells() -> dict[str, Cell]:
    matrix = load_matrix(EXAMPLE)
    return {c.variant: c for c in expand_cells(matrix, "1.0", channel="test") if c.python == "3.12"}


def test_the_example_projects_build_info_matches_its_cells(cells: dict[str, Cell]) -> None:
    """hello_native.build_info() as the example's README shows it."""
    cuda = {"variant": "cu130", "cuda": "13.0", "cxx11_abi": True, "version": "1.0.0+cu130"}
    assert build_info_problems(cuda, cells["cu130"]) == []
    cpu = {"variant": "cpu", "cuda": None, "cxx11_abi": True, "version": "1.0.0+cpu"}
    assert build_info_problems(cpu, cells["cpu"]) == []


@pytest.mark.parametrize("key", ["cuda", "cuda_version", "accelerator_version"])
def test_a_module_built_against_another_cuda_is_caught(cells: dict[str, Cell], key: str) -> None:
    """`cuda` (torch.version.cuda's name, the example's) counts like `cuda_version`."""
    info = {"variant": "cu130", key: "12.8", "cxx11_abi": True}
    assert build_info_problems(info, cells["cu130"]) == [
        "accelerator version 12.8, the cell says 13.0"
    ]


def test_each_reported_key_is_compared(cells: dict[str, Cell]) -> None:
    info = {"variant": "cpu", "cxx11_abi": False, "accelerator": "cpu", "python": "3.11"}
    problems = build_info_problems(info, cells["cu130"])
    assert problems == [
        "variant is 'cpu', the cell says 'cu130'",
        "cxx11_abi is False, the cell says True",
        "accelerator is 'cpu', the cell says 'cuda'",
        "python is '3.11', the cell says '3.12'",
    ]
