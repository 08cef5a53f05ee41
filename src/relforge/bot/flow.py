"""One cherry-pick request, planned then applied: the same flow for a PR comment and for the
local `relforge cherry-pick` command.

plan_picks reads (GitHub, the remote) and tries each pick in a throwaway worktree; it changes
nothing anywhere.  apply_plan pushes the new branches in one atomic push, opens (or reuses) the
pull requests and records them on the release tracker; everything it does is skipped when it is
already done, so a rerun is a no-op.
"""

from __future__ import annotations

import enum
import string
from dataclasses import dataclass, field, replace

from relforge.bot.cherrypick import (
    PickOutcome,
    active_revert,
    ensure_commit,
    fetch_branch,
    is_ancestor,
    pick_branch,
    try_pick,
)
from relforge.bot.grammar import CherryPickCommand, ReleaseBranch, parse_release_branch
from relforge.bot.tracker import TRACKER_LABEL, pick_tracker, recorded, tracker_comment
from relforge.errors import RefusedError, UsageError
from relforge.forges.github import Comment, GitHubClient, GitHubError, Issue, PullRequest
from relforge.release.git import Git, GitError
from relforge.release.picks import PickIndex


@dataclass(frozen=True, kw_only=True)
class FlowSettings:
    remote: str = "origin"
    draft_on_conflict: bool = False  # push the conflicted pick and open a draft PR for it
    tracker_label: str = TRACKER_LABEL
    push_token: str | None = field(default=None, repr=False)  # GITHUB_TOKEN in Actions

    def summary(self) -> str:
        conflicts = "open a draft PR" if self.draft_on_conflict else "abort and report"
        return (
            f"remote {self.remote}; on conflict: {conflicts}; tracker label {self.tracker_label!r}"
        )


class Action(enum.Enum):
    OPEN = "open"  # push a new branch with the pick and open a PR
    REUSE = "reuse"  # the branch already holds the pick (an earlier run): reuse it and its PR
    ALREADY = "already"  # the fix is on the release branch already: nothing to do
    CONFLICT = "conflict"  # the pick conflicts: aborted (or committed for a draft PR)


@dataclass(frozen=True, kw_only=True)
class Target:
    onto: ReleaseBranch
    branch: str
    action: Action
    base: str  # the release branch's commit
    head: str | None = None  # the commit the pick branch points (or will point) to
    found: str | None = None  # ALREADY: the commit on the release branch, and how it was found
    how: str | None = None
    conflicts: tuple[str, ...] = ()
    pull: PullRequest | None = None  # the open PR of the branch, if any
    tracker: Issue | None = None

    @property
    def publishes(self) -> bool:
        """Whether this target ends with a pull request against the release branch."""
        return self.head is not None and self.action is not Action.ALREADY


@dataclass(frozen=True, kw_only=True)
class Plan:
    source: PullRequest
    commit: str
    command: CherryPickCommand
    requester: str | None
    targets: tuple[Target, ...]


@dataclass(frozen=True, kw_only=True)
class Done:
    target: Target
    pull: PullRequest | None = None
    pull_created: bool = False
    tracker_comment: Comment | None = None
    tracker_created: bool = False


def plan_picks(
    git: Git,
    gh: GitHubClient,
    settings: FlowSettings,
    *,
    pr: int,
    command: CherryPickCommand,
    requester: str | None = None,
) -> Plan:
    """What cherry-picking PR `pr` onto each `--onto` branch takes; changes nothing."""
    remote = settings.remote
    source = gh.pull(pr)
    if not source.merged:
        raise RefusedError(
            f"#{pr} is not merged",
            hint="cherry-pick a pull request after it has landed",
        )
    commit = source.merge_commit_sha or ""
    if len(commit) != 40 or not set(commit) <= set(string.hexdigits):
        raise RefusedError(f"GitHub reports no merge commit for #{pr}")
    branches = {onto: pick_branch(pr, onto) for onto in command.onto}
    remote_heads = git.remote_refs(
        remote,
        *(f"refs/heads/{o.name}" for o in command.onto),
        *(f"refs/heads/{b}" for b in branches.values()),
    )
    missing = [o.name for o in command.onto if f"refs/heads/{o.name}" not in remote_heads]
    if missing:
        existing = _release_branches(git.remote_refs(remote, "refs/heads/release/*"))
        raise UsageError(
            f"{', '.join(missing)} does not exist on {remote}",
            key="--onto",
            hint=f"release branches: {', '.join(existing) or 'none'}",
        )
    if not git.ok("check-ref-format", "--branch", source.base_ref):
        raise GitError(f"#{pr} names an invalid base branch {source.base_ref!r}")
    base_tip = fetch_branch(git, remote, source.base_ref)
    ensure_commit(git, remote, commit)
    revert = active_revert(git, commit, base_tip)
    if revert is not None:
        raise RefusedError(
            f"#{pr} ({commit[:12]}) was reverted on {source.base_ref} by {revert.sha[:12]} "
            f"{revert.subject!r}",
            hint="cherry-pick the pull request that relands it instead",
        )
    trackers = gh.issues(state="open", labels=settings.tracker_label)
    owner = gh.repo.split("/")[0]
    targets = []
    for onto, branch in branches.items():
        target = _plan_one(git, settings, commit, onto, branch, remote_heads)
        if target.publishes:
            tracker = pick_tracker(trackers, onto, settings.tracker_label)
            open_pulls = gh.pulls(state="open", head=f"{owner}:{branch}", base=onto.name)
            target = replace(target, tracker=tracker, pull=open_pulls[0] if open_pulls else None)
        targets.append(target)
    return Plan(
        source=source, commit=commit, command=command, requester=requester, targets=tuple(targets)
    )


def _plan_one(
    git: Git,
    settings: FlowSettings,
    commit: str,
    onto: ReleaseBranch,
    branch: str,
    remote_heads: dict[str, str],
) -> Target:
    base = fetch_branch(git, settings.remote, onto.name)
    if is_ancestor(git, commit, base):
        return Target(
            onto=onto,
            branch=branch,
            action=Action.ALREADY,
            base=base,
            found=commit,
            how="same commit",
        )
    match = PickIndex(git, f"{commit}..{base}").find(commit)
    if match is not None:
        how = {"trailer": "its -x trailer", "patch-id": "its patch-id"}.get(match.how, match.how)
        return Target(
            onto=onto, branch=branch, action=Action.ALREADY, base=base, found=match.pick, how=how
        )
    if f"refs/heads/{branch}" in remote_heads:
        head = fetch_branch(git, settings.remote, branch)
        if PickIndex(git, f"{base}..{head}").find(commit) is None:
            raise RefusedError(
                f"{branch} exists on {settings.remote} but holds no pick of {commit[:12]}",
                hint=f"look at it, delete it if it is stale (git push {settings.remote} "
                f"--delete {branch}) and rerun",
            )
        return Target(onto=onto, branch=branch, action=Action.REUSE, base=base, head=head)
    attempt = try_pick(git, commit, base, keep_conflict=settings.draft_on_conflict)
    match attempt.outcome:
        case PickOutcome.CLEAN:
            return Target(
                onto=onto, branch=branch, action=Action.OPEN, base=base, head=attempt.commit
            )
        case PickOutcome.EMPTY:
            return Target(
                onto=onto, branch=branch, action=Action.ALREADY, base=base, how="empty pick"
            )
        case PickOutcome.CONFLICT:
            return Target(
                onto=onto,
                branch=branch,
                action=Action.CONFLICT,
                base=base,
                head=attempt.commit,
                conflicts=attempt.conflicts,
            )


def _release_branches(refs: dict[str, str]) -> list[str]:
    """Names of release/X.Y branches, in version order (2.8 before 2.10)."""
    found = []
    for ref in refs:
        try:
            found.append(parse_release_branch(ref.removeprefix("refs/heads/")))
        except UsageError:
            continue
    return [b.name for b in sorted(found)]


def apply_plan(git: Git, gh: GitHubClient, settings: FlowSettings, plan: Plan) -> list[Done]:
    """Push, open the PRs, record them on the tracker; each step is skipped when already done."""
    pushes = [
        f"{t.head}:refs/heads/{t.branch}"
        for t in plan.targets
        if t.head and t.action in (Action.OPEN, Action.CONFLICT)
    ]
    if pushes:
        git.push(settings.remote, pushes, token=settings.push_token)
    done = []
    for target in plan.targets:
        if not target.publishes:
            done.append(Done(target=target))
            continue
        pull, created = _ensure_pull(gh, plan, target)
        comment, commented = None, False
        if target.tracker is not None:
            comment = recorded(gh, target.tracker, pull.html_url)
            if comment is None:
                text = tracker_comment(
                    source_url=plan.source.html_url,
                    pick_url=pull.html_url,
                    category=plan.command.category,
                    fixes=plan.command.fixes,
                )
                comment, commented = gh.comment(target.tracker.number, text), True
        done.append(
            Done(
                target=target,
                pull=pull,
                pull_created=created,
                tracker_comment=comment,
                tracker_created=commented,
            )
        )
    return done


def pull_title(plan: Plan, target: Target) -> str:
    return f"[{target.onto.name}] {plan.source.title}"


def pull_body(plan: Plan, target: Target) -> str:
    src = plan.source
    lines = [f"Cherry-pick of #{src.number} ({src.html_url}) onto {target.onto.name}."]
    if plan.requester:
        lines[0] += f" Requested by @{plan.requester}."
    lines += ["", f"Picked with `git cherry-pick -x {plan.commit}`."]
    lines += ["", f"Criteria category: {plan.command.category.label}"]
    if plan.command.fixes:
        lines[-1] += f" - {plan.command.fixes.url}"
    if target.conflicts:
        lines += [
            "",
            "**This pick has conflicts**, committed with their conflict markers in:",
            *(f"- {name!r}" for name in target.conflicts),
            "",
            "Resolve them on this branch before marking the pull request ready.",
        ]
    return "\n".join(lines)


def _ensure_pull(gh: GitHubClient, plan: Plan, target: Target) -> tuple[PullRequest, bool]:
    if target.pull is not None:
        return target.pull, False
    try:
        pull = gh.create_pull(
            title=pull_title(plan, target),
            head=target.branch,
            base=target.onto.name,
            body=pull_body(plan, target),
            draft=target.action is Action.CONFLICT,
        )
        return pull, True
    except GitHubError as exc:
        if exc.status != 422:
            raise
        owner = gh.repo.split("/")[0]  # opened meanwhile (a concurrent run): reuse it
        found = gh.pulls(state="open", head=f"{owner}:{target.branch}", base=target.onto.name)
        if not found:
            raise
        return found[0], False
