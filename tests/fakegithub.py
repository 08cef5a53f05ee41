"""An in-process stand-in for the GitHub REST endpoints relforge calls, with state.

This is the one test double the project allows (no GitHub is reachable from tests).  It follows
GitHub's documented shapes: users are `nullable-simple-user` objects (None for a deleted
account), the permission endpoint answers the base `permission` and the `role_name` (custom
roles included), list endpoints paginate with `Link: <…>; rel="next"`, every answer carries
`X-RateLimit-*` headers, pull requests list their commits (`GET /pulls/{n}/commits`), and routes
also answer under GitHub Enterprise's `/api/v3` prefix.  Tests can make it answer the next
requests with an error (rate limits, 5xx), or save a write and then answer it with a 5xx.
"""

from __future__ import annotations

import re
import threading
import time
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs, urlparse

from tests.fakegithub_server import Server, serve

TOKEN = "test-token-do-not-print"
BOT = {"login": "relforge-bot", "type": "Bot"}


def simple_user(name: str | None) -> dict[str, Any] | None:
    """A `nullable-simple-user` (None: a deleted account)."""
    return None if name is None else {"login": name, "type": "User", "id": abs(hash(name)) % 10**8}


@dataclass
class FakeRepo:
    name: str
    # login → (base permission, role_name)
    collaborators: dict[str, tuple[str, str]] = field(default_factory=dict)
    issues: dict[int, dict[str, Any]] = field(default_factory=dict)
    pulls: dict[int, dict[str, Any]] = field(default_factory=dict)
    pull_commits: dict[int, list[dict[str, Any]]] = field(default_factory=dict)
    comments: dict[int, list[dict[str, Any]]] = field(default_factory=dict)
    events: dict[int, list[dict[str, Any]]] = field(default_factory=dict)
    milestones: dict[int, dict[str, Any]] = field(default_factory=dict)
    next_number: int = 1
    next_id: int = 1000

    def number(self) -> int:
        self.next_number += 1
        return self.next_number - 1

    def new_id(self) -> int:
        self.next_id += 1
        return self.next_id


@dataclass
class Forced:
    status: int
    headers: dict[str, str]
    body: dict[str, Any]
    match: re.Pattern[str] | None = None  # only a request `METHOD /path` like this (else: any)
    save: bool = False  # handle the request (save what it writes), then answer the error


# What the built-in roles read as in `permission` (GitHub's legacy field).
_BASE = {"admin": "admin", "maintain": "write", "write": "write", "triage": "read", "read": "read"}


class FakeGitHub:
    """The server's state and the helpers tests use to seed and inspect it."""

    def __init__(self) -> None:
        self.repos: dict[str, FakeRepo] = {}
        self.requests: list[tuple[str, str, Any]] = []
        self.forced: list[Forced] = []
        self.lock = threading.RLock()
        self.url = ""
        self.web = "https://github.example"
        self.rate_remaining = 4999
        self.max_per_page = 100  # GitHub's cap on per_page; tests lower it to force pages

    # -- seeding -----------------------------------------------------------------------------

    def repo(self, name: str) -> FakeRepo:
        with self.lock:
            return self.repos.setdefault(name, FakeRepo(name))

    def add_milestone(self, repo: str, title: str, *, state: str = "open") -> int:
        r = self.repo(repo)
        number = len(r.milestones) + 1
        r.milestones[number] = {
            "number": number,
            "title": title,
            "state": state,
            "html_url": f"{self.web}/{repo}/milestone/{number}",
            "creator": None,  # nullable-simple-user
        }
        return number

    def add_issue(
        self,
        repo: str,
        title: str,
        *,
        labels: tuple[str, ...] = (),
        milestone: int | None = None,
        state: str = "open",
        user: str | None = "someone",
        body: str | None = "",
    ) -> int:
        r = self.repo(repo)
        with self.lock:
            number = r.number()
            r.issues[number] = {
                "number": number,
                "title": title,
                "state": state,
                "body": body,
                "labels": [{"name": label} for label in labels],
                "milestone": r.milestones[milestone] if milestone else None,
                "html_url": f"{self.web}/{repo}/issues/{number}",
                "user": simple_user(user),
            }
            return number

    def add_pull(
        self,
        repo: str,
        title: str,
        *,
        head: str,
        base: str = "main",
        merged: bool = False,
        merge_commit_sha: str | None = None,
        user: str | None = "author",
        body: str | None = "",
        milestone: int | None = None,
        state: str | None = None,
        commits: list[dict[str, Any]] | None = None,
        labels: tuple[str, ...] = (),
    ) -> int:
        number = self.add_issue(
            repo,
            title,
            milestone=milestone,
            user=user,
            body=body,
            labels=labels,
            state=state or ("closed" if merged else "open"),
        )
        r = self.repo(repo)
        with self.lock:
            issue = r.issues[number]
            issue["pull_request"] = {"url": f"{self.url}/repos/{repo}/pulls/{number}"}
            issue["html_url"] = f"{self.web}/{repo}/pull/{number}"
            listed = commits or []
            r.pull_commits[number] = listed
            r.pulls[number] = {
                "number": number,
                "title": title,
                "state": issue["state"],
                "body": body,
                "merged": merged,
                "merge_commit_sha": merge_commit_sha,
                "merged_by": None,
                "draft": False,
                "html_url": issue["html_url"],
                "user": issue["user"],
                "labels": issue["labels"],  # the same list: labels added later show in both
                "milestone": issue["milestone"],
                "commits": len(listed),
                "head": {
                    "ref": head,
                    "label": f"{repo.split('/')[0]}:{head}",
                    "sha": listed[-1]["sha"] if listed else merge_commit_sha,
                    "repo": None,  # a deleted fork
                },
                "base": {"ref": base},
            }
            return number

    def add_label(self, repo: str, number: int, name: str, *, actor: str | None) -> None:
        """A label added to an issue or PR by `actor` (None: a deleted account)."""
        r = self.repo(repo)
        with self.lock:
            labels = r.issues[number]["labels"]
            if name not in [label["name"] for label in labels]:
                labels.append({"name": name})
            r.events.setdefault(number, []).append(
                {
                    "id": r.new_id(),
                    "event": "labeled",
                    "actor": simple_user(actor),
                    "label": {"name": name, "color": "ededed"},
                    "created_at": "2026-11-20T10:00:00Z",
                }
            )

    def set_permission(self, repo: str, login: str, role: str, *, base: str | None = None) -> None:
        """A built-in role (`write`, `maintain`, …) or a custom one with its `base` role."""
        self.repo(repo).collaborators[login] = (base or _BASE[role], role)

    def fail_next(
        self, status: int, headers: dict[str, str] | None = None, message: str = "forced"
    ) -> None:
        """Answer the next request with this error (queue several for several)."""
        self.forced.append(Forced(status, headers or {}, {"message": message}))

    def fail_when(
        self, method: str, path: str, status: int, message: str = "forced", *, save: bool = False
    ) -> None:
        """Answer the next `method` request whose path ends with `path` (a regex) with an
        error; with `save`, handle it first (GitHub saved the write, then answered a 5xx)."""
        pattern = re.compile(f"{method} .*{path}")
        self.forced.append(Forced(status, {}, {"message": message}, pattern, save))

    def fail_after_saving(self, method: str, path: str, status: int = 502) -> None:
        self.fail_when(method, path, status, "Server Error", save=True)

    def exhaust_rate_limit(self, seconds: float, *, status: int = 403) -> int:
        """Answer the next request as GitHub does when the primary limit is used up; returns
        the reset time (epoch seconds) it names."""
        reset = int(time.time() + seconds)
        headers = {
            "X-RateLimit-Limit": "5000",
            "X-RateLimit-Remaining": "0",
            "X-RateLimit-Used": "5000",
            "X-RateLimit-Reset": str(reset),
            "X-RateLimit-Resource": "core",
        }
        self.fail_next(status, headers, "API rate limit exceeded for installation.")
        return reset

    # -- inspection --------------------------------------------------------------------------

    def comments_on(self, repo: str, number: int) -> list[str]:
        return [c["body"] for c in self.repo(repo).comments.get(number, [])]

    def writes(self) -> list[tuple[str, str, Any]]:
        return [r for r in self.requests if r[0] != "GET"]

    # -- dispatch (called by the server's request handler) -----------------------------------

    def answer(
        self, method: str, raw_path: str, body: Any, authorization: str | None
    ) -> tuple[int, Any, dict[str, str]]:
        from tests.fakegithub_routes import route

        url = urlparse(raw_path)
        path = url.path.removeprefix("/api/v3")
        query = {k: v[-1] for k, v in parse_qs(url.query).items()}
        with self.lock:
            self.requests.append((method, path, body))
            forced = next(
                (
                    f
                    for f in self.forced
                    if f.match is None or f.match.fullmatch(f"{method} {path}")
                ),
                None,
            )
            if forced is not None:
                self.forced.remove(forced)
                if not forced.save:
                    return forced.status, forced.body, forced.headers
        if authorization != f"Bearer {TOKEN}":
            return 401, {"message": "Bad credentials"}, {}
        with self.lock:
            status, data, headers = route(self, method, path, query, body, url.path)
            self.rate_remaining = max(0, self.rate_remaining - 1)
            headers = {
                "X-RateLimit-Limit": "5000",
                "X-RateLimit-Remaining": str(self.rate_remaining),
                "X-RateLimit-Reset": str(int(time.time()) + 3600),
                "X-RateLimit-Resource": "core",
                **headers,
            }
        if forced is not None:
            return forced.status, forced.body, forced.headers
        return status, data, headers


def start() -> tuple[FakeGitHub, Server, threading.Thread]:
    fake = FakeGitHub()
    server, thread = serve(fake.answer)
    fake.url = f"http://127.0.0.1:{server.server_address[1]}"
    return fake, server, thread
