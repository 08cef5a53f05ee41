"""An in-process stand-in for the GitHub REST endpoints relforge calls, with state.

This is the one test double the project allows (no GitHub is reachable from tests).  It keeps
repositories with pull requests, issues (PRs are issues too, sharing numbers), comments, labels,
milestones and collaborator permissions; checks the bearer token; paginates with Link headers
like GitHub; and can be told to answer the next requests with an error (rate limits, 5xx).
"""

from __future__ import annotations

import json
import re
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlparse

TOKEN = "test-token-do-not-print"


@dataclass
class FakeRepo:
    name: str
    collaborators: dict[str, str] = field(default_factory=dict)
    issues: dict[int, dict[str, Any]] = field(default_factory=dict)
    pulls: dict[int, dict[str, Any]] = field(default_factory=dict)
    comments: dict[int, list[dict[str, Any]]] = field(default_factory=dict)
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


class FakeGitHub:
    """The server's state and the helpers tests use to seed and inspect it."""

    def __init__(self) -> None:
        self.repos: dict[str, FakeRepo] = {}
        self.requests: list[tuple[str, str, Any]] = []
        self.forced: list[Forced] = []
        self.lock = threading.RLock()
        self.url = ""
        self.web = "https://github.example"

    # -- seeding -----------------------------------------------------------------------------

    def repo(self, name: str) -> FakeRepo:
        with self.lock:
            return self.repos.setdefault(name, FakeRepo(name))

    def add_milestone(self, repo: str, title: str) -> int:
        r = self.repo(repo)
        number = len(r.milestones) + 1
        r.milestones[number] = {"number": number, "title": title, "state": "open"}
        return number

    def add_issue(
        self,
        repo: str,
        title: str,
        *,
        labels: tuple[str, ...] = (),
        milestone: int | None = None,
        state: str = "open",
        user: str = "someone",
        body: str = "",
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
                "user": {"login": user},
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
        user: str = "author",
        body: str = "",
        milestone: int | None = None,
        state: str | None = None,
    ) -> int:
        number = self.add_issue(
            repo,
            title,
            milestone=milestone,
            user=user,
            body=body,
            state=state or ("closed" if merged else "open"),
        )
        r = self.repo(repo)
        with self.lock:
            issue = r.issues[number]
            issue["pull_request"] = {"url": f"{self.url}/repos/{repo}/pulls/{number}"}
            issue["html_url"] = f"{self.web}/{repo}/pull/{number}"
            r.pulls[number] = {
                "number": number,
                "title": title,
                "state": issue["state"],
                "body": body,
                "merged": merged,
                "merge_commit_sha": merge_commit_sha,
                "draft": False,
                "html_url": issue["html_url"],
                "user": {"login": user},
                "head": {"ref": head, "label": f"{repo.split('/')[0]}:{head}"},
                "base": {"ref": base},
            }
            return number

    def set_permission(self, repo: str, user: str, permission: str) -> None:
        self.repo(repo).collaborators[user] = permission

    def fail_next(
        self, status: int, headers: dict[str, str] | None = None, message: str = "forced"
    ) -> None:
        """Answer the next request with this error (queue several for several)."""
        self.forced.append(Forced(status, headers or {}, {"message": message}))

    # -- inspection --------------------------------------------------------------------------

    def comments_on(self, repo: str, number: int) -> list[str]:
        return [c["body"] for c in self.repo(repo).comments.get(number, [])]

    def writes(self) -> list[tuple[str, str, Any]]:
        return [r for r in self.requests if r[0] != "GET"]


_ROUTES: list[tuple[str, re.Pattern[str], str]] = [
    (m, re.compile(p), h)
    for m, p, h in [
        ("GET", r"/repos/([^/]+/[^/]+)/pulls/(\d+)", "get_pull"),
        ("GET", r"/repos/([^/]+/[^/]+)/pulls", "list_pulls"),
        ("POST", r"/repos/([^/]+/[^/]+)/pulls", "create_pull"),
        ("GET", r"/repos/([^/]+/[^/]+)/issues/(\d+)/comments", "list_comments"),
        ("POST", r"/repos/([^/]+/[^/]+)/issues/(\d+)/comments", "create_comment"),
        ("POST", r"/repos/([^/]+/[^/]+)/issues/(\d+)/labels", "add_labels"),
        ("GET", r"/repos/([^/]+/[^/]+)/issues/(\d+)", "get_issue"),
        ("GET", r"/repos/([^/]+/[^/]+)/issues", "list_issues"),
        ("GET", r"/repos/([^/]+/[^/]+)/milestones/(\d+)", "get_milestone"),
        ("GET", r"/repos/([^/]+/[^/]+)/milestones", "list_milestones"),
        ("GET", r"/repos/([^/]+/[^/]+)/collaborators/([^/]+)/permission", "permission"),
    ]
]


class _NotFound(Exception):
    pass


class _Unprocessable(Exception):
    pass


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        pass

    def do_GET(self) -> None:
        self._serve("GET")

    def do_POST(self) -> None:
        self._serve("POST")

    def do_PATCH(self) -> None:
        self._serve("PATCH")

    def _serve(self, method: str) -> None:
        fake = self.server.fake
        url = urlparse(self.path)
        query = {k: v[-1] for k, v in parse_qs(url.query).items()}
        length = int(self.headers.get("Content-Length") or 0)
        body = json.loads(self.rfile.read(length) or b"null") if length else None
        with fake.lock:
            fake.requests.append((method, url.path, body))
            if fake.forced:
                forced = fake.forced.pop(0)
                return self._send(forced.status, forced.body, forced.headers)
        if self.headers.get("Authorization") != f"Bearer {TOKEN}":
            return self._send(401, {"message": "Bad credentials"})
        for route_method, pattern, handler in _ROUTES:
            match = pattern.fullmatch(url.path)
            if match and route_method == method:
                try:
                    with fake.lock:
                        status, data = getattr(self, handler)(fake, query, body, *match.groups())
                except _NotFound:
                    return self._send(404, {"message": "Not Found"})
                except _Unprocessable as exc:
                    return self._send(
                        422, {"message": "Validation Failed", "errors": [{"message": str(exc)}]}
                    )
                if isinstance(data, list):
                    return self._page(data, query, url.path)
                return self._send(status, data)
        return self._send(404, {"message": "Not Found"})

    def _send(self, status: int, data: Any, headers: dict[str, str] | None = None) -> None:
        raw = json.dumps(data).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(raw)))
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        self.end_headers()
        self.wfile.write(raw)

    def _page(self, items: list[Any], query: dict[str, str], path: str) -> None:
        per_page = int(query.get("per_page", 30))
        page = int(query.get("page", 1))
        chunk = items[(page - 1) * per_page : page * per_page]
        headers = {}
        if page * per_page < len(items):
            rest = {**query, "page": str(page + 1), "per_page": str(per_page)}
            link = self.server.fake.url + path + "?" + "&".join(f"{k}={v}" for k, v in rest.items())
            headers["Link"] = f'<{link}>; rel="next"'
        self._send(200, chunk, headers)

    # -- handlers: (fake, query, body, *path groups) -> (status, data) -----------------------

    @staticmethod
    def _repo(fake: FakeGitHub, name: str) -> FakeRepo:
        if name not in fake.repos:
            raise _NotFound
        return fake.repos[name]

    def get_pull(
        self, fake: FakeGitHub, q: dict[str, str], b: Any, repo: str, n: str
    ) -> tuple[int, Any]:
        pulls = self._repo(fake, repo).pulls
        if int(n) not in pulls:
            raise _NotFound
        return 200, pulls[int(n)]

    def list_pulls(self, fake: FakeGitHub, q: dict[str, str], b: Any, repo: str) -> tuple[int, Any]:
        out = []
        for pull in self._repo(fake, repo).pulls.values():
            state = q.get("state", "open")
            if state != "all" and pull["state"] != state:
                continue
            if "head" in q and pull["head"]["label"] != q["head"]:
                continue
            if "base" in q and pull["base"]["ref"] != q["base"]:
                continue
            out.append(pull)
        return 200, out

    def create_pull(
        self, fake: FakeGitHub, q: dict[str, str], b: Any, repo: str
    ) -> tuple[int, Any]:
        r = self._repo(fake, repo)
        owner = repo.split("/")[0]
        label = b["head"] if ":" in b["head"] else f"{owner}:{b['head']}"
        for pull in r.pulls.values():
            if (
                pull["state"] == "open"
                and pull["head"]["label"] == label
                and pull["base"]["ref"] == b["base"]
            ):
                raise _Unprocessable(f"A pull request already exists for {label}.")
        number = fake.add_pull(
            repo,
            b["title"],
            head=label.split(":", 1)[1],
            base=b["base"],
            user="relforge-bot",
            body=b.get("body", ""),
        )
        r.pulls[number]["draft"] = bool(b.get("draft"))
        return 201, r.pulls[number]

    def get_issue(
        self, fake: FakeGitHub, q: dict[str, str], b: Any, repo: str, n: str
    ) -> tuple[int, Any]:
        issues = self._repo(fake, repo).issues
        if int(n) not in issues:
            raise _NotFound
        return 200, issues[int(n)]

    def list_issues(
        self, fake: FakeGitHub, q: dict[str, str], b: Any, repo: str
    ) -> tuple[int, Any]:
        out = []
        wanted = set(filter(None, q.get("labels", "").split(",")))
        for issue in self._repo(fake, repo).issues.values():
            state = q.get("state", "open")
            if state != "all" and issue["state"] != state:
                continue
            if not wanted <= {label["name"] for label in issue["labels"]}:
                continue
            milestone = q.get("milestone")
            if milestone not in (None, "*"):
                number = issue["milestone"]["number"] if issue["milestone"] else None
                if milestone == "none" and number is not None:
                    continue
                if milestone != "none" and number != int(milestone):
                    continue
            out.append(issue)
        return 200, out

    def list_comments(
        self, fake: FakeGitHub, q: dict[str, str], b: Any, repo: str, n: str
    ) -> tuple[int, Any]:
        r = self._repo(fake, repo)
        if int(n) not in r.issues:
            raise _NotFound
        return 200, r.comments.get(int(n), [])

    def create_comment(
        self, fake: FakeGitHub, q: dict[str, str], b: Any, repo: str, n: str
    ) -> tuple[int, Any]:
        r = self._repo(fake, repo)
        if int(n) not in r.issues:
            raise _NotFound
        cid = r.new_id()
        comment = {
            "id": cid,
            "body": b["body"],
            "user": {"login": "relforge-bot"},
            "html_url": f"{r.issues[int(n)]['html_url']}#issuecomment-{cid}",
        }
        r.comments.setdefault(int(n), []).append(comment)
        return 201, comment

    def add_labels(
        self, fake: FakeGitHub, q: dict[str, str], b: Any, repo: str, n: str
    ) -> tuple[int, Any]:
        r = self._repo(fake, repo)
        if int(n) not in r.issues:
            raise _NotFound
        labels = r.issues[int(n)]["labels"]
        for name in b.get("labels", []):
            if name not in [label["name"] for label in labels]:
                labels.append({"name": name})
        return 200, labels

    def get_milestone(
        self, fake: FakeGitHub, q: dict[str, str], b: Any, repo: str, n: str
    ) -> tuple[int, Any]:
        milestones = self._repo(fake, repo).milestones
        if int(n) not in milestones:
            raise _NotFound
        return 200, milestones[int(n)]

    def list_milestones(
        self, fake: FakeGitHub, q: dict[str, str], b: Any, repo: str
    ) -> tuple[int, Any]:
        return 200, list(self._repo(fake, repo).milestones.values())

    def permission(
        self, fake: FakeGitHub, q: dict[str, str], b: Any, repo: str, user: str
    ) -> tuple[int, Any]:
        r = self._repo(fake, repo)
        permission = r.collaborators.get(user, "none")
        legacy = {"maintain": "write", "triage": "read"}.get(permission, permission)
        return 200, {"permission": legacy, "role_name": permission, "user": {"login": user}}


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, fake: FakeGitHub) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.fake = fake


def start() -> tuple[FakeGitHub, _Server, threading.Thread]:
    fake = FakeGitHub()
    server = _Server(fake)
    fake.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    return fake, server, thread
