"""One webhook delivery → the handler of its event: comments in relforge.bot.handler, pull
requests in relforge.bot.pulls (which builds on the handler, so the choice lives here)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from relforge.bot.events import CommentEvent, PullEvent
from relforge.bot.handler import BotSettings, CommentOutcome, CommentStatus, handle_comment
from relforge.bot.pulls import handle_pull
from relforge.forges.github import GitHubClient
from relforge.git import Git


def dispatch(
    name: str,
    payload: Mapping[str, Any],
    *,
    git: Git,
    github_repo: str,
    settings: BotSettings,
    client: Callable[[str], GitHubClient] = GitHubClient,
) -> CommentOutcome:
    """One webhook delivery: `issue_comment` and `pull_request` events of the served repository
    count (`pull_request_target` too: the same payload)."""
    if name == "issue_comment":
        event: CommentEvent | PullEvent = CommentEvent.from_payload(payload)
    elif name in ("pull_request", "pull_request_target"):
        event = PullEvent.from_payload(payload)
    else:
        return CommentOutcome(status=CommentStatus.IGNORED, reason=f"{name or 'unnamed'} event")
    if event.repo != github_repo:
        return CommentOutcome(
            status=CommentStatus.IGNORED, reason=f"event of {event.repo!r}, serving {github_repo!r}"
        )
    if isinstance(event, PullEvent):
        return handle_pull(event, git=git, gh=client(github_repo), settings=settings)
    return handle_comment(event, git=git, gh=client(github_repo), settings=settings)
