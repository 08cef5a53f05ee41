"""The GitHub REST client against the in-process fake GitHub."""

from __future__ import annotations

from typing import Any

import pytest

from relforge.forges.github import GitHubClient, GitHubError, Permission, RateLimited
from tests.fakegithub import TOKEN, FakeGitHub

REPO = "acme/widget"


class Client(GitHubClient):
    """The real client, its pauses recorded in `waits` instead of slept."""

    def __init__(self, **kw: Any) -> None:
        self.waits: list[float] = []
        super().__init__(REPO, sleep=self.waits.append, **kw)


def client(fake: FakeGitHub, **kw: Any) -> Client:
    return Client(**kw)


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
    assert gh.waits == [7.0, 120.0, 240.0, 8.0]


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


def test_a_far_rate_limit_reset_fails_fast_naming_the_time(fake_github: FakeGitHub) -> None:
    number = fake_github.add_issue(REPO, "x")
    reset = fake_github.exhaust_rate_limit(50 * 60)
    gh = client(fake_github)
    with pytest.raises(RateLimited) as info:
        gh.issue(number)
    assert gh.waits == []
    assert info.value.exit_code == 6 and info.value.reset is not None
    assert int(info.value.reset.timestamp()) == reset
    assert "resets at" in info.value.message and "re-run the job after" in (info.value.hint or "")
    # Within the budget: waited for, once, then served.
    fake_github.exhaust_rate_limit(20)
    assert gh.issue(number).title == "x"
    assert len(gh.waits) == 1 and 15 <= gh.waits[0] <= 21


def test_secondary_limits_stop_at_the_waiting_budget(fake_github: FakeGitHub) -> None:
    number = fake_github.add_issue(REPO, "x")
    for _ in range(6):
        fake_github.fail_next(403, {}, "You have exceeded a secondary rate limit")
    gh = client(fake_github, max_wait=600)
    with pytest.raises(RateLimited):
        gh.issue(number)
    assert sum(gh.waits) <= 600


def test_a_post_saved_before_a_5xx_is_found_not_sent_again(fake_github: FakeGitHub) -> None:
    number = fake_github.add_issue(REPO, "x")
    gh = client(fake_github)
    fake_github.fail_after_saving("POST", r"/comments", 502)
    posted = gh.comment(number, "hello <!-- m1 -->", marker="<!-- m1 -->")
    assert fake_github.comments_on(REPO, number) == ["hello <!-- m1 -->"]
    assert posted.body == "hello <!-- m1 -->"
    # Not saved: sent again after looking.
    fake_github.fail_when("POST", r"/comments", 503)
    gh.comment(number, "second")
    assert fake_github.comments_on(REPO, number) == ["hello <!-- m1 -->", "second"]
    fake_github.fail_after_saving("POST", r"/pulls", 500)
    pull = gh.create_pull(title="t", head="cherry", base="release/2.9", body="b")
    assert len(fake_github.repo(REPO).pulls) == 1 and pull.head_ref == "cherry"


def test_errors_name_the_route_not_the_host(fake_github: FakeGitHub) -> None:
    gh = client(fake_github, api_url=f"{fake_github.url}/api/v3", max_retries=0)
    fake_github.fail_next(404, {}, "Not Found")
    with pytest.raises(GitHubError) as info:
        gh.issue(5)
    text = info.value.render()
    assert f"GET /repos/{REPO}/issues/5 answered 404" in text
    assert "127.0.0.1" not in text and "api/v3" not in text


def test_nullable_users_and_fields(fake_github: FakeGitHub) -> None:
    pr = fake_github.add_pull(REPO, "t", head="h", user=None, body=None)
    fake_github.repo(REPO).comments[pr] = [{"id": 1, "body": None, "user": None, "html_url": "u"}]
    gh = client(fake_github)
    pull = gh.pull(pr)
    assert pull.user is None and pull.body == "" and pull.milestone is None
    [comment] = gh.comments(pr)
    assert comment.user is None and comment.body == ""


def test_custom_roles_are_served_by_their_base_permission(fake_github: FakeGitHub) -> None:
    fake_github.set_permission(REPO, "rm", "release-manager", base="write")
    fake_github.set_permission(REPO, "tp", "triage-plus", base="read")
    gh = client(fake_github)
    rm, tp = gh.permission("rm"), gh.permission("tp")
    assert rm.can_write and rm.describe() == "release-manager (base permission write)"
    assert not tp.can_write and tp.role_name == "triage-plus"


def test_pull_commits_follow_pagination(fake_github: FakeGitHub) -> None:
    commits: list[dict[str, Any]] = [
        {
            "sha": f"{i:040x}",
            "commit": {"message": f"c{i}", "author": None, "committer": None},
            "author": None,
            "parents": [],
        }
        for i in range(5)
    ]
    pr = fake_github.add_pull(REPO, "t", head="h", commits=commits)
    fake_github.max_per_page = 2
    listed = client(fake_github).pull_commits(pr)
    assert [c.message for c in listed] == [f"c{i}" for i in range(5)]
    assert listed[0].author_time is None
    assert len([r for r in fake_github.requests if r[1].endswith("/commits")]) == 3


def test_the_waiting_budget_spans_every_call_of_a_run(fake_github: FakeGitHub) -> None:
    number = fake_github.add_issue(REPO, "x")
    gh = client(fake_github, max_wait=600)
    fake_github.fail_next(429, {"Retry-After": "400"})
    assert gh.issue(number).title == "x"
    fake_github.fail_next(429, {"Retry-After": "400"})
    with pytest.raises(RateLimited):  # 800 s in all would outlast the job
        gh.issue(number)
    assert gh.waits == [400.0]


@pytest.mark.parametrize("reset", ["past", "not-a-number", ""])
def test_a_rate_limit_whose_reset_is_past_or_unreadable_is_not_hammered(
    fake_github: FakeGitHub, reset: str
) -> None:
    """A reset time behind our clock (clock skew) must not turn into immediate retries (GitHub
    may ban an integration that keeps calling while limited), and when the retries run out the
    error is the rate limit (exit 6, re-run later), not a bug (exit 1)."""
    import time

    number = fake_github.add_issue(REPO, "x")
    value = str(int(time.time()) - 3600) if reset == "past" else reset
    headers = {"X-RateLimit-Remaining": "0", "X-RateLimit-Reset": value}
    for _ in range(8):
        fake_github.fail_next(403, headers, "API rate limit exceeded for installation.")
    gh = client(fake_github, max_retries=5, max_wait=600)
    with pytest.raises(RateLimited) as info:
        gh.issue(number)
    assert info.value.exit_code == 6 and "rate limited" in info.value.message
    waits = gh.waits
    assert waits and all(w >= 1 for w in waits) and sum(waits) <= 600


def test_an_unreachable_api_or_one_failing_for_good_is_an_environment_fault(
    fake_github: FakeGitHub,
) -> None:
    """A closed port (the network) and 5xx on every retry (GitHub down) are the environment's
    fault: exit 6 (re-run later), not exit 1 (a bug).  Still GitHubErrors, so the bot answers
    them like the others."""
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # closed once the block ends
    gh = client(fake_github, api_url=f"http://127.0.0.1:{port}", max_retries=2)
    with pytest.raises(GitHubError) as info:
        gh.issue(1)
    assert info.value.exit_code == 6 and "ConnectionError" in info.value.message
    number = fake_github.add_issue(REPO, "x")
    for _ in range(3):
        fake_github.fail_next(503)
    with pytest.raises(GitHubError) as info:
        client(fake_github, max_retries=2).issue(number)
    assert info.value.exit_code == 6 and "503" in info.value.message
    fake_github.fail_next(404)
    with pytest.raises(GitHubError) as info:
        client(fake_github).issue(number)
    assert info.value.exit_code == 6  # an answer retrying cannot change: still not a bug
