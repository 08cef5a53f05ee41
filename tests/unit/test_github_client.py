"""The GitHub REST client against the in-process fake GitHub."""

from __future__ import annotations

import pytest

from relforge.forges.github import GitHubClient, GitHubError, Permission
from tests.fakegithub import TOKEN, FakeGitHub

REPO = "acme/widget"


def client(fake: FakeGitHub, **kw: object) -> GitHubClient:
    waits: list[float] = []
    c = GitHubClient(REPO, sleep=waits.append, **kw)  # type: ignore[arg-type]
    c.waits = waits  # type: ignore[attr-defined]
    return c


def test_pulls_issues_comments_permission(fake_github: FakeGitHub) -> None:
    milestone = fake_github.add_milestone(REPO, "2.9.1")
    bug = fake_github.add_issue(REPO, "crash", labels=("bug",), milestone=milestone)
    pr = fake_github.add_pull(
        REPO, "fix crash", head="fix", merged=True, merge_commit_sha="a" * 40, milestone=milestone
    )
    fake_github.set_permission(REPO, "alice", "maintain")
    gh = client(fake_github)
    assert gh.pull(pr).merged and gh.pull(pr).merge_commit_sha == "a" * 40
    assert [i.number for i in gh.issues(state="all", milestone=milestone)] == [bug, pr]
    assert gh.issue(pr).is_pull_request and not gh.issue(bug).is_pull_request
    assert gh.issue(bug).milestone == "2.9.1"
    gh.comment(bug, "hello")
    assert [c.body for c in gh.comments(bug)] == ["hello"]
    assert gh.permission("alice") == Permission(permission="write", role_name="maintain")
    assert not gh.permission("mallory").can_write
    new = gh.create_pull(title="t", head="cherry", base="release/2.9", body="b")
    assert gh.pulls(head="acme:cherry", base="release/2.9")[0].number == new.number
    with pytest.raises(GitHubError, match="422"):
        gh.create_pull(title="t", head="cherry", base="release/2.9", body="b")


def test_pagination_follows_link_headers(fake_github: FakeGitHub) -> None:
    for i in range(250):
        fake_github.add_issue(REPO, f"issue {i}")
    gh = client(fake_github)
    assert len(gh.issues()) == 250
    pages = [r for r in fake_github.requests if r[1].endswith("/issues")]
    assert len(pages) == 3


def test_rate_limits_are_retried(fake_github: FakeGitHub) -> None:
    number = fake_github.add_issue(REPO, "x")
    fake_github.fail_next(429, {"Retry-After": "7"})
    fake_github.fail_next(403, {"X-RateLimit-Remaining": "0"}, "API rate limit exceeded")
    fake_github.fail_next(403, {}, "You have exceeded a secondary rate limit")
    fake_github.fail_next(502)
    gh = client(fake_github)
    assert gh.issue(number).title == "x"
    assert gh.waits == [7.0, 120.0, 240.0, 8.0]  # type: ignore[attr-defined]


def test_errors_are_reported_without_the_token(fake_github: FakeGitHub) -> None:
    gh = client(fake_github, token="wrong-token", max_retries=1)
    with pytest.raises(GitHubError) as info:
        gh.issue(1)
    assert info.value.status == 401 and "GITHUB_TOKEN" in (info.value.hint or "")
    assert "wrong-token" not in info.value.render() and "wrong-token" not in repr(gh)
    for _ in range(3):
        fake_github.fail_next(500)
    with pytest.raises(GitHubError, match="500"):
        client(fake_github, max_retries=2).issue(1)
    assert TOKEN not in repr(client(fake_github))


def test_a_login_is_one_path_segment(fake_github: FakeGitHub) -> None:
    # an event payload with a crafted login must not steer the permission check elsewhere
    fake_github.set_permission("mallory/own", "mallory", "admin")
    gh = client(fake_github)
    for login in ("../../../mallory/own/collaborators/mallory", "mallory", "..", "a/b"):
        assert gh.permission(login).permission == "none"
    fake_github.set_permission(REPO, "Alice-2", "write")
    assert gh.permission("Alice-2").can_write


@pytest.mark.parametrize("api_url", ["not a url", "ftp://example.org", "http://[::1"])
def test_a_bad_api_url_is_a_config_error_at_once(api_url: str) -> None:
    from relforge.errors import ConfigError

    waits: list[float] = []
    gh = GitHubClient(REPO, api_url=api_url, token=TOKEN, sleep=waits.append)
    with pytest.raises(ConfigError, match="GITHUB_API_URL") as info:
        gh.pull(1)
    assert waits == [] and TOKEN not in info.value.render()  # nothing to retry
