"""The git side of a cherry-pick: fetch what is needed, try `git cherry-pick -x` of each commit
a pull request landed as (in order) in a throwaway worktree (so neither the user's checkout nor
their branches change, and a dry run leaves nothing behind), report conflicts instead of
resolving them, and find reverts on the source branch.
"""

from __future__ import annotations

import enum
import tempfile
from dataclasses import dataclass
from pathlib import Path

from relforge.bot.grammar import ReleaseBranch
from relforge.bot.mergedchange import PickSource
from relforge.git import Git
from relforge.gitfaults import GitError, classify
from relforge.release.picks import Commit, commits

BOT_NAME = "relforge-bot"
BOT_EMAIL = "relforge-bot@users.noreply.github.com"
# Hooks of the user's clone do not run on our throwaway worktrees, and rerere must not replay a
# recorded resolution: a conflict is reported, never resolved behind anyone's back.
_SAFE = ("-c", "core.hooksPath=/dev/null", "-c", "rerere.enabled=false")


class PickOutcome(enum.Enum):
    CLEAN = "clean"
    CONFLICT = "conflict"
    EMPTY = "empty"  # the change is already there (the pick would commit nothing)


@dataclass(frozen=True, kw_only=True)
class PickAttempt:
    outcome: PickOutcome
    commit: str | None = None  # the new tip (clean, or conflicts committed on request)
    conflicts: tuple[str, ...] = ()
    conflicted: tuple[str, ...] = ()  # the source commits whose pick conflicted
    skipped: tuple[str, ...] = ()  # source commits whose change is there already (empty picks)


def pick_branch(pr: int, onto: ReleaseBranch) -> str:
    """`cherry-pick/<pr>-onto-release-X.Y`."""
    return f"cherry-pick/{pr}-onto-{onto.slug}"


def fetch_branch(git: Git, remote: str, branch: str) -> str:
    """Fetch one remote branch into FETCH_HEAD only (no ref of the clone changes); its commit."""
    git.remote_url(remote)  # a clear error for a missing remote
    git.run("fetch", "--quiet", "--no-tags", "--refmap=", remote, f"+refs/heads/{branch}")
    sha = git.commit_of("FETCH_HEAD")
    if sha is None:
        raise GitError(f"fetching {branch} from {remote} gave no commit")
    return sha


def ensure_commit(git: Git, remote: str, sha: str) -> None:
    """Make sure a commit is present, fetching it by id if needed."""
    if git.commit_of(sha):
        return
    git.result("fetch", "--quiet", "--no-tags", "--refmap=", remote, sha)
    if not git.commit_of(sha):
        raise GitError(
            f"commit {sha} is not in {git.root} and {remote} did not send it",
            hint="fetch the branch the pull request was merged into and rerun",
        )


def is_ancestor(git: Git, ancestor: str, descendant: str) -> bool:
    return git.ok("merge-base", "--is-ancestor", ancestor, descendant)


def active_revert(git: Git, commit: str, tip: str) -> Commit | None:
    """The commit on `tip` that reverts `commit`, unless that revert was itself reverted."""
    revert: Commit | None = None
    for c in reversed(commits(git, f"{commit}..{tip}")):  # oldest first
        target = c.reverts
        if target is None:
            continue
        if revert is None and _same(commit, target):
            revert = c
        elif revert is not None and _same(revert.sha, target):
            revert = None  # relanded
    return revert


def try_pick(
    git: Git, source: PickSource, base: str, *, keep_conflict: bool = False
) -> PickAttempt:
    """Cherry-pick the source's commits onto `base` in a throwaway worktree; the new commits
    stay reachable by id only (pushed later by id, so no local branch is ever created)."""
    with tempfile.TemporaryDirectory(prefix="relforge-pick-") as tmp:
        path = Path(tmp) / "worktree"
        git.run(*_SAFE, "worktree", "add", "--quiet", "--detach", str(path), base)
        try:
            return _pick_in(Git(path), source, base, keep_conflict, identity_env(git))
        finally:
            git.result("worktree", "remove", "--force", str(path))
            git.result("worktree", "prune")


def identity_env(git: Git) -> dict[str, str]:
    """Commit as the bot when the clone has no identity (as on a fresh CI runner)."""
    if git.ok("config", "user.name") and git.ok("config", "user.email"):
        return {}
    return {"GIT_COMMITTER_NAME": BOT_NAME, "GIT_COMMITTER_EMAIL": BOT_EMAIL}


def _pick_in(
    wt: Git, source: PickSource, base: str, keep_conflict: bool, env: dict[str, str]
) -> PickAttempt:
    conflicts: set[str] = set()
    conflicted: list[str] = []
    skipped: list[str] = []
    for commit in source.commits:  # one at a time: an empty or conflicting one is handled alone
        done = wt.result(*_SAFE, "cherry-pick", "-x", *source.mainline, commit, env=env)
        if done.code == 0:
            continue
        unmerged = wt.run("diff", "--name-only", "--diff-filter=U", "-z").split("\0")
        files = {name for name in unmerged if name}
        if not files:
            empty = wt.commit_of("CHERRY_PICK_HEAD") is not None and wt.ok(
                "diff", "--cached", "--quiet"
            )
            wt.result("cherry-pick", "--abort")
            if not empty:
                raise classify(done)
            skipped.append(commit)
            continue
        if not keep_conflict:
            wt.run("cherry-pick", "--abort")
            return PickAttempt(
                outcome=PickOutcome.CONFLICT, conflicts=tuple(sorted(files)), conflicted=(commit,)
            )
        wt.run("add", "--all")
        wt.run(*_SAFE, "commit", "--no-edit", "--cleanup=strip", "--no-verify", env=env)
        conflicts |= files
        conflicted.append(commit)
    head = wt.run("rev-parse", "HEAD").strip()
    if head == base:
        return PickAttempt(outcome=PickOutcome.EMPTY, skipped=tuple(skipped))
    return PickAttempt(
        outcome=PickOutcome.CONFLICT if conflicted else PickOutcome.CLEAN,
        commit=head,
        conflicts=tuple(sorted(conflicts)),
        conflicted=tuple(conflicted),
        skipped=tuple(skipped),
    )


def _same(full: str, maybe_short: str) -> bool:
    return full.startswith(maybe_short) or maybe_short.startswith(full)


def try_revert(
    git: Git,
    picks: tuple[str, ...],
    base: str,
    sources: dict[str, str],
    *,
    keep_conflict: bool = False,
) -> PickAttempt:
    """Revert the release branch's `picks` (newest first) on top of `base` in a throwaway
    worktree.  Each revert commit names the revert on main it propagates (`sources`: pick →
    revert on main) with a `-x` style trailer, so a later run finds it on the branch."""
    with tempfile.TemporaryDirectory(prefix="relforge-revert-") as tmp:
        path = Path(tmp) / "worktree"
        git.run(*_SAFE, "worktree", "add", "--quiet", "--detach", str(path), base)
        try:
            return _revert_in(Git(path), picks, base, sources, keep_conflict, identity_env(git))
        finally:
            git.result("worktree", "remove", "--force", str(path))
            git.result("worktree", "prune")


def _revert_in(
    wt: Git,
    picks: tuple[str, ...],
    base: str,
    sources: dict[str, str],
    keep: bool,
    env: dict[str, str],
) -> PickAttempt:
    conflicts: set[str] = set()
    conflicted: list[str] = []
    for pick in reversed(picks):
        subject = wt.run("show", "-s", "--format=%s", pick).strip()
        message = (
            f'Revert "{subject}"\n\nThis reverts commit {pick}.\n\n'
            f"(cherry picked from commit {sources[pick]})\n"
        )
        done = wt.result(*_SAFE, "revert", "--no-commit", pick, env=env)
        if done.code != 0:
            unmerged = wt.run("diff", "--name-only", "--diff-filter=U", "-z").split("\0")
            files = {name for name in unmerged if name}
            if not files:
                wt.result("revert", "--abort")
                raise classify(done)
            if not keep:
                wt.run("revert", "--abort")
                return PickAttempt(
                    outcome=PickOutcome.CONFLICT, conflicts=tuple(sorted(files)), conflicted=(pick,)
                )
            wt.run("add", "--all")
            conflicts |= files
            conflicted.append(pick)
        elif wt.ok("diff", "--cached", "--quiet"):
            wt.result("revert", "--abort")
            continue  # reverting it changes nothing: undone on the branch already
        commit = ("commit", "--no-verify", "--cleanup=verbatim", "-F", "-")
        wt.run(*_SAFE, *commit, stdin=message, env=env)
        wt.result("revert", "--quit")
    head = wt.run("rev-parse", "HEAD").strip()
    if head == base:
        return PickAttempt(outcome=PickOutcome.EMPTY)
    return PickAttempt(
        outcome=PickOutcome.CONFLICT if conflicted else PickOutcome.CLEAN,
        commit=head,
        conflicts=tuple(sorted(conflicts)),
        conflicted=tuple(conflicted),
    )
