"""`relforge release tag`, `patch` and `status` on real repositories."""

from __future__ import annotations

import http.server
import json
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from relforge.git import Git
from relforge.release.apply import apply_plan
from relforge.release.cut import CutRequest, plan_cut
from relforge.release.versions import Line
from tests.conftest import Result
from tests.gitrepos import Repos, git, make_repos
from tests.releaseproject import MATRIX, make_project, remote_file, remote_ref, snapshot

Run = Callable[..., Result]


@pytest.fixture
def cut_repos(tmp_path: Path) -> Repos:
    """A project whose release/2.9 has been cut (the clone has fetched it)."""
    repos = make_project(tmp_path)
    g = Git(repos.clone)
    apply_plan(g, plan_cut(g, CutRequest(line=Line(2, 9), github_repo="acme/hello")))
    return repos


def on_branch(repos: Repos, message: str, where: Path | None = None) -> str:
    """Commit to release/2.9 in a clone and push it; returns the commit."""
    clone = where or repos.clone
    git(clone, "fetch", "-q", "origin")
    git(clone, "switch", "-q", "-C", "release/2.9", "origin/release/2.9")
    sha = repos.commit(message, {f"{message.replace(' ', '_')}.txt": message}, where=clone)
    git(clone, "push", "-q", "origin", "release/2.9")
    git(clone, "switch", "-q", "main")
    return sha


def tag(run: Run, repos: Repos, version: str, *args: str) -> Result:
    return run("release", "tag", version, "--repo", str(repos.clone), *args)


def test_rc_numbers_increment_from_remote_tags(cut_repos: Repos, run: Run) -> None:
    repos = cut_repos
    other = repos.another_clone("colleague")
    configure_tag = on_branch(repos, "fix one", where=other)
    git(other, "tag", "-a", "v2.9.0-rc1", configure_tag, "-m", "rc1")
    second = on_branch(repos, "fix two", where=other)
    git(other, "tag", "-a", "v2.9.0rc2", second, "-m", "rc2 (other spelling)")
    git(other, "push", "-q", "origin", "v2.9.0-rc1", "v2.9.0rc2")
    tip = on_branch(repos, "fix three", where=other)
    assert git(repos.clone, "tag") == ""  # our clone knows no tag

    before = snapshot(repos)
    dry = tag(run, repos, "2.9.0", "--rc")
    assert dry.code == 0, dry.err
    assert "v2.9.0-rc3" in dry.out and tip[:12] in dry.out
    assert snapshot(repos)["origin"] == before["origin"]
    assert snapshot(repos)["refs"] == before["refs"]

    done = tag(run, repos, "2.9.0", "--rc", "--execute", "--format", "json")
    assert done.code == 0, done.err
    assert json.loads(done.out)["executed"] is True
    assert remote_ref(repos, "refs/tags/v2.9.0-rc3") != tip  # an annotated tag object …
    assert git(repos.origin, "rev-parse", "v2.9.0-rc3^{commit}") == tip  # … on the tip
    assert git(repos.origin, "cat-file", "-t", "v2.9.0-rc3") == "tag"
    assert git(repos.clone, "rev-parse", "v2.9.0-rc3^{commit}") == tip  # mirrored locally

    again = tag(run, repos, "2.9.0", "--rc", "--execute")
    assert again.code == 3 and "v2.9.0-rc3 already tags" in again.out


def test_final_lands_on_the_newest_rc_and_is_never_moved(cut_repos: Repos, run: Run) -> None:
    repos = cut_repos
    no_rc = tag(run, repos, "2.9.0", "--final")
    assert no_rc.code == 5 and "no release candidate of 2.9.0" in no_rc.err

    assert tag(run, repos, "2.9.0", "--rc", "--execute").code == 0
    rc1 = git(repos.origin, "rev-parse", "v2.9.0-rc1^{commit}")
    moved = on_branch(repos, "late fix")
    past = tag(run, repos, "2.9.0", "--final")
    assert past.code == 5 and "has moved past v2.9.0-rc1 (1 commit(s) since)" in past.err

    assert tag(run, repos, "2.9.0", "--rc", "--execute").code == 0
    assert git(repos.origin, "rev-parse", "v2.9.0-rc2^{commit}") == moved
    before = snapshot(repos)
    assert tag(run, repos, "2.9.0", "--final").code == 0
    assert snapshot(repos) == before
    final = tag(run, repos, "2.9.0", "--final", "--execute")
    assert final.code == 0, final.err
    assert git(repos.origin, "rev-parse", "v2.9.0^{commit}") == moved != rc1
    assert tag(run, repos, "2.9.0", "--final", "--execute").code == 3

    rc_after_final = tag(run, repos, "2.9.0", "--rc")
    assert rc_after_final.code == 5 and "already released" in rc_after_final.err


def test_moving_an_existing_tag_is_refused(cut_repos: Repos, run: Run) -> None:
    repos = cut_repos
    assert tag(run, repos, "2.9.0", "--rc", "--execute").code == 0
    rc1 = git(repos.origin, "rev-parse", "v2.9.0-rc1^{commit}")
    # someone tagged the final by hand on rc1, then the branch got an rc2
    git(repos.clone, "tag", "-a", "v2.9.0", rc1, "-m", "by hand")
    git(repos.clone, "push", "-q", "origin", "v2.9.0")
    git(repos.clone, "tag", "-d", "v2.9.0")
    on_branch(repos, "another fix")
    git(repos.origin, "tag", "v2.9.0-rc2", "release/2.9")
    origin_before = snapshot(repos)["origin"]
    refused = tag(run, repos, "2.9.0", "--final", "--execute")
    assert refused.code == 5
    assert "v2.9.0 already exists" in refused.err and "never moves" in refused.err
    assert snapshot(repos)["origin"] == origin_before
    assert git(repos.origin, "rev-parse", "v2.9.0^{commit}") == rc1


def test_a_stale_local_tag_is_not_moved(cut_repos: Repos, run: Run) -> None:
    repos = cut_repos
    git(repos.clone, "tag", "v2.9.0-rc1", "main")  # local only, on the wrong commit
    refused = tag(run, repos, "2.9.0", "--rc", "--execute")
    assert refused.code == 5 and "git tag -d v2.9.0-rc1" in refused.err
    git(repos.clone, "tag", "-d", "v2.9.0-rc1")
    git(repos.clone, "tag", "-a", "v2.9.0-rc1", "origin/release/2.9", "-m", "unpushed")
    resumed = tag(run, repos, "2.9.0", "--rc", "--execute")  # pushes the existing local tag
    assert resumed.code == 0, resumed.err
    assert remote_ref(repos, "refs/tags/v2.9.0-rc1") == git(repos.clone, "rev-parse", "v2.9.0-rc1")


def test_tag_refusals(cut_repos: Repos, run: Run) -> None:
    repos = cut_repos
    wrong = tag(run, repos, "2.9.1", "--rc")
    assert wrong.code == 5 and "says 2.9.0a0, which is not 2.9.1" in wrong.err

    off = tag(run, repos, "2.9.0", "--rc", "--at", "origin/main")
    assert off.code == 5 and "is not on origin/release/2.9" in off.err

    no_branch = tag(run, repos, "3.0.0", "--rc")
    assert no_branch.code == 2 and "no branch release/3.0" in no_branch.err

    neither = tag(run, repos, "2.9.0")
    assert neither.code == 2 and "--rc or --final" in neither.err

    git(repos.clone, "switch", "-q", "-c", "release/2.9", "origin/release/2.9")
    repos.commit("unpushed fix")
    unpushed = tag(run, repos, "2.9.0", "--rc")
    assert unpushed.code == 5, unpushed.out + unpushed.err
    assert "release/2.9 is 1 commit ahead of origin/release/2.9" in unpushed.err
    assert "hint: git push origin release/2.9 first" in unpushed.err

    (repos.clone / "version.txt").write_text("2.9.0\n")
    dirty = tag(run, repos, "2.9.0", "--rc")
    assert dirty.code == 5 and "uncommitted changes" in dirty.err
    git(repos.clone, "checkout", "-q", "--", "version.txt")
    git(repos.clone, "checkout", "-q", "--detach")
    detached = tag(run, repos, "2.9.0", "--rc")
    assert detached.code == 2 and "detached HEAD" in detached.err


def test_patch_release_rules(cut_repos: Repos, run: Run) -> None:
    repos = cut_repos

    def patch(version: str, *args: str) -> Result:
        return run("release", "patch", version, "--repo", str(repos.clone), *args)

    never = patch("2.9.1")
    assert never.code == 5 and "v2.9.0 was never tagged final" in never.err
    first = patch("2.9.0")
    assert first.code == 2 and "not a patch release" in first.err

    assert tag(run, repos, "2.9.0", "--rc", "--execute").code == 0
    assert tag(run, repos, "2.9.0", "--final", "--execute").code == 0
    skipped = patch("2.9.2")
    assert skipped.code == 5 and "v2.9.1 was never tagged final" in skipped.err

    before = snapshot(repos)
    assert patch("2.9.1").code == 0
    assert snapshot(repos) == before
    tip = remote_ref(repos, "refs/heads/release/2.9")
    bumped = patch("2.9.1", "--execute")
    assert bumped.code == 0, bumped.err
    assert remote_file(repos, "release/2.9", "version.txt") == "2.9.1a0\n"
    assert git(repos.origin, "rev-parse", "release/2.9^") == tip
    assert patch("2.9.1", "--execute").code == 3

    # the version now agrees with 2.9.1 RCs, not with 2.9.0 ones
    assert tag(run, repos, "2.9.1", "--rc", "--execute").code == 0
    assert tag(run, repos, "2.9.1", "--final", "--execute").code == 0
    assert patch("2.9.2", "--execute").code == 0
    assert remote_file(repos, "release/2.9", "version.txt") == "2.9.2a0\n"


def test_status_follows_the_release(tmp_path: Path, run: Run) -> None:
    repos = make_project(tmp_path)

    def status() -> dict[str, object]:
        result = run("release", "status", "2.9", "--repo", str(repos.clone), "--format", "json")
        assert result.code == 0, result.err
        data: dict[str, object] = json.loads(result.out)
        return data

    assert status()["next"] == "relforge release cut 2.9 --execute"
    g = Git(repos.clone)
    apply_plan(g, plan_cut(g, CutRequest(line=Line(2, 9), github_repo="acme/hello")))
    state = status()
    assert state["next"] == "relforge release tag 2.9.0 --rc --execute"
    assert state["cut_point"] == remote_ref(repos, "refs/heads/orig/release/2.9")
    assert state["version"] == "2.9.0a0"
    assert tag(run, repos, "2.9.0", "--rc", "--execute").code == 0
    assert status()["next"] == "relforge release tag 2.9.0 --final --execute"
    fix = on_branch(repos, "picked fix")
    state = status()
    assert state["next"] == "relforge release tag 2.9.0 --rc --execute"
    assert state["since"] == "v2.9.0-rc1"
    assert state["commits_since"] == [{"commit": fix, "subject": "picked fix"}]
    assert tag(run, repos, "2.9.0", "--rc", "--execute").code == 0
    assert tag(run, repos, "2.9.0", "--final", "--execute").code == 0
    assert status()["next"] == "relforge release patch 2.9.1 --execute"
    text = run("release", "status", "2.9", "--repo", str(repos.clone))
    assert "v2.9.0-rc1" in text.out and "next: relforge release patch 2.9.1" in text.out


@pytest.fixture
def refusing_http_remote() -> Iterator[str]:
    """An HTTP git remote that answers every request with 401 (a token that lost access)."""

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(401)
            self.send_header("WWW-Authenticate", 'Basic realm="git"')
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, format: str, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/acme/hello.git"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


def test_auth_failure_is_explained(tmp_path: Path, run: Run, refusing_http_remote: str) -> None:
    repos = make_project(tmp_path)
    git(repos.clone, "remote", "add", "gh", refusing_http_remote)
    result = run("release", "status", "2.9", "--repo", str(repos.clone), "--remote", "gh")
    assert result.code == 6  # a git fault, not a bug (exit 1)
    assert "refused by the remote" in result.err and "Authentication failed" in result.err
    assert "credentials" in result.err and "Traceback" not in result.err


def test_tag_refuses_a_diverged_branch_and_takes_the_remote_tip_when_behind(
    cut_repos: Repos, run: Run
) -> None:
    repos = cut_repos
    git(repos.clone, "switch", "-q", "-c", "release/2.9", "origin/release/2.9")
    other = repos.another_clone("colleague")
    theirs = on_branch(repos, "their fix", where=other)  # pushed; our release/2.9 is behind
    before = snapshot(repos)
    behind = tag(run, repos, "2.9.0", "--rc")
    assert behind.code == 0, behind.err
    assert "your release/2.9 is 1 commit behind origin/release/2.9" in behind.out
    assert f"relforge uses origin/release/2.9 ({theirs[:12]})" in behind.out
    assert snapshot(repos)["origin"] == before["origin"]

    repos.commit("my fix")  # now diverged: one commit each side
    origin = snapshot(repos)["origin"]
    for extra in ((), ("--execute",)):
        diverged = tag(run, repos, "2.9.0", "--rc", *extra)
        assert diverged.code == 5, diverged.out + diverged.err
        assert (
            "release/2.9 and origin/release/2.9 have diverged (1 commit only on release/2.9, "
            "1 commit only on origin/release/2.9)" in diverged.err
        )
    assert snapshot(repos)["origin"] == origin
    assert remote_ref(repos, "refs/tags/v2.9.0-rc1") is None

    git(repos.clone, "fetch", "-q", "origin")
    git(repos.clone, "reset", "-q", "--hard", "origin/release/2.9")  # in sync again
    done = tag(run, repos, "2.9.0", "--rc", "--execute")
    assert done.code == 0, done.err
    assert "behind" not in done.out and remote_ref(repos, "refs/tags/v2.9.0-rc1") is not None


def test_tag_refuses_a_commit_without_the_matrix_the_checkout_has(tmp_path: Path, run: Run) -> None:
    """A project of the release commands only is tagged; with an uncommitted matrix it is not."""
    repos = make_repos(tmp_path, {"version.txt": "2.9.0a0\n"})
    g = Git(repos.clone)
    apply_plan(g, plan_cut(g, CutRequest(line=Line(2, 9))))
    (repos.clone / "matrix.yaml").write_text(MATRIX)
    origin = snapshot(repos)["origin"]
    for kind in ("--rc", "--final"):
        refused = tag(run, repos, "2.9.0", kind, "--execute")
        if kind == "--final":  # no RC yet: that refusal comes first
            assert refused.code == 5 and "no release candidate" in refused.err
            continue
        assert refused.code == 5, refused.out + refused.err
        assert "origin/release/2.9 (" in refused.err
        assert "has no relforge matrix, but" in refused.err
        assert "has matrix.yaml (not committed)" in refused.err
        assert "hint: push the matrix first: git add matrix.yaml" in refused.err
        assert "git push origin release/2.9" in refused.err
    assert snapshot(repos)["origin"] == origin

    (repos.clone / "matrix.yaml").unlink()
    assert tag(run, repos, "2.9.0", "--rc", "--execute").code == 0
    (repos.clone / "matrix.yaml").write_text(MATRIX)
    final = tag(run, repos, "2.9.0", "--final", "--execute")
    assert final.code == 5 and "v2.9.0-rc1 (" in final.err and "has matrix.yaml" in final.err
    assert remote_ref(repos, "refs/tags/v2.9.0") is None
