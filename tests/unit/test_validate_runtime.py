"""build_info() against the cell (RF-R003): which keys are compared and how; what RF-R001
reads as left out, the note a missing module of it gets, the module the checks import."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from relforge.matrix.cell import Cell
from relforge.matrix.expand import expand_cells
from relforge.matrix.load import load_matrix
from relforge.validate.runtime import build_info_problems, import_name
from relforge.validate.runtimedeps import PROBE, Sources, explain_missing, install_sources, left_out
from tests.conftest import EXAMPLE
from tests.wheelfactory import WheelSpec, write_wheel


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


def _probe() -> str:
    """What PROBE prints in this test's own environment (real markers, real distributions)."""
    done = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_left_out_is_read_from_the_environment() -> None:
    """Installed and satisfying: not left out (names compared normalized); absent, or too old,
    is; a requirement whose marker excludes this Python is not one."""
    probe = _probe()
    needs = [
        "Packaging>=1",
        "packaging>=999",
        "no-such-distribution-here",
        'no-such-either; python_version < "3.0"',
    ]
    assert left_out(needs, probe) == ["packaging>=999", "no-such-distribution-here"]
    assert left_out(needs, "not json") == needs  # unreadable: nothing is assumed installed


def test_a_missing_module_of_a_left_out_dependency_is_said_so() -> None:
    error = "exit 1: … | ModuleNotFoundError: No module named 'rf_dep.core'"
    said = explain_missing(error, ["rf-dep>=1", "other"], "rfthing")
    assert said.startswith(error + " — rf_dep comes from rf-dep>=1, which RF-R001 left out")
    assert "`--runtime-index URL`" in said and "`relforge deps mirror`" in said
    # a module none of them is named for: they may still provide it, so it is said tentatively
    assert explain_missing("No module named 'yaml'", ["pyyaml"], "rfthing").endswith(
        "RF-R001 left out pyyaml; yaml may belong to one of them (see RF-R001)"
    )
    # the project's own module, nothing left out, or another error: the message stands
    assert explain_missing("No module named 'rfthing._c'", ["rf-dep"], "rfthing") == (
        "No module named 'rfthing._c'"
    )
    assert explain_missing(error, [], "rfthing") == error
    assert explain_missing("ImportError: libfoo.so", ["rf-dep"], "rfthing") == (
        "ImportError: libfoo.so"
    )


def test_the_module_the_checks_import() -> None:
    assert import_name("Pillow-Thing") == "pillow_thing"
    assert import_name("zope.interface") == "zope_interface"
    assert import_name("pillow-thing", "PIL_thing") == "PIL_thing"


def test_no_source_says_why_and_names_the_axis_fetch(tmp_path: Path) -> None:
    needs = write_wheel(WheelSpec(version="1.0.0", requires_dist=["numpy>=2"]), tmp_path / "a")
    none = install_sources(needs, None, "", [], "the axes' wheels could not be fetched: offline")
    assert none.options == ["--no-index", "--no-deps"]
    assert none.none_because == (
        "no --runtime-index and no mirrored closure in the channel; "
        "the axes' wheels could not be fetched: offline"
    )
    alone = write_wheel(WheelSpec(version="1.0.0"), tmp_path / "b")
    assert install_sources(alone, None, "", []) == Sources(
        ["--no-index"], "(it declares no dependencies)"
    )
    upstream = install_sources(needs, "https://pypi.org/simple/", "", [tmp_path])
    assert upstream.options == [
        "--index-url", "https://pypi.org/simple/", "--find-links", str(tmp_path),
    ]  # fmt: skip
    assert upstream.how == (
        "(dependencies from https://pypi.org/simple/, with its dependency axes' wheels)"
    )
    assert upstream.none_because == ""
