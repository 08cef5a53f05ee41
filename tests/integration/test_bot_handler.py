"""The cherry-pick bot's event handler on real git repositories and the fake GitHub."""

from __future__ import annotations

from pathlib import Path

import pytest

from relforge.bot.dispatch import dispatch
from relforge.bot.handler import BotSettings, CommentStatus
from relforge.errors import ConfigError
from relforge.forges.github import GitHubError
from tests.botworld import FIXES, REPO, World, comment_event
from tests.gitrepos import git

CMD = "@relforge-bot cherry-pick"


def test_clean_pick_of_a_merge_commit_onto_one_branch(world: World) -> None:
    pr, merge = world.land(
        "Fix the answer", {"src/lib.py": "def answer():\n    return 42\n"}, merge=True
    )
    release_before = world.remote_heads()["refs/heads/release/2.9"]
    body = f"Thanks!\n{CMD} --onto release/2.9 --fixes {FIXES} -c regression\nmore text"
    outcome = world.handle(body, number=pr)
    assert outcome.status is CommentStatus.HANDLED and outcome.posted

    heads = world.remote_heads()
    branch = f"cherry-pick/{pr}-onto-release-2.9"
    pick = heads[f"refs/heads/{branch}"]
    origin = world.repos.origin
    assert git(origin, "rev-parse", f"{pick}^") == release_before  # on top of the release branch
    assert git(origin, "rev-list", "--count", "--merges", f"{release_before}..{pick}") == "0"
    assert f"(cherry picked from commit {merge})" in git(origin, "log", "-1", "--format=%B", pick)
    assert git(origin, "show", f"{pick}:src/lib.py") == "def answer():\n    return 42"
    assert heads["refs/heads/release/2.9"] == release_before  # the release branch is untouched

    [new] = world.new_pulls()
    assert new["title"] == "[release/2.9] Fix the answer"
    assert new["base"]["ref"] == "release/2.9" and new["head"]["ref"] == branch
    assert not new["draft"]
    assert f"#{pr}" in new["body"] and "Requested by @alice" in new["body"]
    assert f"Picked with `git cherry-pick -x -m 1 {merge}`." in new["body"]

    source_url = f"{world.fake.web}/{REPO}/pull/{pr}"
    [record] = world.fake.comments_on(REPO, world.trackers["2.9"])
    assert record == (
        "Link to landed trunk PR (if applicable):\n"
        f"* {source_url}\n"
        "\n"
        "Link to release branch PR:\n"
        f"* {new['html_url']}\n"
        "\n"
        "Criteria Category:\n"
        f"Regression - {FIXES}"
    )
    for decoy in ("2.91", "2.9-closed", "2.9-unlabelled", "2.8"):
        assert world.fake.comments_on(REPO, world.trackers[decoy]) == []

    [reply] = world.fake.comments_on(REPO, pr)
    assert reply.startswith("@alice cherry-pick of #")
    assert new["html_url"] in reply and "#issuecomment-" in reply
    # The bot's clone keeps no branch and no worktree of its own.
    assert git(world.bot_clone, "branch", "--format=%(refname:short)") == "main"
    assert len(git(world.bot_clone, "worktree", "list").splitlines()) == 1


def test_clean_pick_onto_two_branches(world: World) -> None:
    pr, fix = world.land("Fix docs typo", {"README": "widget, fixed\n"})
    outcome = world.handle(f"{CMD} --onto release/2.8 --onto=release/2.9 -c docs", number=pr)
    assert outcome.status is CommentStatus.HANDLED
    heads = world.remote_heads()
    for version in ("2.8", "2.9"):
        pick = heads[f"refs/heads/cherry-pick/{pr}-onto-release-{version}"]
        assert git(world.repos.origin, "show", f"{pick}:README") == "widget, fixed"
        assert f"(cherry picked from commit {fix})" in git(
            world.repos.origin, "log", "-1", "--format=%B", pick
        )
    pulls = {p["base"]["ref"]: p for p in world.new_pulls()}
    assert sorted(pulls) == ["release/2.8", "release/2.9"]
    assert pulls["release/2.8"]["title"] == "[release/2.8] Fix docs typo"
    # "[v.2.8.0] Release Tracker" is the 2.8 tracker too; docs needs no --fixes.
    [record_28] = world.fake.comments_on(REPO, world.trackers["2.8"])
    [record_29] = world.fake.comments_on(REPO, world.trackers["2.9"])
    assert record_28.endswith("Criteria Category:\nDocs")
    assert pulls["release/2.8"]["html_url"] in record_28
    assert pulls["release/2.9"]["html_url"] in record_29
    [reply] = world.fake.comments_on(REPO, pr)
    assert reply.count("opened pull request") == 2


@pytest.mark.parametrize(
    ("user", "permission"), [("mallory", None), ("reader", "read"), ("tri", "triage")]
)
def test_commenter_without_write_permission_is_refused(
    world: World, user: str, permission: str | None
) -> None:
    if permission:
        world.fake.set_permission(REPO, user, permission)
    pr, _ = world.land("Fix", {"src/lib.py": "x\n"})
    heads = world.remote_heads()
    outcome = world.handle(f"{CMD} --onto release/2.9 -c docs", number=pr, user=user)
    assert outcome.status is CommentStatus.REFUSED
    [reply] = world.fake.comments_on(REPO, pr)
    assert reply.startswith(f"@{user} ") and "need write permission" in reply
    assert f"you have `{permission or 'none'}" in reply
    assert world.remote_heads() == heads and world.new_pulls() == []
    assert [w[1] for w in world.fake.writes()] == [f"/repos/{REPO}/issues/{pr}/comments"]


INJECTIONS = [
    "--onto 'release/2.9; rm -rf /' -c docs",
    "--onto release/2.9$(touch CANARY) -c docs",
    "--onto 'release/2.9`touch CANARY`' -c docs",
    '--onto "release/2.9\n" -c docs',  # a newline inside quotes: the quote never closes
    "--onto release/2.9\n-c docs",  # only the first line counts: -c is missing
    "--onto release/2.9 -c 'docs; touch CANARY'",
    "--onto release/2.9 -c $(touch CANARY)",
    "--onto release/2.9 -c regression --fixes 'https://github.com/a/b/issues/1\"; touch CANARY'",
    "--onto release/2.9 -c regression --fixes https://github.com/a/b/issues/1'$(touch CANARY)'",
    "--onto release/2.9 -c regression --fixes 'https://github.com/a/b/issues/1?q=`touch CANARY`'",
    '--onto release/2.9 -c regression --fixes "https://github.com/a/b/issues/1\'"',
    "--onto release/2.9 -c regression --fixes http://github.com/a/b/issues/1",
    "--onto release/2.9 -c regression --fixes javascript:alert(1)",
    "--onto release/2.9 -c regression --fixes https://user@github.com/a/b/issues/1",
    "--onto release/2.9 -c regression --fixes https://github.com/a/../issues/1",
    "--onto release/2.9 -c regression",  # regression needs --fixes
    "--onto release/2.9 --onto release/2.9 -c docs",
    "--onto release/2.09 -c docs",
    "--onto release/2.9.1 -c docs",
    "--onto release/２.９ -c docs",
    "--onto main -c docs",
    "--onto release/2.9 -c docs --force",
    "--onto release/2.9 -c docs -c release",
    "--onto release/2.9 -c hotfix",
    "--onto",
    "",
]


@pytest.mark.parametrize("args", INJECTIONS)
def test_malformed_commands_and_injections_are_answered_with_usage(
    world: World, tmp_path: Path, args: str
) -> None:
    canary = tmp_path / "canary"
    pr, _ = world.land("Fix", {"src/lib.py": "x\n"})
    heads = world.remote_heads()
    body = f"{CMD} {args}".replace("CANARY", str(canary))
    outcome = world.handle(body, number=pr)
    assert outcome.status is CommentStatus.REFUSED
    [reply] = world.fake.comments_on(REPO, pr)
    assert reply.startswith("@alice I could not run that command:\n\n```text\nusage error: ")
    assert "usage: @relforge-bot cherry-pick --onto release/X.Y" in reply
    assert not canary.exists()
    assert world.remote_heads() == heads and world.new_pulls() == []
    assert git(world.bot_clone, "branch", "--format=%(refname:short)") == "main"


def test_unknown_release_branch_is_answered_with_the_existing_ones(world: World) -> None:
    pr, _ = world.land("Fix", {"src/lib.py": "x\n"})
    outcome = world.handle(f"{CMD} --onto release/2.10 -c docs", number=pr)
    assert outcome.status is CommentStatus.REFUSED
    [reply] = world.fake.comments_on(REPO, pr)
    assert "release/2.10 does not exist on origin" in reply
    assert "release branches: release/2.8, release/2.9" in reply


def test_conflict_aborts_and_lists_the_files(world: World) -> None:
    _diverge(world)  # release/2.9 changed src/lib.py its own way
    pr, fix = world.land(
        "Fix both", {"src/lib.py": "def answer():\n    return 42\n", "README": "new\n"}
    )
    heads = world.remote_heads()
    outcome = world.handle(f"{CMD} --onto release/2.9 --onto release/2.8 -c docs", number=pr)
    assert outcome.status is CommentStatus.HANDLED
    [reply] = world.fake.comments_on(REPO, pr)
    line_29 = next(line for line in reply.splitlines() if line.startswith("- release/2.9"))
    assert "conflicts in `src/lib.py`" in line_29 and "aborted and nothing was pushed" in line_29
    assert (
        f"`git fetch origin && git switch -c cherry-pick/{pr}-onto-release-2.9 origin/release/2.9"
        f" && git cherry-pick -x {fix}`" in line_29
    )
    # release/2.8 picks cleanly and goes ahead; release/2.9 gets no branch and no PR.
    new_heads = world.remote_heads()
    assert f"refs/heads/cherry-pick/{pr}-onto-release-2.9" not in new_heads
    assert f"refs/heads/cherry-pick/{pr}-onto-release-2.8" in new_heads
    assert [p["base"]["ref"] for p in world.new_pulls()] == ["release/2.8"]
    assert world.fake.comments_on(REPO, world.trackers["2.9"]) == []
    assert new_heads["refs/heads/release/2.9"] == heads["refs/heads/release/2.9"]
    assert len(git(world.bot_clone, "worktree", "list").splitlines()) == 1
    assert git(world.bot_clone, "status", "--porcelain") == ""


def test_conflict_can_open_a_draft_pull_request(world: World) -> None:
    _diverge(world)
    pr, fix = world.land("Fix", {"src/lib.py": "def answer():\n    return 42\n"})
    outcome = world.handle(f"{CMD} --onto release/2.9 -c docs", number=pr, draft_on_conflict=True)
    assert outcome.status is CommentStatus.HANDLED
    pick = world.remote_heads()[f"refs/heads/cherry-pick/{pr}-onto-release-2.9"]
    content = git(world.repos.origin, "show", f"{pick}:src/lib.py")
    assert "<<<<<<<" in content and ">>>>>>>" in content  # committed as is, never resolved
    assert f"(cherry picked from commit {fix})" in git(
        world.repos.origin, "log", "-1", "--format=%B", pick
    )
    [draft] = world.new_pulls()
    assert draft["draft"] and "**This pick has conflicts**" in draft["body"]
    [reply] = world.fake.comments_on(REPO, pr)
    assert "opened draft pull request" in reply and "`src/lib.py`" in reply


def _diverge(world: World) -> None:
    clone = world.repos.clone
    git(clone, "checkout", "-q", "release/2.9")
    world.repos.commit("release-only change", {"src/lib.py": "def answer():\n    return 40\n"})
    git(clone, "push", "-q", "origin", "release/2.9")
    git(clone, "checkout", "-q", "main")


def test_already_applied_is_answered_without_a_pull_request(world: World) -> None:
    pr, fix = world.land("Fix", {"src/lib.py": "def answer():\n    return 42\n"})
    world.on_release("release/2.9", "cherry-pick", "-x", fix)
    world.on_release("release/2.8", "commit", "-q", "--allow-empty", "-m", "2.8 only")
    world.on_release("release/2.8", "cherry-pick", fix)  # without -x: found by patch-id
    outcome = world.handle(f"{CMD} --onto release/2.8 --onto release/2.9 -c docs", number=pr)
    assert outcome.status is CommentStatus.HANDLED
    [reply] = world.fake.comments_on(REPO, pr)
    assert "- release/2.9: already on release/2.9 (commit" in reply
    assert "found by its -x trailer); no pull request opened" in reply
    assert "- release/2.8: already on release/2.8" in reply and "its patch-id" in reply
    assert world.new_pulls() == []
    assert not any(r.startswith("refs/heads/cherry-pick/") for r in world.remote_heads())
    for tracker in ("2.8", "2.9"):
        assert world.fake.comments_on(REPO, world.trackers[tracker]) == []


def test_same_commit_and_an_empty_pick_count_as_applied(world: World) -> None:
    pr, fix = world.land("Fix", {"src/lib.py": "def answer():\n    return 42\n"})
    git(world.repos.clone, "push", "-q", "origin", "main:refs/heads/release/2.10")  # cut after
    clone = world.repos.clone
    git(clone, "checkout", "-q", "release/2.8")  # the same change, made another way
    world.repos.commit("fix too", {"src/lib.py": "def answer():\n    return 42\n", "README": "2\n"})
    git(clone, "push", "-q", "origin", "release/2.8")
    outcome = world.handle(f"{CMD} --onto release/2.10 --onto release/2.8 -c docs", number=pr)
    assert outcome.status is CommentStatus.HANDLED
    [reply] = world.fake.comments_on(REPO, pr)
    assert f"- release/2.10: already on release/2.10 ({fix[:12]} itself is on the branch)" in reply
    assert "- release/2.8: already on release/2.8 (picking it would change nothing)" in reply
    assert world.new_pulls() == []


def test_rerun_reuses_branch_and_pull_request(world: World) -> None:
    pr, _ = world.land("Fix", {"src/lib.py": "def answer():\n    return 42\n"})
    command = f"{CMD} --onto release/2.9 -c docs"
    world.handle(command, number=pr, comment_id=1)
    heads = world.remote_heads()
    writes = len(world.fake.writes())
    again = world.handle(command, number=pr, comment_id=1)  # the same event delivered twice
    assert again.status is CommentStatus.HANDLED and not again.posted
    assert len(world.fake.writes()) == writes and world.remote_heads() == heads
    # The same command in a new comment: reused PR, tracker entry kept, one new reply.
    world.handle(command, number=pr, comment_id=2)
    assert world.remote_heads() == heads
    assert len(world.new_pulls()) == 1
    assert len(world.fake.comments_on(REPO, world.trackers["2.9"])) == 1
    first, second = world.fake.comments_on(REPO, pr)
    assert "opened pull request" in first
    assert "reused pull request" in second and "already recorded on the release tracker" in second


def test_rerun_after_a_crash_between_push_and_pull_request(world: World) -> None:
    pr, fix = world.land("Fix", {"src/lib.py": "def answer():\n    return 42\n"})
    clone = world.repos.clone
    git(clone, "checkout", "-q", "-b", "crashed", "origin/release/2.9")
    git(clone, "cherry-pick", "-x", fix)
    git(clone, "push", "-q", "origin", f"HEAD:refs/heads/cherry-pick/{pr}-onto-release-2.9")
    heads = world.remote_heads()
    world.handle(f"{CMD} --onto release/2.9 -c docs", number=pr)
    assert world.remote_heads() == heads  # not pushed again
    [new] = world.new_pulls()
    assert new["head"]["ref"] == f"cherry-pick/{pr}-onto-release-2.9"
    [reply] = world.fake.comments_on(REPO, pr)
    assert "opened pull request" in reply


def test_a_stale_branch_without_the_pick_is_not_overwritten(world: World) -> None:
    pr, _ = world.land("Fix", {"src/lib.py": "def answer():\n    return 42\n"})
    git(
        world.repos.clone,
        "push",
        "-q",
        "origin",
        f"origin/release/2.9:refs/heads/cherry-pick/{pr}-onto-release-2.9",
    )
    heads = world.remote_heads()
    outcome = world.handle(f"{CMD} --onto release/2.9 -c docs", number=pr)
    assert outcome.status is CommentStatus.REFUSED and world.remote_heads() == heads
    assert "holds no pick of" in world.fake.comments_on(REPO, pr)[0]


def test_a_pull_request_reverted_on_main_is_refused(world: World) -> None:
    pr, fix = world.land("Fix", {"src/lib.py": "def answer():\n    return 42\n"})
    clone = world.repos.clone
    git(clone, "revert", "--no-edit", fix)
    revert = git(clone, "rev-parse", "HEAD")
    git(clone, "push", "-q", "origin", "main")
    heads = world.remote_heads()
    outcome = world.handle(f"{CMD} --onto release/2.9 -c docs", number=pr)
    assert outcome.status is CommentStatus.REFUSED
    [reply] = world.fake.comments_on(REPO, pr)
    assert f"was reverted on main by {revert[:12]} 'Revert \"Fix (#PR)\"'" in reply
    assert world.remote_heads() == heads and world.new_pulls() == []
    # Reverting the revert relands it: the pick is allowed again.
    git(clone, "revert", "--no-edit", revert)
    git(clone, "push", "-q", "origin", "main")
    assert (
        world.handle(f"{CMD} --onto release/2.9 -c docs", number=pr).status is CommentStatus.HANDLED
    )
    assert len(world.new_pulls()) == 1


def test_dry_run_posts_and_pushes_nothing(world: World) -> None:
    pr, _ = world.land("Fix", {"src/lib.py": "def answer():\n    return 42\n"})
    heads = world.remote_heads()
    local = git(world.bot_clone, "for-each-ref")
    outcome = world.handle(
        f"{CMD} --onto release/2.9 --onto release/2.8 -c docs", number=pr, execute=False
    )
    assert outcome.status is CommentStatus.HANDLED and not outcome.posted
    assert outcome.reply is not None and "dry run, nothing was pushed or posted" in outcome.reply
    assert f"would push `cherry-pick/{pr}-onto-release-2.9`" in outcome.reply
    assert f"would record it on the release tracker #{world.trackers['2.9']}" in outcome.reply
    assert world.fake.writes() == []
    assert world.remote_heads() == heads
    assert git(world.bot_clone, "for-each-ref") == local
    assert len(git(world.bot_clone, "worktree", "list").splitlines()) == 1


def test_rate_limits_and_server_errors_are_retried(world: World) -> None:
    pr, _ = world.land("Fix", {"src/lib.py": "def answer():\n    return 42\n"})
    world.fake.fail_next(429, {"Retry-After": "3"})
    world.fake.fail_next(403, {}, "You have exceeded a secondary rate limit")
    world.fake.fail_next(502)
    outcome = world.handle(f"{CMD} --onto release/2.9 -c docs", number=pr)
    assert outcome.status is CommentStatus.HANDLED and len(world.new_pulls()) == 1
    assert world.waits == [3.0, 120.0, 4.0]


def test_github_failing_for_good_is_reported(world: World) -> None:
    pr, _ = world.land("Fix", {"src/lib.py": "def answer():\n    return 42\n"})
    for _ in range(2):  # both attempts at the permission check
        world.fake.fail_next(503)
    with pytest.raises(GitHubError, match="503"):
        world.handle(f"{CMD} --onto release/2.9 -c docs", number=pr, gh=world.client(max_retries=1))
    # The error reply went out once GitHub answered again.
    [reply] = world.fake.comments_on(REPO, pr)
    assert "I could not run that command" in reply and "503" in reply


def test_what_the_bot_ignores_and_other_refusals(world: World) -> None:
    pr, _ = world.land("Fix", {"src/lib.py": "x\n"})
    ignored = [
        world.handle(f"{CMD} --onto release/2.9 -c docs", number=pr, action="edited"),
        world.handle(f"{CMD} --onto release/2.9 -c docs", number=pr, user_type="Bot"),
        world.handle(f"{CMD} --onto release/2.9 -c docs", number=pr, user="relforge-bot"),
        world.handle(f"please {CMD} --onto release/2.9 -c docs", number=pr),
        world.handle("@relforge-botty cherry-pick --onto release/2.9 -c docs", number=pr),
        world.handle(f"> {CMD} --onto release/2.9 -c docs", number=pr),
    ]
    assert {o.status for o in ignored} == {CommentStatus.IGNORED}
    assert world.fake.requests == []

    assert world.handle("@relforge-bot help", number=pr).status is CommentStatus.HELP
    issue = world.fake.add_issue(REPO, "a bug")
    on_issue = world.handle(
        f"{CMD} --onto release/2.9 -c docs", number=issue, is_pull_request=False
    )
    assert on_issue.status is CommentStatus.REFUSED
    open_pr = world.fake.add_pull(REPO, "not yet", head="wip")
    assert (
        world.handle(f"{CMD} --onto release/2.9 -c docs", number=open_pr).status
        is CommentStatus.REFUSED
    )
    [help_reply] = world.fake.comments_on(REPO, pr)
    assert help_reply.startswith("@alice usage of the cherry-pick bot:")
    assert "works on pull requests" in world.fake.comments_on(REPO, issue)[0]
    assert f"#{open_pr} is not merged" in world.fake.comments_on(REPO, open_pr)[0]
    assert world.new_pulls() == []


def test_no_tracker_for_the_release_is_reported(world: World) -> None:
    world.fake.repo(REPO).issues[world.trackers["2.9"]]["state"] = "closed"
    pr, _ = world.land("Fix", {"src/lib.py": "def answer():\n    return 42\n"})
    world.handle(f"{CMD} --onto release/2.9 -c docs", number=pr)
    assert len(world.new_pulls()) == 1
    [reply] = world.fake.comments_on(REPO, pr)
    assert "no open issue labelled release tracker names 2.9" in reply
    assert world.fake.comments_on(REPO, world.trackers["2.91"]) == []


def test_webhook_dispatch_answers_only_comments_of_the_served_repository(world: World) -> None:
    pr, _ = world.land("Fix", {"src/lib.py": "x\n"})
    body = f"{CMD} --onto release/2.9 -c docs"
    settings = BotSettings(execute=True)
    push = dispatch(
        "push", {"ref": "refs/heads/main"}, git=world.git, github_repo=REPO, settings=settings
    )
    other = dispatch(
        "issue_comment",
        comment_event(body, number=pr, repo="someone/else"),
        git=world.git,
        github_repo=REPO,
        settings=settings,
    )
    assert (push.status, other.status) == (CommentStatus.IGNORED, CommentStatus.IGNORED)
    assert "serving 'acme/widget'" in other.reason and world.fake.requests == []
    with pytest.raises(ConfigError, match="not an issue_comment event payload"):
        dispatch("issue_comment", {"issue": {}}, git=world.git, github_repo=REPO, settings=settings)
