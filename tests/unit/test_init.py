"""`relforge init`: a starter matrix from pyproject.toml and version.txt, checked by the strict
loader, never written over an existing file, and one-paragraph errors for bad projects."""

from __future__ import annotations

import datetime
import os
import platform
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from packaging.specifiers import SpecifierSet

from relforge.init import Starter, StarterRequest, plan_starter, read_project
from relforge.init.machine import HostPlatform, find_nvcc
from relforge.init.starter import choose_pythons
from relforge.interpreters import find_interpreter
from relforge.matrix.expand import expand_cells
from relforge.matrix.load import load_matrix
from tests.conftest import Result
from tests.docwalk import commands

Run = Callable[..., Result]
DAY = datetime.date(2026, 11, 23)  # 3.10 past end of life (2026-10-31), 3.15 released


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "hello-ext"
    root.mkdir()
    monkeypatch.chdir(root)
    return root


def _pyproject(root: Path, body: str) -> None:
    (root / "pyproject.toml").write_text(body, encoding="utf-8")


def test_a_starter_from_pyproject_and_version_txt(project: Path, run: Run) -> None:
    _pyproject(project, '[project]\nname = "Hello_Ext"\nrequires-python = ">=3.11,<3.14"\n')
    (project / "version.txt").write_text("0.3.0a0\n")
    (project / "csrc").mkdir()
    (project / "csrc" / "kernel.cu").write_text("__global__ void k() {}\n")
    result = run("init")
    assert result.code == 0, result.err
    path = project / "matrix" / "hello-ext.yaml"
    assert "wrote matrix/hello-ext.yaml: release 0.3, 6 cells" in result.out
    assert "Python 3.11–3.13 from requires-python <3.14,>=3.11" in result.out
    assert "release 0.3 from version.txt (0.3.0a0)" in result.out
    nvcc = find_nvcc()
    variant = nvcc.variant if nvcc else "cu128"
    assert f"CUDA variant {variant} (CUDA " in result.out
    assert "the sources have CUDA code (csrc/kernel.cu)" in result.out
    commands = result.out.split("next:\n")[1].splitlines()
    assert commands == [
        "  relforge matrix lint --strict matrix/hello-ext.yaml",
        "  relforge build matrix/hello-ext.yaml --release 0.3",
        "  relforge validate matrix/hello-ext.yaml --manifest dist/relforge-manifest.json "
        "--runtime",
        "  relforge publish matrix/hello-ext.yaml --manifest dist/relforge-manifest.json --execute",
        "  relforge release cut 0.3 --execute",
        "  relforge release tag 0.3.0 --rc --execute",
    ]
    matrix = load_matrix(path)
    assert matrix.project.name == "Hello_Ext"
    assert matrix.project.build.source == ".."
    assert (path.parent / matrix.project.build.source).resolve() == project.resolve()
    release = matrix.release("0.3")
    assert [str(p) for p in release.python] == ["3.11", "3.12", "3.13"]
    assert release.requires_python == SpecifierSet(">=3.11,<3.14")
    assert {v.kind for v in release.accelerators.values()} == {"cpu", "cuda"}
    cells = {c.id for c in expand_cells(matrix, "0.3")}
    assert f"wheel-linux-x86_64-py3.13-{variant}" in cells and len(cells) == 6
    text = path.read_text()
    assert "docs/reference/matrix.md" in text and "build:" in text
    # the next commands work on what init wrote
    assert run("matrix", "list", "matrix/hello-ext.yaml", "--release", "0.3").code == 0
    assert run("matrix", "check", "matrix/hello-ext.yaml").code == 0
    assert run("matrix", "lint", "--strict", "matrix/hello-ext.yaml").code == 0


def test_an_existing_matrix_is_never_overwritten_without_force(project: Path, run: Run) -> None:
    _pyproject(project, '[project]\nname = "x"\n')
    mine = project / "matrix" / "x.yaml"
    mine.parent.mkdir()
    mine.write_text("# my own matrix\n")
    refused = run("init")
    assert refused.code == 5
    assert "matrix/x.yaml: exists; not overwriting it" in refused.err and "--force" in refused.err
    assert mine.read_text() == "# my own matrix\n"
    forced = run("init", "--force")
    assert forced.code == 0, forced.err
    load_matrix(mine)
    assert [p.name for p in mine.parent.iterdir()] == ["x.yaml"]  # no temporary left behind


def test_without_pyproject_the_name_comes_from_the_directory_or_name(
    project: Path, run: Run
) -> None:
    result = run("init")
    assert result.code == 0, result.err
    assert "name hello-ext from the directory name (no pyproject.toml here)" in result.out
    assert "release 0.1 assumed" in result.out
    named = run("init", "--name", "other", "--out", "m.yaml")
    assert named.code == 0, named.err
    assert load_matrix(project / "m.yaml").project.name == "other"
    assert load_matrix(project / "m.yaml").project.build.source == "."


@pytest.mark.parametrize("name", ["null", "true", "on", "123", "1.0", "no"])
def test_names_yaml_would_misread_stay_strings(project: Path, run: Run, name: str) -> None:
    result = run("init", "--name", name, "--out", "m.yaml")
    assert result.code == 0, result.err
    assert load_matrix(project / "m.yaml").project.name == name


def test_an_invalid_directory_name_asks_for_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, run: Run
) -> None:
    root = tmp_path / "my project"
    root.mkdir()
    monkeypatch.chdir(root)
    result = run("init")
    assert result.code == 2
    assert "--name: 'my project' (the directory name) is not a valid" in result.err
    assert not (root / "matrix").exists()


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ('[project\nname = "x"\n', "pyproject.toml:1:9: invalid TOML"),
        ('[project]\nname = "x"\nversion = \n', "pyproject.toml:3:11: invalid TOML"),
        ('[project]\nname = "x"\nrequires-python = "3.10+"\n', "pyproject.toml:3:1: "),
        ('[project]\nname = "x y"\n', "pyproject.toml:2:1: project.name: 'x y'"),
        ("[project]\nname = 3\n", "project.name: expected a string"),
        ('project = "x"\n', "[project] is not a table"),
        ('[project]\nname = "x"\nrequires-python = ">=4"\n', "pyproject.toml:3:1: "),
        ('[project]\nname = "x"\nversion = "one"\n', "project.version: 'one' is not a version"),
    ],
)
def test_a_bad_pyproject_is_a_config_error_with_its_place(
    project: Path, run: Run, body: str, expected: str
) -> None:
    _pyproject(project, body)
    result = run("init")
    assert result.code == 2, result.out + result.err
    assert expected in result.err
    assert "Traceback" not in result.err and "internal error" not in result.err
    assert not (project / "matrix").exists()


def test_a_bad_version_txt_is_named(project: Path, run: Run) -> None:
    (project / "version.txt").write_text("not a version\n")
    result = run("init")
    assert result.code == 2 and "version.txt:1:1: version.txt: 'not a version'" in result.err


def test_a_patch_version_sets_the_release_version(project: Path) -> None:
    (project / "version.txt").write_text("2.10.3\n")
    starter = plan_starter(
        StarterRequest(facts=read_project(Path()), path=Path("m.yaml"), root=Path(), today=DAY)
    )
    assert starter.release == "2.10"
    matrix = load_matrix("m.yaml", text=starter.text)
    assert str(matrix.release("2.10").full_version) == "2.10.3"


def test_pyproject_version_is_used_without_version_txt(project: Path) -> None:
    _pyproject(project, '[project]\nname = "x"\nversion = "1.2.0.dev0"\n')
    starter = plan_starter(
        StarterRequest(facts=read_project(Path()), path=Path("m.yaml"), root=Path(), today=DAY)
    )
    assert starter.release == "1.2"
    assert "release 1.2 from pyproject.toml (1.2.0.dev0)" in starter.notes


def test_a_bad_download_url_names_the_flag(project: Path, run: Run) -> None:
    result = run("init", "--download-url", "ftp://example.org")
    assert result.code == 2 and "--download-url: 'ftp://example.org'" in result.err
    assert not (project / "matrix").exists()
    good = run("init", "--download-url", "https://download.example.org")
    assert good.code == 0, good.err
    matrix = load_matrix(project / "matrix" / "hello-ext.yaml")
    assert matrix.project.download_url == "https://download.example.org"


def test_out_in_a_subdirectory_points_the_build_at_the_project_root(
    project: Path, run: Run
) -> None:
    result = run("init", "--out", "ci/deep/m.yaml")
    assert result.code == 0, result.err
    assert load_matrix(project / "ci/deep/m.yaml").project.build.source == "../.."
    blocked = run("init", "--out", "ci/deep/m.yaml/x.yaml")
    assert blocked.code == 2 and "--out" in blocked.err


def test_another_matrix_beside_it_is_mentioned(project: Path, run: Run) -> None:
    (project / "matrix").mkdir()
    (project / "matrix" / "old.yaml").write_text("x: 1\n")
    result = run("init")
    assert result.code == 0, result.err
    assert "release cut` then needs --matrix matrix/hello-ext.yaml" in result.out


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        (None, ["3.11", "3.12", "3.13", "3.14", "3.15"]),
        (">=3.10", ["3.11", "3.12", "3.13", "3.14", "3.15"]),
        ("~=3.12.1", ["3.12"]),  # >=3.12.1, ==3.12.*
        ("~=3.12", ["3.12", "3.13", "3.14", "3.15"]),
        (">=3.11,!=3.13.*", ["3.11", "3.12", "3.14", "3.15"]),
        ("==3.12.4", ["3.12"]),
        ("<3.10", ["3.6", "3.7", "3.8", "3.9"]),  # only end-of-life ones: kept, with a note
    ],
)
def test_python_versions_from_requires_python(spec: str | None, expected: list[str]) -> None:
    chosen, _why = choose_pythons(SpecifierSet(spec) if spec else None, DAY)
    assert chosen == expected


def test_python_versions_follow_the_date() -> None:
    chosen, _why = choose_pythons(None, datetime.date(2025, 1, 1))
    assert chosen == ["3.9", "3.10", "3.11", "3.12", "3.13"]  # 3.14 not out yet


@pytest.mark.parametrize(
    ("spec", "first"), [(">=3.12.1", "3.12"), ("~=3.12.1", "3.12"), ("==3.12.4", "3.12")]
)
def test_a_requires_python_that_excludes_x_y_0_still_makes_a_starter(
    project: Path, run: Run, spec: str, first: str
) -> None:
    """`>=3.12.1` admits CPython 3.12 (3.12.1 on); the matrix checks python X.Y against
    requires_python as X.Y.0, so the starter must not copy such a range verbatim (init failed
    with an error in a matrix file it never wrote)."""
    _pyproject(project, f'[project]\nname = "hello"\nrequires-python = "{spec}"\n')
    result = run("init")
    assert result.code == 0, result.err
    matrix = load_matrix(project / "matrix" / "hello.yaml")
    release = matrix.release("0.1")
    assert str(release.python[0]) == first
    assert f"requires-python {SpecifierSet(spec)}" in result.out
    assert "X.Y.0" in result.out  # the note says why requires_python is left out


HOST = HostPlatform(arch="x86_64", glibc=(2, 36), from_host=True)


def _starter_for(project: Path, **kwargs: Any) -> Starter:
    request = StarterRequest(
        facts=read_project(Path()), path=Path("m.yaml"), root=Path(), today=DAY, **kwargs
    )
    return plan_starter(request)


def test_the_platform_tag_is_the_hosts_glibc_or_the_images(project: Path) -> None:
    """manylinux_2_28 on a glibc 2.36 host was a tag the host cannot build."""
    here = _starter_for(project, host=HOST)
    platform = load_matrix("m.yaml", text=here.text).release("0.1").platforms["linux-x86_64"]
    assert platform.platform_tag == "manylinux_2_36_x86_64"
    assert any(n.startswith("platform tag manylinux_2_36_x86_64 from this host's glibc 2.36")
               for n in here.notes)  # fmt: skip
    arm = _starter_for(project, host=HostPlatform(arch="aarch64", glibc=(2, 39), from_host=True))
    on_arm = load_matrix("m.yaml", text=arm.text).release("0.1").platforms["linux-aarch64"]
    assert (on_arm.platform_tag, on_arm.build_runner) == (
        "manylinux_2_39_aarch64",
        "ubuntu-24.04-arm",
    )
    mac = _starter_for(project, host=HostPlatform(arch="x86_64", glibc=(2, 28), from_host=False))
    assert "platform_tag: manylinux_2_28_x86_64" in mac.text
    assert any("this host has no glibc" in n and "--builder docker" in n for n in mac.notes)


def test_the_real_hosts_platform_tag(project: Path, run: Run) -> None:
    libc = os.confstr("CS_GNU_LIBC_VERSION") or ""
    major, minor = libc.split()[1].split(".")[:2]
    assert run("init").code == 0
    text = (project / "matrix" / "hello-ext.yaml").read_text()
    assert f"platform_tag: manylinux_{major}_{minor}_{platform.machine()}" in text


def test_only_pythons_a_builder_has_the_rest_commented_with_why(project: Path) -> None:
    """The starter listed 3.14 and 3.15 with no builder for them: validate then failed
    RF-V100 for their cells."""
    here = {"3.12", "3.13"}
    starter = _starter_for(project, host=HOST, available=lambda p: p in here)
    matrix = load_matrix("m.yaml", text=starter.text)
    assert [str(p) for p in matrix.release("0.1").python] == ["3.12", "3.13"]
    assert '    # and ["3.11", "3.14", "3.15"] once a builder here has them' in starter.text
    assert any("Python 3.11, 3.14, 3.15 left out (as a comment)" in n for n in starter.notes)
    nothing = _starter_for(project, host=HOST, available=lambda p: False)
    assert [str(p) for p in load_matrix("m.yaml", text=nothing.text).release("0.1").python] == [
        "3.11", "3.12", "3.13", "3.14", "3.15",
    ]  # fmt: skip
    assert any("no builder here has Python" in n for n in nothing.notes)


def test_the_real_machines_pythons(project: Path) -> None:
    starter = plan_starter(
        StarterRequest(facts=read_project(Path()), path=Path("m.yaml"), root=Path(), today=DAY)
    )
    for python in load_matrix("m.yaml", text=starter.text).release("0.1").python:
        assert find_interpreter(str(python)) is not None, python


@pytest.mark.parametrize(
    ("path", "text", "cuda"),
    [
        ("src/k.cu", "__global__ void k() {}\n", True),
        ("include/k.cuh", "#pragma once\n", True),
        ("setup.py", "from torch.utils.cpp_extension import CUDAExtension\n", True),
        ("CMakeLists.txt", "project(x LANGUAGES CXX CUDA)\n", True),
        ("CMakeLists.txt", "enable_language(CUDA)\n", True),
        ("CMakeLists.txt", "project(x LANGUAGES C CXX)\n", False),
        ("src/x.c", "int cuda_count = 0;\n", False),
        ("build/k.cu", "__global__ void k() {}\n", False),  # a build tree is not the source
    ],
)
def test_cuda_only_when_the_sources_have_cuda(
    project: Path, path: str, text: str, cuda: bool
) -> None:
    (project / path).parent.mkdir(parents=True, exist_ok=True)
    (project / path).write_text(text)
    starter = _starter_for(project, host=HOST)
    matrix = load_matrix("m.yaml", text=starter.text)
    kinds = {v.kind for v in matrix.release("0.1").accelerators.values()}
    assert kinds == ({"cpu", "cuda"} if cuda else {"cpu"})
    assert ("linux-gpu" in starter.text) == cuda


def test_the_version_file_it_names_is_written_and_gitignore_gets_entries(
    project: Path, run: Run
) -> None:
    _pyproject(project, '[project]\nname = "x"\nversion = "0.0.1a0"\n')
    (project / ".gitignore").write_text("*.pyc\n/dist")  # no final newline; dist/ there
    result = run("init")
    assert result.code == 0, result.err
    assert (project / "version.txt").read_text() == "0.0.1a0\n"
    assert load_matrix(project / "matrix" / "x.yaml").project.version_file == "version.txt"
    assert (project / ".gitignore").read_text() == (
        "*.pyc\n/dist\n# written by relforge (local store, caches, logs; built wheels)\n"
        ".relforge/\n"
    )
    assert "wrote version.txt: 0.0.1a0 (from pyproject.toml)" in result.out
    assert "added to .gitignore: .relforge/" in result.out
    (project / "version.txt").write_text("0.0.2a0\n")
    again = run("init", "--force")
    assert again.code == 0, again.err
    assert (project / "version.txt").read_text() == "0.0.2a0\n"  # never replaced
    assert (project / ".gitignore").read_text().count(".relforge/") == 1
    assert "wrote version.txt" not in again.out
    assert ".gitignore" not in again.out


def test_without_any_version_the_file_gets_the_first_alpha(project: Path, run: Run) -> None:
    result = run("init")
    assert result.code == 0, result.err
    assert (project / "version.txt").read_text() == "0.1.0a0\n"
    assert (project / ".gitignore").read_text().endswith(".relforge/\ndist/\n")


REPO = Path(__file__).resolve().parents[2]


def test_the_docs_getting_started_runs_what_init_prints(project: Path, run: Run) -> None:
    """Each command `relforge init` prints next is one the README's Getting started runs (for
    its project hello-ext, release 0.1), in the same order; the quick start runs the same
    (tests/integration/test_docs_walk.py walks them)."""
    _pyproject(project, '[project]\nname = "hello-ext"\nversion = "0.1.0"\n')
    result = run("init")
    assert result.code == 0, result.err
    printed = [c.strip() for c in result.out.split("next:\n")[1].splitlines()]
    readme = commands(REPO / "README.md", REPO, "## Getting started")
    walked = [c.text.split("  #")[0].strip() for c in readme]
    assert list(dict.fromkeys(c for c in walked if c in printed)) == printed  # the RC: again
