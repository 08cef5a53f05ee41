"""relforge's pip run by another interpreter (relforge.pipcommand): it acts on that
interpreter's environment only, as `pip --python` does, and falls back to that form."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from relforge import pipcommand
from relforge.pipcommand import pip_for


def _venv(path: Path) -> Path:
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(path)], check=True)
    return path / "bin" / "python"


def _listed(argv: list[str]) -> set[str]:
    done = subprocess.run(
        [*argv, "--isolated", "--disable-pip-version-check", "list", "--format", "json"],
        check=True,
        capture_output=True,
        text=True,
    )
    return {entry["name"].lower() for entry in json.loads(done.stdout)}


def test_the_target_sees_its_own_packages_not_relforges(tmp_path: Path) -> None:
    python = _venv(tmp_path / "venv")
    argv = pip_for(python)
    assert argv[0] == str(python)  # one interpreter start: the target's
    assert _listed(argv) == set()  # an empty venv: nothing of relforge's environment leaks in
    assert _listed([sys.executable, "-m", "pip", "--python", str(python)]) == set()


def test_an_install_lands_in_the_target_venv(tmp_path: Path) -> None:
    python = _venv(tmp_path / "venv")
    wheels = tmp_path / "wheels"
    project = tmp_path / "tiny"
    (project / "tiny_pkg").mkdir(parents=True)
    (project / "tiny_pkg" / "__init__.py").write_text("VALUE = 7\n")
    (project / "pyproject.toml").write_text(
        '[project]\nname = "tiny-pkg"\nversion = "1.0"\n'
        '[build-system]\nrequires = ["setuptools"]\nbuild-backend = "setuptools.build_meta"\n'
    )
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation",
         "-w", str(wheels), str(project)],
        check=True,
    )  # fmt: skip
    (wheel,) = wheels.glob("*.whl")
    subprocess.run(
        [*pip_for(python), "--isolated", "install", "-q", "--no-index", str(wheel)], check=True
    )
    out = subprocess.run(
        [str(python), "-c", "import tiny_pkg, sys; print(tiny_pkg.VALUE, sys.prefix)"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.split()
    assert out == ["7", str(tmp_path / "venv")]
    assert "tiny-pkg" in _listed(pip_for(python))


def test_a_pip_without_its_runner_gets_the_python_option(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(pipcommand, "_runner", lambda: None)
    python = tmp_path / "bin" / "python"
    assert pip_for(python) == [sys.executable, "-m", "pip", "--python", str(python)]
