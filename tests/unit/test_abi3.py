"""abi3 (limited API) without a build: the matrix key and its cells, the Pythons an abi3 wheel
serves everywhere they are counted (dependency targets, runtime verdicts), the shipped
stable-ABI data and the script that refreshes it."""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import pytest

from relforge.deps.targets import Target
from relforge.errors import ConfigError
from relforge.manifest import Verdict
from relforge.matrix.expand import expand_cells
from relforge.matrix.load import load_matrix
from relforge.validate.limitedapi import stable_abi
from relforge.validate.run import abi3_tag
from relforge.validate.runtime import merge_runs
from tests.conftest import REPO, Result, Write

Run = Callable[..., Result]

MATRIX = """\
schema_version: 1
project: {name: demo}
releases:
  "1.0":
    python: ["3.8", "3.9", "3.10", "3.11", "3.13t"]
    platforms:
      linux-x86_64: {os: linux, arch: x86_64, platform_tag: manylinux_2_28_x86_64}
      linux-aarch64: {os: linux, arch: aarch64, platform_tag: manylinux_2_28_aarch64}
    accelerators:
      cpu: {kind: cpu, abi3: "3.9", platforms: {linux-x86_64: {}, linux-aarch64: {}}}
      cu128: {kind: cuda, version: 12.8.1, platforms: {linux-x86_64: {}}}
"""


def test_a_floor_makes_one_cell_per_platform_for_the_pythons_from_it_on(write: Write) -> None:
    matrix = load_matrix(write(MATRIX))
    cells = {c.id: c for c in expand_cells(matrix, "1.0", channel="test")}
    abi3 = cells["wheel-linux-x86_64-cp39-abi3-cpu"]
    assert (abi3.python, abi3.python_tag, abi3.abi_tag) == ("3.9", "cp39", "abi3")
    assert abi3.serves_python == ("3.9", "3.10", "3.11") == abi3.pythons
    assert abi3.limited_api == "3.9" and abi3.env["RELFORGE_LIMITED_API"] == "3.9"
    assert abi3.env["RELFORGE_CELL_ID"] == abi3.id and abi3.version == "1.0.0+cpu"
    assert "wheel-linux-aarch64-cp39-abi3-cpu" in cells
    # below the floor and free-threaded: wheels of their own; other variants untouched
    assert {"wheel-linux-x86_64-py3.8-cpu", "wheel-linux-x86_64-py3.13t-cpu"} <= set(cells)
    assert not any(i.startswith("wheel-linux-x86_64-py3.9-cpu") for i in cells)
    assert {f"wheel-linux-x86_64-py{p}-cu128" for p in ("3.9", "3.10", "3.11")} <= set(cells)
    assert len(cells) == 2 * 3 + 5  # cpu: abi3 + 3.8 + 3.13t per platform; cu128: 5
    # the JSON contract: the keys only when set
    assert "limited_api" not in cells["wheel-linux-x86_64-py3.8-cpu"].to_json()
    assert abi3.to_json()["serves_python"] == ["3.9", "3.10", "3.11"]


def test_the_release_floor_applies_to_variants_without_their_own(write: Write) -> None:
    text = MATRIX.replace('    python: ["3.8"', '    abi3: "3.10"\n    python: ["3.8"', 1)
    matrix = load_matrix(write(text))
    ids = {c.id for c in expand_cells(matrix, "1.0")}
    assert "wheel-linux-x86_64-cp39-abi3-cpu" in ids  # its own floor wins
    assert "wheel-linux-x86_64-cp310-abi3-cu128" in ids
    assert "wheel-linux-x86_64-py3.9-cu128" in ids  # below the release's floor


@pytest.mark.parametrize(
    ("floor", "said"),
    [
        ('"3.13t"', "abi3 wheels do not load on free-threaded Python"),
        ('"3"', "is not a Python feature version"),
        ('"2.7"', "is not a Python feature version"),
        ('"3.12"', "abi3 floor 3.12 is above every Python of the release (3.8, 3.9, 3.10, 3.11)"),
    ],
)
def test_a_bad_floor_names_its_place(write: Write, run: Run, floor: str, said: str) -> None:
    path = write(MATRIX.replace('abi3: "3.9"', f"abi3: {floor}"))
    result = run("matrix", "list", str(path))
    assert result.code == 2 and said in result.err, result.err
    line = MATRIX.splitlines().index(next(x for x in MATRIX.splitlines() if "abi3" in x)) + 1
    assert f"{path}:{line}:" in result.err
    with pytest.raises(ConfigError):
        expand_cells(load_matrix(path), "1.0") if floor == '"3.12"' else load_matrix(path)


def test_matrix_list_shows_the_pythons_an_abi3_wheel_serves(write: Write, run: Run) -> None:
    result = run("matrix", "list", str(write(MATRIX)))
    assert result.code == 0, result.err
    row = next(line for line in result.out.splitlines() if "cp39-abi3-cpu" in line)
    assert "3.9–3.11 abi3" in row


def test_dependencies_are_resolved_for_every_python_an_abi3_wheel_serves(write: Write) -> None:
    """numpy has a wheel per CPython: `--abi abi3` would find none of them."""
    from relforge.deps.targets import wheel_targets

    matrix = load_matrix(write(MATRIX))
    targets = [
        t for t in wheel_targets(matrix, "test") if t.cell.id == "wheel-linux-x86_64-cp39-abi3-cpu"
    ]
    assert [(t.python, t.abi) for t in targets] == [
        ("3.9", "cp39"),
        ("3.10", "cp310"),
        ("3.11", "cp311"),
    ]
    assert targets[1].label == "wheel-linux-x86_64-cp39-abi3-cpu (Python 3.10)"
    wheel = "demo-1.0.0+cpu-cp39-abi3-manylinux_2_28_x86_64.whl"
    assert all(isinstance(t, Target) and t.installs(wheel) for t in targets)


def test_runtime_verdicts_of_several_pythons_make_one_per_check() -> None:
    ok = Verdict(check="RF-R001", status="pass", message="installed the file with Python 3.9")
    runs = {
        "3.9": [ok, Verdict(check="RF-R002", status="pass", message="0.1")],
        "3.10": [
            Verdict(check="RF-R001", status="pass", message="installed the file with Python 3.10"),
            Verdict(check="RF-R002", status="fail", message="exit 1: ImportError"),
        ],
    }
    install, smoke = merge_runs(runs, absent=["3.11"])
    assert install == Verdict(
        check="RF-R001",
        status="pass",
        message="installed the file with Python 3.9, 3.10 (not on this machine: Python 3.11)",
    )
    assert (smoke.status, smoke.message) == (
        "fail",
        "Python 3.10: exit 1: ImportError; passed with Python 3.9 "
        "(not on this machine: Python 3.11)",
    )


def test_the_shipped_stable_abi_data() -> None:
    table = stable_abi()
    assert table["PyArg_ParseTuple"].added == (3, 2)
    assert table["PyUnicode_AsUTF8AndSize"].added == (3, 10)
    assert table["_Py_Dealloc"].abi_only and table["PyExc_TypeError"].kind == "data"
    assert "PyUnicode_New" not in table  # never part of the stable ABI
    assert len(table) > 900


def test_an_unexpected_abi3_file_says_how_to_declare_it() -> None:
    assert abi3_tag("x-1.0-cp39-abi3-manylinux_2_28_x86_64.whl") == "cp39"
    assert abi3_tag("x-1.0-cp311-cp311-manylinux_2_28_x86_64.whl") is None
    assert abi3_tag("not a wheel") is None


def _script() -> ModuleType:
    path = REPO / "scripts" / "refresh_limited_api.py"
    spec = importlib.util.spec_from_file_location("refresh_limited_api", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


TOML = """\
[struct.PyObject]
    added = '3.2'
[function.PyArg_ParseTuple]
    added = '3.2'
[function.PyUnicode_AsUTF8AndSize]
    added = '3.10'
[function._Py_Dealloc]
    added = '3.2'
    abi_only = true
[data.PyExc_TypeError]
    added = '3.2'
[macro.Py_BEGIN_ALLOW_THREADS]
    added = '3.2'
"""


def test_the_refresh_script_reads_cpythons_stable_abi_toml(tmp_path: Path) -> None:
    script = _script()
    source = tmp_path / "stable_abi.toml"
    source.write_text(TOML)
    out = tmp_path / "limited_api.yaml"
    assert script.main(["--toml", str(source), "--out", str(out)]) == 0
    text = out.read_text()
    assert 'newest: "3.10"' in text
    assert '  _Py_Dealloc: {kind: function, added: "3.2", abi_only: true}\n' in text
    assert '  PyExc_TypeError: {kind: data, added: "3.2"}\n' in text
    assert "PyObject:" not in text and "Py_BEGIN_ALLOW_THREADS" not in text  # not symbols
    before = out.stat().st_mtime_ns
    assert script.main(["--toml", str(source), "--out", str(out)]) == 0
    assert out.stat().st_mtime_ns == before  # unchanged: not rewritten


def test_explain_names_the_floor_and_the_abi3_cell_a_python_went_to(write: Write) -> None:
    from relforge.matrix.explain import explain_cell

    matrix = load_matrix(write(MATRIX))
    abi3 = explain_cell(matrix, "1.0", "wheel-linux-x86_64-cp39-abi3-cpu")
    assert abi3.status == "built"
    [floor] = [r for r in abi3.reasons if r.text.startswith("abi3 floor")]
    assert (
        floor.text
        == "abi3 floor 3.9: one cp39-abi3 wheel for Python 3.9, 3.10, 3.11, built with 3.9"
    )
    assert floor.where is not None and floor.where.line == 10
    gone = explain_cell(matrix, "1.0", "wheel-linux-x86_64-py3.10-cpu")
    assert gone.status == "not-offered" and gone.cell is not None
    assert gone.summary == (
        "wheel-linux-x86_64-py3.10-cpu is not a cell of its own: the abi3 wheel "
        "wheel-linux-x86_64-cp39-abi3-cpu serves Python 3.9, 3.10, 3.11."
    )
