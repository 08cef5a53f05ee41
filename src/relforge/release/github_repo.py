"""Which GitHub repository (`owner/name`) a clone belongs to: `--github-repo`, or the remote URL."""

from __future__ import annotations

from urllib.parse import urlsplit

from relforge.errors import ConfigError
from relforge.git import Git

GITHUB_HOST = "github.com"


def repo_from_url(url: str) -> str | None:
    """`owner/name` of a github.com remote URL (https, ssh:// or scp-like), else None."""
    if "://" in url:
        parts = urlsplit(url)
        host, path = parts.hostname or "", parts.path
    elif ":" in url and "@" in url.split(":", 1)[0]:  # git@github.com:owner/name.git
        user_host, path = url.split(":", 1)
        host = user_host.rsplit("@", 1)[1]
    else:
        return None
    if host.lower() != GITHUB_HOST:
        return None
    pieces = [p for p in path.strip("/").removesuffix(".git").split("/") if p]
    return "/".join(pieces) if len(pieces) == 2 else None


def check_repo_name(name: str) -> str:
    if name.count("/") != 1 or not all(name.split("/")):
        raise ConfigError(f"{name!r} is not a repository name like owner/name", key="--github-repo")
    return name


def project_repo(git: Git, remote: str, given: str | None) -> str | None:
    """`--github-repo` when given, else derived from the remote's URL (None if not GitHub)."""
    if given:
        return check_repo_name(given)
    return repo_from_url(git.remote_url(remote))
