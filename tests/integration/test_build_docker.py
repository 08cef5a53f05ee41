"""Docker builds against a real engine started by the test: the local builder image (debootstrap +
docker import, rootfs cached in the user cache), the example's cells, examples/numpy-abi's
axis cells and copies of four kinds of public projects (tests/realprojects.py: torch extension,
scikit-build-core, setuptools + pybind11, numpy) built in containers with no network, and the
errors for a missing image or engine.  (One module: the image is built once for all of them.)"""

from __future__ import annotations

import json
import subprocess
import zipfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import docker
import pytest

from relforge.axiswheels import cached_folders
from relforge.builders.backends import container
from relforge.interpreters import find_interpreter
from relforge.manifest import load_manifest
from relforge.matrix.expand import expand_cells
from relforge.matrix.load import load_matrix
from tests.adoption import check_adoption
from tests.conftest import Result
from tests.integration.builderimage import PYTHONS, builder_image
from tests.integration.dockerd import running_dockerd
from tests.integration.example_project import example_matrix, installed_build_info
from tests.integration.test_numpy_abi import (
    numpy_env,
    numpy_matrix,
    pip_for,
    requires_dist,
)
from tests.realprojects import KINDS

Run = Callable[..., Result]
pytestmark = [pytest.mark.docker, pytest.mark.slow]

PY311 = "wheel-linux-x86_64-py3.11-cpu"
ARCHIVE = "libtorch-linux-x86_64-cpu-shared-with-deps-release"
PY312 = "wheel-linux-x86_64-py3.12-cpu"


@pytest.fixture(scope="module")
def docker_host(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[str]:
    """A private dockerd holding relforge/builder:bookworm: the Debian base plus the host's
    CPython 3.10–3.13 under /opt/python and CUDA 13.0, made here (and what making it proves
    asserted) or loaded from the session's copy (tests/integration/builderimage.py)."""
    with running_dockerd() as host, pytest.MonkeyPatch.context() as mp:
        mp.setenv("DOCKER_HOST", host)
        builder_image(request, tmp_path_factory, host)
        yield host


def test_the_image_holds_working_interpreters_at_manylinux_paths(docker_host: str) -> None:
    client = docker.DockerClient(base_url=docker_host)
    for minor in PYTHONS:
        tag = "cp" + minor.replace(".", "")
        out = client.containers.run(
            "relforge/builder:bookworm",
            [
                f"/opt/python/{tag}-{tag}/bin/python",
                "-c",
                "import sys, venv, ssl, sqlite3, setuptools, pip; print(sys.version_info[:2])",
            ],
            network_mode="none",
            remove=True,
        )
        assert out.decode().strip() == str(tuple(int(n) for n in minor.split(".")))
        # its build configuration names its own prefix and no rpath of the host's (RF-V043)
        config = client.containers.run(
            "relforge/builder:bookworm",
            [
                f"/opt/python/{tag}-{tag}/bin/python",
                "-c",
                "import sysconfig as s; print(s.get_config_var('LDSHARED')); "
                "print(s.get_config_var('LIBDIR'))",
            ],
            network_mode="none",
            remove=True,
        ).decode()
        assert "rpath" not in config and "/root/.pyenv" not in config, config
        assert "/opt/_internal/cpython-" in config
    labels = client.images.get("relforge/builder:bookworm").labels
    assert labels["org.relforge.pythons"] == "3.10 3.11 3.12 3.13"
    assert labels["org.relforge.cuda"] == "13.0"


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


def test_all_cells_build_in_containers_without_network(run: Run, workdir: Path) -> None:
    """The example's 8 wheel cells and its native archive cell, each in a container."""
    probe = (
        'echo "interfaces: $(ls /sys/class/net | tr "\\n" " ")"; '
        "python3 -c 'import socket; s = socket.socket(); s.settimeout(3); "
        'print("connect:", s.connect_ex(("151.101.0.223", 443)))\'; '
    )
    pip_wheel = (
        "exec python -m pip wheel --no-deps --no-build-isolation --no-index "
        '--wheel-dir "$RELFORGE_OUTPUT_DIR" .'
    )
    zip_it = "exec python3 build_archive.py"
    matrix = example_matrix(
        workdir,
        {
            "    command: []": f"    command: [sh, -c, {json.dumps(probe + pip_wheel)}]",
            "    archive_command: [python3, build_archive.py]": (
                f"    archive_command: [sh, -c, {json.dumps(probe + zip_it)}]"
            ),
        },
    )
    result, cells = build(run, matrix, "--channel", "dev", "--jobs", "2")
    assert result.code == 0, result.err
    assert len(cells) == 9
    assert {c["status"] for c in cells.values()} == {"built"}, cells
    assert {c["builder"] for c in cells.values()} == {"docker"}

    for cell_id, cell in cells.items():
        log = Path(cell["log"]).read_text()
        assert "interfaces: lo \n" in log  # network_mode none: loopback only
        assert "connect: 101" in log  # ENETUNREACH
        if cell_id != ARCHIVE:
            assert "auditwheel" in log  # repaired in the container

    archive = load_manifest(workdir / "dist" / "relforge-manifest.json").entries[ARCHIVE]
    assert archive.file == "hello-native-linux-x86_64-shared-with-deps-release-1.0.0.dev0+cpu.zip"
    assert archive.build["builder"] == "docker"
    with zipfile.ZipFile(workdir / "dist" / archive.file) as zf:
        assert sorted(zf.namelist()) == [
            "hello-native/build-version",
            "hello-native/include/hello_native/core.h",
            "hello-native/lib/libhello_native.so",
        ]
        assert zf.read("hello-native/build-version").decode().strip() == archive.version
        assert zf.read("hello-native/lib/libhello_native.so")[:4] == b"\x7fELF"

    manifest = load_manifest(workdir / "dist" / "relforge-manifest.json")
    assert sorted(manifest.entries) == sorted(cells)
    entry = manifest.entries[PY311]
    assert entry.file == "hello_native-1.0.0.dev0+cpu-cp311-cp311-manylinux_2_28_x86_64.whl"
    assert (
        entry.build["builder"] == "docker" and entry.build["image"] == "relforge/builder:bookworm"
    )
    assert entry.build["identity"]["image_id"].startswith("sha256:")
    cuda_entry = manifest.entries["wheel-linux-x86_64-py3.12-cu130"]
    assert cuda_entry.file.endswith("-cp312-cp312-manylinux_2_34_x86_64.whl")

    for cell_id, cuda in ((PY311, None), ("wheel-linux-x86_64-py3.12-cu130", "13.0")):
        entry = manifest.entries[cell_id]
        python = find_interpreter(entry.python or "")
        assert python is not None
        wheel = workdir / "dist" / entry.file
        info = installed_build_info(python.executable, wheel, workdir / f"venv-{cell_id}")
        assert (info["variant"], info["cuda"], info["cxx11_abi"]) == (entry.variant, cuda, True)
        assert info["dot"] == 11.0

    client = docker.from_env()
    assert client.containers.list(all=True) == []  # every container was removed

    again, cells = build(run, matrix, "--channel", "dev", "--jobs", "2")
    assert again.code == 0 and {c["status"] for c in cells.values()} == {"cached"}


def test_a_cell_the_image_lacks_is_skipped_with_the_reason(run: Run, workdir: Path) -> None:
    """Python 3.14 is not in the image: the labels say so before any container starts; the
    Debian base (no labels) is tried and in_container.sh says what it lacks."""
    matrix = example_matrix(workdir, {'python: ["3.10",': 'python: ["3.14", "3.10",'})
    result, cells = build(run, matrix, "--cell", "wheel-linux-x86_64-py3.14-cpu")
    assert result.code == 3, result.err
    reason = cells["wheel-linux-x86_64-py3.14-cpu"]["reason"]
    assert reason == (
        "the image relforge/builder:bookworm has Python 3.10 3.11 3.12 3.13, not 3.14"
    )
    base = example_matrix(
        workdir, {"image: relforge/builder:bookworm": "image: relforge/builder-base:bookworm"}
    )
    result, cells = build(run, base, "--cell", PY312)
    assert result.code == 3, result.err
    assert "no Python 3.12" in cells[PY312]["reason"]


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


def test_auto_says_for_each_cell_why_it_chose_docker_or_the_host(
    run: Run, workdir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """--builder auto: Docker where the engine's image fits the cell, the host where the image
    is missing or lacks the cell's Python, and the host for every cell when no engine answers;
    each choice with its reason (printed and in the JSON), never a silent fallback."""
    matrix = example_matrix(
        workdir,
        {
            "    command: []": "    command: [sh, -c, 'exit 3']",  # fail fast: only who built
            "            image: relforge/builder:bookworm\n            platform_tag": (
                "            image: relforge/builder:nope\n            platform_tag"
            ),
            'python: ["3.10",': 'python: ["3.14", "3.10",',
        },
    )
    cuda = "wheel-linux-x86_64-py3.11-cu130"
    py314 = "wheel-linux-x86_64-py3.14-cpu"
    args = ("build", str(matrix), "-r", "1.0", "--builder", "auto", "--format", "json")
    result = run(*args, "--cell", PY311, "--cell", cuda, "--cell", py314)
    assert result.code == 4, result.err
    cells = {c["cell"]: c for c in json.loads(result.out)["cells"]}
    assert {k: c["builder"] for k, c in cells.items()} == {
        PY311: "docker",
        cuda: "host",
        py314: "host",
    }
    reasons = {k: c["builder_reason"] for k, c in cells.items()}
    assert reasons[PY311] == "the engine has relforge/builder:bookworm and it fits the cell"
    assert reasons[cuda] == "not Docker: the Docker engine has no image relforge/builder:nope"
    assert reasons[py314] == (
        "not Docker: the image relforge/builder:bookworm has Python 3.10 3.11 3.12 3.13, not "
        "3.14; the host cannot either: no Python 3.14 on the host (looked on PATH, in pyenv "
        "and with uv)"
    )
    assert cells[py314]["status"] == "skipped"
    for cell_id, why in reasons.items():
        assert f"{cell_id} → {cells[cell_id]['builder']}: {why}" in result.err
    monkeypatch.setenv("DOCKER_HOST", f"unix://{workdir}/no-engine.sock")
    result = run(*args, "--cell", PY311)
    assert result.code == 4, result.err
    [only] = json.loads(result.out)["cells"]
    assert only["builder"] == "host"
    assert only["builder_reason"] == (
        f"not Docker: no Docker engine answers at unix://{workdir}/no-engine.sock"
    )


def test_numpy_axis_builds_in_containers(run: Run, workdir: Path) -> None:
    """examples/numpy-abi: the axis wheels fetched on the host reach the offline container as a
    local folder, and each wheel is built against its own numpy."""
    tmp_path = workdir
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
        pip = pip_for(python)
        subprocess.run([*pip, "install", "--quiet", "--no-index", str(wheel)], check=True)
        out = subprocess.run(
            [str(python), "-c", "import numpy_abi; print(numpy_abi.built_with())"],
            check=True,
            capture_output=True,
            text=True,
        ).stdout.strip()
        assert out.split(".")[0] == major  # compiled in the container against the axis numpy


@pytest.mark.parametrize("name", ["torch", "skbuild", "pybind", "numpy"])
def test_real_projects_build_offline_in_containers(
    name: str,
    run: Run,
    workdir: Path,
    monkeypatch: pytest.MonkeyPatch,
    request: pytest.FixtureRequest,
) -> None:
    """From `relforge init` to the installed wheel, built in the container without network:
    the build requirements arrive as wheels fetched on the host, and what the backend asks for
    on top makes the host fetch it and start the container once more (forced here: nothing
    remembered from an earlier build)."""
    if name == "torch":
        request.getfixturevalue("torch_wheel")
    monkeypatch.setattr(container, "remembered", lambda key: [])
    kind = KINDS[name]
    log = check_adoption(
        kind, workdir, run, monkeypatch, "docker", image="relforge/builder:bookworm"
    )
    assert "Processing ./relforge/build-wheels/" in log  # installed in the container, offline
    if name == "skbuild":  # the image has no cmake nor ninja: the backend asks for both
        assert "build requirements the backend adds: cmake>=3.27, ninja>=1.5" in log
        assert "relforge: fetching cmake>=3.27, ninja>=1.5; building again" in log
    else:
        assert "building again" not in log
    if name == "torch":
        assert "Excluding libc10.so" in log  # repaired in the container, torch left out
