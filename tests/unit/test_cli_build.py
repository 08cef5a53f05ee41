"""`relforge build` refuses bad input before anything is built or written."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import EXAMPLE, Result

Run = Callable[..., Result]


@pytest.fixture
def workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty current directory with an empty source tree in it."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "src").mkdir()
    return tmp_path


def build(run: Run, *args: str) -> Result:
    return run("build", str(EXAMPLE), "--release", "1.0", "--source", "src", *args)


def nothing_written(root: Path) -> bool:
    return sorted(p.name for p in root.iterdir()) == ["src"]


def test_release_channel_is_refused(run: Run, workdir: Path) -> None:
    result = build(run, "--channel", "release")
    assert result.code == 5
    assert "promoted" in result.err and "Traceback" not in result.err
    assert nothing_written(workdir)


def test_unknown_cell_gets_suggestions(run: Run, workdir: Path) -> None:
    result = build(run, "--cell", "wheel-linux-x86_64-py3.12-cu13")
    assert result.code == 2
    assert "--cell" in result.err and "did you mean wheel-linux-x86_64-py3.12-cu130" in result.err
    assert nothing_written(workdir)


def test_cell_and_select_exclude_each_other(run: Run, workdir: Path) -> None:
    result = build(run, "--cell", "wheel-linux-x86_64-py3.12-cpu", "--select", "python=3.12")
    assert result.code == 2 and "not both" in result.err


def test_empty_selection_is_nothing_to_do(run: Run, workdir: Path) -> None:
    result = build(run, "--select", "accelerator=rocm")
    assert result.code == 3
    assert nothing_written(workdir)


def test_test_channel_needs_an_rc_tag(run: Run, workdir: Path) -> None:
    result = build(run, "--channel", "test")
    assert result.code == 2 and "vX.Y.Z-rcN" in result.err
    result = build(run, "--channel", "test", "--tag", "v2.0.0-rc1")
    assert result.code == 2 and "not a tag of release 1.0" in result.err
    assert nothing_written(workdir)


def test_bad_version_txt_names_the_file(run: Run, workdir: Path) -> None:
    (workdir / "src" / "version.txt").write_text("soon\n")
    result = build(run)
    assert result.code == 2 and "version.txt:1:1" in result.err


def test_manifest_of_another_channel_is_not_merged(run: Run, workdir: Path) -> None:
    out = workdir / "dist"
    out.mkdir()
    manifest = {
        "schema_version": 1,
        "project": "hello-native",
        "release": "1.0",
        "channel": "nightly",
        "entries": {},
    }
    (out / "relforge-manifest.json").write_text(json.dumps(manifest))
    result = build(run, "--channel", "dev")
    assert result.code == 2 and "nightly channel" in result.err and "--out" in result.err
    assert json.loads((out / "relforge-manifest.json").read_text()) == manifest
    assert not (workdir / ".relforge").exists()


def test_unreachable_docker_engine_says_how_to_start_it(
    run: Run, workdir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DOCKER_HOST", f"unix://{workdir}/no-such-docker.sock")
    result = build(run, "--builder", "docker", "--select", "python=3.12")
    assert result.code == 2
    assert "cannot reach the Docker engine" in result.err
    assert "dockerd" in result.err and "--builder host" in result.err
    assert "Traceback" not in result.err
    assert nothing_written(workdir)


def test_missing_source_tree(run: Run, workdir: Path) -> None:
    result = run("build", str(EXAMPLE), "--release", "1.0", "--source", "nope")
    assert result.code == 2 and "--source" in result.err


@pytest.mark.parametrize("where", ["a-file/dist", "/proc/relforge-dist"])
def test_an_output_folder_that_cannot_be_made_is_a_config_error(
    run: Run, workdir: Path, where: str
) -> None:
    (workdir / "a-file").write_text("not a folder")
    result = build(run, "--builder", "host", "--select", "python=3.12", "--out", where)
    assert result.code == 2, result.err
    assert "--out: cannot write to" in result.err and "internal error" not in result.err
    assert not list((workdir / ".relforge").glob("logs/*.log"))
