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


def test_the_channel_defaults_to_the_matrixs(run: Run, workdir: Path) -> None:
    """No --channel: the matrix's channels.default (nightly), not a local scheme."""
    result = build(run, "--cell", "wheel-linux-x86_64-py3.12-cpu", "--builder", "host")
    assert "channel: nightly (version base 1.0.0" in result.err


def test_a_manifest_whose_validated_entries_cannot_be_kept_is_refused(
    run: Run, workdir: Path
) -> None:
    """Another channel's manifest is replaced, but one holding validated entries is kept as
    relforge-manifest.<release>-<channel>.json; when that name is taken, nothing is built."""
    out = workdir / "dist"
    out.mkdir()
    entry = {
        "cell_id": "wheel-linux-x86_64-py3.12-cpu",
        "file": "x.whl",
        "size": 1,
        "sha256": "ab" * 32,
        "version": "1.0.0.dev20260101+cpu",
        "package_type": "wheel",
        "variant": "cpu",
        "upload_subfolder": "cpu",
        "verdicts": [{"check": "RF-V010", "status": "pass", "message": ""}],
    }
    manifest = {
        "schema_version": 1,
        "project": "hello-native",
        "release": "1.0",
        "channel": "nightly",
        "entries": {entry["cell_id"]: entry},
    }
    (out / "relforge-manifest.json").write_text(json.dumps(manifest))
    (out / "relforge-manifest.1.0-nightly.json").write_text("{}")
    result = build(run, "--channel", "dev")
    assert result.code == 5, result.err
    assert "1 validated entries" in result.err and "--out" in result.err
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
