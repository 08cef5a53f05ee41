"""Docker builds against a real engine started by the test: the local builder image (debootstrap +
docker import, rootfs cached in the user cache), a cpu cell built in a container with no network,
and the errors for a missing image or engine."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import docker
import pytest

from relforge.builders.images import ImageSpec, make_builder_image
from relforge.interpreters import find_interpreter
from relforge.manifest import load_manifest
from tests.conftest import Result
from tests.integration.dockerd import running_dockerd
from tests.integration.example_project import example_matrix, installed_build_info

Run = Callable[..., Result]
pytestmark = [pytest.mark.docker, pytest.mark.slow]

PY311 = "wheel-linux-x86_64-py3.11-cpu"  # bookworm's python3 is 3.11
PY312 = "wheel-linux-x86_64-py3.12-cpu"


@pytest.fixture(scope="module")
def docker_host() -> Iterator[str]:
    """A private dockerd holding relforge/builder:bookworm."""
    with running_dockerd() as host, pytest.MonkeyPatch.context() as mp:
        mp.setenv("DOCKER_HOST", host)
        first = make_builder_image(ImageSpec())
        assert first.made
        again = make_builder_image(ImageSpec())  # a rerun is a no-op
        assert not again.made and again.id == first.id
        yield host


@pytest.fixture
def workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, docker_host: str) -> Path:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("DOCKER_HOST", docker_host)
    return tmp_path


def build(run: Run, matrix: Path, *args: str) -> tuple[Result, dict[str, Any]]:
    result = run(
        "build", str(matrix), "-r", "1.0", "--builder", "docker", "--format", "json", *args
    )
    data = json.loads(result.out) if result.out.strip() else {}
    return result, {c["cell"]: c for c in data.get("cells", [])}


def test_cpu_cell_builds_in_a_container_without_network(run: Run, workdir: Path) -> None:
    probe = (
        'echo "interfaces: $(ls /sys/class/net | tr "\\n" " ")"; '
        "python -c 'import socket; s = socket.socket(); s.settimeout(3); "
        'print("connect:", s.connect_ex(("151.101.0.223", 443)))\'; '
        "exec python -m pip wheel --no-deps --no-build-isolation --no-index "
        '--wheel-dir "$RELFORGE_OUTPUT_DIR" .'
    )
    matrix = example_matrix(
        workdir, {"    command: []": f"    command: [sh, -c, {json.dumps(probe)}]"}
    )
    result, cells = build(run, matrix, "--cell", PY311, "--cell", PY312)
    assert result.code == 0, result.err
    assert cells[PY311]["status"] == "built"
    assert cells[PY312]["status"] == "skipped"
    assert "no Python 3.12" in cells[PY312]["reason"]

    log = Path(cells[PY311]["log"]).read_text()
    assert "interfaces: lo \n" in log  # network_mode none: loopback only
    assert "connect: 101" in log  # ENETUNREACH
    assert "auditwheel" in log and "manylinux_2_28_x86_64" in log  # repaired in the container

    manifest = load_manifest(workdir / "dist" / "relforge-manifest.json")
    entry = manifest.entries[PY311]
    assert entry.file == "hello_native-1.0.0.dev0+cpu-cp311-cp311-manylinux_2_28_x86_64.whl"
    assert (
        entry.build["builder"] == "docker" and entry.build["image"] == "relforge/builder:bookworm"
    )
    assert entry.build["identity"]["image_id"].startswith("sha256:")
    assert list(manifest.entries) == [PY311]

    python = find_interpreter("3.11")
    assert python is not None
    info = installed_build_info(python.executable, workdir / "dist" / entry.file, workdir / "venv")
    assert (info["variant"], info["cuda"], info["cxx11_abi"]) == ("cpu", None, True)

    client = docker.from_env()
    assert client.containers.list(all=True) == []  # every container was removed

    again, cells = build(run, matrix, "--cell", PY311)
    assert again.code == 0 and cells[PY311]["status"] == "cached"


def test_missing_image_says_how_to_make_it(run: Run, workdir: Path) -> None:
    matrix = example_matrix(
        workdir, {"image: relforge/builder:bookworm": "image: relforge/builder:nope"}
    )
    result, _ = build(run, matrix, "--cell", PY311)
    assert result.code == 2
    assert "no image relforge/builder:nope" in result.err
    assert "relforge builder-image --name relforge/builder:nope" in result.err
    assert not (workdir / "dist").exists()


def test_builder_image_command_is_a_no_op_when_present(run: Run, workdir: Path) -> None:
    result = run("builder-image")
    assert result.code == 0, result.err
    assert "nothing to do" in result.out


def test_auto_takes_docker_where_the_engine_has_the_image(
    run: Run, workdir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """--builder auto: the engine's image for the cpu cell, the host for the cell whose image
    the engine lacks, and the host for every cell when no engine answers."""
    matrix = example_matrix(
        workdir,
        {
            "    command: []": "    command: [sh, -c, 'exit 3']",  # fail fast: only who built
            "            image: relforge/builder:bookworm\n            platform_tag": (
                "            image: relforge/builder:nope\n            platform_tag"
            ),
        },
    )
    cuda = "wheel-linux-x86_64-py3.11-cu130"
    args = ("build", str(matrix), "-r", "1.0", "--builder", "auto", "--format", "json")
    result = run(*args, "--cell", PY311, "--cell", cuda)
    assert result.code == 4, result.err
    builders = {c["cell"]: c["builder"] for c in json.loads(result.out)["cells"]}
    assert builders == {PY311: "docker", cuda: "host"}
    monkeypatch.setenv("DOCKER_HOST", f"unix://{workdir}/no-engine.sock")
    result = run(*args, "--cell", PY311)
    assert result.code == 4, result.err
    assert [c["builder"] for c in json.loads(result.out)["cells"]] == ["host"]
