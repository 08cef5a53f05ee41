"""A GitHub `issue_comment` event → at most one cherry-pick request → one reply on the PR.

Order of checks: the event is a new comment by a person that addresses the bot; the commenter
has write permission; the command parses; the issue is a merged pull request.  Each refusal is
answered with a reply that @mentions the requester.  In a dry run (no `execute`) the reply is
returned instead of posted and nothing is pushed.
"""

from __future__ import annotations

import contextlib
import enum
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from relforge.bot import replies
from relforge.bot.flow import Done, FlowSettings, Plan, apply_plan, plan_picks
from relforge.bot.grammar import (
    DEFAULT_BOT,
    CherryPickCommand,
    GrammarError,
    HelpCommand,
    command_line,
    parse_line,
)
from relforge.errors import ConfigError, RelforgeError, UsageError
from relforge.forges.github import GitHubClient, GitHubError
from relforge.release.git import Git

WRITE_ROLES = frozenset({"admin", "maintain", "write"})


@dataclass(frozen=True, kw_only=True)
class BotSettings:
    bot: str = DEFAULT_BOT
    execute: bool = False
    flow: FlowSettings = field(default_factory=FlowSettings)

    def summary(self) -> str:
        mode = "execute" if self.execute else "dry run (pass --execute to push and post)"
        return f"bot @{self.bot}; {mode}; {self.flow.summary()}"


@dataclass(frozen=True, kw_only=True)
class CommentEvent:
    """The parts of an `issue_comment` webhook payload the bot reads."""

    action: str
    repo: str
    number: int
    is_pull_request: bool
    comment_id: int
    body: str
    user: str
    user_is_bot: bool

    @classmethod
    def from_payload(cls, data: Mapping[str, Any]) -> CommentEvent:
        """Read the payload strictly: a value of the wrong JSON type is an error, never
        converted (a float number, a list body, a repository given as a string)."""
        try:
            issue = _get(data, "issue", dict)
            comment = _get(data, "comment", dict)
            user = _get(comment, "user", dict)
            return cls(
                action=_get(data, "action", str, ""),
                repo=_get(_get(data, "repository", dict, {}), "full_name", str, ""),
                number=_get(issue, "number", int),
                is_pull_request=bool(issue.get("pull_request")),
                comment_id=_get(comment, "id", int),
                body=_get(comment, "body", str, ""),
                user=_get(user, "login", str),
                user_is_bot=_get(user, "type", str, "") == "Bot",
            )
        except (KeyError, TypeError) as exc:
            raise ConfigError(
                f"not an issue_comment event payload ({exc.args[0]})",
                hint="pass the file GitHub Actions names in $GITHUB_EVENT_PATH",
            ) from None


_MISSING: Any = object()


def _get(data: Any, key: str, kind: type[Any], default: Any = _MISSING) -> Any:
    """`data[key]` of JSON type `kind` (null or absent: `default`, if there is one)."""
    if not isinstance(data, Mapping):
        raise TypeError(f"{key!r} is inside a value that is not an object")
    value = data.get(key)
    if value is None:
        if default is _MISSING:
            raise KeyError(f"missing {key!r}")
        return default
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        name = {int: "integer", str: "string", dict: "object"}.get(kind, kind.__name__)
        raise TypeError(f"{key!r} is not a JSON {name}")
    return value


class Status(enum.Enum):
    IGNORED = "ignored"  # not for the bot: no reply
    REFUSED = "refused"  # answered with a refusal or an error
    HELP = "help"
    HANDLED = "handled"  # the cherry-pick flow ran (dry or not)


@dataclass(frozen=True, kw_only=True)
class Outcome:
    status: Status
    reason: str = ""
    reply: str | None = None
    posted: bool = False
    plan: Plan | None = None
    done: tuple[Done, ...] = ()


def handle_comment(
    event: CommentEvent, *, git: Git, gh: GitHubClient, settings: BotSettings
) -> Outcome:
    """Answer one comment; see the module docstring for the order of checks."""
    if event.action != "created":
        return Outcome(status=Status.IGNORED, reason=f"comment {event.action or 'event'}")
    if event.user_is_bot or event.user == settings.bot or replies.MARKER in event.body:
        return Outcome(status=Status.IGNORED, reason="comment by a bot")
    line = command_line(event.body, settings.bot)
    if line is None:
        return Outcome(status=Status.IGNORED, reason=f"no line starts with @{settings.bot}")
    key = f"reply to comment {event.comment_id}"
    responder = _Responder(gh, settings, event, key)
    try:
        permission = gh.permission(event.user)
        if permission not in WRITE_ROLES:
            text = replies.permission_reply(event.user, gh.repo, permission, key)
            return responder.send(Status.REFUSED, text, "no write permission")
        try:
            command = parse_line(line, settings.bot)
        except GrammarError as exc:
            return responder.error(exc, with_usage=True)
        match command:
            case HelpCommand():
                text = replies.usage_reply(settings.bot, event.user, key)
                return responder.send(Status.HELP, text, "help")
            case CherryPickCommand():
                pass
        if not event.is_pull_request:
            error = UsageError(f"#{event.number} is an issue; cherry-pick works on pull requests")
            return responder.error(error, with_usage=False)
        return _cherry_pick(event, command, git=git, gh=gh, settings=settings, responder=responder)
    except GitHubError as exc:
        responder.try_error(exc)  # GitHub may answer this one; the error is raised either way
        raise


def _cherry_pick(
    event: CommentEvent,
    command: CherryPickCommand,
    *,
    git: Git,
    gh: GitHubClient,
    settings: BotSettings,
    responder: _Responder,
) -> Outcome:
    try:
        plan = plan_picks(
            git, gh, settings.flow, pr=event.number, command=command, requester=event.user
        )
        done = apply_plan(git, gh, settings.flow, plan) if settings.execute else None
    except GitHubError:
        raise
    except RelforgeError as exc:
        return responder.error(exc, with_usage=False)
    text = replies.result_reply(plan, done, responder.key)
    outcome = responder.send(Status.HANDLED, text, "cherry-pick")
    return Outcome(
        status=Status.HANDLED,
        reason=outcome.reason,
        reply=text,
        posted=outcome.posted,
        plan=plan,
        done=tuple(done or ()),
    )


def post_once(gh: GitHubClient, number: int, text: str, key: str) -> bool:
    """Post `text` on issue/PR `number` unless a reply with the same key is there already."""
    tag = replies.marker(key)
    if any(tag in c.body for c in gh.comments(number)):
        return False
    gh.comment(number, text)
    return True


class _Responder:
    """Posts the one reply of a request (execute) or hands it back (dry run)."""

    def __init__(
        self, gh: GitHubClient, settings: BotSettings, event: CommentEvent, key: str
    ) -> None:
        self.gh, self.settings, self.event, self.key = gh, settings, event, key

    def send(self, status: Status, text: str, reason: str) -> Outcome:
        if not self.settings.execute:
            return Outcome(status=status, reason=reason, reply=text)
        if not post_once(self.gh, self.event.number, text, self.key):
            return Outcome(status=status, reason=f"{reason} (reply already posted)", reply=text)
        return Outcome(status=status, reason=reason, reply=text, posted=True)

    def error(self, exc: RelforgeError, *, with_usage: bool) -> Outcome:
        text = replies.error_reply(
            exc, self.settings.bot, self.event.user, self.key, with_usage=with_usage
        )
        return self.send(Status.REFUSED, text, exc.message)

    def try_error(self, exc: RelforgeError) -> None:
        with contextlib.suppress(GitHubError):
            self.error(exc, with_usage=False)


def dispatch(
    name: str,
    payload: Mapping[str, Any],
    *,
    git: Git,
    github_repo: str,
    settings: BotSettings,
    client: Callable[[str], GitHubClient] = GitHubClient,
) -> Outcome:
    """One webhook delivery: only `issue_comment` events of the served repository count."""
    if name != "issue_comment":
        return Outcome(status=Status.IGNORED, reason=f"{name or 'unnamed'} event")
    event = CommentEvent.from_payload(payload)
    if event.repo != github_repo:
        return Outcome(
            status=Status.IGNORED, reason=f"event of {event.repo!r}, serving {github_repo!r}"
        )
    return handle_comment(event, git=git, gh=client(github_repo), settings=settings)
