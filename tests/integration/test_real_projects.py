"""Small copies of public native projects of four kinds, each taken from `relforge init` to its
wheel installed from the channel's index on the host builder: no build command of relforge's,
only the matrix edits the README documents (tests/realprojects.py).  Each one failed before:
torch's libraries could not be located by auditwheel, scikit-build-core's dynamic cmake was never
installed, every extension carried the interpreter's RUNPATH (RF-V043), and the wheels kept
the project's own version.  The Docker builder's cases are in test_build_docker.py."""

from __future__ import annotations

import dataclasses
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from relforge.wheelformat import metadata_headers
from tests.adoption import SELECT, adopt, check_adoption
from tests.conftest import Result
from tests.realprojects import KINDS, NUMPY_NORM, VERSIONEER, write_project

Run = Callable[..., Result]
pytestmark = pytest.mark.slow


def test_a_torch_extension_builds_against_torch_from_an_axis(
    torch_wheel: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, run: Run
) -> None:
    """auditwheel leaves torch's libraries out (the cell requires torch through its axis), and
    RF-V041 accepts them as torch's: one idea of "provided by a dependency"."""
    kind = KINDS["torch"]
    log = check_adoption(kind, tmp_path, run, monkeypatch, "host")
    assert "--exclude libc10.so" in log and "Excluding libc10.so" in log
    assert "relforge: the wheel said 0.4.0: renamed to" in log  # setup.py's own version
    wheel = next((tmp_path / kind.name / "dist").glob("*.whl"))
    requires = metadata_headers(wheel).get_all("Requires-Dist")
    assert requires == ["torch", "torch>=2.13,<2.14"]  # its own, and its axis's pin


def test_scikit_build_core_gets_the_cmake_it_asks_for(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, run: Run
) -> None:
    """CMakeLists.txt wants CMake 3.27, the machine has 3.25: get_requires_for_build_wheel asks
    for cmake>=3.27, which `pip wheel .` installs and relforge now does too."""
    log = check_adoption(KINDS["skbuild"], tmp_path, run, monkeypatch, "host")
    assert "build requirements the backend adds: cmake>=3.27 (not installed: cmake>=3.27)" in log
    assert "relforge: the wheel said 0.2.0: renamed to" in log


def test_setuptools_with_pybind11(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, run: Run
) -> None:
    log = check_adoption(KINDS["pybind"], tmp_path, run, monkeypatch, "host")
    assert "relforge: the wheel said 0.3.0: renamed to" in log


def test_a_numpy_extension_versioned_by_setuptools_scm(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, run: Run
) -> None:
    """No .git in the build's copy: setuptools-scm gets the version from relforge's pretend
    variable, so the wheel is not renamed and __version__ agrees (RF-R005 passes)."""
    log = check_adoption(KINDS["numpy"], tmp_path, run, monkeypatch, "host")
    assert "renamed to" not in log


def test_versioneer_reads_the_version_from_the_source_folders_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, run: Run
) -> None:
    """versioneer (no knob but `parentdir_prefix`): the build's copy is named
    `vsn-ext-<version>`, and git in the build does not see the project's own repository (which
    has a commit but no tag, so `git describe` would give 0+untagged…): the wheel and
    `__version__` carry the cell's version, with no rename."""
    root = write_project(VERSIONEER, tmp_path)
    subprocess.run(["git", "init", "-q", "-b", "main"], cwd=root, check=True)
    subprocess.run(["git", "add", "-A"], cwd=root, check=True)
    subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@e", "commit", "-qm", "start"],
        cwd=root,
        check=True,
    )
    log = check_adoption(VERSIONEER, tmp_path, run, monkeypatch, "host")
    assert "renamed to" not in log


def test_a_cython_module_versioned_by_an_attr(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, run: Run
) -> None:
    """Cython in [build-system].requires, the version from `attr = "cyfib.__version__"` (init
    reads it from the source without importing the package)."""
    log = check_adoption(KINDS["cython"], tmp_path, run, monkeypatch, "host")
    assert "relforge: the wheel said 0.5.0: renamed to" in log


def test_a_limited_api_extension_is_one_abi3_wheel_from_init(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, run: Run
) -> None:
    """setup.cfg's `py_limited_api = cp310`: init writes `abi3: "3.10"`, and the one cell's
    wheel is cp310-abi3, installed and imported with Python 3.11."""
    kind = KINDS["limited"]
    check_adoption(kind, tmp_path, run, monkeypatch, "host")
    [wheel] = (tmp_path / kind.name / "dist").glob("*.whl")
    assert "-cp310-abi3-" in wheel.name


def test_a_runpath_the_build_adds_fails_the_cell_not_validation(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, run: Run
) -> None:
    """A build that links with its own absolute rpath is not "built": the cell fails with
    RF-V043's finding, and nothing reaches the manifest."""
    leaky = {
        **NUMPY_NORM,
        "setup.py": NUMPY_NORM["setup.py"].replace(
            "include_dirs=[numpy.get_include()],",
            'include_dirs=[numpy.get_include()], extra_link_args=["-Wl,-rpath,/opt/leak"],',
        ),
    }
    kind = dataclasses.replace(KINDS["numpy"], files=leaky)
    root = write_project(kind, tmp_path)
    monkeypatch.chdir(root)
    subprocess.run(["git", "init", "-q", "-b", "main"], cwd=root, check=True)
    assert run("init").code == 0  # the new user's first steps (tests/adoption.py), then one build
    [matrix] = (root / "matrix").glob("*.yaml")
    adopt(matrix, kind)
    built = run("build", *_build_args(matrix), "--format", "json")
    assert built.code == 4, built.err
    log = next((root / ".relforge" / "logs").glob("*.log")).read_text()
    assert "auditwheel repair" in log
    assert "RUNPATH '/opt/leak'" in built.out and "(RF-V043)" in built.out
    assert not (root / "dist" / "relforge-manifest.json").exists()


def _build_args(matrix: Path) -> list[str]:
    """The build init_to_installed runs (tests/adoption.py)."""
    return [str(matrix), "--release", "0.1", "--channel", "nightly", "--builder", "host", *SELECT]
