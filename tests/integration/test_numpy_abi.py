"""examples/numpy-abi end to end on the host: built against numpy 1.26 and 2.x (wheels from
PyPI), validated, published, promoted, and pip picks the right wheel for each numpy."""

from __future__ import annotations

import json
import subprocess
import zipfile
from collections.abc import Callable
from pathlib import Path

import pytest

from relforge.axiswheels import cached_folders
from relforge.interpreters import find_interpreter
from relforge.manifest import load_manifest
from relforge.matrix.expand import expand_cells
from relforge.matrix.load import load_matrix
from relforge.pipcommand import pip_for as relforge_pip_for
from tests.conftest import REPO, Result

Run = Callable[..., Result]
pytestmark = pytest.mark.slow

OLD = "wheel-linux-x86_64-py3.12-cpu-numpy1.26"
NEW = "wheel-linux-x86_64-py3.12-cpu-numpy2.x"


def numpy_matrix(folder: Path) -> Path:
    text = (REPO / "matrix" / "numpy-abi.yaml").read_text(encoding="utf-8")
    source = REPO / "examples" / "numpy-abi"
    text = text.replace("source: ../examples/numpy-abi", f"source: {source}")
    path = folder / "numpy-abi.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def requires_dist(wheel: Path) -> list[str]:
    with zipfile.ZipFile(wheel) as zf:
        name = next(n for n in zf.namelist() if n.endswith(".dist-info/METADATA"))
        text = zf.read(name).decode()
    return [
        line.split(": ", 1)[1] for line in text.splitlines() if line.startswith("Requires-Dist")
    ]


def pip_for(python: Path) -> list[str]:
    """Real pip (this environment's, as relforge runs it) installing into the venv of
    `python`: a venv made --without-pip skips ensurepip, seconds of CPU each."""
    return [*relforge_pip_for(python), "--isolated", "--disable-pip-version-check"]


def numpy_env(venv: Path, numpy_wheels: list[Path], python: str = "3.12") -> Path:
    """A venv holding one numpy, installed offline from the build's axis cache."""
    found = find_interpreter(python)
    assert found is not None
    subprocess.run([found.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    links = [a for folder in numpy_wheels for a in ("--find-links", str(folder))]
    pip = pip_for(venv / "bin" / "python")
    subprocess.run(
        [*pip, "install", "--quiet", "--no-compile", "--no-index", *links, "numpy"], check=True
    )
    return venv / "bin" / "python"


def test_numpy_axis_end_to_end(run: Run, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)  # the matrix's store is file://.relforge/store
    matrix = numpy_matrix(tmp_path)
    common = ("--release", "1.0", "--channel", "test")
    built = run(
        "build", str(matrix), *common, "--tag", "v1.0.0-rc1", "--builder", "host",
        "--select", "python=3.12", "--out", "dist", "--jobs", "2",
    )  # fmt: skip
    assert built.code == 0, built.err + built.out
    manifest = load_manifest(tmp_path / "dist" / "relforge-manifest.json")
    files = {cid: e.file for cid, e in manifest.entries.items()}
    assert files == {
        OLD: "numpy_abi-1.0.0+cpu.numpy1-cp312-cp312-manylinux_2_28_x86_64.whl",
        NEW: "numpy_abi-1.0.0+cpu.numpy2-cp312-cp312-manylinux_2_28_x86_64.whl",
    }
    assert requires_dist(tmp_path / "dist" / files[OLD]) == ["numpy>=1.26,<2"]
    assert requires_dist(tmp_path / "dist" / files[NEW]) == ["numpy>=2,<3"]

    again = run(
        "build", str(matrix), *common, "--tag", "v1.0.0-rc1", "--builder", "host",
        "--select", "python=3.12", "--out", "dist", "--format", "json",
    )  # fmt: skip
    assert {c["status"] for c in json.loads(again.out)["cells"]} == {"cached"}

    checked = run(
        "validate", str(matrix), *common, "--manifest", "dist/relforge-manifest.json",
        "--select", "python=3.12", "--runtime",
    )  # fmt: skip
    assert checked.code == 0, checked.out + checked.err

    # the python=3.12 cells of the matrix only: --partial puts 1.0.0 on the pages
    for args in (("--partial", "--execute"), ("--execute",)):  # the rerun is a no-op
        published = run(
            "publish", str(matrix), "--channel", "test",
            "--manifest", "dist/relforge-manifest.json", *args,
        )  # fmt: skip
        assert published.code == 0, published.err
    promoted = run(
        "promote", str(matrix), "--version", "1.0.0", "--from", "test", "--to", "release",
        "--partial", "--execute",
    )  # fmt: skip
    assert promoted.code == 0, promoted.err

    cells = {c.id: c for c in expand_cells(load_matrix(matrix), "1.0", channel="test")}
    store = tmp_path / ".relforge" / "store"
    for cell_id, label, numpy_major in ((OLD, "numpy1", "1"), (NEW, "numpy2", "2")):
        python = numpy_env(tmp_path / f"venv-{label}", cached_folders(cells[cell_id]))
        for channel in ("test/cpu", "cpu"):  # the test channel and, after promotion, release
            index = (store / "whl" / channel).as_uri() + "/"
            pip = pip_for(python)
            # only our index: pip must settle on the wheel the installed numpy satisfies
            subprocess.run(
                [*pip, "install", "--quiet", "--index-url", index, "numpy-abi"], check=True
            )
            probe = (
                "import numpy, numpy_abi; "
                "print(numpy.__version__, numpy_abi.__version__, numpy_abi.built_with(), "
                "numpy_abi.total([1, 2, 3.5]))"
            )
            out = subprocess.run(
                [str(python), "-c", probe], check=True, capture_output=True, text=True
            ).stdout.split()
            have_numpy, version, built_with, total = out
            assert have_numpy.split(".")[0] == numpy_major  # pip did not swap numpy
            assert version == f"1.0.0+cpu.{label}"
            assert built_with.split(".")[0] == numpy_major
            assert float(total) == 6.5
            subprocess.run([*pip, "uninstall", "--yes", "--quiet", "numpy-abi"], check=True)
