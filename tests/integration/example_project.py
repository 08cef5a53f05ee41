"""The example project (examples/hello-native) and its matrix, as tests build them."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.conftest import EXAMPLE, REPO

SOURCE = REPO / "examples" / "hello-native"


def example_matrix(folder: Path, replacements: dict[str, str] | None = None) -> Path:
    """matrix/example.yaml with its source made absolute and `replacements` applied."""
    text = EXAMPLE.read_text(encoding="utf-8")
    text = text.replace("source: ../examples/hello-native", f"source: {SOURCE}")
    for old, new in (replacements or {}).items():
        assert old in text, old
        text = text.replace(old, new)
    path = folder / "example.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def installed_build_info(python: str, wheel: Path, venv: Path) -> dict[str, Any]:
    """Install `wheel` into a fresh venv of `python` (offline, no deps) and ask the module."""
    subprocess.run([python, "-m", "venv", "--without-pip", str(venv)], check=True)
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "--python",
            str(venv / "bin" / "python"),
            "install",
            "--quiet",
            "--no-deps",
            "--no-index",
            str(wheel),
        ],
        check=True,
    )
    probe = (
        "import json, hello_native as h; "
        "print(json.dumps({**h.build_info(), 'dot': h.dot([1, 2], [3, 4])}))"
    )
    done = subprocess.run(
        [str(venv / "bin" / "python"), "-c", probe],
        check=True,
        capture_output=True,
        text=True,
        cwd=venv,
    )
    info: dict[str, Any] = json.loads(done.stdout)
    return info
