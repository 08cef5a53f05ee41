"""`relforge init`: a starter matrix from pyproject.toml and version.txt, checked by the strict
loader, never written over an existing file, and one-paragraph errors for bad projects."""

from __future__ import annotations

import datetime
from collections.abc import Callable
from pathlib import Path

import pytest
from packaging.specifiers import SpecifierSet

from relforge.init import plan_starter, read_project
from relforge.init.starter import choose_pythons
from relforge.matrix.expand import expand_cells
from relforge.matrix.load import load_matrix
from tests.conftest import Result

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
    result = run("init")
    assert result.code == 0, result.err
    path = project / "matrix" / "hello-ext.yaml"
    assert "wrote matrix/hello-ext.yaml: release 0.3, 6 cells" in result.out
    assert "Python 3.11–3.13 from requires-python <3.14,>=3.11" in result.out
    assert "release 0.3 from version.txt (0.3.0a0)" in result.out
    commands = result.out.split("next:\n")[1].splitlines()
    assert commands == [
        "  relforge matrix list matrix/hello-ext.yaml --release 0.3",
        "  relforge workflows generate matrix/hello-ext.yaml --release 0.3 --out .github/workflows",
        "  relforge build matrix/hello-ext.yaml --release 0.3 --builder host",
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
    assert "wheel-linux-x86_64-py3.13-cu128" in cells and len(cells) == 6
    text = path.read_text()
    assert "README" in text and "build:" in text
    # the next commands work on what init wrote
    assert run("matrix", "list", "matrix/hello-ext.yaml", "--release", "0.3").code == 0
    assert run("matrix", "lint", "matrix/hello-ext.yaml").code == 0


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
    starter = plan_starter(read_project(Path()), Path("m.yaml"), root=Path(), today=DAY)
    assert starter.release == "2.10"
    matrix = load_matrix("m.yaml", text=starter.text)
    assert str(matrix.release("2.10").full_version) == "2.10.3"


def test_pyproject_version_is_used_without_version_txt(project: Path) -> None:
    _pyproject(project, '[project]\nname = "x"\nversion = "1.2.0.dev0"\n')
    starter = plan_starter(read_project(Path()), Path("m.yaml"), root=Path(), today=DAY)
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
