"""`release patch X.Y.Z`: bump version.txt on release/X.Y for a patch release, once
X.Y.(Z-1) has shipped (its final tag is on the remote)."""

from __future__ import annotations

from dataclasses import dataclass

from packaging.version import Version

from relforge.errors import RefusedError, UsageError
from relforge.git import Git
from relforge.release.checkout import require_clean_checkout, require_pushed
from relforge.release.releaseplan import FileChange, NewCommit, PlanBuilder, ReleasePlan, SetRef
from relforge.release.remote import RemoteState
from relforge.release.versions import final_of, line_of, version_at, with_release


@dataclass(frozen=True, kw_only=True)
class PatchRequest:
    version: Version
    remote: str = "origin"
    version_file: str = "version.txt"


def plan_patch(git: Git, options: PatchRequest) -> ReleasePlan:
    """The ref updates and commits of `relforge release patch X.Y.Z` (a patch release on an
    existing release branch, after X.Y.(Z-1)).  Reads the remote, writes nothing."""
    version, remote, path = options.version, options.remote, options.version_file
    if version.micro == 0:
        raise UsageError(
            f"{version} is the first release of its line, not a patch release",
            key="X.Y.Z",
            hint=f"cut the line instead: relforge release cut {version.major}.{version.minor}",
        )
    require_clean_checkout(git)
    line = line_of(version)
    previous = Version(f"{version.major}.{version.minor}.{version.micro - 1}")
    state = RemoteState.read(git, remote)
    tip = state.require_branch(line.branch, hint=f"cut it first: relforge release cut {line}")
    state.ensure(tip)
    behind = require_pushed(git, line.branch, tip, remote)
    plan = PlanBuilder(f"release patch {version}", remote)
    plan.notes += [behind] if behind else []
    label = f"{remote}/{line.branch}"
    text, current = version_at(git, tip, path, label, line)
    base = Version(current.base_version)
    plan.next_step = f"cherry-pick the fixes, then: relforge release tag {version} --rc --execute"
    if base == version:
        plan.done.append(f"{path} on {line.branch} already says {current}")
        return plan.build()
    if final_of(state.tags(line), previous) is None:
        raise RefusedError(
            f"v{previous} was never tagged final on {remote}, so {version} cannot follow it",
            key="X.Y.Z",
            hint=f"finish {previous} first (relforge release tag {previous} --final) "
            "or patch the version after the newest final",
        )
    if base != previous:
        raise RefusedError(
            f"{path} on {label} says {current}; a {version} patch release follows {previous}",
            key="X.Y.Z",
            hint=f"the next patch release of this branch is {base.major}.{base.minor}."
            f"{base.micro + 1}",
        )
    new = with_release(current, version) + ("\n" if text.endswith("\n") else "")
    commit = NewCommit(
        key="patch-bump",
        branch=line.branch,
        parent=tip,
        message=f"[RELEASE-ONLY CHANGES] Bump {path} to {version} for the patch release\n",
        changes=(FileChange(path=path, old=text, new=new),),
    )
    plan.actions += [
        commit,
        SetRef(ref=f"refs/heads/{line.branch}", old=tip, new=commit, why=f"{version} begins"),
    ]
    return plan.build()
