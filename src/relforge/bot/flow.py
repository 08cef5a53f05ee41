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
from typing import Any
from urllib.parse import urlsplit

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
from relforge.bot.mergedchange import PickSource, pick_source
from relforge.bot.tracker import (
    TRACKER_LABEL,
    pick_milestone,
    pick_tracker,
    record_on_tracker,
    tracker_comment,
)
from relforge.errors import RefusedError, UsageError
from relforge.forges.github import (
    Comment,
    GitHubClient,
    GitHubError,
    Issue,
    Milestone,
    PullRequest,
)
from relforge.git import Git
from relforge.gitfaults import GitError
from relforge.release.picks import PickIndex

LISTED_FILES = 50  # conflicted files named in a pull request body or a reply


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


class PlanKind(enum.Enum):
    CHERRY_PICK = "cherry-pick"  # pick a merged PR onto release branches
    REVERT = "revert"  # revert on release branches the picks a merged revert PR undid


class Action(enum.Enum):
    OPEN = "open"  # push a new branch with the pick and open a PR
    REUSE = "reuse"  # the branch already holds the pick (an earlier run): reuse it and its PR
    ALREADY = "already"  # the fix is on the release branch already: nothing to do
    CONFLICT = "conflict"  # the pick conflicts: aborted (or committed for a draft PR)


@dataclass(frozen=True, kw_only=True)
class PickTarget:
    onto: ReleaseBranch
    branch: str
    action: Action
    base: str  # the release branch's commit
    head: str | None = None  # the commit the pick branch points (or will point) to
    found: str | None = None  # ALREADY: the commit on the release branch, and how it was found
    how: str | None = None
    conflicts: tuple[str, ...] = ()
    conflicted: tuple[str, ...] = ()  # the source commits whose pick conflicted
    skipped: tuple[str, ...] = ()  # source commits already on the branch (their picks are empty)
    pull: PullRequest | None = None  # the open PR of the branch, if any
    tracker: Issue | None = None
    milestone: Milestone | None = None  # the milestone the pick PR goes on
    reverts: tuple[str, ...] = ()  # a revert: the picks on the branch it reverts

    @property
    def publishes(self) -> bool:
        """Whether this target ends with a pull request against the release branch."""
        return self.head is not None and self.action is not Action.ALREADY


@dataclass(frozen=True, kw_only=True)
class PickPlan:
    source: PullRequest
    commit: str  # GitHub's merge_commit_sha
    picks: PickSource  # what is picked: the commits the PR landed as, and how
    command: CherryPickCommand
    requester: str | None
    targets: tuple[PickTarget, ...]
    trigger: str | None = None  # the label that asked for the pick (None: a command)
    kind: PlanKind = PlanKind.CHERRY_PICK


@dataclass(frozen=True, kw_only=True)
class Done:
    target: PickTarget
    pull: PullRequest | None = None
    pull_created: bool = False
    tracker_comment: Comment | None = None
    tracker_created: bool = False
    milestone: Milestone | None = None


@dataclass(frozen=True, kw_only=True)
class PickRequest:
    """What a cherry-pick asks for: merged PR `pr` picked as `command` says; `requester`
    and `trigger` (the comment or event that asked): who and what the pick PRs credit."""

    pr: int
    command: CherryPickCommand
    requester: str | None = None
    trigger: str | None = None


def plan_picks(
    git: Git, gh: GitHubClient, settings: FlowSettings, request: PickRequest
) -> PickPlan:
    """What cherry-picking PR `pr` onto each `--onto` branch takes; changes nothing."""
    pr, command = request.pr, request.command
    requester, trigger = request.requester, request.trigger
    remote = settings.remote
    source = gh.pull(pr)
    if not source.merged:
        raise RefusedError(
            f"#{pr} is not merged",
            hint="cherry-pick a pull request after it has landed",
        )
    _check_fixes_host(command, source)
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
    picks = pick_source(git, gh, source, commit)
    for picked in picks.commits:
        revert = active_revert(git, picked, base_tip)
        if revert is not None:
            raise RefusedError(
                f"#{pr} ({picked[:12]}) was reverted on {source.base_ref} by {revert.sha[:12]} "
                f"{revert.subject!r}",
                hint="cherry-pick the pull request that relands it instead",
            )
    trackers = gh.issues(state="open", labels=settings.tracker_label)
    milestones: list[Milestone] | None = None
    owner = gh.repo.split("/")[0]
    targets = []
    for onto, branch in branches.items():
        target = _plan_one(git, settings, picks, onto, branch, remote_heads)
        if target.publishes:
            if milestones is None:
                milestones = gh.milestones(state="open")
            tracker = pick_tracker(trackers, onto, settings.tracker_label)
            open_pulls = gh.pulls(state="open", head=f"{owner}:{branch}", base=onto.name)
            target = replace(
                target,
                tracker=tracker,
                pull=open_pulls[0] if open_pulls else None,
                milestone=pick_milestone(milestones, onto) or source.milestone,
            )
        targets.append(target)
    return PickPlan(
        source=source,
        commit=commit,
        picks=picks,
        command=command,
        requester=requester,
        targets=tuple(targets),
        trigger=trigger,
    )


def _check_fixes_host(command: CherryPickCommand, source: PullRequest) -> None:
    """--fixes must link to an issue on the repository's own GitHub (any repository there):
    the link goes into the pick PR and the release tracker as the issue the pick fixes."""
    host = (urlsplit(source.html_url).hostname or "").lower()
    if command.fixes is None or not host or command.fixes.host == host:
        return
    raise UsageError(
        f"{command.fixes.url} is not on {host}, where this repository's issues are",
        key="--fixes",
        hint=f"link the issue the pick fixes: https://{host}/OWNER/REPO/issues/N",
    )


def _plan_one(
    git: Git,
    settings: FlowSettings,
    picks: PickSource,
    onto: ReleaseBranch,
    branch: str,
    remote_heads: dict[str, str],
) -> PickTarget:
    base = fetch_branch(git, settings.remote, onto.name)

    def target(**fields: Any) -> PickTarget:
        return PickTarget(onto=onto, branch=branch, base=base, **fields)

    if is_ancestor(git, picks.head, base):
        return target(action=Action.ALREADY, found=picks.head, how="same commit")
    on_base = PickIndex(git, f"{picks.head}..{base}")
    missing = [c for c in picks.commits if on_base.find(c) is None]
    if not missing:
        match = on_base.find(picks.head)
        assert match is not None
        how = {"trailer": "its -x trailer", "patch-id": "its patch-id"}.get(match.how, match.how)
        return target(action=Action.ALREADY, found=match.pick, how=how)
    if f"refs/heads/{branch}" in remote_heads:
        head = fetch_branch(git, settings.remote, branch)
        on_branch = PickIndex(git, f"{base}..{head}")
        if any(on_branch.find(c) is None for c in missing):
            raise RefusedError(
                f"{branch} exists on {settings.remote} but holds no pick of {picks.head[:12]}",
                hint=f"look at it, delete it if it is stale (git push {settings.remote} "
                f"--delete {branch}) and rerun",
            )
        return target(action=Action.REUSE, head=head)
    attempt = try_pick(git, picks, base, keep_conflict=settings.draft_on_conflict)
    match attempt.outcome:
        case PickOutcome.CLEAN:
            return target(action=Action.OPEN, head=attempt.commit, skipped=attempt.skipped)
        case PickOutcome.EMPTY:
            return target(action=Action.ALREADY, how="empty pick")
        case PickOutcome.CONFLICT:
            return target(
                action=Action.CONFLICT,
                head=attempt.commit,
                conflicts=attempt.conflicts,
                conflicted=attempt.conflicted,
                skipped=attempt.skipped,
            )


def release_branches(refs: dict[str, str]) -> list[ReleaseBranch]:
    """The release/X.Y branches among `refs`, in version order (2.8 before 2.10)."""
    found = []
    for ref in refs:
        try:
            found.append(parse_release_branch(ref.removeprefix("refs/heads/")))
        except UsageError:
            continue
    return sorted(found)


def _release_branches(refs: dict[str, str]) -> list[str]:
    return [b.name for b in release_branches(refs)]


def apply_plan(git: Git, gh: GitHubClient, settings: FlowSettings, plan: PickPlan) -> list[Done]:
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
        milestone = target.milestone
        if milestone is not None and (pull.milestone is None or created):
            gh.set_milestone(pull.number, milestone.number)
        elif pull.milestone is not None:
            milestone = pull.milestone  # someone chose one: keep it
        comment, commented = None, False
        if target.tracker is not None:
            text = tracker_comment(
                source_url=plan.source.html_url,
                pick_url=pull.html_url,
                category=plan.command.category,
                fixes=plan.command.fixes,
                criteria=_revert_criteria(target) if plan.kind is PlanKind.REVERT else None,
            )
            comment, commented = record_on_tracker(gh, target.tracker, pull.html_url, text)
        done.append(
            Done(
                target=target,
                pull=pull,
                pull_created=created,
                tracker_comment=comment,
                tracker_created=commented,
                milestone=milestone,
            )
        )
    return done


def pull_title(plan: PickPlan, target: PickTarget) -> str:
    return f"[{target.onto.name}] {plan.source.title}"


def picked_with(plan: PickPlan, target: PickTarget) -> PickSource:
    """The pick as it was run: the source's commits without those already on the branch."""
    commits = tuple(c for c in plan.picks.commits if c not in target.skipped)
    return replace(plan.picks, commits=commits or plan.picks.commits)


def _revert_criteria(target: PickTarget) -> str:
    return f"Revert of {', '.join(c[:12] for c in target.reverts)} (propagated from trunk)"


def revert_command(target: PickTarget) -> str:
    """The command a person runs to make the same revert by hand (newest pick first)."""
    return "git revert " + " ".join(reversed(target.reverts))


def _revert_body(plan: PickPlan, target: PickTarget) -> str:
    src = plan.source
    lines = [
        f"Revert on {target.onto.name} of what #{src.number} ({src.html_url}) reverted on "
        f"{src.base_ref}."
    ]
    if plan.requester:
        lines[0] += f" Requested by @{plan.requester}."
    lines += ["", f"Reverted with `{revert_command(target)}`."]
    if target.conflicts:
        lines += ["", f"**This revert has conflicts**, {conflicted_files(target.conflicts)}"]
    return "\n".join(lines)


def pull_body(plan: PickPlan, target: PickTarget) -> str:
    if plan.kind is PlanKind.REVERT:
        return _revert_body(plan, target)
    src = plan.source
    lines = [f"Cherry-pick of #{src.number} ({src.html_url}) onto {target.onto.name}."]
    if plan.trigger:
        lines[0] += f" Requested by the label `{plan.trigger}`"
        lines[0] += f", added by @{plan.requester}." if plan.requester else "."
    elif plan.requester:
        lines[0] += f" Requested by @{plan.requester}."
    lines += ["", f"#{src.number} landed as {plan.picks.describe()}."]
    lines += [f"Picked with `{picked_with(plan, target).command()}`."]
    if target.skipped:
        lines += [f"Already on {target.onto.name}: {', '.join(c[:12] for c in target.skipped)}."]
    lines += ["", f"Criteria category: {plan.command.category.label}"]
    if plan.command.fixes:
        lines[-1] += f" - {plan.command.fixes.url}"
        lines += ["", f"Linked issue: {plan.command.fixes.url}"]
    if target.conflicts:
        lines += [
            "",
            f"**This pick has conflicts**, {conflicted_files(target.conflicts)}",
            "",
            "Resolve them on this branch before marking the pull request ready.",
        ]
    return "\n".join(lines)


def listed(names: tuple[str, ...], limit: int = LISTED_FILES) -> tuple[tuple[str, ...], int]:
    """The first `limit` names and how many more there are: a pull request body or a reply
    must stay within what GitHub accepts (65536 characters), however many files conflict."""
    return names[:limit], max(0, len(names) - limit)


def conflicted_files(names: tuple[str, ...]) -> str:
    shown, more = listed(names)
    head = "committed with their conflict markers in"
    if more:
        head += f" {len(names)} files (the first {len(shown)} listed)"
    lines = [f"{head}:", *(f"- {name!r}" for name in shown)]
    if more:
        lines.append(f"- ... and {more} more")
    return "\n".join(lines)


def _ensure_pull(gh: GitHubClient, plan: PickPlan, target: PickTarget) -> tuple[PullRequest, bool]:
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
