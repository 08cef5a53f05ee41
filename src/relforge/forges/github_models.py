"""The objects of GitHub's REST API relforge reads, built from their documented JSON shapes.

Every user field GitHub documents as `nullable-simple-user` (a comment's or a pull request's
author, a label event's actor: null for a deleted account, shown as "ghost") is read as
`str | None`; a missing milestone or body is None or empty, never an error.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any


def login(value: Any) -> str | None:
    """The login of a `nullable-simple-user` value (None for null or a user without one)."""
    if isinstance(value, Mapping) and isinstance(value.get("login"), str) and value["login"]:
        return str(value["login"])
    return None


def _ref(value: Any, key: str) -> str:
    return str(value.get(key) or "") if isinstance(value, Mapping) else ""


@dataclass(frozen=True, kw_only=True)
class Milestone:
    number: int
    title: str
    state: str = "open"
    html_url: str = ""

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Milestone:
        return cls(
            number=int(data["number"]),
            title=str(data.get("title") or ""),
            state=str(data.get("state") or ""),
            html_url=str(data.get("html_url") or ""),
        )

    @classmethod
    def maybe(cls, data: Any) -> Milestone | None:
        return cls.from_json(data) if isinstance(data, Mapping) else None


@dataclass(frozen=True, kw_only=True)
class PullRequest:
    number: int
    title: str
    state: str
    merged: bool
    merge_commit_sha: str | None
    html_url: str
    user: str | None
    head_ref: str
    head_sha: str
    base_ref: str
    body: str
    commits: int | None = None  # how many commits the pull request has (None: not reported)
    labels: tuple[str, ...] = ()
    milestone: Milestone | None = None

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> PullRequest:
        count = data.get("commits")
        return cls(
            number=int(data["number"]),
            title=str(data.get("title") or ""),
            state=str(data.get("state") or ""),
            merged=bool(data.get("merged")),
            merge_commit_sha=data.get("merge_commit_sha"),
            html_url=str(data.get("html_url") or ""),
            user=login(data.get("user")),
            head_ref=_ref(data.get("head"), "ref"),
            head_sha=_ref(data.get("head"), "sha"),
            base_ref=_ref(data.get("base"), "ref"),
            body=str(data.get("body") or ""),
            commits=count if isinstance(count, int) and not isinstance(count, bool) else None,
            labels=_labels(data.get("labels")),
            milestone=Milestone.maybe(data.get("milestone")),
        )


@dataclass(frozen=True, kw_only=True)
class PullCommit:
    """One commit of a pull request as `GET /pulls/{n}/commits` lists it (oldest first)."""

    sha: str
    message: str
    author_email: str
    author_time: datetime | None
    parents: tuple[str, ...]

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> PullCommit:
        commit = data.get("commit") or {}
        author = commit.get("author") or {}  # a nullable-git-user
        return cls(
            sha=str(data["sha"]),
            message=str(commit.get("message") or ""),
            author_email=str(author.get("email") or ""),
            author_time=_time(author.get("date")),
            parents=tuple(str(p["sha"]) for p in data.get("parents") or () if "sha" in p),
        )


@dataclass(frozen=True, kw_only=True)
class Issue:
    number: int
    title: str
    state: str
    labels: tuple[str, ...]
    html_url: str
    is_pull_request: bool
    milestone: str | None

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Issue:
        milestone = Milestone.maybe(data.get("milestone"))
        return cls(
            number=int(data["number"]),
            title=str(data.get("title") or ""),
            state=str(data.get("state") or ""),
            labels=_labels(data.get("labels")),
            html_url=str(data.get("html_url") or ""),
            is_pull_request=bool(data.get("pull_request")),
            milestone=milestone.title if milestone else None,
        )


@dataclass(frozen=True, kw_only=True)
class Comment:
    id: int
    body: str
    user: str | None
    html_url: str
    by_bot: bool = False  # written by an app or Actions (`user.type` Bot)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Comment:
        user = data.get("user")
        return cls(
            id=int(data["id"]),
            body=str(data.get("body") or ""),
            user=login(user),
            html_url=str(data.get("html_url") or ""),
            by_bot=isinstance(user, Mapping) and user.get("type") == "Bot",
        )


@dataclass(frozen=True, kw_only=True)
class LabelEvent:
    """A `labeled` entry of `GET /issues/{n}/events`: who added which label."""

    label: str
    actor: str | None

    @classmethod
    def maybe(cls, data: Mapping[str, Any]) -> LabelEvent | None:
        label = data.get("label")
        if data.get("event") != "labeled" or not isinstance(label, Mapping):
            return None
        return cls(label=str(label.get("name") or ""), actor=login(data.get("actor")))


@dataclass(frozen=True, kw_only=True)
class Permission:
    """`GET /collaborators/{user}/permission`: `permission` is the base role (admin, write,
    read or none: maintain reads as write, triage as read); `role_name` may be a custom
    repository role's name, such as `release-manager`."""

    permission: str
    role_name: str

    @property
    def can_write(self) -> bool:
        """Write access comes from the base role; a custom role's name is only its label."""
        return self.permission in ("admin", "maintain", "write") or self.role_name in (
            "admin",
            "maintain",
            "write",
        )

    def describe(self) -> str:
        if self.role_name in ("", self.permission):
            return self.permission
        return f"{self.role_name} (base permission {self.permission})"


def _labels(value: Any) -> tuple[str, ...]:
    out = []
    for label in value or ():
        if isinstance(label, Mapping) and label.get("name"):
            out.append(str(label["name"]))
        elif isinstance(label, str):
            out.append(label)
    return tuple(out)


def _time(value: Any) -> datetime | None:
    if not isinstance(value, str) or not value:
        return None
    try:
        moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return moment if moment.tzinfo else moment.replace(tzinfo=timezone.utc)
