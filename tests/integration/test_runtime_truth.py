"""Runtime validation tells the truth about what it installed and ran, with real venvs and pip:

- the default smoke test is an import of the module, named by `project.import_name` when the
  distribution's name does not give it (`pillow-thing` → `PIL_thing`), and a module without
  `__version__` passes it (RF-R005 says it has none);
- RF-R001 warns, naming them and the fix, when the wheel's dependencies were left out (no
  source given, or the source lacks them), and the smoke test's ModuleNotFoundError points at
  that cause;
- an abi3 cell's dependency axes' wheels are fetched for every Python it is run with (the
  build fetched them for its own Python only), and RF-R001 says which Pythons got them."""

from __future__ import annotations

import base64
import hashlib
import json
import time
import zipfile
from collections.abc import Callable
from pathlib import Path

import pytest

from relforge.axiswheels import cached_folders
from relforge.builders.inputs.depwheels import fetch_axis_wheels
from relforge.manifest import Verdict
from relforge.matrix.cell import Cell
from relforge.matrix.expand import expand_cells
from relforge.matrix.load import load_matrix
from relforge.validate.runtime import RuntimeRequest, run_runtime
from tests.conftest import Result
from tests.promote_kit import matrix_head
from tests.wheelfactory import serve_index

Run = Callable[..., Result]
pytestmark = pytest.mark.slow

TAG = "cp312-cp312-manylinux_2_28_x86_64"
CELL = "wheel-linux-x86_64-py3.12-cpu"
FIX = "pass `--runtime-index URL`"
MIRROR = "`relforge deps mirror`"


def pure_wheel(
    out: Path, name: str, version: str, tag: str, files: dict[str, str], requires: list[str]
) -> Path:
    """A wheel of `files` (path → text) with METADATA, WHEEL and RECORD, written with zipfile."""
    out.mkdir(parents=True, exist_ok=True)
    info = f"{name.replace('-', '_')}-{version}.dist-info"
    members = {path: text.encode() for path, text in files.items()}
    members[f"{info}/METADATA"] = (
        f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n"
        + "".join(f"Requires-Dist: {r}\n" for r in requires)
    ).encode()
    members[f"{info}/WHEEL"] = (
        f"Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: {tag}\n"
    ).encode()
    rows = []
    for member, data in members.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        rows.append(f"{member},sha256={digest},{len(data)}")
    members[f"{info}/RECORD"] = ("\n".join([*rows, f"{info}/RECORD,,"]) + "\n").encode()
    path = out / f"{name.replace('-', '_')}-{version}-{tag}.whl"
    with zipfile.ZipFile(path, "w") as zf:
        for member, data in members.items():
            zf.writestr(member, data)
    return path


def _matrix(tmp_path: Path, project: str) -> Path:
    text = matrix_head().replace("  name: rfdemo\n", project) + (
        'releases:\n  "1.0":\n    python: ["3.12"]\n    local_label: ""\n    platforms:\n'
        "      linux-x86_64: {os: linux, arch: x86_64, platform_tag: manylinux_2_28_x86_64}\n"
        "    accelerators:\n      cpu: {kind: cpu, platforms: {linux-x86_64: {}}}\n"
    )
    path = tmp_path / "matrix.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def _validate(run: Run, matrix: Path, dist: Path, *extra: str) -> dict[str, tuple[str, str]]:
    result = run("validate", str(matrix), "-r", "1.0", "-c", "test", "--dist", str(dist),
                 "--runtime", "--format", "json", *extra)  # fmt: skip
    assert result.code in (0, 4), result.out + result.err
    [report] = json.loads(result.out)["artifacts"]
    return {v["check"]: (v["status"], v["message"]) for v in report["verdicts"]}


def test_the_default_smoke_imports_the_module_import_name_names(
    run: Run, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`pillow-thing` installs the module `PIL_thing`, which has no __version__: a fine wheel."""
    monkeypatch.chdir(tmp_path)
    files = {"PIL_thing/__init__.py": "print('PIL_thing loaded')\n"}
    pure_wheel(tmp_path / "dist", "pillow-thing", "1.0.0", TAG, files, [])
    named = "  name: pillow-thing\n  import_name: PIL_thing\n"
    verdicts = _validate(run, _matrix(tmp_path, named), tmp_path / "dist")
    assert verdicts["RF-R001"] == (
        "pass",
        "installed the file (it declares no dependencies) with Python 3.12",
    )
    assert verdicts["RF-R002"] == ("pass", "PIL_thing loaded")
    assert verdicts["RF-R005"] == ("skip", "PIL_thing has no __version__")
    assert verdicts["RF-R003"] == ("skip", "PIL_thing has no build_info()")

    # Without import_name the module is guessed from the name, and the guess is wrong.
    guessed = _validate(run, _matrix(tmp_path, "  name: pillow-thing\n"), tmp_path / "dist")
    status, message = guessed["RF-R002"]
    assert status == "fail" and "No module named 'pillow_thing'" in message
    assert "RF-R001" not in message  # nothing was left out: no note blames a dependency


def _thing(dist: Path) -> Path:
    """rfthing 1.0.0: its module imports rfthing_dep; a requirement for old Pythons only."""
    files = {"rfthing/__init__.py": "import rfthing_dep\n__version__ = '1.0.0'\n"}
    needs = ["rfthing-dep>=1", 'tomli>=1; python_version < "3.0"']
    return pure_wheel(dist, "rfthing", "1.0.0", TAG, files, needs)


def _dep_index(root: Path, project: str, version: str, tag: str = "py3-none-any") -> str:
    module = project.replace("-", "_")
    wheel = pure_wheel(root / "built", project, version, tag, {f"{module}.py": "X = 1\n"}, [])
    serve_index(root, project, [wheel])
    return (root / "simple").as_uri() + "/"


def test_left_out_dependencies_are_a_warning_with_the_fix_and_the_import_error_says_so(
    run: Run, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    _thing(tmp_path / "dist")
    matrix = _matrix(tmp_path, "  name: rfthing\n")

    # No source: installed without its dependencies; the marker's requirement is not named.
    bare = _validate(run, matrix, tmp_path / "dist")
    status, message = bare["RF-R001"]
    assert status == "warn"
    assert message.startswith(
        "installed the file with Python 3.12 without its dependencies (rfthing-dep>=1: "
        "no --runtime-index and no mirrored closure in the channel)"
    )
    assert FIX in message and MIRROR in message and "tomli" not in message
    status, message = bare["RF-R002"]
    assert status == "fail" and "No module named 'rfthing_dep'" in message
    assert "rfthing_dep comes from rfthing-dep>=1, which RF-R001 left out" in message

    # An index without it: the wheel installs, the dependency is left out, and pip's reason said.
    other = _dep_index(tmp_path / "other", "unrelated", "1.0")
    lacking = _validate(run, matrix, tmp_path / "dist", "--runtime-index", other)
    status, message = lacking["RF-R001"]
    assert status == "warn"
    assert message.startswith(
        f"installed the file (dependencies from {other}) with Python 3.12 without "
        f"rfthing-dep>=1 (not installable from {other}: "
    )
    assert "rfthing-dep" in message.split("not installable from", 1)[1] and FIX in message
    assert "which RF-R001 left out" in lacking["RF-R002"][1]

    # An index with it: nothing left out, nothing to warn of.
    good = _dep_index(tmp_path / "good", "rfthing-dep", "1.2")
    fine = _validate(run, matrix, tmp_path / "dist", "--runtime-index", good)
    assert fine["RF-R001"] == (
        "pass",
        f"installed the file (dependencies from {good}) with Python 3.12",
    )
    assert fine["RF-R002"] == ("pass", "import rfthing succeeded")
    assert fine["RF-R005"] == ("pass", "rfthing.__version__ is 1.0.0")

    # A version the index does not have is left out too (a dependency pinned out of reach).
    old = _dep_index(tmp_path / "old", "rfthing-dep", "0.5")
    too_old = _validate(run, matrix, tmp_path / "dist", "--runtime-index", old)
    assert too_old["RF-R001"][0] == "warn" and "without rfthing-dep>=1" in too_old["RF-R001"][1]


ABI3_MATRIX = """\
schema_version: 1
project: {name: rfaxis}
releases:
  "1.0":
    python: ["3.11", "3.12"]
    local_label: ""
    platforms:
      linux-x86_64: {os: linux, arch: x86_64, platform_tag: manylinux_2_28_x86_64}
    accelerators:
      cpu: {kind: cpu, abi3: "3.11", platforms: {linux-x86_64: {}}}
    axes:
      dep_lib:
        "2.9": {install: ["dep-lib==2.9.*"], index: INDEX, requires: ["dep-lib==2.9.*"]}
"""


def _abi3_run(tmp_path: Path, dep_tag: str) -> tuple[Cell, dict[str, Verdict], Path]:
    """The abi3 cell (Python 3.11 and 3.12) with its axis wheels fetched the way its build
    fetches them (for 3.11), then validated at runtime: (cell, verdicts, axis cache)."""
    index = _dep_index(tmp_path / "index", "dep-lib", "2.9.1", dep_tag)
    matrix = tmp_path / "abi3.yaml"
    matrix.write_text(ABI3_MATRIX.replace("INDEX", index), encoding="utf-8")
    [cell] = expand_cells(load_matrix(matrix), "1.0", channel="test")
    assert cell.python == "3.11" and cell.pythons == ("3.11", "3.12")
    cache = tmp_path / "cache"
    log = tmp_path / "fetch.log"
    fetch_axis_wheels(
        cell, tmp_path / "build-wheels", env={}, log=log, deadline=time.monotonic() + 300,
        cache_root=cache,
    )  # fmt: skip
    assert not cached_folders(cell.replace(python="3.12"), cache)  # the build's Python only
    files = {"rfaxis/__init__.py": "import dep_lib\n"}
    wheel = pure_wheel(tmp_path / "dist", "rfaxis", "1.0.0", "cp311-abi3-manylinux_2_28_x86_64",
                       files, ["dep-lib==2.9.*"])  # fmt: skip
    request = RuntimeRequest(
        cell=cell, wheel=wheel, project="rfaxis", workdir=tmp_path / "work", cache_root=cache
    )
    verdicts = {v.check: v for v in run_runtime(request).verdicts}
    return cell, verdicts, cache


def test_an_abi3_cells_axis_wheels_are_fetched_for_every_python_it_is_run_with(
    tmp_path: Path,
) -> None:
    cell, verdicts, cache = _abi3_run(tmp_path, "py3-none-any")
    assert verdicts["RF-R001"] == Verdict(
        check="RF-R001",
        status="pass",
        message="installed the file (dependencies from its dependency axes' wheels only) "
        "with Python 3.11, 3.12",
    )
    assert verdicts["RF-R002"].status == "pass", verdicts["RF-R002"].message
    assert cached_folders(cell.replace(python="3.12"), cache)  # fetched once, kept


def test_an_abi3_cell_whose_axis_has_no_wheels_for_a_python_says_so(tmp_path: Path) -> None:
    """dep-lib 2.9 exists for CPython 3.11 only: 3.12 gets the wheel without it, and RF-R001
    does not claim 3.12 was installed with its dependencies."""
    _, verdicts, _ = _abi3_run(tmp_path, "cp311-none-any")
    install = verdicts["RF-R001"]
    assert install.status == "warn"
    assert install.message.startswith(
        "Python 3.12: installed the file with Python 3.12 without its dependencies "
        "(dep-lib==2.9.*: no --runtime-index and no mirrored closure in the channel; the "
        "dependency axes' wheels (dep-lib==2.9.*) for Python 3.12 could not be fetched: "
    )
    assert install.message.endswith("; passed with Python 3.11")  # only 3.11 had them
    smoke = verdicts["RF-R002"]
    assert smoke.status == "fail" and smoke.message.startswith("Python 3.12: exit 1: ")
    assert "dep_lib comes from dep-lib==2.9.*, which RF-R001 left out" in smoke.message
    assert smoke.message.endswith("; passed with Python 3.11")
