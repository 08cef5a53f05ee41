"""`release audit X.Y`: what the release branch is missing.

- missing pick: a commit on the trunk since the cut that references a milestone issue/PR but has
  no counterpart on release/X.Y — neither the same commit, nor a `-x` trailer, nor the same
  patch-id, nor a branch commit referencing the same issue/PR;
- missing revert: a revert on the trunk whose reverted commit is on the branch (from before the
  cut, or picked) while the revert itself is not.
A commit the trunk reverted again (and a revert that was itself reverted) is left out.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from relforge.git import Git
from relforge.release.milestone import ReleaseMilestone, references
from relforge.release.picks import Commit, PickIndex, commits
from relforge.release.remote import RemoteState
from relforge.release.versions import Line

FindingKind = Literal["missing-pick", "missing-revert"]


@dataclass(frozen=True, kw_only=True)
class AuditFinding:
    kind: FindingKind
    commit: str  # on the trunk
    subject: str
    items: tuple[int, ...] = ()  # milestone items the commit references
    reverted: str | None = None  # missing-revert: what the revert undoes …
    on_branch: str | None = None  # … and where that commit is on the branch

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "commit": self.commit,
            "subject": self.subject,
            "items": list(self.items),
            "reverted": self.reverted,
            "on_branch": self.on_branch,
        }


@dataclass(frozen=True, kw_only=True)
class Covered:
    commit: str
    subject: str
    items: tuple[int, ...]
    how: str  # same-commit, trailer, patch-id, reference


@dataclass(frozen=True, kw_only=True)
class AuditReport:
    line: Line
    remote: str
    milestone: ReleaseMilestone
    trunk_range: str
    examined: int
    findings: tuple[AuditFinding, ...]
    covered: tuple[Covered, ...]
    unreferenced: tuple[int, ...]  # milestone items no trunk commit since the cut mentions

    def to_json(self) -> dict[str, Any]:
        return {
            "line": str(self.line),
            "remote": self.remote,
            "milestone": {
                "title": self.milestone.title,
                "source": self.milestone.source,
                "items": sorted(self.milestone.numbers),
            },
            "trunk_range": self.trunk_range,
            "examined": self.examined,
            "findings": [f.to_json() for f in self.findings],
            "covered": [
                {"commit": c.commit, "subject": c.subject, "items": list(c.items), "how": c.how}
                for c in self.covered
            ],
            "unreferenced": list(self.unreferenced),
        }


@dataclass(frozen=True, kw_only=True)
class AuditRequest:
    """What `relforge release audit` asks for: release `line` against `trunk` on `remote`,
    judged by the items of `milestone`; `repo`: the GitHub repository the report links to."""

    line: Line
    milestone: ReleaseMilestone
    remote: str
    trunk: str
    repo: str | None


def audit_release(git: Git, request: AuditRequest) -> AuditReport:
    """What release/X.Y is missing against the trunk since the cut: picks of commits that
    reference a milestone item and reverts of commits it holds (see the module docstring),
    with what is already covered.  Reads only."""
    line, milestone, repo = request.line, request.milestone, request.repo
    remote, trunk = request.remote, request.trunk
    state = RemoteState.read(git, remote)
    hint = f"cut it first: relforge release cut {line} --execute"
    branch = state.require_branch(line.branch, hint=hint)
    trunk_tip = state.require_branch(trunk, hint="pass --main BRANCH")
    orig = state.branch(line.orig_branch)
    state.ensure(branch, trunk_tip, orig)
    cut = orig or git.merge_base(branch, trunk_tip) or branch
    trunk_log = commits(git, f"{cut}..{trunk_tip}")
    on_branch = PickIndex(git, f"{cut}..{branch}")
    branch_refs = {n for c in on_branch.commits for n in references(c.body, repo)}
    reverted = _reverted_by_later(git, trunk_log)

    findings: list[AuditFinding] = []
    covered: list[Covered] = []
    mentioned: set[int] = set()
    for commit in trunk_log:
        if commit.sha in reverted:
            continue
        refs = references(commit.body, repo)
        items = tuple(sorted(refs & milestone.numbers))
        mentioned.update(items)
        if commit.reverts is not None:
            finding = _missing_revert(git, commit, branch, on_branch, items)
            findings += [finding] if finding else []
            continue
        if not items:
            continue
        match = on_branch.find(commit.sha)
        if match is not None:
            covered.append(
                Covered(commit=commit.sha, subject=commit.subject, items=items, how=match.how)
            )
        elif refs & branch_refs:
            covered.append(
                Covered(commit=commit.sha, subject=commit.subject, items=items, how="reference")
            )
        else:
            findings.append(
                AuditFinding(
                    kind="missing-pick", commit=commit.sha, subject=commit.subject, items=items
                )
            )
    return AuditReport(
        line=line,
        remote=remote,
        milestone=milestone,
        trunk_range=f"{cut[:12]}..{trunk_tip[:12]}",
        examined=len(trunk_log),
        findings=tuple(reversed(findings)),  # oldest first, as they landed
        covered=tuple(reversed(covered)),
        unreferenced=tuple(sorted(milestone.numbers - mentioned)),
    )


def _reverted_by_later(git: Git, trunk_log: list[Commit]) -> set[str]:
    """Trunk commits that a later trunk commit reverts (full ids)."""
    out = set()
    for commit in trunk_log:
        if commit.reverts:
            full = git.commit_of(commit.reverts)
            if full:
                out.add(full)
    return out


def _missing_revert(
    git: Git, revert: Commit, branch: str, on_branch: PickIndex, items: tuple[int, ...]
) -> AuditFinding | None:
    assert revert.reverts is not None
    target = git.commit_of(revert.reverts)
    if target is None:
        return None
    if git.is_ancestor(target, branch):
        carried: str | None = target
    else:
        picked = on_branch.find(target)
        carried = picked.pick if picked else None
    if carried is None or on_branch.find(revert.sha) is not None:
        return None
    for c in on_branch.commits:  # reverted on the branch by hand (`git revert` of the pick)
        full = git.commit_of(c.reverts) if c.reverts else None
        if full in (carried, target):
            return None
    return AuditFinding(
        kind="missing-revert",
        commit=revert.sha,
        subject=revert.subject,
        items=items,
        reverted=target,
        on_branch=carried,
    )
