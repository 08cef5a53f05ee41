"""The example project's wheels through every stage, as `make demo` runs them: build the RC's
cells on the host, validate them (statically and by installing each one), publish the validated
manifest to the local store, install from the generated index, promote, stage for PyPI."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from relforge.interpreters import find_interpreter
from relforge.manifest import load_manifest
from tests.conftest import Result
from tests.integration.example_project import example_matrix

Run = Callable[..., Result]
pytestmark = pytest.mark.slow

CELLS = ("wheel-linux-x86_64-py3.12-cpu", "wheel-linux-x86_64-py3.12-cu130")


def test_example_rc_from_build_to_pypi_staging(
    run: Run, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    matrix = str(example_matrix(tmp_path))
    manifest = tmp_path / "dist" / "relforge-manifest.json"
    select = ("--select", "python=3.12")

    built = run(
        "build",
        matrix,
        "-r",
        "1.0",
        "--channel",
        "test",
        "--tag",
        "v1.0.0-rc1",
        "--builder",
        "host",
        *select,
    )
    assert built.code == 0, built.err
    assert sorted(load_manifest(manifest).entries) == sorted(CELLS)

    # Unvalidated files are not published.
    refused = run("publish", matrix, "--channel", "test", "--manifest", str(manifest))
    assert refused.code == 5, refused.out + refused.err

    checked = run(
        "validate",
        matrix,
        "-r",
        "1.0",
        "--channel",
        "test",
        "--manifest",
        str(manifest),
        *select,
        "--runtime",
        "--format",
        "json",
    )
    assert checked.code == 0, checked.out + checked.err
    assert "RF-V040" in checked.out  # the JSON report lists the symbol-version check
    entries = load_manifest(manifest).entries
    assert all(entries[c].validated for c in CELLS)
    checks = {v.check: v.status for v in entries[CELLS[1]].verdicts}
    assert checks["RF-R003"] == "pass"  # build_info() matches the cell: variant cu130, CUDA 13.0

    published = run(  # two of the matrix's eight cells: --partial puts 1.0.0 on the pages
        "publish",
        matrix,
        "--channel",
        "test",
        "--manifest",
        str(manifest),
        "--partial",
        "--execute",
    )
    assert published.code == 0, published.err
    store = tmp_path / ".relforge" / "store"
    index = json.loads((store / "whl" / "test" / "cpu" / "hello-native" / "index.json").read_text())
    assert [f["filename"] for f in index["files"]] == [
        "hello_native-1.0.0+cpu-cp312-cp312-manylinux_2_28_x86_64.whl"
    ]

    python = find_interpreter("3.12")
    assert python is not None
    venv = tmp_path / "venv"
    subprocess.run([python.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "--python",
            str(venv / "bin" / "python"),
            "--isolated",
            "install",
            "--quiet",
            "--no-cache-dir",
            "--index-url",
            (store / "whl" / "test" / "cu130").as_uri() + "/",
            "hello-native",
        ],
        check=True,
    )
    info = subprocess.run(
        [str(venv / "bin" / "python"), "-c", "import hello_native as h; print(h.build_info())"],
        check=True,
        capture_output=True,
        text=True,
        cwd=tmp_path,
    ).stdout
    assert "'variant': 'cu130'" in info and "'version': '1.0.0+cu130'" in info

    promoted = run(
        "promote", matrix, "--version", "1.0.0", "--from", "test", "--to", "release",
        "--partial", "--execute",
    )  # fmt: skip
    assert promoted.code == 0, promoted.err
    released = store / "whl" / "cu130"
    assert (released / "hello_native-1.0.0+cu130-cp312-cp312-manylinux_2_34_x86_64.whl").is_file()
    staged = run("pypi", "stage", matrix, "--version", "1.0.0", "--execute")
    assert staged.code == 0, staged.err
    assert [p.name for p in (store / "pypi-staging" / "1.0.0").iterdir()] == [
        "hello_native-1.0.0-cp312-cp312-manylinux_2_28_x86_64.whl"
    ]
