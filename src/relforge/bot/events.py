"""The parts of GitHub webhook payloads the bot reads (`issue_comment`, `pull_request` /
`pull_request_target`), read strictly: a value of the wrong JSON type is an error, never
converted.  User fields are `nullable-simple-user` (null for a deleted account): read as None."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from relforge.errors import ConfigError
from relforge.forges.github_models import login

_MISSING: Any = object()


@dataclass(frozen=True, kw_only=True)
class CommentEvent:
    """An `issue_comment` event."""

    action: str
    repo: str
    number: int
    is_pull_request: bool
    comment_id: int
    body: str
    user: str | None  # None: the comment's author is a deleted account
    user_is_bot: bool

    @classmethod
    def from_payload(cls, data: Mapping[str, Any]) -> CommentEvent:
        try:
            issue = _get(data, "issue", dict)
            comment = _get(data, "comment", dict)
            user = _get(comment, "user", dict, {})
            return cls(
                action=_get(data, "action", str, ""),
                repo=_get(_get(data, "repository", dict, {}), "full_name", str, ""),
                number=_get(issue, "number", int),
                is_pull_request=bool(issue.get("pull_request")),
                comment_id=_get(comment, "id", int),
                body=_get(comment, "body", str, ""),
                user=_get(user, "login", str, "") or None,
                user_is_bot=_get(user, "type", str, "") == "Bot",
            )
        except (KeyError, TypeError) as exc:
            raise ConfigError(
                f"not an issue_comment event payload ({exc.args[0]})",
                hint="pass the file GitHub Actions names in $GITHUB_EVENT_PATH",
            ) from None


@dataclass(frozen=True, kw_only=True)
class PullEvent:
    """A `pull_request` (or `pull_request_target`) event: `labeled` or `closed`."""

    action: str
    repo: str
    number: int
    merged: bool
    label: str | None  # the label added (`labeled` events)
    sender: str | None  # who acted (added the label, merged the PR); None: deleted account
    labels: tuple[str, ...]  # the PR's labels

    @classmethod
    def from_payload(cls, data: Mapping[str, Any]) -> PullEvent:
        try:
            pull = _get(data, "pull_request", dict)
            label = _get(data, "label", dict, {})
            labels = tuple(
                _get(item, "name", str) for item in pull.get("labels") or () if item is not None
            )
            return cls(
                action=_get(data, "action", str, ""),
                repo=_get(_get(data, "repository", dict, {}), "full_name", str, ""),
                number=_get(pull, "number", int),
                merged=pull.get("merged") is True,
                label=_get(label, "name", str, "") or None,
                sender=login(data.get("sender")),
                labels=labels,
            )
        except (KeyError, TypeError) as exc:
            raise ConfigError(
                f"not a pull_request event payload ({exc.args[0]})",
                hint="pass the file GitHub Actions names in $GITHUB_EVENT_PATH",
            ) from None


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


@dataclass(frozen=True, kw_only=True)
class ActionsEvent:
    """One event as GitHub Actions hands it to a job: `$GITHUB_EVENT_NAME` and the payload file
    at `$GITHUB_EVENT_PATH`, with the repository it came from."""

    name: str
    payload: dict[str, Any]
    event: CommentEvent | PullEvent
    repo: str


def read_actions_event(path: Path, name: str | None, given_repo: str | None) -> ActionsEvent:
    """Read and check the event file; `name` defaults from the payload's shape, the repository
    comes from the event and must match `given_repo` (--github-repo) when both are known."""
    try:
        payload = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ConfigError(f"cannot read the event: {exc}", key=str(path)) from None
    if not isinstance(payload, dict):
        raise ConfigError("the event is not a JSON object", key=str(path))
    if not name:
        name = "pull_request" if "pull_request" in payload else "issue_comment"
    event: CommentEvent | PullEvent
    if name in ("pull_request", "pull_request_target"):
        event = PullEvent.from_payload(payload)
    else:
        event = CommentEvent.from_payload(payload)
    if given_repo and event.repo and given_repo != event.repo:
        raise ConfigError(
            f"the event is from {event.repo!r}, not {given_repo!r}", key="--github-repo"
        )
    repo = event.repo or given_repo
    if not repo:
        raise ConfigError("the event names no repository", key="--github-repo")
    return ActionsEvent(name=name, payload=payload, event=event, repo=repo)
