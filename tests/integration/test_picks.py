"""Finding cherry-picks on real repositories."""

from __future__ import annotations

from pathlib import Path

from relforge.git import Git
from relforge.release.picks import PickIndex, commits
from tests.gitrepos import git, make_repos


def test_picks_by_trailer_and_patch_id_and_reverts(tmp_path: Path) -> None:
    repos = make_repos(tmp_path)
    base = git(repos.clone, "rev-parse", "HEAD")
    git(repos.clone, "branch", "release/1.0")
    fix_a = repos.commit("fix a", {"a.txt": "a\n"})
    fix_b = repos.commit("fix b", {"b.txt": "b\n"})
    fix_c = repos.commit("fix c", {"c.txt": "c\n"})
    git(repos.clone, "revert", "--no-edit", fix_b)
    git(repos.clone, "checkout", "-q", "release/1.0")
    git(repos.clone, "cherry-pick", "-x", fix_a)
    git(repos.clone, "cherry-pick", fix_b)  # no -x: found by patch-id
    g = Git(repos.clone)
    index = PickIndex(g, f"{base}..release/1.0")
    a = index.find(fix_a)
    b = index.find(fix_b)
    assert a is not None and a.how == "trailer"
    assert b is not None and b.how == "patch-id"
    assert index.find(fix_c) is None
    main_log = commits(g, f"{base}..main")
    revert = main_log[0]
    assert revert.reverts == fix_b and revert.subject.startswith("Revert")
    assert [c.sha for c in main_log[1:]] == [fix_c, fix_b, fix_a]
