"""The source tree a build sees: its file list, its digest, its snapshot."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from relforge.builders.inputs.sourcetree import scan_source
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


def _relforge_files(root: Path) -> None:
    """What relforge writes or reads in a source tree, under names no rule skips."""
    for rel, text in {
        "artifacts/demo-1.0-py3-none-any.whl": "wheel",
        "artifacts/relforge-manifest.json": "{}",
        "state/cache/ab/entry.json": "{}",
        "ci/matrix.yaml": "schema_version: 1\n",
        "old-out/relforge-manifest.json": "{}",  # an earlier build's --out
        "old-out/demo-0.9-py3-none-any.whl": "old wheel",
    }.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)


NOT_SOURCE = ("artifacts", "state", "ci/matrix.yaml")


@pytest.mark.parametrize("in_git", [False, True])
def test_relforges_own_files_are_left_out_whatever_their_names(
    tmp_path: Path, in_git: bool
) -> None:
    root = tree(tmp_path / "src")
    if in_git:  # untracked and not ignored: git lists them, relforge leaves them out
        subprocess.run(["git", "-C", str(root), "init", "-q"], check=True)
    clean = scan_source(root)
    _relforge_files(root)
    leave_out = [root / p for p in NOT_SOURCE]
    found = scan_source(root, leave_out=leave_out)
    assert found.files == ("pkg/mod.py", "setup.py") == clean.files
    assert found.digest == clean.digest
    (root / "artifacts" / "relforge-manifest.json").write_text('{"changed": true}')
    (root / "ci" / "matrix.yaml").write_text("# a comment\nschema_version: 1\n")
    assert scan_source(root, leave_out=leave_out).digest == clean.digest
    copy = found.snapshot(tmp_path / "snap")
    assert sorted(p.name for p in copy.rglob("*") if p.is_file()) == ["mod.py", "setup.py"]
    # a real change still counts; so does a folder that is merely named like one left out
    (root / "pkg" / "mod.py").write_text("x = 3\n")
    assert scan_source(root, leave_out=leave_out).digest != clean.digest
    (root / "pkg" / "mod.py").write_text("x = 1\n")
    (root / "artifacts2").mkdir()
    (root / "artifacts2" / "data.txt").write_text("input")
    assert "artifacts2/data.txt" in scan_source(root, leave_out=leave_out).files


def test_leave_out_outside_the_tree_or_the_tree_itself_changes_nothing(tmp_path: Path) -> None:
    root = tree(tmp_path / "src")
    everything = scan_source(root)
    assert scan_source(root, leave_out=[tmp_path / "elsewhere", tmp_path, root]) == everything
    (root / "relforge-manifest.json").write_text("{}")  # --out . : only the manifest goes
    (root / "out.whl").write_text("wheel")
    assert scan_source(root).files == ("out.whl", "pkg/mod.py", "setup.py")
