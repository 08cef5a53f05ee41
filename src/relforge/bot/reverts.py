"""Revert propagation: a pull request merged on main that reverts a PR which was cherry-picked
onto release branches gets the matching revert on each of those branches — a new branch
`revert/<PR>-onto-release-X.Y` with `git revert` of the pick, a pull request, and an entry on the
release tracker.  Run on the revert PR's merge (`pull_request` closed) or on command
(`@BOT revert [--onto release/X.Y]` on the revert PR).  Planned like a cherry-pick, and applied
by the same `apply_plan` (so reruns are no-ops too)."""

from __future__ import annotations

from dataclasses import replace

from relforge.bot.cherrypick import PickOutcome, ensure_commit, fetch_branch, try_revert
from relforge.bot.flow import Action, FlowSettings, PickPlan, PickTarget, PlanKind, release_branches
from relforge.bot.grammar import Category, CherryPickCommand, ReleaseBranch
from relforge.bot.mergedchange import pick_source
from relforge.bot.tracker import pick_milestone, pick_tracker
from relforge.errors import NothingToDoError, RefusedError, UsageError
from relforge.forges.github import GitHubClient, Milestone
from relforge.git import Git
from relforge.release.picks import Commit, PickIndex, commits

REVERT_LINE = "This reverts commit "  # what `git revert` (and GitHub's Revert button) writes


class NotFromTrunk(RefusedError):
    """The revert PR was merged into a release branch: nothing to propagate from it."""


def revert_branch(pr: int, onto: ReleaseBranch) -> str:
    return f"revert/{pr}-onto-{onto.slug}"


def reverted_commits(git: Git, shas: tuple[str, ...]) -> dict[str, str]:
    """For each commit of `shas` that is a `git revert`: the full id of the commit it reverts."""
    found = {}
    for sha in shas:
        target = Commit(sha, "", git.run("show", "-s", "--format=%B", sha)).reverts
        if target is not None:
            full = git.commit_of(f"{target}^{{commit}}")
            if full is not None:
                found[sha] = full
    return found


def plan_reverts(
    git: Git,
    gh: GitHubClient,
    settings: FlowSettings,
    *,
    pr: int,
    onto: tuple[ReleaseBranch, ...] = (),
    requester: str | None = None,
    trigger: str | None = None,
) -> PickPlan:
    """The reverts that PR `pr` (merged, reverting commits on main) needs on the release
    branches holding picks of what it reverted; changes nothing."""
    remote = settings.remote
    source = gh.pull(pr)
    if not source.merged or not source.merge_commit_sha:
        raise RefusedError(f"#{pr} is not merged", hint="propagate a revert after it has landed")
    commit = source.merge_commit_sha
    if not git.ok("check-ref-format", "--branch", source.base_ref):
        raise RefusedError(f"#{pr} names an invalid base branch {source.base_ref!r}")
    if release_branches({f"refs/heads/{source.base_ref}": ""}):
        raise NotFromTrunk(
            f"#{pr} was merged into {source.base_ref}, not the trunk: a revert there undoes "
            "the pick on that branch only, and is not propagated to other release branches",
            hint="revert on the other release branches by hand if they need it too",
        )
    fetch_branch(git, remote, source.base_ref)
    ensure_commit(git, remote, commit)
    picks = pick_source(git, gh, source, commit)
    reverted = reverted_commits(git, picks.commits)
    if not reverted:
        raise NothingToDoError(
            f"#{pr} reverts no commit (no 'This reverts commit …' line in its commits)"
        )
    heads = git.remote_refs(remote, "refs/heads/release/*", "refs/heads/revert/*")
    existing = release_branches(heads)
    for branch in onto:
        if branch not in existing:
            names = ", ".join(b.name for b in existing) or "none"
            raise UsageError(
                f"{branch} does not exist on {remote}",
                key="--onto",
                hint=f"release branches: {names}",
            )
    command = CherryPickCommand(onto=onto or tuple(existing), category=Category.RELEASE, fixes=None)
    trackers = gh.issues(state="open", labels=settings.tracker_label)
    milestones: list[Milestone] | None = None
    owner = gh.repo.split("/")[0]
    targets = []
    for branch in onto or existing:
        target = _plan_one(git, settings, pr, commit, reverted, branch, heads)
        if target is None:
            if onto:
                targets.append(_absent(git, remote, pr, branch))
            continue
        if target.publishes:
            milestones = milestones if milestones is not None else gh.milestones(state="open")
            found = gh.pulls(state="open", head=f"{owner}:{target.branch}", base=branch.name)
            target = replace(
                target,
                tracker=pick_tracker(trackers, branch, settings.tracker_label),
                pull=found[0] if found else None,
                milestone=pick_milestone(milestones, branch) or source.milestone,
            )
        targets.append(target)
    if not targets:
        shown = ", ".join(c[:12] for c in reverted.values())
        raise NothingToDoError(f"no release branch holds a pick of {shown}, which #{pr} reverts")
    return PickPlan(
        source=source,
        commit=commit,
        picks=picks,
        command=replace(command, onto=tuple(t.onto for t in targets)),
        requester=requester,
        targets=tuple(targets),
        trigger=trigger,
        kind=PlanKind.REVERT,
    )


def _absent(git: Git, remote: str, pr: int, onto: ReleaseBranch) -> PickTarget:
    base = fetch_branch(git, remote, onto.name)
    return PickTarget(
        onto=onto, branch=revert_branch(pr, onto), action=Action.ALREADY, base=base, how="no pick"
    )


def _plan_one(
    git: Git,
    settings: FlowSettings,
    pr: int,
    commit: str,
    reverted: dict[str, str],
    onto: ReleaseBranch,
    heads: dict[str, str],
) -> PickTarget | None:
    """None: the branch holds no pick of anything the PR reverts."""
    base = fetch_branch(git, settings.remote, onto.name)
    branch = revert_branch(pr, onto)
    on_base = PickIndex(git, f"{commit}..{base}")
    sources: dict[str, str] = {}  # pick on the branch → the revert on main that undoes it
    for revert, target in reverted.items():
        match = on_base.find(target)
        if match is not None and match.how != "same-commit":
            sources[match.pick] = revert
    picks = list(sources)
    if not picks:
        return None
    done = [on_base.find(r) for r in reverted]  # the revert itself, propagated before
    if all(d is not None and d.how == "trailer" for d in done):
        found = done[-1]
        assert found is not None
        return PickTarget(
            onto=onto,
            branch=branch,
            action=Action.ALREADY,
            base=base,
            found=found.pick,
            how="its -x trailer",
        )
    ordered = tuple(c.sha for c in reversed(commits(git, f"{commit}..{base}")) if c.sha in picks)
    if f"refs/heads/{branch}" in heads:
        head = fetch_branch(git, settings.remote, branch)
        on_branch = PickIndex(git, f"{base}..{head}")
        if any(on_branch.find(r) is None for r in reverted):
            raise RefusedError(
                f"{branch} exists on {settings.remote} but holds no revert of "
                f"{', '.join(p[:12] for p in ordered)}",
                hint=f"look at it, delete it if it is stale (git push {settings.remote} "
                f"--delete {branch}) and rerun",
            )
        return PickTarget(
            onto=onto, branch=branch, action=Action.REUSE, base=base, head=head, reverts=ordered
        )
    attempt = try_revert(git, ordered, base, sources, keep_conflict=settings.draft_on_conflict)
    match attempt.outcome:
        case PickOutcome.CLEAN:
            action = Action.OPEN
        case PickOutcome.EMPTY:
            return PickTarget(
                onto=onto, branch=branch, action=Action.ALREADY, base=base, how="empty revert"
            )
        case PickOutcome.CONFLICT:
            action = Action.CONFLICT
    return PickTarget(
        onto=onto,
        branch=branch,
        action=action,
        base=base,
        head=attempt.commit,
        conflicts=attempt.conflicts,
        conflicted=attempt.conflicted,
        reverts=ordered,
    )
