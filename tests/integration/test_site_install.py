"""The commands the site shows install the real wheels: the example project's RC is built,
validated, published to the test channel of a local store, promoted to release and uploaded
(as its PyPI default) to a pypiserver standing in for PyPI.  Then the site, rendered with the
store's URL as its download URL, is opened in Chromium and the commands it shows are run."""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from relforge.interpreters import find_interpreter
from tests.conftest import Result
from tests.integration.browser import chromium, open_page, pick, screenshot
from tests.integration.conftest import BIN, PyPIServer
from tests.integration.example_project import example_matrix

Run = Callable[..., Result]
pytestmark = pytest.mark.slow
PIP = (sys.executable, "-m", "pip")
UV = (str(BIN / "uv"), "pip", "install")


def _shown(site: Path, **selection: str) -> str:
    with chromium() as driver:
        open_page(driver, (site / "index.html").as_uri())
        for group, value in selection.items():
            pick(driver, group, value)
        command = driver.find_element("id", "command")
        assert command.is_displayed()
        screenshot(driver, "install-" + "-".join(selection.values()) + ".png")
        return str(command.text)


def _venv(tmp_path: Path, name: str) -> Path:
    python = find_interpreter("3.12")
    assert python is not None, "the example's wheels are built for CPython 3.12"
    venv = tmp_path / name
    subprocess.run([python.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    return venv / "bin" / "python"


def _build_info(python: Path) -> str:
    """The installed distribution's version, then the module's own build_info()."""
    probe = (
        "import importlib.metadata as m, hello_native as h; "
        "print(m.version('hello-native'), h.build_info())"
    )
    return subprocess.run(
        [str(python), "-c", probe],
        check=True,
        capture_output=True,
        text=True,
        cwd=python.parent,
    ).stdout


def _run_pip(command: str, python: Path, pypi: str) -> None:
    """Run a pip3 command of the page with this venv's pip, ignoring every local pip setting;
    a command with no --index-url is for PyPI, whose place the pypiserver takes."""
    words = shlex.split(command)
    assert words[:2] == ["pip3", "install"], command
    extra = [] if "--index-url" in words else ["--index-url", pypi]
    env = {k: v for k, v in os.environ.items() if not k.startswith("PIP_")}
    done = subprocess.run(
        [
            *PIP,
            "--python",
            str(python),
            "--isolated",
            "install",
            "--no-cache-dir",
            *words[2:],
            *extra,
        ],
        capture_output=True,
        text=True,
        env=env,
    )
    assert done.returncode == 0, done.stdout + done.stderr


def _run_uv(command: str, python: Path, pypi: str) -> None:
    words = shlex.split(command)
    assert words[:3] == ["uv", "pip", "install"], command
    extra = [] if "--default-index" in words else ["--default-index", pypi]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("UV_", "PIP_"))}
    done = subprocess.run(
        [*UV, "--no-config", "--no-cache", "--python", str(python), *words[3:], *extra],
        capture_output=True,
        text=True,
        env=env,
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_commands_the_page_shows_install_the_demo_wheel(
    run: Run,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    pypiserver: PyPIServer,
    static_server: Callable[[Path], str],
) -> None:
    monkeypatch.chdir(tmp_path)
    matrix = str(example_matrix(tmp_path))
    manifest = str(tmp_path / "dist" / "relforge-manifest.json")
    select = ("--select", "python=3.12,variant=cpu")
    steps = [
        f"build {matrix} -r 1.0 --channel test --tag v1.0.0-rc1 --builder host",
        f"validate {matrix} -r 1.0 --channel test --manifest {manifest}",
        # one cell of the matrix: --partial puts 1.0.0 on the pages
        f"publish {matrix} --channel test --manifest {manifest} --partial --execute",
        f"promote {matrix} --version 1.0.0 --from test --to release --partial --execute",
        f"pypi stage {matrix} --version 1.0.0 --execute",
    ]
    for step in steps:
        args = step.split()
        done = run(*args, *(select if args[0] in ("build", "validate") else ()))
        assert done.code == 0, (step, done.out + done.err)
    monkeypatch.setenv("TWINE_USERNAME", pypiserver.username)
    monkeypatch.setenv("TWINE_PASSWORD", pypiserver.password)
    upload = f"pypi upload {matrix} --version 1.0.0 --repository-url {pypiserver.url}"
    uploaded = run(*upload.split(), "--execute")
    assert uploaded.code == 0, uploaded.err

    store_url = static_server(tmp_path / ".relforge" / "store")
    site = tmp_path / "site"
    made = run("site", matrix, "--out", str(site), "--download-url", store_url)
    assert made.code == 0, made.err

    # Release channel, CPU: the PyPI default of linux-x86_64 → from PyPI (the pypiserver).
    release = {"channel": "release", "platform": "linux-x86_64", "accelerator": "cpu"}
    pip_cmd = _shown(site, **release, installer="pip")
    assert pip_cmd == "pip3 install hello-native"
    python = _venv(tmp_path, "venv-pip")
    _run_pip(pip_cmd, python, pypiserver.simple)
    assert _build_info(python).startswith("1.0.0 {'variant': 'cpu'")  # PyPI's: no +cpu

    uv_cmd = _shown(site, **release, installer="uv")
    assert uv_cmd == "uv pip install hello-native"
    python = _venv(tmp_path, "venv-uv")
    _run_uv(uv_cmd, python, pypiserver.simple)
    assert _build_info(python).startswith("1.0.0 {'variant': 'cpu'")

    # Test channel, CPU: from the store's own index, exactly as shown.
    test = {"channel": "test", "platform": "linux-x86_64", "accelerator": "cpu"}
    pip_cmd = _shown(site, **test, installer="pip")
    assert pip_cmd == f"pip3 install hello-native --index-url {store_url}/whl/test/cpu"
    python = _venv(tmp_path, "venv-test-pip")
    _run_pip(pip_cmd, python, "http://127.0.0.1:9/never-used/")
    assert _build_info(python).startswith("1.0.0+cpu {'variant': 'cpu'")
    uv_cmd = _shown(site, **test, installer="uv")
    python = _venv(tmp_path, "venv-test-uv")
    _run_uv(uv_cmd, python, "http://127.0.0.1:9/never-used/")
    assert _build_info(python).startswith("1.0.0+cpu {'variant': 'cpu'")
