"""The git wrapper against real repositories (a bare origin and clones)."""

from __future__ import annotations

from pathlib import Path

import pytest

from relforge.errors import ConfigError, RefusedError
from relforge.git import Git
from tests.gitrepos import git, make_repos


def test_refs_local_and_remote(tmp_path: Path) -> None:
    repos = make_repos(tmp_path)
    head = git(repos.clone, "rev-parse", "HEAD")
    git(repos.clone, "tag", "-a", "v1.0.0-rc1", "-m", "rc1")
    git(repos.clone, "push", "-q", "origin", "v1.0.0-rc1")
    g = Git(repos.clone)
    remote = g.remote_refs("origin", "refs/tags/*", "refs/heads/*")
    assert remote == {"refs/heads/main": head, "refs/tags/v1.0.0-rc1": head}  # tag peeled
    assert g.commit_of("v1.0.0-rc1") == head and g.commit_of("nope") is None
    assert g.current_branch() == "main" and not g.is_dirty()
    (repos.clone / "version.txt").write_text("2\n")
    assert g.is_dirty()


def test_errors(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="not inside a git repository"):
        Git(tmp_path)
    repos = make_repos(tmp_path)
    g = Git(repos.clone)
    with pytest.raises(ConfigError, match="no git remote named 'upstream'") as info:
        g.remote_refs("upstream")
    assert info.value.hint == "remotes: origin"
    git(repos.clone, "checkout", "-q", "--detach")
    with pytest.raises(ConfigError, match="detached HEAD"):
        g.require_branch()


def test_rejected_push_is_refused(tmp_path: Path) -> None:
    repos = make_repos(tmp_path)
    other = repos.another_clone("other")
    repos.commit("theirs", where=other)
    git(other, "push", "-q", "origin", "main")
    repos.commit("ours")
    with pytest.raises(RefusedError, match="rejected") as info:
        Git(repos.clone).push("origin", ["main"])
    assert info.value.exit_code == 5


def test_an_object_id_holding_403_is_not_an_authentication_failure(tmp_path: Path) -> None:
    from relforge.gitfaults import GitError, GitResult, classify

    repos = make_repos(tmp_path)
    sha = "7c403d321b4a11ffe4e6a11fd876f52db3cf5d40"
    done = Git(repos.clone).result("cat-file", "-p", sha)
    assert done.code != 0 and sha in done.err  # git names the object it could not read
    error = classify(done)
    assert isinstance(error, GitError) and "credentials" not in (error.hint or "")
    http = GitResult(
        ("git", "-C", ".", "fetch"),
        128,
        "",
        "fatal: unable to access 'https://x/': The requested URL returned error: 403\n",
    )
    assert "credentials" in (classify(http).hint or "")
