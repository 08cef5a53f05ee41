"""Guards on the release engineer's checkout before a command that writes to the remote.

relforge plans from the remote's refs and never touches the work tree, but a checkout with
uncommitted edits or a detached HEAD means the engineer is looking at something other than what
would be released; the commands stop and say so instead of guessing.
"""

from __future__ import annotations

from relforge.errors import ConfigError, RefusedError
from relforge.git import Git
from relforge.release.matrixfile import MATRIX_PLACES, committed_matrices, matrix_files


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


def require_pushed(git: Git, branch: str, remote_commit: str, remote: str) -> str | None:
    """Refuse (exit 5) when the local `branch` is ahead of or has diverged from the remote's
    `branch` at `remote_commit`: relforge releases the remote's commit, which lacks the local
    ones.  A local branch behind the remote is fine; the note returned says so (None when the
    two agree or there is no local branch).  `remote_commit` must be present locally."""
    local = git.commit_of(f"refs/heads/{branch}")
    if local is None or local == remote_commit:
        return None
    ahead, behind = git.ahead_behind(local, remote_commit)
    theirs = f"{remote}/{branch}"
    if ahead and behind:
        raise RefusedError(
            f"{branch} and {theirs} have diverged ({commits(ahead)} only on {branch}, "
            f"{commits(behind)} only on {theirs}); relforge releases {theirs} "
            f"({remote_commit[:12]}), which lacks your {commits(ahead)}",
            key="--repo",
            hint=f"bring them together (git pull --rebase {remote} {branch}), "
            f"git push {remote} {branch}, then rerun",
        )
    if ahead:
        raise RefusedError(
            f"{branch} is {commits(ahead)} ahead of {theirs}; relforge releases {theirs} "
            f"({remote_commit[:12]}), which lacks {'it' if ahead == 1 else 'them'}",
            key="--repo",
            hint=f"git push {remote} {branch} first (or drop the local commits), then rerun",
        )
    return (
        f"your {branch} is {commits(behind)} behind {theirs}; relforge uses {theirs} "
        f"({remote_commit[:12]}), not your checkout"
    )


def require_matrix_pushed(
    git: Git,
    commit: str,
    label: str,
    *,
    push: str,
    given: str | None = None,
    elsewhere: tuple[str, str] | None = None,
) -> None:
    """Called when `commit` (the remote's, `label`) has no relforge matrix (none at `given`,
    when given): refuse (exit 5) when the project has one all the same, so a release from
    `commit` would have no matrix and no CI — an uncommitted matrix in the work tree, or one
    on `elsewhere` (label, commit: the remote's trunk when cutting from another ref).  `push`
    says what to push (e.g. "origin main").  A project with no matrix anywhere passes."""
    places = (given,) if given else MATRIX_PLACES
    local = [p for p in git.untracked(*places) if given or p in matrix_files([p])]
    if local:
        raise RefusedError(
            f"{label} ({commit[:12]}) has no relforge matrix, but {git.root} has "
            f"{local[0]} (not committed); a release of {label} would have no matrix and no CI",
            key="--matrix" if given else "--repo",
            hint=f"push the matrix first: git add {local[0]}, git commit, git push {push}; "
            "then rerun",
        )
    if elsewhere is None:
        return
    other, other_commit = elsewhere
    if given:
        found = [given] if git.read_file(other_commit, given) is not None else []
    else:
        found = committed_matrices(git, other_commit)
    if found:
        raise RefusedError(
            f"{label} ({commit[:12]}) has no relforge matrix, but {other} has {found[0]}; "
            f"a release of {label} would have no matrix and no CI",
            key="--from",
            hint=f"cut from a commit that has the matrix: wait until {label} has it, or pass "
            f"--from a ref of {other}'s history that has it",
        )


def commits(count: int) -> str:
    return f"{count} commit{'' if count == 1 else 's'}"
