"""A typed GitHub REST client on `requests`: token from GITHUB_TOKEN, configurable API URL (GitHub
Enterprise), pagination by Link headers, and retries with backoff for rate limits (`Retry-After`,
secondary limits, `X-RateLimit-Reset`) and server errors, within a bounded waiting budget.

Writes that create something (a comment, a pull request) are never blindly re-sent: GitHub may
have saved a POST it answered with a 5xx, so before sending it again the client looks for what
the first attempt would have made.  The token never appears in messages, and neither does the
API's host (messages name the route only: they end up in public comments).
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Callable, Iterator, Mapping
from typing import Any, TypeVar
from urllib.parse import urlsplit

import requests

from relforge.errors import ConfigError
from relforge.forges.github_limits import (
    GitHubError,
    GitHubUnavailable,
    MaybeSaved,
    RateLimited,
    error_of,
    is_rate_limited,
    rate_limited,
    retry_after,
)
from relforge.forges.github_models import (
    Comment,
    Issue,
    LabelEvent,
    Milestone,
    Permission,
    PullCommit,
    PullRequest,
)

__all__ = [
    "DEFAULT_API_URL",
    "Comment",
    "GitHubClient",
    "GitHubError",
    "GitHubUnavailable",
    "Issue",
    "LabelEvent",
    "Milestone",
    "MilestoneInfo",
    "Permission",
    "PullCommit",
    "PullRequest",
    "RateLimited",
    "repo_from_url",
]

DEFAULT_API_URL = "https://api.github.com"
# A GitHub login: letters, digits and single hyphens.
_LOGIN = re.compile(r"[A-Za-z0-9](?:-?[A-Za-z0-9])*")
# GET /pulls/{n}/commits lists at most this many commits (GitHub's documented limit).
PULL_COMMITS_LIMIT = 250
MilestoneInfo = Milestone
T = TypeVar("T")


class GitHubClient:
    """The REST endpoints relforge uses, for one repository (`owner/name`)."""

    def __init__(
        self,
        repo: str,
        *,
        api_url: str | None = None,
        token: str | None = None,
        session: requests.Session | None = None,
        max_retries: int = 5,
        max_wait: float = 600.0,
        sleep: Callable[[float], None] = time.sleep,
        clock: Callable[[], float] = time.time,
        timeout: float = 30.0,
    ) -> None:
        if repo.count("/") != 1 or not all(repo.split("/")):
            raise ConfigError(
                f"{repo!r} is not a GitHub repository name like owner/name", key="--github-repo"
            )
        self.repo = repo
        self.api_url = (api_url or os.environ.get("GITHUB_API_URL") or DEFAULT_API_URL).rstrip("/")
        self._token = token if token is not None else os.environ.get("GITHUB_TOKEN", "")
        self.session = session or requests.Session()
        self.max_retries = max_retries
        # Seconds this client may spend waiting in all: a bot run is one job with a timeout.
        self.max_wait = max_wait
        self.waited = 0.0
        self.sleep = sleep
        self.clock = clock
        self.timeout = timeout

    def __repr__(self) -> str:  # never show the token
        return f"GitHubClient({self.repo!r}, api_url={self.api_url!r})"

    # -- transport ---------------------------------------------------------------------------

    def route(self, url: str) -> str:
        """The path of a request below the API root: what messages show (no host, no query)."""
        path = url.split("?", 1)[0]
        if path.startswith(self.api_url):
            return "/" + path[len(self.api_url) :].lstrip("/")
        return urlsplit(path).path if "://" in path else "/" + path.lstrip("/")

    def request(
        self,
        method: str,
        path: str,
        *,
        params: Mapping[str, Any] | None = None,
        json: Any = None,
        ok: tuple[int, ...] = (),
    ) -> requests.Response:
        """One API call with retries; `path` is relative to the API root or an absolute URL.
        A POST is not re-sent after a 5xx or a cut connection (`MaybeSaved`): see `_create`."""
        url = path if path.startswith("http") else f"{self.api_url}/{path.lstrip('/')}"
        route = f"{method} {self.route(url)}"
        headers = {
            "Accept": "application/vnd.github+json",
            "X-GitHub-Api-Version": "2022-11-28",
            "User-Agent": "relforge",
        }
        if self._token:
            headers["Authorization"] = f"Bearer {self._token}"
        for attempt in range(self.max_retries + 1):
            try:
                response = self.session.request(
                    method, url, params=params, json=json, headers=headers, timeout=self.timeout
                )
            except (
                requests.exceptions.InvalidURL,
                requests.exceptions.InvalidSchema,
                requests.exceptions.MissingSchema,
            ):
                raise ConfigError(
                    "GITHUB_API_URL is not a URL relforge can reach the API at",
                    key="GITHUB_API_URL",
                    hint=f"unset it for github.com ({DEFAULT_API_URL}), or set it to the API "
                    "root of GitHub Enterprise, e.g. https://github.example.org/api/v3",
                ) from None
            except requests.RequestException as exc:
                if method == "POST":  # it may have arrived: look before sending it again
                    raise MaybeSaved(f"{route}: {type(exc).__name__}") from None
                if attempt == self.max_retries:
                    raise GitHubUnavailable(
                        f"{route}: {type(exc).__name__}", hint="is the API URL reachable?"
                    ) from None
                self._wait(min(2.0**attempt, 60.0))
                continue
            status = response.status_code
            if status < 400 or status in ok:
                return response
            if method == "POST" and status >= 500:
                raise MaybeSaved(f"{route} answered {status}", status=status)
            wait, reset = retry_after(response, attempt, self.clock())
            if wait is not None and attempt == self.max_retries and is_rate_limited(response):
                raise rate_limited(route, response, wait, reset, retries=attempt)  # exit 6
            if wait is None or attempt == self.max_retries:
                raise error_of(route, response)
            if self.waited + wait > self.max_wait:
                raise rate_limited(route, response, wait, reset)
            self._wait(wait)
        raise AssertionError("unreachable")  # pragma: no cover

    def _wait(self, seconds: float) -> None:
        self.waited += seconds
        self.sleep(seconds)

    def _create(self, post: Callable[[], T], find: Callable[[], T | None]) -> T:
        """Send a creating POST; after an answer that leaves open whether GitHub saved it, look
        for the object (`find`) before sending it again, so a retry never makes a duplicate."""
        for attempt in range(self.max_retries + 1):
            try:
                return post()
            except MaybeSaved as exc:
                if attempt == self.max_retries:
                    raise GitHubUnavailable(exc.message, status=exc.status) from None
                self._wait(min(2.0**attempt, 60.0))
                found = find()
                if found is not None:
                    return found
        raise AssertionError("unreachable")  # pragma: no cover

    def get(self, path: str, **params: Any) -> Any:
        return self.request("GET", path, params=params or None).json()

    def paginate(self, path: str, **params: Any) -> Iterator[Any]:
        """Every item of a list endpoint, following `Link: <…>; rel="next"`."""
        url: str | None = path
        query: Mapping[str, Any] | None = {"per_page": 100, **params}
        while url:
            response = self.request("GET", url, params=query)
            yield from response.json()
            url = response.links.get("next", {}).get("url")
            query = None  # the next link carries the query

    # -- endpoints ---------------------------------------------------------------------------

    def _repo(self, suffix: str) -> str:
        return f"repos/{self.repo}/{suffix}"

    def pull(self, number: int) -> PullRequest:
        return PullRequest.from_json(self.get(self._repo(f"pulls/{number}")))

    def pull_commits(self, number: int) -> list[PullCommit]:
        """The commits of a pull request, oldest first (GitHub lists at most 250)."""
        return [
            PullCommit.from_json(c) for c in self.paginate(self._repo(f"pulls/{number}/commits"))
        ]

    def pulls(
        self, *, state: str = "open", head: str | None = None, base: str | None = None
    ) -> list[PullRequest]:
        params: dict[str, Any] = {"state": state}
        if head:
            params["head"] = head
        if base:
            params["base"] = base
        return [PullRequest.from_json(p) for p in self.paginate(self._repo("pulls"), **params)]

    def create_pull(
        self, *, title: str, head: str, base: str, body: str, draft: bool = False
    ) -> PullRequest:
        data = {"title": title, "head": head, "base": base, "body": body, "draft": draft}
        owner = self.repo.split("/")[0]

        def post() -> PullRequest:
            return PullRequest.from_json(
                self.request("POST", self._repo("pulls"), json=data).json()
            )

        def find() -> PullRequest | None:
            found = self.pulls(state="open", head=f"{owner}:{head}", base=base)
            return found[0] if found else None

        return self._create(post, find)

    def edit_pull(self, number: int, *, title: str, body: str) -> PullRequest:
        """Replace a pull request's title and body (a PATCH: safe to repeat)."""
        data = {"title": title, "body": body}
        response = self.request("PATCH", self._repo(f"pulls/{number}"), json=data)
        return PullRequest.from_json(response.json())

    def issue(self, number: int) -> Issue:
        return Issue.from_json(self.get(self._repo(f"issues/{number}")))

    def issues(
        self, *, state: str = "open", labels: str | None = None, milestone: str | int | None = None
    ) -> list[Issue]:
        params: dict[str, Any] = {"state": state}
        if labels:
            params["labels"] = labels
        if milestone is not None:
            params["milestone"] = milestone
        return [Issue.from_json(i) for i in self.paginate(self._repo("issues"), **params)]

    def set_milestone(self, number: int, milestone: int) -> None:
        """Put issue or pull request `number` on a milestone (a PATCH: safe to repeat)."""
        self.request("PATCH", self._repo(f"issues/{number}"), json={"milestone": milestone})

    def label_events(self, number: int) -> list[LabelEvent]:
        """Who added which label to issue or pull request `number`, oldest first."""
        found = (LabelEvent.maybe(e) for e in self.paginate(self._repo(f"issues/{number}/events")))
        return [e for e in found if e is not None]

    def milestone(self, number: int) -> Milestone:
        return Milestone.from_json(self.get(self._repo(f"milestones/{number}")))

    def milestones(self, *, state: str = "open") -> list[Milestone]:
        return [
            Milestone.from_json(m) for m in self.paginate(self._repo("milestones"), state=state)
        ]

    def comments(self, number: int) -> list[Comment]:
        return [
            Comment.from_json(c) for c in self.paginate(self._repo(f"issues/{number}/comments"))
        ]

    def comment(self, number: int, body: str, *, marker: str | None = None) -> Comment:
        """Post a comment.  `marker` (default: the whole body) is what tells this comment apart
        when a retry has to find out whether an earlier attempt was saved."""
        tag = marker or body

        def post() -> Comment:
            response = self.request(
                "POST", self._repo(f"issues/{number}/comments"), json={"body": body}
            )
            return Comment.from_json(response.json())

        def find() -> Comment | None:
            return next((c for c in self.comments(number) if tag in c.body), None)

        return self._create(post, find)

    def edit_comment(self, comment_id: int, body: str) -> Comment:
        response = self.request(
            "PATCH", self._repo(f"issues/comments/{comment_id}"), json={"body": body}
        )
        return Comment.from_json(response.json())

    def permission(self, user: str) -> Permission:
        """A user's base permission and role name; `none` also for a name that is not a
        GitHub login (it would not be one path segment of the request)."""
        nobody = Permission(permission="none", role_name="none")
        if not _LOGIN.fullmatch(user):
            return nobody
        response = self.request("GET", self._repo(f"collaborators/{user}/permission"), ok=(404,))
        if response.status_code == 404:
            return nobody
        data = response.json()
        base = str(data.get("permission") or "none")
        return Permission(permission=base, role_name=str(data.get("role_name") or base))


GITHUB_HOST = "github.com"


def github_hosts() -> frozenset[str]:
    """github.com, and the GitHub Enterprise server a workflow runs on (`GITHUB_SERVER_URL`)."""
    server = urlsplit(os.environ.get("GITHUB_SERVER_URL", "")).hostname
    return frozenset({GITHUB_HOST, *([server.lower()] if server else [])})


def repo_from_url(url: str, *, hosts: frozenset[str] | None = None) -> str | None:
    """`owner/name` of a GitHub remote URL (https://…, ssh://…, git@host:owner/name.git) on one
    of `hosts` (default `github_hosts()`), else None: another forge's URL or a path on disk."""
    if "://" in url:
        parts = urlsplit(url)
        host, path = parts.hostname or "", parts.path
    elif ":" in url and "@" in url.split(":", 1)[0]:  # git@github.com:owner/name.git
        user_host, path = url.split(":", 1)
        host = user_host.rsplit("@", 1)[1]
    else:
        return None
    if host.lower() not in (github_hosts() if hosts is None else hosts):
        return None
    pieces = [p for p in path.strip("/").removesuffix(".git").split("/") if p]
    return "/".join(pieces) if len(pieces) == 2 else None
