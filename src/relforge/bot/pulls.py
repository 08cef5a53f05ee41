"""`pull_request` events: the label trigger and revert propagation.

- A merged PR labelled `<prefix>release-X.Y` (default prefix `cherry-pick/`) is picked onto
  release/X.Y as if a comment had asked, on behalf of whoever added the label (their permission
  is checked; a label added before the merge is read from the PR's label events).  The reply
  names the label and @mentions that person.
- A merged PR that reverts commits picked onto release branches gets the matching reverts
  there (relforge.bot.reverts); a merged PR that reverts nothing picked is left alone.
"""

from __future__ import annotations

import contextlib

from relforge.bot import replies
from relforge.bot.events import PullEvent
from relforge.bot.grammar import GrammarError, ReleaseBranch, make_command, parse_release_branch
from relforge.bot.handler import (
    BotSettings,
    CommentOutcome,
    CommentStatus,
    Responder,
    cherry_pick,
    run_flow,
)
from relforge.bot.reverts import REVERT_LINE, NotFromTrunk, plan_reverts
from relforge.errors import NothingToDoError, RefusedError, RelforgeError
from relforge.forges.github import GitHubClient, GitHubError
from relforge.git import Git


def handle_pull(
    event: PullEvent, *, git: Git, gh: GitHubClient, settings: BotSettings
) -> CommentOutcome:
    prefix = settings.label_prefix
    if event.action == "labeled":
        if not event.label or not event.label.startswith(prefix):
            return CommentOutcome(
                status=CommentStatus.IGNORED, reason=f"label {event.label!r} is not {prefix}…"
            )
        if not event.merged:
            return CommentOutcome(
                status=CommentStatus.IGNORED, reason="not merged yet: picked when merged"
            )
        return label_pick(
            event.number, event.label, event.sender, git=git, gh=gh, settings=settings
        )
    if event.action != "closed" or not event.merged:
        return CommentOutcome(
            status=CommentStatus.IGNORED, reason=f"pull request {event.action or 'event'}"
        )
    revert = propagate_revert(event.number, event.sender, git=git, gh=gh, settings=settings)
    outcomes = [revert]
    reverted_on = {t.onto for t in revert.plan.targets} if revert.plan else set()
    labels = [label for label in event.labels if label.startswith(prefix)]
    if labels:
        added = {e.label: e.actor for e in gh.label_events(event.number)}  # the last adder
        for label in labels:
            if _label_branch(label, prefix) in reverted_on:  # one PR per branch, not two
                continue
            outcomes.append(
                label_pick(event.number, label, added.get(label), git=git, gh=gh, settings=settings)
            )
    acted = [o for o in outcomes if o.status is not CommentStatus.IGNORED]
    if not acted:
        return outcomes[0]
    if len(acted) == 1:
        return acted[0]
    return CommentOutcome(
        status=CommentStatus.REFUSED
        if any(o.status is CommentStatus.REFUSED for o in acted)
        else CommentStatus.HANDLED,
        reason="; ".join(o.reason for o in acted),
        reply="\n\n".join(o.reply for o in acted if o.reply),
        posted=any(o.posted for o in acted),
    )


def _release_name(label: str, prefix: str) -> str:
    """`<prefix>release-X.Y` → `release/X.Y` (checked by the caller)."""
    return label.removeprefix(prefix).replace("-", "/", 1)


def _label_branch(label: str, prefix: str) -> ReleaseBranch | None:
    try:
        return parse_release_branch(_release_name(label, prefix))
    except GrammarError:
        return None


def label_pick(
    number: int,
    label: str,
    actor: str | None,
    *,
    git: Git,
    gh: GitHubClient,
    settings: BotSettings,
) -> CommentOutcome:
    """Pick PR `number` onto the release branch `label` names, for `actor`."""
    key = f"label {label}"
    responder = Responder(gh, settings, number, actor, key)
    try:
        if actor is None:
            refusal = RefusedError(
                f"cannot tell who added the label {label!r} (a deleted account?), so nobody's "
                "permission vouches for the pick",
                hint="remove the label and add it again",
            )
            return responder.error(refusal, with_usage=False)
        permission = gh.permission(actor)
        if not permission.can_write:
            text = replies.permission_reply(actor, gh.repo, permission.describe(), key, label=label)
            return responder.send(CommentStatus.REFUSED, text, "no write permission", replies.ERROR)
        try:
            onto = parse_release_branch(
                label.removeprefix(settings.label_prefix).replace("-", "/", 1)
            )
            command = make_command(onto=[onto], category=settings.label_category.value, fixes=None)
        except GrammarError as exc:
            error = GrammarError(f"the label {label!r} names no release branch: {exc.message}")
            return responder.error(error, with_usage=False)
        return cherry_pick(
            number, command, git=git, gh=gh, settings=settings, responder=responder, trigger=label
        )
    except GitHubError as exc:
        responder.try_error(exc)
        raise


def propagate_revert(
    number: int, merger: str | None, *, git: Git, gh: GitHubClient, settings: BotSettings
) -> CommentOutcome:
    """Open the reverts PR `number` needs on release branches (nothing when it reverts
    nothing that was picked: most merged PRs)."""
    responder = Responder(gh, settings, number, merger, "revert propagation")
    try:
        # Most merged PRs revert nothing: tell from the PR's commit messages before touching git,
        # so a PR that is no revert never gets a reply, not even an error.
        messages = [c.message for c in gh.pull_commits(number)]
        if not any(REVERT_LINE in message for message in messages):
            return CommentOutcome(status=CommentStatus.IGNORED, reason=f"#{number} reverts nothing")
        try:
            plan = plan_reverts(git, gh, settings.flow, pr=number, requester=merger)
        except (NothingToDoError, NotFromTrunk) as exc:  # no reply: the merge asked nothing
            return CommentOutcome(status=CommentStatus.IGNORED, reason=exc.message)
        except GitHubError:
            raise
        except RelforgeError as exc:
            return responder.error(exc, with_usage=False)
        return run_flow(lambda: plan, git=git, gh=gh, settings=settings, responder=responder)
    except GitHubError as exc:
        with contextlib.suppress(GitHubError):
            responder.try_error(exc)
        raise
