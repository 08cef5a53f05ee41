"""Guards on the release engineer's checkout before a command that writes to the remote.

relforge plans from the remote's refs and never touches the work tree, but a checkout with
uncommitted edits or a detached HEAD means the engineer is looking at something other than what
would be released; the commands stop and say so instead of guessing.
"""

from __future__ import annotations

from relforge.errors import ConfigError, RefusedError
from relforge.git import Git


def require_clean_checkout(git: Git) -> str:
    """The checked-out branch; refuses a detached HEAD (exit 2) or a dirty work tree (exit 5)."""
    branch = git.current_branch()
    if branch is None:
        raise ConfigError(
            f"{git.root} has a detached HEAD, so it is unclear which line you are releasing",
            key="--repo",
            hint="check out a branch first (git switch main or git switch release/X.Y)",
        )
    if git.is_dirty():
        changed = git.run("status", "--porcelain", "--untracked-files=no").splitlines()
        raise RefusedError(
            f"{git.root} has uncommitted changes ({len(changed)} file(s), e.g. "
            f"{changed[0][3:]}); a release is made from pushed commits only",
            key="--repo",
            hint="commit and push them, or stash them (git stash), then rerun",
        )
    return branch


def require_no_unpushed(git: Git, branch: str, remote_commit: str, remote: str) -> None:
    """Refuse when the local `branch` has commits the remote's branch lacks (exit 5)."""
    local = git.commit_of(f"refs/heads/{branch}")
    if local is None or local == remote_commit:
        return
    ahead = git.run("rev-list", "--count", f"{remote_commit}..{local}").strip()
    if ahead != "0":
        raise RefusedError(
            f"your local {branch} has {ahead} commit(s) that {remote}/{branch} does not; "
            "they would not be part of the release",
            key="--repo",
            hint=f"push them first (git push {remote} {branch}) or drop them",
        )
