"""What a merged pull request put on its base branch, and so what a cherry-pick must take.

GitHub's three merge methods leave different commits behind `merge_commit_sha`:

- "Create a merge commit": a merge (two parents) → pick it with `-m 1`;
- "Squash and merge": one new commit → pick it;
- "Rebase and merge": the PR's N commits rebased onto the base branch, `merge_commit_sha` being
  only the last → pick all N, oldest first (picking the last alone loses the others).

Squash and rebase both leave single-parent commits, so they are told apart by the PR's commits
(`GET /pulls/{n}/commits`): a rebase keeps each commit's message, author and author date, so the
N first-parent commits ending at `merge_commit_sha` match the PR's N commits one by one.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from datetime import datetime, timezone

from relforge.errors import RefusedError
from relforge.forges.github import PULL_COMMITS_LIMIT, GitHubClient, PullCommit, PullRequest
from relforge.git import Git


class MergeMethod(enum.Enum):
    MERGE = "merge commit"
    SQUASH = "squash"
    REBASE = "rebase"


@dataclass(frozen=True, kw_only=True)
class PickSource:
    """The commits to pick, oldest first, and how."""

    method: MergeMethod
    commits: tuple[str, ...]

    @property
    def head(self) -> str:
        """The newest commit (GitHub's `merge_commit_sha`)."""
        return self.commits[-1]

    @property
    def mainline(self) -> tuple[str, ...]:
        return ("-m", "1") if self.method is MergeMethod.MERGE else ()

    def argv(self) -> tuple[str, ...]:
        """`cherry-pick` arguments that reproduce the pick, as run."""
        return ("cherry-pick", "-x", *self.mainline, *self.commits)

    def command(self) -> str:
        """The exact command a person runs to make the same pick by hand."""
        return "git " + " ".join(self.argv())

    def describe(self) -> str:
        match self.method:
            case MergeMethod.MERGE:
                return f"a merge commit ({self.head[:12]})"
            case MergeMethod.SQUASH:
                return f"a squashed commit ({self.head[:12]})"
            case MergeMethod.REBASE:
                n = len(self.commits)
                return f"a rebase of {n} commit{'s' if n != 1 else ''} ending at {self.head[:12]}"


def pick_source(git: Git, gh: GitHubClient, pull: PullRequest, merge_sha: str) -> PickSource:
    """The commits PR `pull` landed as (`merge_sha` must be present in `git`)."""
    parents = git.run("rev-list", "--parents", "-n", "1", merge_sha).split()[1:]
    if len(parents) > 1:
        return PickSource(method=MergeMethod.MERGE, commits=(merge_sha,))
    listed = gh.pull_commits(pull.number)
    if len(listed) >= PULL_COMMITS_LIMIT or (pull.commits or 0) > len(listed):
        raise RefusedError(
            f"#{pull.number} has {pull.commits or len(listed)} commits; GitHub lists at most "
            f"{PULL_COMMITS_LIMIT}, so relforge cannot tell which of them landed",
            hint="pick the commits by hand",
        )
    last_rebased = bool(listed) and _same(git, merge_sha, listed[-1])
    if len(listed) > 1:
        rebased = _rebased(git, merge_sha, listed)
        if rebased is not None:
            return PickSource(method=MergeMethod.REBASE, commits=rebased)
        if last_rebased:  # the last commit was rebased, the others cannot be found: never guess
            raise RefusedError(
                f"#{pull.number} looks rebased ({merge_sha[:12]} is its last commit), but the "
                f"{len(listed) - 1} commits before it on {pull.base_ref} are not its others",
                hint="pick its commits by hand, oldest first, each with git cherry-pick -x",
            )
    method = MergeMethod.REBASE if last_rebased else MergeMethod.SQUASH
    return PickSource(method=method, commits=(merge_sha,))


def _rebased(git: Git, merge_sha: str, listed: list[PullCommit]) -> tuple[str, ...] | None:
    chain = git.run("rev-list", "--first-parent", f"--max-count={len(listed)}", merge_sha).split()[
        ::-1
    ]
    if len(chain) != len(listed):
        return None
    if all(_same(git, sha, original) for sha, original in zip(chain, listed, strict=True)):
        return tuple(chain)
    return None


def _same(git: Git, sha: str, original: PullCommit) -> bool:
    """Whether commit `sha` is `original` rebased: same message, author and author date."""
    out = git.run("show", "-s", "--format=%ae%x00%at%x00%B", sha)
    email, stamp, message = out.split("\0", 2)
    if original.author_time is None or original.author_email.lower() != email.lower():
        return False
    when = datetime.fromtimestamp(int(stamp), tz=timezone.utc)
    return when == original.author_time and message.strip() == original.message.strip()
