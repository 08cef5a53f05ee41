"""relforge.git's bare runs, as the builder (source files, the RC tag at HEAD) and the matrix
loader (`REV:PATH`) make them: real git, C locale, no git on PATH, and faults told from echoes."""

from __future__ import annotations

from pathlib import Path

import pytest

from relforge.builders.inputs.sourcetree import scan_source
from relforge.builders.version import find_rc_tag
from relforge.errors import ConfigError, EnvironmentFault
from relforge.git import GitMissing, run_git, run_git_bytes
from relforge.gitfaults import GitBytes, GitResult, fault_of
from relforge.matrix.load import read_text
from tests.gitrepos import git, work_tree


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = work_tree(tmp_path / "repo", {"setup.py": "", ".gitignore": "*.log\n"})
    (root / "ignored.log").write_text("")
    git(root, "tag", "v1.0.0-rc1")
    return root


def test_runs_are_in_the_c_locale_without_prompts(repo: Path) -> None:
    done = run_git("-C", str(repo), "var", "GIT_TERMINAL_PROMPT", env={"LANG": "de_DE.UTF-8"})
    shown = run_git("-C", str(repo), "cat-file", "blob", "HEAD:nope")
    assert done.args[:3] == ("git", "-C", str(repo))
    assert shown.code != 0 and "does not exist in 'HEAD'" in shown.err
    raw = run_git_bytes("-C", str(repo), "ls-files", "-z")
    assert raw.code == 0 and raw.out == b".gitignore\0setup.py\0"


def test_no_git_on_path(repo: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Without git the builder walks the tree and finds no tag; `REV:PATH` says why it fails."""
    empty = tmp_path / "bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    with pytest.raises(GitMissing, match="git is not installed") as caught:
        run_git("status")
    assert caught.value.exit_code == 2
    assert "ignored.log" in scan_source(repo).files  # no .gitignore without git
    assert find_rc_tag(repo) is None
    monkeypatch.chdir(repo)
    with pytest.raises(ConfigError, match="git is not installed"):
        read_text("HEAD:matrix.yaml")


def test_a_missing_working_directory_is_not_a_missing_git(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        run_git_bytes("status", cwd=tmp_path / "gone")


def test_git_decides_and_the_rc_tag_is_found(repo: Path) -> None:
    assert scan_source(repo).files == (".gitignore", "setup.py")
    assert find_rc_tag(repo) == "v1.0.0-rc1"
    assert find_rc_tag(repo.parent) is None  # not a repository: no tag, no error


def test_rev_path_reads_the_blob_and_names_what_is_wrong(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(repo)
    assert read_text("HEAD:.gitignore") == "*.log\n"
    with pytest.raises(ConfigError, match="not a file, and git cannot show it"):
        read_text("HEAD:nope.yaml")


@pytest.mark.parametrize(
    "name", ["d/x': Permission denied", "d/x': No space left on device", "Could not resolve host"]
)
def test_a_path_that_spells_a_fault_is_no_fault(
    repo: Path, monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    """git echoes the path back; a name that reads like a disk or network fault must not turn a
    missing file (exit 2) into an environment fault (exit 6)."""
    monkeypatch.chdir(repo)
    with pytest.raises(ConfigError) as caught:
        read_text(f"HEAD:{name}")
    assert caught.value.exit_code == 2 and "git cannot show it" in caught.value.message


def test_faults_git_reports_are_environment_faults() -> None:
    args = ("git", "-C", "/src", "ls-files", "-z")
    disk = GitBytes(args, 128, b"", "fatal: unable to write: Read-only file system\n")
    fault = fault_of(disk)
    assert isinstance(fault, EnvironmentFault) and fault.exit_code == 6
    assert fault.message == "`git -C /src ls-files -z` failed: fatal: unable to write: " + (
        "Read-only file system"
    )
    denied = GitResult(
        ("git", "-C", "/src", "tag", "--points-at", "HEAD"),
        128,
        "",
        "fatal: Unable to create '/src/.git/index.lock': Permission denied",
    )
    assert fault_of(denied) is not None
    assert fault_of(GitBytes(args, 128, b"", "fatal: not a git repository")) is None
