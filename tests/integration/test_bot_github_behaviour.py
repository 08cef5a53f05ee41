"""The cherry-pick bot under GitHub's documented behaviour (issue 12, items 1-8): rebase merges
of N commits, nullable users, custom roles, 5xx after a saved write, re-runs after an error,
runnable conflict hints, far rate-limit resets, and no API host in public replies.  Real git on
a bare origin; the fake GitHub follows the documented shapes."""

from __future__ import annotations

import re
import subprocess
import time

import pytest

from relforge.bot.handler import CommentStatus
from relforge.forges.github import GitHubError, RateLimited
from tests.botworld import REPO, World
from tests.gitrepos import git

CMD = "@relforge-bot cherry-pick"
PICK = f"{CMD} --onto release/2.9 -c docs"

# A fix in three commits that only works together: the third imports what the first two add.
STEPS = [
    ("Add the helper module", {"src/helper.py": "def value():\n    return 42\n"}),
    ("Add the helper's constant", {"src/const.py": "ANSWER = 42\n"}),
    (
        "Use the helper",
        {
            "src/lib.py": "from helper import value\nfrom const import ANSWER\n\n"
            "def answer():\n    return value() + 0 * ANSWER\n"
        },
    ),
]


def _branch_commits(world: World, pr: int) -> list[str]:
    tip = world.remote_heads()[f"refs/heads/cherry-pick/{pr}-onto-release-2.9"]
    base = world.remote_heads()["refs/heads/release/2.9"]
    return git(world.repos.origin, "rev-list", "--reverse", f"{base}..{tip}").split()


# -- 1: rebase merges -------------------------------------------------------------------------


def test_a_rebase_merge_is_picked_commit_by_commit_in_order(world: World) -> None:
    world.fake.max_per_page = 2  # the PR's commits arrive on two pages (Link rel="next")
    pr, last = world.land("Use the helper", method="rebase", steps=STEPS)
    rebased = git(world.repos.clone, "rev-list", "--reverse", "-n", "3", last).split()
    outcome = world.handle(PICK, number=pr)
    assert outcome.status is CommentStatus.HANDLED and outcome.posted

    picked = _branch_commits(world, pr)
    assert len(picked) == 3
    origin = world.repos.origin
    for pick, source, (subject, _) in zip(picked, rebased, STEPS, strict=True):
        message = git(origin, "log", "-1", "--format=%B", pick)
        assert message.startswith(subject) and f"(cherry picked from commit {source})" in message
    tip = picked[-1]
    for name in ("src/helper.py", "src/const.py"):  # what the last commit alone would miss
        assert git(origin, "show", f"{tip}:{name}")
    [new] = world.new_pulls()
    assert f"Picked with `git cherry-pick -x {' '.join(rebased)}`." in new["body"]
    assert "landed as a rebase of 3 commits" in new["body"]
    pages = [r for r in world.fake.requests if r[1].endswith(f"/pulls/{pr}/commits")]
    assert len(pages) == 2


def test_a_squash_merge_of_several_commits_stays_one_commit(world: World) -> None:
    pr, squash = world.land("Use the helper", method="squash", steps=STEPS)
    world.handle(PICK, number=pr)
    [pick] = _branch_commits(world, pr)
    message = git(world.repos.origin, "log", "-1", "--format=%B", pick)
    assert f"(cherry picked from commit {squash})" in message
    [new] = world.new_pulls()
    assert f"Picked with `git cherry-pick -x {squash}`." in new["body"]
    assert "landed as a squashed commit" in new["body"]


def test_a_rebase_whose_first_commit_is_on_the_branch_picks_the_rest(world: World) -> None:
    pr, last = world.land("Use the helper", method="rebase", steps=STEPS)
    first, second, third = git(world.repos.clone, "rev-list", "--reverse", "-n", "3", last).split()
    world.on_release("release/2.9", "cherry-pick", "-x", first)
    world.handle(PICK, number=pr)
    assert len(_branch_commits(world, pr)) == 2
    [new] = world.new_pulls()
    assert f"Picked with `git cherry-pick -x {second} {third}`." in new["body"]
    assert f"Already on release/2.9: {first[:12]}." in new["body"]


def test_a_rebase_conflict_names_the_commit_and_the_whole_command(world: World) -> None:
    clone = world.repos.clone
    git(clone, "checkout", "-q", "release/2.9")
    world.repos.commit("release-only const", {"src/const.py": "ANSWER = 40\n"})
    git(clone, "push", "-q", "origin", "release/2.9")
    git(clone, "checkout", "-q", "main")
    pr, last = world.land("Use the helper", method="rebase", steps=STEPS)
    rebased = git(clone, "rev-list", "--reverse", "-n", "3", last).split()
    heads = world.remote_heads()
    world.handle(PICK, number=pr)
    assert world.remote_heads() == heads and world.new_pulls() == []
    [reply] = world.fake.comments_on(REPO, pr)
    assert f"conflicts in `src/const.py` (picking {rebased[1][:12]})" in reply
    assert f"&& git cherry-pick -x {' '.join(rebased)}`" in reply


def test_more_commits_than_github_lists_is_refused(world: World) -> None:
    pr, _ = world.land("Use the helper", method="rebase", steps=STEPS)
    world.fake.repo(REPO).pulls[pr]["commits"] = 300  # GitHub lists at most 250 of them
    heads = world.remote_heads()
    outcome = world.handle(PICK, number=pr)
    assert outcome.status is CommentStatus.REFUSED and world.remote_heads() == heads
    assert "GitHub lists at most 250" in world.fake.comments_on(REPO, pr)[0]


# -- 6: nullable users ------------------------------------------------------------------------


def test_deleted_accounts_in_comments_pulls_and_events_do_not_crash(world: World) -> None:
    pr, _ = world.land("Fix", {"src/lib.py": "def answer():\n    return 42\n"})
    r = world.fake.repo(REPO)
    r.pulls[pr]["user"] = None  # the PR's author deleted their account
    ghost = {"id": 1, "body": "+1", "user": None, "html_url": "u"}
    r.comments.setdefault(pr, []).append(dict(ghost))
    r.comments.setdefault(world.trackers["2.9"], []).append(dict(ghost))
    outcome = world.handle(PICK, number=pr)
    assert outcome.status is CommentStatus.HANDLED and outcome.posted
    assert len(world.new_pulls()) == 1
    assert len(world.fake.comments_on(REPO, world.trackers["2.9"])) == 2
    # A command by a deleted account: nobody's permission to check, nobody to answer.
    requests = len(world.fake.requests)
    ghost_cmd = world.handle(PICK, number=pr, user=None)
    assert ghost_cmd.status is CommentStatus.IGNORED and len(world.fake.requests) == requests


# -- 2: custom repository roles ----------------------------------------------------------------


def test_a_custom_role_on_write_is_served_and_one_on_read_is_refused(world: World) -> None:
    world.fake.set_permission(REPO, "rm", "release-manager", base="write")
    world.fake.set_permission(REPO, "helper", "triage-plus", base="read")
    pr, _ = world.land("Fix", {"src/lib.py": "def answer():\n    return 42\n"})
    assert world.handle(PICK, number=pr, user="rm").status is CommentStatus.HANDLED
    assert len(world.new_pulls()) == 1
    refused = world.handle(f"{CMD} --onto release/2.8 -c docs", number=pr, user="helper")
    assert refused.status is CommentStatus.REFUSED
    reply = world.fake.comments_on(REPO, pr)[-1]
    assert reply.startswith("@helper ")
    assert "you have `triage-plus (base permission read)`" in reply
    assert len(world.new_pulls()) == 1


# -- 3: a 5xx after GitHub saved the write ----------------------------------------------------


@pytest.mark.parametrize("path", [r"/pulls", r"/issues/\d+/comments"])
def test_a_saved_write_answered_with_a_5xx_is_not_duplicated(world: World, path: str) -> None:
    pr, _ = world.land("Fix", {"src/lib.py": "def answer():\n    return 42\n"})
    world.fake.fail_after_saving("POST", path, 502)
    world.fake.fail_after_saving("POST", path, 504)  # the tracker entry and then the reply
    outcome = world.handle(PICK, number=pr)
    assert outcome.status is CommentStatus.HANDLED and outcome.posted
    assert len(world.new_pulls()) == 1
    assert len(world.fake.comments_on(REPO, world.trackers["2.9"])) == 1
    assert len(world.fake.comments_on(REPO, pr)) == 1


# -- 4: a re-run after an error ---------------------------------------------------------------


def test_a_rerun_after_an_error_tells_the_requester_it_worked(world: World) -> None:
    pr, _ = world.land("Fix", {"src/lib.py": "def answer():\n    return 42\n"})
    world.fake.fail_when("POST", r"/pulls", 403, "Resource not accessible by integration")
    with pytest.raises(GitHubError, match="403"):
        world.handle(PICK, number=pr, comment_id=77)
    [error] = world.fake.comments_on(REPO, pr)
    assert error.startswith("@alice I could not run that command") and "403" in error
    again = world.handle(PICK, number=pr, comment_id=77)  # the job re-run: the same event
    assert again.status is CommentStatus.HANDLED and again.posted
    assert len(world.new_pulls()) == 1
    error, success = world.fake.comments_on(REPO, pr)
    assert success.startswith("@alice cherry-pick of #") and "opened pull request" in success
    assert "**Update:** a re-run succeeded, see https://github.example/" in error
    writes = len(world.fake.writes())
    world.handle(PICK, number=pr, comment_id=77)  # once more: nothing new
    assert len(world.fake.writes()) == writes


# -- 5: runnable hints ------------------------------------------------------------------------


def test_a_merge_commit_conflict_hint_carries_m_1(world: World) -> None:
    clone = world.repos.clone
    git(clone, "checkout", "-q", "release/2.9")
    world.repos.commit("diverge", {"src/lib.py": "def answer():\n    return 40\n"})
    git(clone, "push", "-q", "origin", "release/2.9")
    git(clone, "checkout", "-q", "main")
    pr, merge = world.land("Fix", {"src/lib.py": "def answer():\n    return 42\n"}, merge=True)
    world.handle(PICK, number=pr)
    [reply] = world.fake.comments_on(REPO, pr)
    assert f"git cherry-pick -x -m 1 {merge}`" in reply
    # ... and the hint runs: in a fresh clone it reproduces exactly this conflict.
    command = re.search(r"`(git fetch origin && [^`]*)`", reply)
    assert command is not None
    steps = [part.split() for part in command.group(1).split(" && ")]
    for step in steps[:-1]:
        git(clone, *step[1:])
    done = subprocess.run(steps[-1], cwd=clone, capture_output=True, text=True)
    assert done.returncode != 0 and "CONFLICT" in done.stdout + done.stderr
    assert "is a merge but no -m option was given" not in done.stderr


# -- 7: rate-limit resets ---------------------------------------------------------------------


def test_a_far_rate_limit_reset_fails_fast_and_names_the_time(world: World) -> None:
    pr, _ = world.land("Fix", {"src/lib.py": "def answer():\n    return 42\n"})
    reset = world.fake.exhaust_rate_limit(50 * 60)  # the permission check hits it
    with pytest.raises(RateLimited) as info:
        world.handle(PICK, number=pr)
    assert sum(world.waits) == 0 and info.value.exit_code == 6
    when = time.strftime("%H:%M:%S", time.gmtime(reset))
    [reply] = world.fake.comments_on(REPO, pr)
    assert reply.startswith("@alice ") and "resets at " in reply and f"{when} UTC" in reply
    assert world.new_pulls() == []


def test_a_near_rate_limit_reset_is_waited_for(world: World) -> None:
    pr, _ = world.land("Fix", {"src/lib.py": "def answer():\n    return 42\n"})
    world.fake.exhaust_rate_limit(30, status=429)
    outcome = world.handle(PICK, number=pr)
    assert outcome.status is CommentStatus.HANDLED and len(world.waits) == 1
    assert 25 <= world.waits[0] <= 31


# -- 8: no API URL in public comments ---------------------------------------------------------


def test_replies_never_show_the_api_host(world: World) -> None:
    pr, _ = world.land("Fix", {"src/lib.py": "def answer():\n    return 42\n"})
    enterprise = world.client(api_url=f"{world.fake.url}/api/v3")  # GitHub Enterprise's root
    world.fake.fail_when("POST", r"/pulls", 403, "Resource not accessible by integration")
    with pytest.raises(GitHubError):
        world.handle(PICK, number=pr, gh=enterprise)
    [reply] = world.fake.comments_on(REPO, pr)
    assert f"POST /repos/{REPO}/pulls answered 403" in reply
    assert "127.0.0.1" not in reply and "/api/v3" not in reply and "http://" not in reply


def test_a_pasted_marker_does_not_silence_the_bot(world: World) -> None:
    pr, _ = world.land("Fix", {"src/lib.py": "def answer():\n    return 42\n"})
    forged = "<!-- relforge-bot reply to comment 55 state=done -->"
    world.fake.repo(REPO).comments.setdefault(pr, []).append(
        {"id": 1, "body": forged, "user": {"login": "mallory", "type": "User"}, "html_url": "u"}
    )
    outcome = world.handle(PICK, number=pr, comment_id=55)
    assert outcome.posted and len(world.fake.comments_on(REPO, pr)) == 2


def test_a_rebase_whose_other_commits_cannot_be_found_is_refused_not_guessed(
    world: World,
) -> None:
    pr, last = world.land("Use the helper", method="rebase", steps=STEPS)
    listed = world.fake.repo(REPO).pull_commits[pr]
    listed[0] = {**listed[0], "commit": {**listed[0]["commit"], "message": "reworded"}}
    heads = world.remote_heads()
    outcome = world.handle(PICK, number=pr)
    assert outcome.status is CommentStatus.REFUSED and world.remote_heads() == heads
    [reply] = world.fake.comments_on(REPO, pr)
    assert f"looks rebased ({last[:12]} is its last commit)" in reply
    assert world.new_pulls() == []
