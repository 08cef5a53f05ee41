"""`release tag X.Y.Z --rc|--final`: the next RC on the release branch's tip, or the final on
the newest RC's commit.  Tags are read from the remote; an existing tag is never moved."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from packaging.version import Version
from typing_extensions import assert_never

from relforge.errors import ConfigError, RefusedError
from relforge.git import Git
from relforge.release.checkout import (
    require_clean_checkout,
    require_matrix_pushed,
    require_pushed,
)
from relforge.release.matrixfile import committed_matrices
from relforge.release.releaseplan import NewTag, PlanBuilder, ReleasePlan, SetRef
from relforge.release.remote import RemoteState
from relforge.release.versions import (
    final_of,
    line_of,
    rcs_of,
    version_at,
)
from relforge.versiontags import Tag, final_tag, rc_tag

TagKind = Literal["rc", "final"]


@dataclass(frozen=True, kw_only=True)
class TagRequest:
    version: Version
    kind: TagKind
    remote: str = "origin"
    at: str | None = None  # --at REV for an RC; default: the tip of release/X.Y
    version_file: str = "version.txt"


def plan_tag(git: Git, options: TagRequest) -> ReleasePlan:
    """The refs of `relforge release tag X.Y.Z --rc` or `--final`, on the tip of release/X.Y
    as the remote has it.  Reads the remote, writes nothing."""
    require_clean_checkout(git)
    version, remote = options.version, options.remote
    line = line_of(version)
    state = RemoteState.read(git, remote)
    tip = state.require_branch(
        line.branch, hint=f"cut it first: relforge release cut {line} --execute"
    )
    tags = state.tags(line)
    state.ensure(tip, *(t.commit for t in tags))
    behind = require_pushed(git, line.branch, tip, remote)
    plan = PlanBuilder(f"release tag {version} --{options.kind}", remote)
    plan.notes += [behind] if behind else []
    match options.kind:
        case "rc":
            _plan_rc(git, state, tip, tags, options, plan)
        case "final":
            _plan_final(git, tip, tags, options, plan)
        case _:
            assert_never(options.kind)
    return plan.build()


def _plan_rc(
    git: Git, state: RemoteState, tip: str, tags: list[Tag], options: TagRequest, plan: PlanBuilder
) -> None:
    version, branch = options.version, line_of(options.version).branch
    final = final_of(tags, version)
    if final is not None:
        raise RefusedError(
            f"{version} is already released ({final.name} on {final.commit[:12]}); "
            "it gets no more release candidates",
            key="X.Y.Z",
            hint=f"start a patch release: relforge release patch "
            f"{version.major}.{version.minor}.{version.micro + 1}",
        )
    at = tip
    if options.at:
        found = git.commit_of(options.at)
        if found is None:
            raise ConfigError(f"{options.at!r} names no commit", key="--at")
        at = found
        if not git.is_ancestor(at, tip):
            raise RefusedError(
                f"{options.at} ({at[:12]}) is not on {state.remote}/{branch}; "
                "release candidates are tagged on the release branch only",
                key="--at",
                hint=f"cherry-pick it onto {branch} first",
            )
    _check_version(git, at, version, options.version_file, f"{state.remote}/{branch}")
    _require_matrix(git, at, f"{state.remote}/{branch}", f"{state.remote} {branch}")
    rcs = rcs_of(tags, version)
    newest = rcs[-1] if rcs else None
    if newest is not None and newest.commit == at:
        plan.done.append(f"{newest.name} already tags {at[:12]} on {state.remote}")
        plan.next_step = f"relforge release tag {version} --final --execute"
        return
    if newest is not None and git.is_ancestor(at, newest.commit):
        raise RefusedError(
            f"{newest.name} is on a later commit ({newest.commit[:12]}) than {at[:12]}; "
            "a new RC must not go backwards",
            key="--at",
        )
    number = (newest.rc or 0) + 1 if newest else 1
    _add_tag(git, rc_tag(version, number), at, f"{version} release candidate {number}", plan)
    plan.next_step = (
        f"after the RC builds pass: relforge release tag {version} --final --execute "
        f"(or another --rc after more picks)"
    )


def _plan_final(
    git: Git, tip: str, tags: list[Tag], options: TagRequest, plan: PlanBuilder
) -> None:
    version, remote = options.version, plan.remote
    branch = line_of(version).branch
    rcs = rcs_of(tags, version)
    if not rcs:
        raise RefusedError(
            f"no release candidate of {version} exists on {remote}; a final goes on the "
            "newest RC's commit",
            key="--final",
            hint=f"tag one first: relforge release tag {version} --rc --execute",
        )
    newest = rcs[-1]
    if not git.is_ancestor(newest.commit, tip):
        raise RefusedError(
            f"{newest.name} ({newest.commit[:12]}) is not on {remote}/{branch}; "
            "the final is tagged on the release branch only",
            key="--final",
        )
    final = final_of(tags, version)
    if final is not None:
        if final.commit == newest.commit:
            plan.done.append(f"{final.name} already tags {final.commit[:12]} ({newest.name})")
            plan.next_step = (
                f"relforge release patch {version.major}.{version.minor}.{version.micro + 1} "
                "when a patch release is needed"
            )
            return
        raise RefusedError(
            f"{final.name} already exists on {final.commit[:12]}, not on {newest.name} "
            f"({newest.commit[:12]}); relforge never moves or deletes a tag",
            key="--final",
            hint="a different final needs a new version (a patch release)",
        )
    if tip != newest.commit:
        behind = git.run("rev-list", "--count", f"{newest.commit}..{tip}").strip()
        raise RefusedError(
            f"{remote}/{branch} has moved past {newest.name} ({behind} commit(s) since); "
            "the final must be exactly what an RC built",
            key="--final",
            hint=f"tag another RC first: relforge release tag {version} --rc --execute",
        )
    _check_version(git, newest.commit, version, options.version_file, newest.name)
    _require_matrix(git, newest.commit, newest.name, f"{remote} {branch}")
    _add_tag(git, final_tag(version), newest.commit, f"{version} ({newest.name})", plan)
    plan.next_step = "promote the RC's artifacts from test to release (they are not rebuilt)"


def _check_version(git: Git, commit: str, version: Version, path: str, label: str) -> None:
    found = version_at(git, commit, path, label, line_of(version))[1]
    if Version(found.base_version) != version:
        raise RefusedError(
            f"{path} on {label} ({commit[:12]}) says {found}, which is not {version}",
            key="X.Y.Z",
            hint=f"tag {found.base_version}, or bump {path} first "
            f"(relforge release patch {version} --execute)",
        )


def _require_matrix(git: Git, commit: str, label: str, push: str) -> None:
    """A tag's builds need the matrix on the tagged commit; a project with none passes."""
    if not committed_matrices(git, commit):
        require_matrix_pushed(git, commit, label, push=push)


def _add_tag(git: Git, name: str, commit: str, message: str, plan: PlanBuilder) -> None:
    """Plan a new tag; an unpushed local tag of the same name is reused only if it agrees."""
    ref = f"refs/tags/{name}"
    local = git.commit_of(ref)
    if local is not None and local != commit:
        raise RefusedError(
            f"your clone has a tag {name} on {local[:12]} that {plan.remote} does not have; "
            f"relforge would need it on {commit[:12]} and never moves a tag",
            key="--repo",
            hint=f"delete the local tag (git tag -d {name}) and rerun",
        )
    if local is not None:  # a previous run made it but its push failed: push the same object
        existing = git.run("rev-parse", ref).strip()
        plan.actions.append(SetRef(ref=ref, old=None, new=existing, why="push the local tag"))
        return
    tag = NewTag(name=name, commit=commit, message=message)
    plan.actions += [tag, SetRef(ref=ref, old=None, new=tag, why=f"tag {commit[:12]}")]
