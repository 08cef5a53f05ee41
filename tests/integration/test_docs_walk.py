"""The getting-started walks, run as written (tests/docwalk.py): README's Getting started (the
same commands as docs/guide/quick-start.md's, which the test holds equal) on a fresh C
extension project, and docs/cuda-extension.md on a copy of examples/hello-native, each from
`relforge init` to an installed release candidate — the CUDA walk on to PyPI (pypiserver).
A command that no longer works as written fails here, naming the page and its line; the
commands `relforge init` prints are the docs' own."""

from __future__ import annotations

import re
import shutil
import subprocess
import textwrap
from pathlib import Path

import pytest

from tests.conftest import REPO
from tests.docwalk import Walk, commands
from tests.integration.conftest import PyPIServer

pytestmark = pytest.mark.slow

README = REPO / "README.md"
QUICK_START = REPO / "docs" / "guide" / "quick-start.md"
CUDA_WALK = REPO / "docs" / "cuda-extension.md"

HELLO_EXT = {
    "pyproject.toml": """
        [build-system]
        requires = ["setuptools>=64"]
        build-backend = "setuptools.build_meta"

        [project]
        name = "hello-ext"
        version = "0.1.0"
        description = "A C extension: the README's getting-started project"
        requires-python = ">=3.11"

        [tool.setuptools]
        packages = ["hello_ext"]
        ext-modules = [{name = "hello_ext._core", sources = ["src/core.c"]}]
    """,
    "hello_ext/__init__.py": """
        from hello_ext._core import add

        __all__ = ["add"]
    """,
    "src/core.c": """
        #define PY_SSIZE_T_CLEAN
        #include <Python.h>

        static PyObject *add(PyObject *self, PyObject *args) {
            long a, b;
            if (!PyArg_ParseTuple(args, "ll", &a, &b)) return NULL;
            return PyLong_FromLong(a + b);
        }

        static PyMethodDef methods[] = {{"add", add, METH_VARARGS, "a + b"}, {NULL, NULL, 0, NULL}};
        static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_core", NULL, -1, methods};
        PyMODINIT_FUNC PyInit__core(void) { return PyModule_Create(&module); }
    """,
}


def git(cwd: Path, *args: str) -> str:
    done = subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True)
    return done.stdout.strip()


def new_repository(project: Path) -> None:
    """`project` as a git repository whose `origin` (a bare repository beside it) holds main."""
    origin = project.parent / f"{project.name}.git"
    git(project.parent, "init", "-q", "--bare", "-b", "main", str(origin))
    git(project, "init", "-q", "-b", "main")
    for key, value in (("user.name", "Rel Eng"), ("user.email", "releng@example.org")):
        git(project, "config", key, value)
    git(project, "add", "-A")
    git(project, "commit", "-q", "-m", "the project, before relforge")
    git(project, "remote", "add", "origin", str(origin))
    git(project, "push", "-q", "-u", "origin", "main")


def test_the_readme_and_the_quick_start_walk_the_same_commands() -> None:
    readme = [c.text for c in commands(README, REPO, "## Getting started")]
    quick = [c.text for c in commands(QUICK_START, REPO, "## Your own project")]
    assert readme and readme == quick


def test_the_readme_walk_from_init_to_an_installed_release_candidate(tmp_path: Path) -> None:
    project = tmp_path / "hello-ext"
    for name, text in HELLO_EXT.items():
        (project / name).parent.mkdir(parents=True, exist_ok=True)
        (project / name).write_text(textwrap.dedent(text).lstrip(), encoding="utf-8")
    new_repository(project)
    walk = Walk.start(tmp_path)
    for command in commands(README, REPO, "## Getting started"):
        walk.run(command)
    assert git(project, "describe", "--tags") == "v0.1.0-rc1"
    installed = list((tmp_path / "try").glob("lib/python*/site-packages/hello_ext-*.dist-info"))
    assert [p.name for p in installed] == ["hello_ext-0.1.0+cpu.dist-info"]
    assert walk.transcript[-1].splitlines()[1] == "42"
    transcript = "\n".join(walk.transcript)
    assert "Traceback" not in transcript


def test_the_cuda_extension_walk_from_init_to_pypi(tmp_path: Path, pypiserver: PyPIServer) -> None:
    if shutil.which("nvcc") is None and not Path("/usr/local/cuda-13.0/bin/nvcc").is_file():
        pytest.skip("no CUDA toolkit on this machine: the walk's CUDA cells would be skipped")
    project = tmp_path / "hello-native"
    shutil.copytree(
        REPO / "examples" / "hello-native",
        project,
        ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__"),
    )
    new_repository(project)
    walk = Walk.start(
        tmp_path,
        TWINE_REPOSITORY_URL=pypiserver.url,
        TWINE_USERNAME=pypiserver.username,
        TWINE_PASSWORD=pypiserver.password,
    )
    for command in commands(CUDA_WALK, REPO):
        walk.run(command)
    uploaded = sorted(p.name for p in pypiserver.packages.iterdir())
    assert uploaded and all(re.match(r"hello_native-1\.0\.0-", name) for name in uploaded)
    installed = list((tmp_path / "try").glob("lib/python*/site-packages/hello_native-*"))
    assert [p.name for p in installed] == ["hello_native-1.0.0+cu130.dist-info"]
    transcript = "\n".join(walk.transcript)
    rc_build = next(
        t for t in walk.transcript if t.startswith("$ relforge build") and "select" not in t
    )
    assert "skipped" not in rc_build and "failed" not in rc_build, rc_build
    assert rc_build.count("+cu130-") == rc_build.count("+cpu-") >= 3, rc_build
    assert "Traceback" not in transcript
