"""The runner's package index of the generated-CI scenarios (tests/ciworld.py `file_index`): a
PEP 503 index written as files, which pip resolves from by normalized name and whose sha256 links
pip enforces."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.ciworld import file_index
from tests.wheelfactory import metadata_wheel


def _download(index: str, requirement: str, dest: Path) -> subprocess.CompletedProcess[str]:
    argv = [sys.executable, "-m", "pip", "--isolated", "download", "--no-deps", "--index-url"]
    argv += [index, "--dest", str(dest), "--disable-pip-version-check", requirement]
    return subprocess.run(argv, capture_output=True, text=True, check=False)


def test_pip_finds_each_wheel_by_its_normalized_name(tmp_path: Path) -> None:
    packages = tmp_path / "packages"
    packages.mkdir()
    metadata_wheel(packages, "foo_bar", "1.0")
    metadata_wheel(packages, "foo_bar", "2.0")
    metadata_wheel(packages, "other", "0.1")
    index = file_index(packages)
    assert index.startswith("file://") and index.endswith("/simple/")
    assert sorted(p.name for p in (packages / "simple").iterdir()) == [
        "foo-bar",
        "index.html",
        "other",
    ]
    done = _download(index, "Foo.Bar==1.0", tmp_path / "got")
    assert done.returncode == 0, done.stdout + done.stderr
    assert [p.name for p in (tmp_path / "got").iterdir()] == ["foo_bar-1.0-py3-none-any.whl"]


def test_a_wheel_changed_after_indexing_is_refused(tmp_path: Path) -> None:
    packages = tmp_path / "packages"
    packages.mkdir()
    wheel = metadata_wheel(packages, "foo_bar", "1.0")
    index = file_index(packages)
    wheel.write_bytes(wheel.read_bytes() + b"\0")  # other bytes than the link's sha256
    done = _download(index, "foo-bar==1.0", tmp_path / "got")
    assert done.returncode != 0
    assert "THESE PACKAGES DO NOT MATCH THE HASHES" in done.stdout + done.stderr
