"""A typed GitHub REST client on `requests`: token from GITHUB_TOKEN, configurable API URL (GitHub
Enterprise), pagination by Link headers, and retries with backoff for rate limits (`Retry-After`,
secondary limits, `X-RateLimit-Reset`) and server errors.  The token never appears in messages.
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import requests

from relforge.errors import ConfigError, RelforgeError

DEFAULT_API_URL = "https://api.github.com"
# A GitHub login: letters, digits and single hyphens.
_LOGIN = re.compile(r"[A-Za-z0-9](?:-?[A-Za-z0-9])*")


class GitHubError(RelforgeError):
    """GitHub answered with an error we cannot work around (exit 1)."""

    label = "GitHub error"

    def __init__(self, message: str, *, status: int = 0, hint: str | None = None) -> None:
        super().__init__(message, hint=hint)
        self.status = status


@dataclass(frozen=True, kw_only=True)
class PullRequest:
    number: int
    title: str
    state: str
    merged: bool
    merge_commit_sha: str | None
    html_url: str
    user: str
    head_ref: str
    base_ref: str
    body: str

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> PullRequest:
        return cls(
            number=int(data["number"]),
            title=str(data["title"]),
            state=str(data["state"]),
            merged=bool(data.get("merged")),
            merge_commit_sha=data.get("merge_commit_sha"),
            html_url=str(data["html_url"]),
            user=str(data["user"]["login"]),
            head_ref=str(data["head"]["ref"]),
            base_ref=str(data["base"]["ref"]),
            body=str(data.get("body") or ""),
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
        milestone = data.get("milestone")
        return cls(
            number=int(data["number"]),
            title=str(data["title"]),
            state=str(data["state"]),
            labels=tuple(str(label["name"]) for label in data.get("labels", ())),
            html_url=str(data["html_url"]),
            is_pull_request="pull_request" in data,
            milestone=str(milestone["title"]) if milestone else None,
        )


@dataclass(frozen=True, kw_only=True)
class MilestoneInfo:
    number: int
    title: str
    state: str
    html_url: str

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> MilestoneInfo:
        return cls(
            number=int(data["number"]),
            title=str(data["title"]),
            state=str(data.get("state") or ""),
            html_url=str(data.get("html_url") or ""),
        )


@dataclass(frozen=True, kw_only=True)
class Comment:
    id: int
    body: str
    user: str
    html_url: str

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Comment:
        return cls(
            id=int(data["id"]),
            body=str(data.get("body") or ""),
            user=str(data["user"]["login"]),
            html_url=str(data["html_url"]),
        )


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
        sleep: Callable[[float], None] = time.sleep,
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
        self.sleep = sleep
        self.timeout = timeout

    def __repr__(self) -> str:  # never show the token
        return f"GitHubClient({self.repo!r}, api_url={self.api_url!r})"

    # -- transport ---------------------------------------------------------------------------

    def request(
        self,
        method: str,
        path: str,
        *,
        params: Mapping[str, Any] | None = None,
        json: Any = None,
        ok: tuple[int, ...] = (),
    ) -> requests.Response:
        """One API call with retries; `path` is relative to the API root or an absolute URL."""
        url = path if path.startswith("http") else f"{self.api_url}/{path.lstrip('/')}"
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
                    f"{_public(self.api_url)!r} is not a URL relforge can reach the API at",
                    key="GITHUB_API_URL",
                    hint=f"unset it for github.com ({DEFAULT_API_URL}), or set it to the API "
                    "root of GitHub Enterprise, e.g. https://github.example.org/api/v3",
                ) from None
            except requests.RequestException as exc:
                if attempt == self.max_retries:
                    raise GitHubError(
                        f"{method} {_public(url)}: {type(exc).__name__}",
                        hint="is the API URL reachable?",
                    ) from None
                self.sleep(min(2.0**attempt, 60.0))
                continue
            if response.status_code < 400 or response.status_code in ok:
                return response
            wait = _retry_after(response, attempt)
            if wait is None or attempt == self.max_retries:
                raise _error(method, url, response)
            self.sleep(wait)
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
        return PullRequest.from_json(self.request("POST", self._repo("pulls"), json=data).json())

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

    def milestone(self, number: int) -> MilestoneInfo:
        return MilestoneInfo.from_json(self.get(self._repo(f"milestones/{number}")))

    def comments(self, number: int) -> list[Comment]:
        return [
            Comment.from_json(c) for c in self.paginate(self._repo(f"issues/{number}/comments"))
        ]

    def comment(self, number: int, body: str) -> Comment:
        response = self.request(
            "POST", self._repo(f"issues/{number}/comments"), json={"body": body}
        )
        return Comment.from_json(response.json())

    def permission(self, user: str) -> str:
        """`admin`, `maintain`, `write`, `triage`, `read` or `none` (also for a name that is
        not a GitHub login: it would not be one path segment of the request)."""
        if not _LOGIN.fullmatch(user):
            return "none"
        response = self.request("GET", self._repo(f"collaborators/{user}/permission"), ok=(404,))
        if response.status_code == 404:
            return "none"
        data = response.json()
        return str(data.get("role_name") or data.get("permission") or "none")


def _public(url: str) -> str:
    return url.split("?", 1)[0]


def _retry_after(response: requests.Response, attempt: int) -> float | None:
    """Seconds to wait before retrying, or None when retrying cannot help."""
    status = response.status_code
    headers = response.headers
    if "Retry-After" in headers:
        try:
            return min(float(headers["Retry-After"]), 300.0)
        except ValueError:
            return 60.0
    limited = status == 429 or (
        status == 403
        and (
            headers.get("X-RateLimit-Remaining") == "0"
            or "secondary rate limit" in response.text.lower()
        )
    )
    if limited:
        reset = headers.get("X-RateLimit-Reset")
        if reset and reset.isdigit():
            return max(0.0, min(float(reset) - time.time(), 300.0))
        return min(60.0 * 2.0**attempt, 300.0)
    if status >= 500:
        return min(2.0**attempt, 60.0)
    return None


def _error(method: str, url: str, response: requests.Response) -> GitHubError:
    try:
        message = str(response.json().get("message", ""))
    except ValueError:
        message = response.text[:200]
    hint = None
    if response.status_code == 401:
        hint = "set GITHUB_TOKEN to a token that can access the repository"
    elif response.status_code == 403:
        hint = "the token lacks a permission, or a rate limit did not reset in time"
    return GitHubError(
        f"{method} {_public(url)} answered {response.status_code}: {message}",
        status=response.status_code,
        hint=hint,
    )


def repo_from_url(url: str) -> str | None:
    """`owner/name` of a GitHub remote URL (https://…, ssh://…, git@host:owner/name.git)."""
    from urllib.parse import urlsplit

    if "://" in url:
        path = urlsplit(url).path
    elif ":" in url and not url.startswith(("/", ".")):
        path = url.split(":", 1)[1]
    else:
        return None
    path = path.strip("/").removesuffix(".git")
    parts = path.split("/")
    return path if len(parts) == 2 and all(parts) else None
