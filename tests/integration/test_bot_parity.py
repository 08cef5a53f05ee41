"""Backport-bot parity (issue 12): the label trigger, milestones, revert propagation, quoted
commands, and an @mention of the requester on every failure.  Real git on a bare origin."""

from __future__ import annotations

import pytest

from relforge.bot.grammar import Category
from relforge.bot.handler import CommentStatus
from tests.botworld import FIXES, REPO, World, pull_event
from tests.gitrepos import git

CMD = "@relforge-bot cherry-pick"
LABEL = "cherry-pick/release-2.9"
FIX = {"src/lib.py": "def answer():\n    return 42\n"}


# -- label trigger ----------------------------------------------------------------------------


def test_a_label_on_a_merged_pr_picks_it_for_whoever_added_it(world: World) -> None:
    pr, _ = world.land("Fix", FIX)
    world.fake.add_label(REPO, pr, LABEL, actor="alice")
    outcome = world.dispatch("pull_request", pull_event("labeled", number=pr, label=LABEL))
    assert outcome.status is CommentStatus.HANDLED and outcome.posted
    [new] = world.new_pulls()
    assert new["base"]["ref"] == "release/2.9"
    assert f"Requested by the label `{LABEL}`, added by @alice." in new["body"]
    [reply] = world.fake.comments_on(REPO, pr)
    assert reply.startswith(f"@alice cherry-pick of #{pr} requested by the label `{LABEL}`")
    [record] = world.fake.comments_on(REPO, world.trackers["2.9"])
    assert record.endswith("Criteria Category:\nRelease")
    # Delivered again (or the workflow re-run): nothing new.
    writes = len(world.fake.writes())
    world.dispatch("pull_request_target", pull_event("labeled", number=pr, label=LABEL))
    assert len(world.fake.writes()) == writes


def test_labels_added_before_the_merge_are_picked_on_merge_by_their_adders(world: World) -> None:
    world.fake.set_permission(REPO, "reader", "read")
    labels = (LABEL, "cherry-pick/release-2.8", "bug")
    pr, _ = world.land("Fix", FIX, labels=labels)
    world.fake.add_label(REPO, pr, LABEL, actor="maintainer")
    world.fake.add_label(REPO, pr, "cherry-pick/release-2.8", actor="reader")
    heads = world.remote_heads()
    # Before the merge: nothing happens.
    early = world.dispatch(
        "pull_request", pull_event("labeled", number=pr, label=LABEL, merged=False)
    )
    assert early.status is CommentStatus.IGNORED and world.fake.writes() == []
    merged = pull_event("closed", number=pr, labels=labels, sender="owner")
    outcome = world.dispatch("pull_request", merged)
    assert outcome.status is CommentStatus.REFUSED  # one of the two was refused
    assert [p["base"]["ref"] for p in world.new_pulls()] == ["release/2.9"]
    assert f"refs/heads/cherry-pick/{pr}-onto-release-2.8" not in world.remote_heads()
    assert world.remote_heads()["refs/heads/release/2.8"] == heads["refs/heads/release/2.8"]
    replies = world.fake.comments_on(REPO, pr)
    done = next(r for r in replies if "opened pull request" in r)
    refused = next(r for r in replies if "need write permission" in r)
    assert done.startswith("@maintainer ") and f"`{LABEL}`" in done
    assert refused.startswith("@reader the label `cherry-pick/release-2.8` asks for a cherry-pick")


def test_a_label_by_a_deleted_account_or_naming_no_branch_is_refused(world: World) -> None:
    pr, _ = world.land("Fix", FIX)
    world.fake.add_label(REPO, pr, LABEL, actor=None)
    ghost = world.dispatch("pull_request", pull_event("closed", number=pr, labels=(LABEL,)))
    assert ghost.status is CommentStatus.REFUSED and world.new_pulls() == []
    assert "cannot tell who added the label" in world.fake.comments_on(REPO, pr)[0]
    bad = world.dispatch(
        "pull_request", pull_event("labeled", number=pr, label="cherry-pick/release-2.x")
    )
    assert bad.status is CommentStatus.REFUSED
    reply = world.fake.comments_on(REPO, pr)[-1]
    assert reply.startswith("@alice ") and "names no release branch" in reply
    other = world.dispatch("pull_request", pull_event("labeled", number=pr, label="bug"))
    assert other.status is CommentStatus.IGNORED


def test_the_label_prefix_and_category_are_configurable(world: World) -> None:
    pr, _ = world.land("Fix", FIX)
    label = "backport/release-2.9"
    world.fake.add_label(REPO, pr, label, actor="alice")
    ignored = world.dispatch("pull_request", pull_event("labeled", number=pr, label=label))
    assert ignored.status is CommentStatus.IGNORED
    outcome = world.dispatch(
        "pull_request",
        pull_event("labeled", number=pr, label=label),
        label_prefix="backport/",
        label_category=Category.DOCS,
    )
    assert outcome.status is CommentStatus.HANDLED and len(world.new_pulls()) == 1
    [record] = world.fake.comments_on(REPO, world.trackers["2.9"])
    assert record.endswith("Criteria Category:\nDocs")


# -- milestones -------------------------------------------------------------------------------


def test_the_pick_pr_gets_the_release_milestone_else_the_originals(world: World) -> None:
    for title in ("2.8.1", "2.9.2", "2.9.1", "2.10.0"):
        world.fake.add_milestone(REPO, title)
    world.fake.add_milestone(REPO, "2.9.0", state="closed")
    original = world.fake.add_milestone(REPO, "triage")
    git(world.repos.clone, "push", "-q", "origin", "main:refs/heads/release/2.11")
    pr, _ = world.land("Fix", FIX)
    r = world.fake.repo(REPO)
    r.pulls[pr]["milestone"] = r.milestones[original]
    outcome = world.handle(
        f"{CMD} --onto release/2.9 --onto release/2.11 -c regression --fixes {FIXES}", number=pr
    )
    assert outcome.status is CommentStatus.HANDLED
    pulls = {p["base"]["ref"]: p for p in world.new_pulls()}
    assert pulls["release/2.9"]["milestone"]["title"] == "2.9.1"  # the next 2.9 release
    assert pulls["release/2.11"]["milestone"]["title"] == "triage"  # no 2.11 milestone
    assert f"Linked issue: {FIXES}" in pulls["release/2.9"]["body"]
    [reply] = world.fake.comments_on(REPO, pr)
    assert "on milestone `2.9.1`" in reply and "on milestone `triage`" in reply


# -- revert propagation -----------------------------------------------------------------------


def _picked_and_merged(world: World) -> tuple[int, str, str]:
    """A fix picked onto release/2.9 by the bot, the pick PR merged; (PR, fix, pick)."""
    pr, fix = world.land("Fix", FIX)
    world.handle(f"{CMD} --onto release/2.9 -c docs", number=pr)
    pick = world.remote_heads()[f"refs/heads/cherry-pick/{pr}-onto-release-2.9"]
    git(world.repos.origin, "update-ref", "refs/heads/release/2.9", pick)
    return pr, fix, pick


def test_a_revert_on_main_is_propagated_on_merge(world: World) -> None:
    _, fix, pick = _picked_and_merged(world)
    heads = world.remote_heads()
    revert_pr, revert = world.land_revert(fix)
    outcome = world.dispatch("pull_request", pull_event("closed", number=revert_pr, sender="owner"))
    assert outcome.status is CommentStatus.HANDLED and outcome.posted
    branch = f"revert/{revert_pr}-onto-release-2.9"
    tip = world.remote_heads()[f"refs/heads/{branch}"]
    origin = world.repos.origin
    assert git(origin, "rev-parse", f"{tip}^") == pick
    message = git(origin, "log", "-1", "--format=%B", tip)
    assert f"This reverts commit {pick}." in message
    assert f"(cherry picked from commit {revert})" in message
    assert git(origin, "show", f"{tip}:src/lib.py") == "def answer():\n    return 41"
    new = world.new_pulls()[-1]
    assert new["base"]["ref"] == "release/2.9" and new["head"]["ref"] == branch
    assert f"Reverted with `git revert {pick}`." in new["body"]
    record = world.fake.comments_on(REPO, world.trackers["2.9"])[-1]
    assert new["html_url"] in record and "Revert of " in record
    # release/2.8 holds no pick: untouched; no branch for it.
    assert f"refs/heads/revert/{revert_pr}-onto-release-2.8" not in world.remote_heads()
    assert world.remote_heads()["refs/heads/release/2.8"] == heads["refs/heads/release/2.8"]
    [reply] = world.fake.comments_on(REPO, revert_pr)
    assert reply.startswith(f"@owner revert on the release branches of what #{revert_pr}")
    # A second delivery, then the command on the revert PR: no new branch, PR or entry.
    pulls, entries = (
        len(world.new_pulls()),
        len(world.fake.comments_on(REPO, world.trackers["2.9"])),
    )
    world.dispatch("pull_request", pull_event("closed", number=revert_pr, sender="owner"))
    again = world.handle("@relforge-bot revert", number=revert_pr)
    assert again.status is CommentStatus.HANDLED and "reused pull request" in (again.reply or "")
    assert len(world.new_pulls()) == pulls
    assert len(world.fake.comments_on(REPO, world.trackers["2.9"])) == entries


def test_a_revert_is_propagated_on_command_and_reports_branches_without_a_pick(
    world: World,
) -> None:
    _, fix, _ = _picked_and_merged(world)
    revert_pr, _ = world.land_revert(fix)
    outcome = world.handle(
        "@relforge-bot revert --onto release/2.8 --onto release/2.9", number=revert_pr
    )
    assert outcome.status is CommentStatus.HANDLED
    reply = world.fake.comments_on(REPO, revert_pr)[-1]
    assert "- release/2.8: holds no pick of what" in reply
    assert "- release/2.9: opened pull request" in reply
    assert [p["base"]["ref"] for p in world.new_pulls()][-1] == "release/2.9"


def test_a_labelled_revert_gets_one_pull_request_per_branch(world: World) -> None:
    _, fix, _ = _picked_and_merged(world)
    revert_pr, _ = world.land_revert(fix)
    world.fake.add_label(REPO, revert_pr, LABEL, actor="alice")
    before = len(world.new_pulls())
    merged = pull_event("closed", number=revert_pr, labels=(LABEL,), sender="owner")
    assert world.dispatch("pull_request", merged).status is CommentStatus.HANDLED
    [new] = world.new_pulls()[before:]
    assert new["head"]["ref"] == f"revert/{revert_pr}-onto-release-2.9"


def test_merged_prs_that_revert_nothing_picked_are_left_alone(world: World) -> None:
    pr, fix = world.land("Fix", FIX)  # never picked
    merged = world.dispatch("pull_request", pull_event("closed", number=pr))
    assert merged.status is CommentStatus.IGNORED
    revert_pr, _ = world.land_revert(fix)
    reverted = world.dispatch("pull_request", pull_event("closed", number=revert_pr))
    assert reverted.status is CommentStatus.IGNORED
    assert world.fake.writes() == [] and world.new_pulls() == []
    closed = world.dispatch("pull_request", pull_event("closed", number=pr, merged=False))
    assert closed.status is CommentStatus.IGNORED


# -- quoted commands --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "body",
    [
        f"How to ask:\n```\n{CMD} --onto release/2.9 -c docs\n```",
        f"~~~~markdown\n{CMD} --onto release/2.9 -c docs\n```\nstill inside\n~~~~",
        f"> {CMD} --onto release/2.9 -c docs\n\nas they said",
        f">{CMD} --onto release/2.9 -c docs",
    ],
)
def test_a_command_in_a_code_block_or_a_quote_is_not_run(world: World, body: str) -> None:
    pr, _ = world.land("Fix", FIX)
    outcome = world.handle(body, number=pr)
    assert outcome.status is CommentStatus.IGNORED and world.fake.requests == []


def test_a_second_command_in_a_comment_is_answered_as_ignored(world: World) -> None:
    pr, _ = world.land("Fix", FIX)
    body = (
        f"```\n{CMD} --onto release/2.8 -c docs\n```\n"
        f"{CMD} --onto release/2.9 -c docs\n"
        "and also\n"
        f"{CMD} --onto release/2.8 -c docs"
    )
    outcome = world.handle(body, number=pr)
    assert outcome.status is CommentStatus.HANDLED
    assert [p["base"]["ref"] for p in world.new_pulls()] == ["release/2.9"]
    [reply] = world.fake.comments_on(REPO, pr)
    assert "only the first command of a comment is run; ignored line 6" in reply
    assert reply.rstrip().endswith("state=done -->")


# -- requester mention on every failure -------------------------------------------------------


def test_every_failure_mentions_the_requester(world: World) -> None:
    clone = world.repos.clone
    git(clone, "checkout", "-q", "release/2.9")
    world.repos.commit("diverge", {"src/lib.py": "def answer():\n    return 40\n"})
    git(clone, "push", "-q", "origin", "release/2.9")
    git(clone, "checkout", "-q", "main")
    pr, _ = world.land("Fix", FIX)
    open_pr = world.fake.add_pull(REPO, "wip", head="wip")
    world.fake.set_permission(REPO, "reader", "read")
    failures = [
        (pr, f"{CMD} --onto release/2.9 -c docs", "alice"),  # conflict
        (pr, f"{CMD} --onto release/7.0 -c docs", "alice"),  # no such branch
        (pr, f"{CMD} --onto release/2.9 -c regression", "alice"),  # grammar
        (open_pr, f"{CMD} --onto release/2.9 -c docs", "alice"),  # not merged
        (pr, f"{CMD} --onto release/2.9 -c docs", "reader"),  # permission
        (pr, "@relforge-bot revert", "alice"),  # reverts nothing
    ]
    for number, body, user in failures:
        before = len(world.fake.comments_on(REPO, number))
        world.handle(body, number=number, user=user)
        reply = world.fake.comments_on(REPO, number)[before]
        assert reply.startswith(f"@{user} "), (body, reply)
