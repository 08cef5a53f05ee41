"""Every JSON document the CLI prints for machines says its shape: an integer `schema_version`,
the first key.  The commands are found from the CLI itself (each `--format` offering `json`), so a
new one without a case here fails; each runs on the small worlds the other tests build."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import click
import pytest

from relforge.cli import cli
from relforge.git import Git
from relforge.release.apply import apply_plan
from relforge.release.cut import CutRequest, plan_cut
from relforge.release.versions import Line
from tests.conftest import EXAMPLE, PYTORCH, Result
from tests.integration.example_project import example_matrix
from tests.integration.test_upstream import EXT, NVIDIA, pins
from tests.integration.test_verify_local import release as promoted_release
from tests.promote_kit import build_wheel, matrix_text, release_wheels, write_manifest
from tests.releaseproject import make_project
from tests.upstream_index import LocalIndex, numpy_release, serve_index, torch_release

pytestmark = pytest.mark.slow

Run = Callable[..., Result]
Produce = Callable[[Run, Path], Result]


def json_commands() -> set[tuple[str, ...]]:
    """Each command of the CLI whose --format offers json."""
    found: set[tuple[str, ...]] = set()
    ctx = click.Context(cli)

    def walk(command: click.Command, path: tuple[str, ...]) -> None:
        if isinstance(command, click.Group):
            for name in command.list_commands(ctx):
                sub = command.get_command(ctx, name)
                assert sub is not None
                walk(sub, (*path, name))
            return
        for param in command.params:
            if isinstance(param.type, click.Choice) and "json" in param.type.choices:
                found.add(path)

    walk(cli, ())
    return found


def _matrix(tmp_path: Path) -> Path:
    path = tmp_path / "matrix.yaml"
    path.write_text(matrix_text(), encoding="utf-8")
    return path


def _cut(tmp_path: Path) -> Path:
    """A project whose release/2.9 is cut (as tests/integration/test_release_tag.py makes it)."""
    repos = make_project(tmp_path)
    g = Git(repos.clone)
    apply_plan(g, plan_cut(g, CutRequest(line=Line(2, 9), github_repo="acme/hello")))
    return repos.clone


def _build(run: Run, tmp_path: Path) -> Result:
    matrix = example_matrix(tmp_path, {"    command: []": "    command: [sh, -c, 'exit 3']"})
    cell = "wheel-linux-x86_64-py3.12-cpu"
    return run("build", str(matrix), "-r", "1.0", "--builder", "host", "--cell", cell)


def _release_cut(run: Run, tmp_path: Path) -> Result:
    clone = make_project(tmp_path).clone
    return run("release", "cut", "2.9", "--repo", str(clone), "--github-repo", "acme/hello")


def _release_tag(run: Run, tmp_path: Path) -> Result:
    return run("release", "tag", "2.9.0", "--rc", "--repo", str(_cut(tmp_path)))


def _release_patch(run: Run, tmp_path: Path) -> Result:
    clone = _cut(tmp_path)
    for kind in ("--rc", "--final"):
        assert run("release", "tag", "2.9.0", kind, "--repo", str(clone), "--execute").code == 0
    return run("release", "patch", "2.9.1", "--repo", str(clone))


def _release_status(run: Run, tmp_path: Path) -> Result:
    return run("release", "status", "2.9", "--repo", str(_cut(tmp_path)))


def _release_audit(run: Run, tmp_path: Path) -> Result:
    milestone = tmp_path / "milestone.yaml"
    milestone.write_text("title: 2.9.0\nitems:\n  - 11\n", encoding="utf-8")
    clone = _cut(tmp_path)
    return run("release", "audit", "2.9", "--repo", str(clone), "--milestone-file", str(milestone))


def _validate(run: Run, tmp_path: Path) -> Result:
    manifest = tmp_path / "work" / "relforge-manifest.json"
    write_manifest(manifest, release_wheels(tmp_path / "work"))
    matrix = str(_matrix(tmp_path))
    return run("validate", matrix, "-r", "1.0", "-c", "test", "--manifest", str(manifest))


def _wheel_inspect(run: Run, tmp_path: Path) -> Result:
    wheel = build_wheel(tmp_path, version="1.0.0+cpu", plat="manylinux_2_28_x86_64")
    return run("wheel", "inspect", str(wheel))


def _verify(run: Run, tmp_path: Path) -> Result:
    return run("verify", str(promoted_release(tmp_path, run)), "--channel", "release")


def _index(run: Run, tmp_path: Path) -> Result:
    return run("index", str(promoted_release(tmp_path, run)), "--channel", "test")


def _yank(run: Run, tmp_path: Path) -> Result:
    matrix = str(promoted_release(tmp_path, run))
    return run("yank", matrix, "--version", "1.0.0", "--reason", "broken ABI")


def _pypi_stage(run: Run, tmp_path: Path) -> Result:
    return run("pypi", "stage", str(promoted_release(tmp_path, run)), "--version", "1.0.0")


@pytest.fixture
def upstream() -> Iterator[LocalIndex]:
    """The upstream index of tests/integration/test_upstream.py."""
    local = LocalIndex()
    torch_release(local, "2.9.0")
    numpy_release(local, "2.3.0", ("311", "312", "313", "314"))
    for name, versions in NVIDIA.items():
        pins(local, name, *versions)
    with serve_index(local):
        yield local


CASES: dict[tuple[str, ...], Produce] = {
    ("matrix", "list"): lambda run, _: run("matrix", "list", str(EXAMPLE), "-r", "1.0"),
    ("matrix", "explain"): lambda run, _: run(
        "matrix", "explain", str(EXAMPLE), "wheel-linux-x86_64-py3.12-cpu", "-r", "1.0"
    ),
    ("matrix", "diff"): lambda run, _: run(
        "matrix", "diff", str(PYTORCH), "--from", "2.8", "--to", "2.9"
    ),
    ("matrix", "lint"): lambda run, _: run("matrix", "lint", str(EXAMPLE)),
    ("build",): _build,
    ("release", "cut"): _release_cut,
    ("release", "tag"): _release_tag,
    ("release", "patch"): _release_patch,
    ("release", "status"): _release_status,
    ("release", "audit"): _release_audit,
    ("validate",): _validate,
    ("wheel", "inspect"): _wheel_inspect,
    ("verify",): _verify,
    ("index",): _index,
    ("yank",): _yank,
    ("pypi", "stage"): _pypi_stage,
}
# Commands whose case needs a server fixture or a world of its own: another test reads their JSON
# (its schema_version included) against the contents of what they changed.
ELSEWHERE = {
    ("upstream", "check"): "test_upstream_check_keeps_its_first_version_key, below",
    ("upstream", "update"): "tests/integration/test_json_outcomes.py (matrix and pull request)",
    ("pypi", "upload"): "tests/integration/test_json_outcomes.py, against pypiserver",
    ("deps", "mirror"): "tests/integration/test_deps_closure.py, dry run and --execute",
}


def test_every_json_command_has_a_case() -> None:
    assert json_commands() == {*CASES, *ELSEWHERE}


def _versioned(result: Result) -> dict[str, Any]:
    assert result.out.strip(), result.err
    document = json.loads(result.out)
    assert isinstance(document, dict), document
    assert next(iter(document)) == "schema_version", list(document)
    version = document["schema_version"]
    assert type(version) is int and version >= 1
    return document


@pytest.mark.parametrize("command", sorted(CASES), ids=" ".join)
def test_json_output_carries_a_schema_version(
    command: tuple[str, ...], run: Run, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)

    def with_json(*args: str) -> Result:
        # `--format json` after the arguments each case gives; setup runs keep their format
        return run(*args, "--format", "json") if args[: len(command)] == command else run(*args)

    _versioned(CASES[command](with_json, tmp_path))


def test_upstream_check_keeps_its_first_version_key(
    run: Run, tmp_path: Path, upstream: LocalIndex
) -> None:
    matrix = tmp_path / "ext.yaml"
    matrix.write_text(EXT, encoding="utf-8")
    args = ("upstream", "check", str(matrix), "--index-url", upstream.url, "--format", "json")
    document = _versioned(run(*args))
    assert document["version"] == document["schema_version"] == 1


def test_an_unreadable_wheels_json_error_is_versioned(run: Run, tmp_path: Path) -> None:
    bad = tmp_path / "demo-1.0-py3-none-any.whl"
    bad.write_bytes(b"not a zip")
    result = run("wheel", "inspect", str(bad), "--format", "json")
    assert result.code != 0
    assert _versioned(result)["status"] == "error"


def test_formats_other_programs_define_are_left_as_they_are(run: Run, tmp_path: Path) -> None:
    # a GitHub job matrix: any key beside `include` would become an axis of the job
    github = run("matrix", "list", str(EXAMPLE), "-r", "1.0", "--format", "github")
    assert list(json.loads(github.out)) == ["include"]
