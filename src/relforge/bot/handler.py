"""A GitHub `issue_comment` event → at most one bot command → one reply on the PR.

Order of checks: the event is a new comment by a person that addresses the bot (the first
command line outside code blocks and quotes); the commenter has write permission; the command
parses; the issue is a merged pull request.  Each refusal is answered with a reply that
@mentions the requester.  In a dry run (no `execute`) the reply is returned instead of posted
and nothing is pushed.  `pull_request` events (the label trigger, revert propagation) are
answered in `relforge.bot.pulls`.
"""

from __future__ import annotations

import contextlib
import enum
from collections.abc import Callable
from dataclasses import dataclass, field

from relforge.bot import replies
from relforge.bot.events import CommentEvent
from relforge.bot.flow import Done, FlowSettings, PickPlan, PickRequest, apply_plan, plan_picks
from relforge.bot.grammar import (
    DEFAULT_BOT,
    Category,
    CherryPickCommand,
    GrammarError,
    HelpCommand,
    RevertCommand,
    command_lines,
    parse_line,
)
from relforge.envfaults import environment_fault, is_environment_fault
from relforge.errors import RelforgeError, UsageError
from relforge.forges.github import GitHubClient, GitHubError
from relforge.git import Git

__all__ = ["BotSettings", "CommentEvent", "CommentOutcome", "CommentStatus", "handle_comment"]

DEFAULT_LABEL_PREFIX = "cherry-pick/"


@dataclass(frozen=True, kw_only=True)
class BotSettings:
    bot: str = DEFAULT_BOT
    execute: bool = False
    flow: FlowSettings = field(default_factory=FlowSettings)
    label_prefix: str = DEFAULT_LABEL_PREFIX  # `cherry-pick/release-X.Y` asks for a pick
    label_category: Category = Category.RELEASE  # the tracker category of label picks

    def summary(self) -> str:
        mode = "execute" if self.execute else "dry run (pass --execute to push and post)"
        labels = f"labels {self.label_prefix}release-X.Y (category {self.label_category.value})"
        return f"bot @{self.bot}; {mode}; {labels}; {self.flow.summary()}"


class CommentStatus(enum.Enum):
    IGNORED = "ignored"  # not for the bot: no reply
    REFUSED = "refused"  # answered with a refusal or an error
    HELP = "help"
    HANDLED = "handled"  # the cherry-pick (or revert) flow ran (dry or not)


@dataclass(frozen=True, kw_only=True)
class CommentOutcome:
    status: CommentStatus
    reason: str = ""
    reply: str | None = None
    posted: bool = False
    plan: PickPlan | None = None
    done: tuple[Done, ...] = ()


def handle_comment(
    event: CommentEvent, *, git: Git, gh: GitHubClient, settings: BotSettings
) -> CommentOutcome:
    """Answer one comment; see the module docstring for the order of checks."""
    if event.action != "created":
        return CommentOutcome(
            status=CommentStatus.IGNORED, reason=f"comment {event.action or 'event'}"
        )
    if event.user_is_bot or event.user == settings.bot or replies.MARKER in event.body:
        return CommentOutcome(status=CommentStatus.IGNORED, reason="comment by a bot")
    lines = command_lines(event.body, settings.bot)
    if not lines:
        return CommentOutcome(
            status=CommentStatus.IGNORED, reason=f"no line starts with @{settings.bot}"
        )
    if event.user is None:  # a deleted account: nobody to check or to answer
        return CommentOutcome(status=CommentStatus.IGNORED, reason="comment by a deleted account")
    key = f"reply to comment {event.comment_id}"
    responder = Responder(
        gh, settings, event.number, event.user, key, note=replies.ignored_note(lines[1:])
    )
    try:
        permission = gh.permission(event.user)
        if not permission.can_write:
            text = replies.permission_reply(event.user, gh.repo, permission.describe(), key)
            return responder.send(CommentStatus.REFUSED, text, "no write permission", replies.ERROR)
        try:
            command = parse_line(lines[0][1], settings.bot)
        except GrammarError as exc:
            return responder.error(exc, with_usage=True)
        if isinstance(command, HelpCommand):
            text = replies.usage_reply(settings.bot, event.user, key)
            return responder.send(CommentStatus.HELP, text, "help", replies.HELP)
        if not event.is_pull_request:
            error = UsageError(f"#{event.number} is an issue; the bot works on pull requests")
            return responder.error(error, with_usage=False)
        if isinstance(command, RevertCommand):
            from relforge.bot.reverts import plan_reverts

            def plan_revert() -> PickPlan:
                return plan_reverts(
                    git, gh, settings.flow, pr=event.number, onto=command.onto, requester=event.user
                )

            return run_flow(plan_revert, git=git, gh=gh, settings=settings, responder=responder)
        return cherry_pick(
            event.number, command, git=git, gh=gh, settings=settings, responder=responder
        )
    except GitHubError as exc:
        responder.try_error(exc)  # GitHub may answer this one; the error is raised either way
        raise


def cherry_pick(
    number: int,
    command: CherryPickCommand,
    *,
    git: Git,
    gh: GitHubClient,
    settings: BotSettings,
    responder: Responder,
    trigger: str | None = None,
) -> CommentOutcome:
    def plan() -> PickPlan:
        request = PickRequest(
            pr=number, command=command, requester=responder.requester, trigger=trigger
        )
        return plan_picks(git, gh, settings.flow, request)

    return run_flow(plan, git=git, gh=gh, settings=settings, responder=responder)


def run_flow(
    make_plan: Callable[[], PickPlan],
    *,
    git: Git,
    gh: GitHubClient,
    settings: BotSettings,
    responder: Responder,
) -> CommentOutcome:
    """Plan, apply (with execute), and answer with the result or the error."""
    try:
        plan = make_plan()
        done = apply_plan(git, gh, settings.flow, plan) if settings.execute else None
    except GitHubError:
        raise
    except RelforgeError as exc:
        return responder.error(exc, with_usage=False)
    except OSError as exc:  # the runner's disk (a read-only or full $TMPDIR): tell the requester
        if not is_environment_fault(exc):
            raise
        fault = environment_fault(exc, "the bot could not write its working files")
        return responder.error(fault, with_usage=False)
    text = replies.result_reply(plan, done, responder.key)
    outcome = responder.send(CommentStatus.HANDLED, text, plan.kind.value, replies.DONE)
    return CommentOutcome(
        status=CommentStatus.HANDLED,
        reason=outcome.reason,
        reply=outcome.reply,
        posted=outcome.posted,
        plan=plan,
        done=tuple(done or ()),
    )


def post_once(
    gh: GitHubClient,
    number: int,
    text: str,
    key: str,
    state: str = replies.DONE,
    *,
    bot: str | None = None,
) -> bool:
    """Post `text` on issue/PR `number` unless a reply to the same request in the same state
    is there already.  A result after an earlier error reply is posted (the requester must
    learn that the re-run worked) and the error reply gets a line pointing to it.  With `bot`,
    only comments by an app/Actions or by that login count as earlier replies: a person who
    pastes a marker cannot silence the bot."""
    comments = gh.comments(number)
    if bot is not None:
        comments = [c for c in comments if c.by_bot or c.user == bot]
    earlier = [(c, replies.state_of(c.body, key)) for c in comments]
    earlier = [(c, s) for c, s in earlier if s is not None]
    if any(s == state for _, s in earlier):
        return False
    new = gh.comment(number, text, marker=replies.marker(key, state))
    if state == replies.DONE:
        for comment, previous in earlier:
            if previous == replies.ERROR and "**Update:**" not in comment.body:
                gh.edit_comment(comment.id, comment.body + replies.rerun_update(new.html_url))
    return True


class Responder:
    """Posts the one reply of a request (execute) or hands it back (dry run)."""

    def __init__(
        self,
        gh: GitHubClient,
        settings: BotSettings,
        number: int,
        requester: str | None,
        key: str,
        *,
        note: str = "",
    ) -> None:
        self.gh, self.settings, self.number = gh, settings, number
        self.requester, self.key, self.note = requester, key, note

    def send(self, status: CommentStatus, text: str, reason: str, state: str) -> CommentOutcome:
        if self.note:  # before the closing marker
            body, sep, tail = text.rpartition("\n\n")
            text = f"{body}{self.note}{sep}{tail}"
        if not self.settings.execute:
            return CommentOutcome(status=status, reason=reason, reply=text)
        if not post_once(self.gh, self.number, text, self.key, state, bot=self.settings.bot):
            return CommentOutcome(
                status=status, reason=f"{reason} (reply already posted)", reply=text
            )
        return CommentOutcome(status=status, reason=reason, reply=text, posted=True)

    def error(self, exc: RelforgeError, *, with_usage: bool) -> CommentOutcome:
        text = replies.error_reply(
            exc, self.settings.bot, self.requester, self.key, with_usage=with_usage
        )
        return self.send(CommentStatus.REFUSED, text, exc.message, replies.ERROR)

    def try_error(self, exc: RelforgeError) -> None:
        with contextlib.suppress(GitHubError):
            self.error(exc, with_usage=False)
