"""An abi3 project from `relforge init` to pip-installed wheels on the host: examples/fastcrc
(setuptools, `py_limited_api=True`, `Py_LIMITED_API=0x03090000`, a `cp39-abi3` tag in
setup.cfg — the way many PyPI projects ship one wheel per platform) with the matrix edit the
README documents (`abi3: "3.9"` on the variant).  One cell, one wheel, validated statically
(RF-V047: only the stable ABI of 3.9) and at runtime with every Python it serves, published,
listed by the install selector for each of them, and pip-installed with two of them.  Two
builds that break their promise are caught: an extension using API newer than its floor, and
one named for a single CPython version."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from relforge.interpreters import find_interpreter
from tests.conftest import REPO, Result

Run = Callable[..., Result]
pytestmark = pytest.mark.slow

CELL = "wheel-linux-x86_64-cp39-abi3-cpu"
WHEEL = "fastcrc-0.1.0-cp39-abi3-manylinux_2_36_x86_64.whl"
MATRIX = "matrix/fastcrc.yaml"
RC = ("--release", "0.1", "--channel", "test")


def _project(root: Path, run: Run, monkeypatch: pytest.MonkeyPatch, *, abi3: bool = True) -> Path:
    """A copy of examples/fastcrc with the matrix `relforge init` writes: it reads the abi3
    floor from setup.cfg's `[bdist_wheel] py_limited_api = cp39` (the line taken out again
    when not `abi3`)."""
    shutil.copytree(REPO / "examples" / "fastcrc", root)
    monkeypatch.chdir(root)
    init = run("init")
    assert init.code == 0, init.err
    path = root / MATRIX
    text = path.read_text()
    assert '    abi3: "3.9"  # one cp39-abi3 wheel' in text
    if not abi3:
        text = re.sub(r'(?m)^    abi3: "3\.9".*\n', "", text, count=1)
    # the project's version is static (0.1.0): its wheels carry no local label
    text = text.replace("    python: [", '    local_label: ""\n    python: [', 1)
    path.write_text(text)
    return path


def _verdicts(report: dict[str, Any]) -> dict[str, tuple[str, str]]:
    [artifact] = report["artifacts"]
    return {v["check"]: (v["status"], v["message"]) for v in artifact["verdicts"]}


def _build_and_validate(run: Run) -> tuple[int, dict[str, tuple[str, str]]]:
    built = run("build", MATRIX, *RC, "--builder", "host", "--tag", "v0.1.0-rc1")
    assert built.code == 0, built.out + built.err
    manifest = "dist/relforge-manifest.json"
    checked = run("validate", MATRIX, *RC, "--manifest", manifest, "--runtime", "--format", "json")
    return checked.code, _verdicts(json.loads(checked.out))


def test_an_abi3_project_from_init_to_installed_wheels(
    tmp_path: Path,
    run: Run,
    monkeypatch: pytest.MonkeyPatch,
    static_server: Callable[[Path], str],
) -> None:
    root = tmp_path / "fastcrc"
    _project(root, run, monkeypatch)
    listed = run("matrix", "list", MATRIX, "--channel", "test", "--format", "json")
    assert listed.code == 0, listed.err
    [cell] = json.loads(listed.out)["cells"]
    serves = cell["serves_python"]
    assert (cell["id"], cell["python_tag"], cell["abi_tag"], cell["limited_api"]) == (
        CELL, "cp39", "abi3", "3.9",
    )  # fmt: skip
    assert cell["python"] == serves[0] and len(serves) >= 2  # built with the oldest served

    code, verdicts = _build_and_validate(run)
    assert code == 0, verdicts
    assert verdicts["RF-V100"] == ("pass", WHEEL)
    assert verdicts["RF-V047"][0] == "pass" and "stable ABI of 3.9" in verdicts["RF-V047"][1]
    # installed and imported with every Python the wheel serves (all are on this machine)
    assert verdicts["RF-R001"][0] == "pass"
    assert f"with Python {', '.join(serves)}" in verdicts["RF-R001"][1]
    assert verdicts["RF-R002"] == ("pass", f"Python {', '.join(serves)}: import fastcrc succeeded")
    assert verdicts["RF-R005"] == (
        "pass",
        f"Python {', '.join(serves)}: fastcrc.__version__ is 0.1.0",
    )

    published = run("publish", MATRIX, "--channel", "test", "--manifest",
                    "dist/relforge-manifest.json", "--execute")  # fmt: skip
    assert published.code == 0, published.err
    store = root / ".relforge" / "store"
    assert [p.name for p in (store / "whl/test/cpu").glob("*.whl")] == [WHEEL]
    index = static_server(store) + "/whl/test/cpu/"
    for python in serves[-2:]:  # the newest two: one file for both
        found = find_interpreter(python)
        assert found is not None
        venv = tmp_path / f"venv-{python}"
        subprocess.run([found.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
        subprocess.run(
            [str(Path(found.executable)), "-m", "pip", "--python", str(venv / "bin/python"),
             "--isolated", "--disable-pip-version-check", "install", "--no-cache-dir",
             "--index-url", index, "fastcrc==0.1.0"],
            check=True, capture_output=True,
        )  # fmt: skip
        probe = (
            "import fastcrc, zlib, sys; d = b'relforge abi3'; "
            "print(fastcrc.crc32(d) == zlib.crc32(d), fastcrc.adler32(d) == zlib.adler32(d), "
            "fastcrc._crc.__file__.endswith('.abi3.so'), '%d.%d' % sys.version_info[:2])"
        )
        out = subprocess.run([str(venv / "bin/python"), "-c", probe], capture_output=True,
                             text=True, check=True, cwd=tmp_path).stdout.split()  # fmt: skip
        assert out == ["True", "True", "True", python]

    # the install selector offers the one wheel for every Python it serves
    site = run("site", MATRIX, "--out", str(tmp_path / "site"), "--download-url", index)
    assert site.code == 0, site.err
    page = (tmp_path / "site" / "index.html").read_text()
    assert f'"python":{json.dumps(serves, separators=(",", ":"))}' in page


@pytest.mark.parametrize(
    ("broken", "said"),
    [
        # the macro asks for 3.10's limited API, the tag promises 3.9
        ("newer-api", "PyUnicode_AsUTF8AndSize came in 3.10, after the floor 3.9"),
        # not built for the limited API: named _crc.cpython-3XY-…so in a cp39-abi3 wheel
        ("one-python", "named for one CPython version"),
    ],
)
def test_an_abi3_wheel_that_breaks_its_promise_fails(
    tmp_path: Path, run: Run, monkeypatch: pytest.MonkeyPatch, broken: str, said: str
) -> None:
    root = tmp_path / "fastcrc"
    _project(root, run, monkeypatch)
    setup = root / "setup.py"
    source = root / "src" / "fastcrc" / "_crc.c"
    if broken == "newer-api":
        setup.write_text(setup.read_text().replace("0x03090000", "0x030A0000"))
        source.write_text(
            source.read_text()
            .replace(
                "    {NULL, NULL, 0, NULL},",
                '    {"utf8_size", utf8_size, METH_O, "Length of str in UTF-8."},\n'
                "    {NULL, NULL, 0, NULL},",
            )
            .replace(
                "static PyMethodDef methods[] = {",
                "static PyObject *utf8_size(PyObject *self, PyObject *text) {\n"
                "    Py_ssize_t size;\n"
                "    if (PyUnicode_AsUTF8AndSize(text, &size) == NULL) return NULL;\n"
                "    return PyLong_FromSsize_t(size);\n"
                "}\n\n"
                "static PyMethodDef methods[] = {",
            )
        )
    else:
        text = setup.read_text().replace("            py_limited_api=True,\n", "")
        setup.write_text(text.replace('define_macros=[("Py_LIMITED_API", "0x03090000")],', ""))
    code, verdicts = _build_and_validate(run)
    assert code == 4
    assert verdicts["RF-V047"][0] == "fail" and said in verdicts["RF-V047"][1], verdicts
    if broken == "one-python":  # and the newer Pythons cannot import it
        assert verdicts["RF-R002"][0] == "fail"
        assert f"Python {find_newest_served(verdicts)}" in verdicts["RF-R002"][1]


def test_an_abi3_wheel_under_a_cell_of_one_python_fails_at_build(
    tmp_path: Path, run: Run, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The matrix does not declare `abi3:`: the cell of one Python gets a cp39-abi3 wheel, and
    the build fails the cell (not "built") with the fix, before validation ever sees it."""
    _project(tmp_path / "fastcrc", run, monkeypatch, abi3=False)
    listed = run("matrix", "list", MATRIX, "--channel", "test", "--format", "json")
    cell = json.loads(listed.out)["cells"][0]
    assert cell["abi_tag"] != "abi3"
    built = run("build", MATRIX, *RC, "--builder", "host", "--tag", "v0.1.0-rc1",
                "--cell", cell["id"], "--format", "json")  # fmt: skip
    assert built.code == 4, built.err
    [result] = json.loads(built.out)["cells"]
    assert result["status"] == "failed"
    assert result["reason"].startswith(
        f"the wheel is cp39-abi3-{cell['platform_tag']}; the cell builds "
        f"{cell['python_tag']}-{cell['abi_tag']}-{cell['platform_tag']}: it is an abi3 wheel: "
        'declare `abi3: "3.9"` on the variant cpu'
    ), result["reason"]
    assert "docs/guide/matrix.md#abi3-limited-api-wheels" in result["reason"]
    assert not Path("dist/relforge-manifest.json").exists()


def find_newest_served(verdicts: dict[str, tuple[str, str]]) -> str:
    """The newest Python the runtime ran (named in RF-R001's message)."""
    message = verdicts["RF-R001"][1]
    return message.rsplit("with Python ", 1)[1].split(", ")[-1]
