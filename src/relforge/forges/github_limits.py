"""GitHub's errors and rate limits as relforge sees them: which answers are worth waiting for
(`Retry-After`, `X-RateLimit-Reset`, secondary limits, 5xx) and for how long, and the errors
raised otherwise.  Messages name the API route, never the host."""

from __future__ import annotations

from datetime import datetime, timezone

import requests

from relforge.errors import RelforgeError


class GitHubError(RelforgeError):
    """GitHub answered with an error we cannot work around: a refused token, a missing
    repository or pull request, a request it rejects (exit 6: the environment's fault, not a
    bug; exit 1 is kept for bugs)."""

    exit_code = 6
    label = "GitHub error"

    def __init__(self, message: str, *, status: int = 0, hint: str | None = None) -> None:
        super().__init__(message, hint=hint)
        self.status = status


class RateLimited(GitHubError):
    """A rate limit resets later than the waiting budget allows (exit 6: rerun later)."""

    label = "GitHub rate limit"

    def __init__(self, message: str, *, status: int, reset: datetime | None) -> None:
        when = f"after {reset:%H:%M} UTC" if reset else "later"
        super().__init__(message, status=status, hint=f"re-run the job {when}")
        self.reset = reset


class GitHubUnavailable(GitHubError):
    """GitHub could not be reached, or answered 5xx on every retry (exit 6: re-run later)."""

    label = "GitHub unavailable"


class MaybeSaved(GitHubError):
    """A write answered with a 5xx or cut off: GitHub may or may not have saved it."""


def retry_after(
    response: requests.Response, attempt: int, now: float
) -> tuple[float | None, datetime | None]:
    """Seconds to wait before retrying (None: retrying cannot help), and when a limit resets."""
    status = response.status_code
    headers = response.headers
    if "Retry-After" in headers:
        try:
            wait = max(0.0, float(headers["Retry-After"]))
        except ValueError:
            wait = 60.0
        return wait, _at(now + wait)
    if is_rate_limited(response):
        reset = headers.get("X-RateLimit-Reset", "")
        if reset.isascii() and reset.isdigit():
            # A reset behind our clock (skew) is no reason to call again at once: back off.
            return max(2.0**attempt, float(reset) - now), _at(float(reset))
        return 60.0 * 2.0**attempt, None
    if status >= 500:
        return min(2.0**attempt, 60.0), None
    return None, None


def is_rate_limited(response: requests.Response) -> bool:
    """A primary (403/429 with no requests left) or secondary rate limit answer."""
    status = response.status_code
    return status == 429 or (
        status == 403
        and (
            response.headers.get("X-RateLimit-Remaining") == "0"
            or "secondary rate limit" in response.text.lower()
        )
    )


def _at(epoch: float) -> datetime | None:
    try:
        return datetime.fromtimestamp(epoch, tz=timezone.utc)
    except (OverflowError, OSError, ValueError):
        return None


def rate_limited(
    route: str,
    response: requests.Response,
    wait: float,
    reset: datetime | None,
    *,
    retries: int | None = None,
) -> RateLimited:
    """The error for a limit that resets too late (or, after `retries`, never lifted)."""
    when = f"resets at {reset:%Y-%m-%d %H:%M:%S} UTC" if reset else "does not reset soon"
    if retries is not None:
        return RateLimited(
            f"{route} is still rate limited ({response.status_code}) after {retries} retries"
            + (f"; the limit said it {when}" if reset else ""),
            status=response.status_code,
            reset=None,
        )
    return RateLimited(
        f"{route} is rate limited ({response.status_code}); the limit {when}, "
        f"in {wait / 60:.0f} min, longer than relforge waits",
        status=response.status_code,
        reset=reset,
    )


def error_of(route: str, response: requests.Response) -> GitHubError:
    try:
        data = response.json()
        message = str(data.get("message", "")) if isinstance(data, dict) else ""
    except ValueError:
        message = response.text[:200]
    hint = None
    if response.status_code == 401:
        hint = "set GITHUB_TOKEN to a token that can access the repository"
    elif response.status_code == 403:
        hint = "the token lacks a permission, or a rate limit did not reset in time"
    kind = GitHubUnavailable if response.status_code >= 500 else GitHubError
    if kind is GitHubUnavailable:
        hint = "GitHub failed on every retry: re-run the job later"
    return kind(
        f"{route} answered {response.status_code}: {message}",
        status=response.status_code,
        hint=hint,
    )
