"""The source tree a build sees: its file list, its digest, its snapshot."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from relforge.builders.source import scan_source
from relforge.errors import UsageError


def tree(root: Path) -> Path:
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "mod.py").write_text("x = 1\n")
    (root / "setup.py").write_text("print('hi')\n")
    for junk in (
        "build/lib/mod.py",
        "dist/a.whl",
        "pkg/__pycache__/mod.pyc",
        "x.egg-info/PKG-INFO",
    ):
        (root / junk).parent.mkdir(parents=True, exist_ok=True)
        (root / junk).write_text("junk")
    return root


def test_walk_leaves_out_build_outputs(tmp_path: Path) -> None:
    found = scan_source(tree(tmp_path / "src"))
    assert found.files == ("pkg/mod.py", "setup.py")


def test_digest_follows_content_and_exec_bit(tmp_path: Path) -> None:
    root = tree(tmp_path / "src")
    first = scan_source(root).digest
    (root / "build" / "lib" / "mod.py").write_text("other junk")
    assert scan_source(root).digest == first  # outputs do not count
    (root / "setup.py").chmod(0o755)
    second = scan_source(root).digest
    assert second != first
    (root / "pkg" / "mod.py").write_text("x = 2\n")
    assert scan_source(root).digest not in (first, second)


def test_git_decides_in_a_repository(tmp_path: Path) -> None:
    root = tree(tmp_path / "repo")
    (root / ".gitignore").write_text("*.log\n")
    (root / "debug.log").write_text("noise")
    (root / "notes.txt").write_text("untracked but not ignored")
    subprocess.run(["git", "-C", str(root), "init", "-q"], check=True)
    subprocess.run(["git", "-C", str(root), "add", "setup.py", "pkg/mod.py"], check=True)
    found = scan_source(root)
    assert found.files == (".gitignore", "notes.txt", "pkg/mod.py", "setup.py")


def test_snapshot_holds_exactly_the_listed_files(tmp_path: Path) -> None:
    root = tree(tmp_path / "src")
    (root / "link.py").symlink_to("setup.py")
    found = scan_source(root)
    copy = found.snapshot(tmp_path / "snap")
    assert sorted(p.relative_to(copy).as_posix() for p in copy.rglob("*") if not p.is_dir()) == [
        "link.py",
        "pkg/mod.py",
        "setup.py",
    ]
    assert (copy / "link.py").is_symlink()
    assert scan_source(copy).digest == found.digest


def test_missing_source_is_a_usage_error(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="not a directory"):
        scan_source(tmp_path / "nope")
