"""What a build installs and how it links, before anything is built: the static build
requirements less what an axis installs, the backend's own requirements as the hook script
reports them (run for real with a small in-tree backend), and the linker commands without the
interpreter's build-time rpath."""

from __future__ import annotations

import json
import subprocess
import sys
import sysconfig
import textwrap
from pathlib import Path

import pytest

from relforge.builders.control.failures import BuildFailure
from relforge.builders.inputs.buildreqs import (
    backend_requirements,
    linker_env,
    merged,
    static_requirements,
    write_control,
)
from relforge.builders.inputs.link_env import link_env as linker_variables
from relforge.builders.inputs.link_env import without_rpath
from relforge.builders.inputs.projectfile import (
    LEGACY_BACKEND,
    PEP518_DEFAULT,
    BuildSystem,
    build_system,
)
from relforge.matrix.cell import Cell
from relforge.matrix.expand import expand_cells
from relforge.matrix.load import load_matrix
from tests.conftest import EXAMPLE


def cell_with_axis() -> Cell:
    cell = next(c for c in expand_cells(load_matrix(EXAMPLE), "1.0") if c.package_type == "wheel")
    return cell.replace(
        axes={"torch": "2.13"},
        axis_install={"torch": ("torch==2.13.0", "Numpy>=2")},
        axis_requires=("torch==2.13.*",),
    )


def test_an_axis_decides_the_version_of_what_it_installs() -> None:
    """A real torch extension lists torch in [build-system].requires; the torch axis installs
    the one to build against, so the build does not fetch another (nor numpy, which it pins)."""
    system = BuildSystem(
        requires=("setuptools>=64", "torch", "numpy; python_version>'3'", "pybind11"),
        backend="setuptools.build_meta",
    )
    cell = cell_with_axis()
    assert static_requirements(system, cell) == ["setuptools>=64", "pybind11"]
    plain = cell.replace(axes={}, axis_install={}, axis_requires=())
    assert static_requirements(system, plain) == list(system.requires)


def test_the_build_system_with_pep_517_defaults(tmp_path: Path) -> None:
    assert build_system(tmp_path) == BuildSystem(
        requires=PEP518_DEFAULT, backend=LEGACY_BACKEND, backend_path=()
    )
    (tmp_path / "pyproject.toml").write_text(
        '[build-system]\nrequires = ["scikit-build-core>=0.11", "pybind11"]\n'
        'build-backend = "scikit_build_core.build"\nbackend-path = ["."]\n'
    )
    assert build_system(tmp_path) == BuildSystem(
        requires=("scikit-build-core>=0.11", "pybind11"),
        backend="scikit_build_core.build",
        backend_path=(".",),
    )
    (tmp_path / "pyproject.toml").write_text("[build-system]\nrequires = 'setuptools'\n")
    with pytest.raises(BuildFailure, match=r"requires is not a list of strings"):
        build_system(tmp_path)
    (tmp_path / "pyproject.toml").write_text("[build-system\n")
    with pytest.raises(BuildFailure, match=r"cannot read pyproject\.toml"):
        build_system(tmp_path)


BACKEND = textwrap.dedent("""\
    import os
    print("the backend prints to stdout too")

    def get_requires_for_build_wheel(config_settings=None):
        return os.environ["ASKED"].split("|")

    def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
        raise NotImplementedError
""")


def test_the_backend_is_asked_in_the_source_tree_and_only_unmet_requirements_come_back(
    tmp_path: Path,
) -> None:
    """pep517_requires.py runs with the build's interpreter: the in-tree backend (backend-path)
    is imported from the source, and what the environment already meets is not asked for."""
    src = tmp_path / "src"
    (src / "_build").mkdir(parents=True)
    (src / "_build" / "inhouse.py").write_text(BACKEND)
    (src / "pyproject.toml").write_text(
        '[build-system]\nrequires = []\nbuild-backend = "inhouse"\nbackend-path = ["_build"]\n'
    )
    control = tmp_path / "control"
    write_control(control, build_system(src))
    log = tmp_path / "build.log"
    asked = [
        "packaging>=1",  # met: relforge's own environment has it
        "cmake>=3.27.0; python_version >= '3'",
        "not-installed-anywhere",
        "pywin32; sys_platform == 'win32'",  # met: the marker is false here
        "packaging>=9999",
    ]
    env = {"ASKED": "|".join(asked), "PATH": "/usr/bin:/bin"}
    unmet = backend_requirements(
        Path(sys.executable), control, src, env=env, log=log, deadline=1e12
    )
    assert unmet == [
        "cmake>=3.27.0; python_version >= '3'",
        "not-installed-anywhere",
        "packaging>=9999",
    ]
    text = log.read_text()
    assert "the backend prints to stdout too" in text
    assert "build requirements the backend adds: packaging>=1, cmake>=3.27.0" in text


def test_a_backend_that_fails_fails_the_build(tmp_path: Path) -> None:
    src = tmp_path / "src"
    src.mkdir()
    (src / "pyproject.toml").write_text(
        '[build-system]\nrequires = []\nbuild-backend = "no_such_backend"\n'
    )
    control = tmp_path / "control"
    write_control(control, build_system(src))
    with pytest.raises(BuildFailure, match="asking the build backend for its requirements"):
        backend_requirements(
            Path(sys.executable), control, src, env={}, log=tmp_path / "l", deadline=1e12
        )
    assert "No module named 'no_such_backend'" in (tmp_path / "l").read_text()


@pytest.mark.parametrize(
    ("command", "fixed"),
    [
        (
            "gcc -shared -L/p/lib -Wl,-rpath,/p/lib -L/p/lib -Wl,-rpath,/p/lib",
            "gcc -shared -L/p/lib -L/p/lib",
        ),
        ("gcc -shared -Wl,-rpath=/p/lib -Wl,-O1", "gcc -shared -Wl,-O1"),
        ("gcc -shared -Wl,-O1,-rpath,/p/lib,--as-needed", "gcc -shared -Wl,-O1,--as-needed"),
        ("gcc -shared -Wl,-R/p/lib -Wl,-R,/q", "gcc -shared"),
        ("gcc -shared -Wl,-rpath,'$ORIGIN/../lib'", "gcc -shared '-Wl,-rpath,$ORIGIN/../lib'"),
        ("g++ -shared", "g++ -shared"),
    ],
)
def test_build_time_rpaths_leave_the_linker_command(command: str, fixed: str) -> None:
    assert without_rpath(command) == fixed


def test_the_linker_commands_of_this_interpreter() -> None:
    """The environment's own LDSHARED wins; a CC replaces the compiler as setuptools would."""
    assert linker_variables({"LDSHARED": "mine", "LDCXXSHARED": "mine too"}) == {}
    configured = sysconfig.get_config_var("LDSHARED") or ""
    found = linker_variables({})
    if "-rpath" in configured:
        assert "-rpath" not in found["LDSHARED"]
    else:
        assert "LDSHARED" not in found
    cc = sysconfig.get_config_var("CC") or ""
    if configured.startswith(cc):
        assert linker_variables({"CC": "my-cc"})["LDSHARED"].startswith("my-cc ")


@pytest.mark.parametrize(
    "python", sorted(Path.home().glob(".pyenv/versions/3.1[0-3].*/bin/python3"))
)
def test_pyenv_interpreters_link_without_their_prefix_in_the_runpath(
    tmp_path: Path, python: Path
) -> None:
    """The machine's pyenv CPythons are built with --enable-shared and an rpath into their
    prefix: what the host builder gets from link_env.py has none."""
    control = tmp_path / "control"
    write_control(control, None)
    found = linker_env(python, control, env={}, log=tmp_path / "log")
    prefix = str(python.parent.parent)
    assert f"-L{prefix}/lib" in found["LDSHARED"] and "rpath" not in found["LDSHARED"]
    shell = subprocess.run(
        [str(python), str(control / "link_env.py"), "--shell"],
        capture_output=True,
        text=True,
        check=True,
        env={},
    ).stdout
    assert shell == "".join(f"export {k}='{v}'\n" for k, v in found.items())
    assert json.loads(json.dumps(found)) == found


def test_requirements_merge_in_order_once() -> None:
    assert merged(["a", "b"], ["b", "c"], []) == ["a", "b", "c"]
