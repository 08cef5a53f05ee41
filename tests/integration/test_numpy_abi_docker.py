"""examples/numpy-abi in the Docker builder: the axis wheels fetched on the host reach the
offline container as a local folder, and each wheel is built against its own numpy."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from relforge.builders.depwheels import cached_folders
from relforge.builders.images import ImageSpec, make_builder_image
from relforge.manifest import load_manifest
from relforge.matrix.expand import expand_cells
from relforge.matrix.load import load_matrix
from tests.conftest import Result
from tests.integration.dockerd import running_dockerd
from tests.integration.test_numpy_abi import numpy_env, numpy_matrix, requires_dist

Run = Callable[..., Result]
pytestmark = [pytest.mark.docker, pytest.mark.slow]


@pytest.fixture(scope="module")
def docker_host() -> Iterator[str]:
    with running_dockerd() as host, pytest.MonkeyPatch.context() as mp:
        mp.setenv("DOCKER_HOST", host)
        make_builder_image(ImageSpec())
        yield host


def test_numpy_axis_builds_in_containers(
    run: Run, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, docker_host: str
) -> None:
    import subprocess

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("DOCKER_HOST", docker_host)
    matrix = numpy_matrix(tmp_path)
    result = run(
        "build", str(matrix), "--release", "1.0", "--channel", "test", "--tag", "v1.0.0-rc1",
        "--builder", "docker", "--select", "python=3.11", "--out", "dist", "--format", "json",
    )  # fmt: skip
    assert result.code == 0, result.err + result.out
    cells = {c["cell"]: c for c in json.loads(result.out)["cells"]}
    assert {c: v["status"] for c, v in cells.items()} == {
        "wheel-linux-x86_64-py3.11-cpu-numpy1.26": "built",
        "wheel-linux-x86_64-py3.11-cpu-numpy2.x": "built",
    }
    manifest = load_manifest(tmp_path / "dist" / "relforge-manifest.json")
    axis_cells = {c.id: c for c in expand_cells(load_matrix(matrix), "1.0", channel="test")}
    for cell_id, entry in manifest.entries.items():
        assert entry.build["builder"] == "docker"
        major = "1" if cell_id.endswith("numpy1.26") else "2"
        wheel = tmp_path / "dist" / entry.file
        assert requires_dist(wheel) == list(axis_cells[cell_id].axis_requires)
        python = numpy_env(tmp_path / f"venv-{major}", cached_folders(axis_cells[cell_id]), "3.11")
        pip = [str(python), "-m", "pip", "--isolated", "--disable-pip-version-check"]
        subprocess.run([*pip, "install", "--quiet", "--no-index", str(wheel)], check=True)
        out = subprocess.run(
            [str(python), "-c", "import numpy_abi; print(numpy_abi.built_with())"],
            check=True,
            capture_output=True,
            text=True,
        ).stdout.strip()
        assert out.split(".")[0] == major  # compiled in the container against the axis numpy
