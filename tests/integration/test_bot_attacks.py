"""Hostile input to the cherry-pick bot, through the real flow (a bare origin, the fake GitHub
holding GitHub's documented limits): every attack either is refused with one reply or changes
nothing; no reply or pull request body the bot writes can be made longer than GitHub accepts."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from relforge.bot.handler import CommentStatus
from relforge.forges.github import GitHubError
from tests.botworld import REPO, World, api_commit, pull_event
from tests.fakegithub_routes import BODY_LIMIT
from tests.gitrepos import git

PICK = "@relforge-bot cherry-pick --onto release/2.9 -c docs"


def test_thousands_of_extra_command_lines_still_get_one_reply(world: World) -> None:
    """GitHub takes comments of up to 65536 characters: enough for ~3000 command lines, each of
    which the note on ignored commands used to list (a reply GitHub refused with 422)."""
    pr, _ = world.land("Fix the answer", {"src/lib.py": "def answer():\n    return 42\n"})
    line = "@relforge-bot help\n"
    body = line * (BODY_LIMIT // len(line))
    assert len(body) <= BODY_LIMIT
    outcome = world.handle(body, number=pr)
    assert outcome.status is CommentStatus.HELP and outcome.posted
    [reply] = world.fake.comments_on(REPO, pr)
    assert len(reply) <= BODY_LIMIT
    assert "ignored line 2" in reply and "more" in reply


@pytest.mark.parametrize("draft", [False, True])
def test_a_pick_that_conflicts_in_thousands_of_files_is_still_reported(
    world: World, draft: bool
) -> None:
    """A codemod conflicts in 2000 files: the reply and the draft PR's body list a bounded
    number of them (GitHub refuses bodies over 65536 characters: the draft PR was pushed, then
    never opened)."""
    names = [f"src/generated/module_number_{i:05}.py" for i in range(2000)]
    clone = world.repos.clone
    git(clone, "checkout", "-q", "release/2.9")
    world.repos.commit("release side", dict.fromkeys(names, "release = 1\n"))
    git(clone, "push", "-q", "origin", "release/2.9")
    git(clone, "checkout", "-q", "main")
    pr, _ = world.land("Codemod", dict.fromkeys(names, "main = 1\n"))
    outcome = world.handle(PICK, number=pr, draft_on_conflict=draft)
    assert outcome.status is CommentStatus.HANDLED and outcome.posted, outcome.reason
    [reply] = world.fake.comments_on(REPO, pr)
    assert len(reply) <= BODY_LIMIT and "module_number_00000.py" in reply
    assert "more" in reply
    if draft:
        [new] = world.new_pulls()
        assert new["draft"] and len(new["body"]) <= BODY_LIMIT
        assert "module_number_00000.py" in new["body"] and "2000 files" in new["body"]


def _comment_as(world: World, number: int, user: str, body: str) -> None:
    r = world.fake.repo(REPO)
    r.comments.setdefault(number, []).append(
        {"id": r.new_id(), "body": body, "user": {"login": user, "type": "User"}, "html_url": "u"}
    )


def test_a_forged_tracker_entry_does_not_keep_a_pick_off_the_tracker(world: World) -> None:
    """Anyone can comment on the (public) release tracker.  Entries naming the next pull
    request numbers, posted ahead, must not make the bot think its pick is recorded there: the
    release manager would never see the pick."""
    pr, _ = world.land("Fix the answer", {"src/lib.py": "def answer():\n    return 42\n"})
    tracker = world.trackers["2.9"]
    web = world.fake.web
    upcoming = "".join(f"* {web}/{REPO}/pull/{n}\n" for n in range(pr, pr + 50))
    _comment_as(world, tracker, "mallory", f"Link to release branch PR:\n{upcoming}")
    outcome = world.handle(PICK, number=pr)
    assert outcome.status is CommentStatus.HANDLED and outcome.posted
    [new] = world.new_pulls()
    records = world.fake.comments_on(REPO, tracker)
    assert len(records) == 2 and f"* {new['html_url']}\n" in records[1]
    assert "recorded on the release tracker" in world.fake.comments_on(REPO, pr)[0]


def test_a_maintainers_own_tracker_entry_is_not_duplicated(world: World) -> None:
    pr, _ = world.land("Fix the answer", {"src/lib.py": "def answer():\n    return 42\n"})
    tracker = world.trackers["2.9"]
    entry = f"Link to release branch PR:\n* {world.fake.web}/{REPO}/pull/{pr + 1}\n"
    _comment_as(world, tracker, "maintainer", entry)  # recorded by hand, ahead of the bot
    outcome = world.handle(PICK, number=pr)
    assert outcome.posted
    [new] = world.new_pulls()
    assert new["number"] == pr + 1
    assert len(world.fake.comments_on(REPO, tracker)) == 1
    assert "already recorded on the release tracker" in world.fake.comments_on(REPO, pr)[0]


@pytest.mark.parametrize(
    "link",
    [
        "https://evil.example/acme/widget/issues/7",  # shaped like an issue, on another host
        "https://github.example.evil.example/acme/widget/issues/7",
    ],
)
def test_fixes_must_link_to_the_repositorys_own_github(world: World, link: str) -> None:
    """The --fixes link goes into the pick PR and the release tracker as "the issue it fixes":
    a link to another host is no GitHub issue (and a phishing link in the tracker)."""
    pr, _ = world.land("Fix the answer", {"src/lib.py": "def answer():\n    return 42\n"})
    heads = world.remote_heads()
    command = f"@relforge-bot cherry-pick --onto release/2.9 -c regression --fixes {link}"
    outcome = world.handle(command, number=pr)
    assert outcome.status is CommentStatus.REFUSED
    assert world.remote_heads() == heads and world.new_pulls() == []
    [reply] = world.fake.comments_on(REPO, pr)
    assert "--fixes" in reply and "github.example" in reply


def test_fixes_may_link_to_another_repository_on_the_same_github(world: World) -> None:
    pr, _ = world.land("Fix the answer", {"src/lib.py": "def answer():\n    return 42\n"})
    link = "https://github.example/upstream/lib/issues/3"
    command = f"@relforge-bot cherry-pick --onto release/2.9 -c regression --fixes {link}"
    outcome = world.handle(command, number=pr)
    assert outcome.status is CommentStatus.HANDLED and outcome.posted
    [new] = world.new_pulls()
    assert f"Linked issue: {link}" in new["body"]


def test_a_revert_merged_into_one_release_branch_is_not_propagated_to_the_others(
    world: World,
) -> None:
    """GitHub's Revert button on the 2.9 pick PR opens `Revert "[release/2.9] Fix"` against
    release/2.9.  Merged, it undoes the fix on 2.9 only: the bot must not open a revert of the
    2.8 pick too (it matched the 2.9 pick's patch-id on release/2.8)."""
    world.on_release("release/2.8", "commit", "-q", "--allow-empty", "-m", "2.8 only")
    pr, _ = world.land("Fix the answer", {"src/lib.py": "def answer():\n    return 42\n"})
    world.handle(
        "@relforge-bot cherry-pick --onto release/2.8 --onto release/2.9 -c docs", number=pr
    )
    heads = world.remote_heads()
    for line in ("2.8", "2.9"):  # both pick PRs merged
        pick = heads[f"refs/heads/cherry-pick/{pr}-onto-release-{line}"]
        git(world.repos.origin, "update-ref", f"refs/heads/release/{line}", pick)
    clone = world.repos.clone
    git(clone, "fetch", "-q", "origin")
    git(clone, "checkout", "-q", "-B", "release/2.9", "origin/release/2.9")
    git(clone, "revert", "--no-edit", "HEAD")
    git(clone, "push", "-q", "origin", "release/2.9")
    revert = git(clone, "rev-parse", "HEAD")
    git(clone, "checkout", "-q", "main")
    before = world.remote_heads()
    pulls = len(world.new_pulls())
    number = world.fake.add_pull(
        REPO,
        'Revert "[release/2.9] Fix the answer"',
        head="revert-2.9-pick",
        base="release/2.9",
        merged=True,
        merge_commit_sha=revert,
        commits=[api_commit(world.repos.clone, revert)],
    )
    outcome = world.dispatch("pull_request", pull_event("closed", number=number, sender="owner"))
    assert outcome.status is CommentStatus.IGNORED, outcome.reply
    assert world.remote_heads() == before and len(world.new_pulls()) == pulls
    assert world.fake.comments_on(REPO, number) == []
    # Asked for by command on that PR: refused with the reason, nothing pushed.
    asked = world.handle("@relforge-bot revert --onto release/2.8", number=number)
    o = world.repos.origin
    for ref in ("release/2.8", "release/2.9~1"):
        print(
            "PID",
            ref,
            subprocess.run(
                f"git -C {o} show {ref} | git patch-id --stable",
                shell=True,
                capture_output=True,
                text=True,
            ).stdout,
        )
    assert asked.status is CommentStatus.REFUSED and world.remote_heads() == before
    assert "release/2.9" in (asked.reply or "")


def test_5xx_after_saved_patches_neither_double_the_update_nor_lose_the_milestone(
    world: World,
) -> None:
    """The re-run that succeeds edits the earlier error reply and sets the milestone (PATCHes);
    GitHub saves both and answers 502.  The PATCHes are sent again: one update line, the
    milestone set, one success reply."""
    milestone = world.fake.add_milestone(REPO, "2.9.1")
    pr, _ = world.land("Fix the answer", {"src/lib.py": "def answer():\n    return 42\n"})
    world.fake.fail_when("POST", r"/pulls", 403, "Resource not accessible by integration")
    with pytest.raises(GitHubError):
        world.handle(PICK, number=pr, comment_id=91)
    world.fake.fail_after_saving("PATCH", r"/issues/comments/\d+", 502)
    world.fake.fail_after_saving("PATCH", r"/issues/\d+", 502)
    again = world.handle(PICK, number=pr, comment_id=91)
    assert again.status is CommentStatus.HANDLED and again.posted
    error, success = world.fake.comments_on(REPO, pr)
    assert error.count("**Update:**") == 1 and "opened pull request" in success
    [new] = world.new_pulls()
    assert (new["milestone"] or {}).get("number") == milestone


def test_a_full_or_read_only_temporary_disk_is_answered_not_silent(
    world: World, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The pick is tried in a worktree under $TMPDIR; on a runner whose disk is read-only (or
    full) the requester is told (an environment fault, @mentioned), nothing is pushed."""
    import subprocess
    import tempfile

    pr, _ = world.land("Fix the answer", {"src/lib.py": "def answer():\n    return 42\n"})
    ro = tmp_path / "tmp-ro"
    ro.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k,ro", "tmpfs", str(ro)], check=True)
    try:
        monkeypatch.setattr(tempfile, "tempdir", str(ro))
        heads = world.remote_heads()
        outcome = world.handle(PICK, number=pr)
    finally:
        subprocess.run(["umount", "-l", str(ro)], check=False)
    assert outcome.status is CommentStatus.REFUSED and outcome.posted
    assert world.remote_heads() == heads and world.new_pulls() == []
    [reply] = world.fake.comments_on(REPO, pr)
    assert reply.startswith("@alice ") and "environment fault" in reply
    assert "Read-only file system" in reply
