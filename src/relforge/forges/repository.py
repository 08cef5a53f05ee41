"""Which GitHub repository (`owner/name`) a clone belongs to: `--github-repo`, or its remote's URL.

One rule for every command that needs it (release cut and audit, the cherry-pick bot, upstream
pull requests): the URL is the remote's configured one, not the one a `url.<base>.insteadOf`
rewrites it to (a mirror or a local copy names no repository)."""

from __future__ import annotations

from relforge.errors import ConfigError
from relforge.forges.github import repo_from_url
from relforge.git import Git


def check_repo_name(name: str) -> str:
    if name.count("/") != 1 or not all(name.split("/")):
        raise ConfigError(f"{name!r} is not a repository name like owner/name", key="--github-repo")
    return name


def project_repo(git: Git, remote: str, given: str | None) -> str | None:
    """`--github-repo` when given, else derived from the remote's URL (None if not GitHub)."""
    if given:
        return check_repo_name(given)
    git.remote_url(remote)  # a clear error for a missing remote
    return repo_from_url(git.run("config", "--get", f"remote.{remote}.url").strip())


def require_project_repo(git: Git, remote: str, given: str | None) -> str:
    """`project_repo`, or a configuration error that says to pass --github-repo."""
    found = project_repo(git, remote, given)
    if found is None:
        raise ConfigError(
            f"cannot tell the GitHub repository from the URL of remote {remote!r}",
            key="--github-repo",
            hint="pass --github-repo OWNER/NAME",
        )
    return found
