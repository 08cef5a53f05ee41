"""`release cut X.Y`: plan release/X.Y + orig/release/X.Y, the release-only commit and the
version bump on the trunk — every decision made from the remote's refs."""

from __future__ import annotations

from dataclasses import dataclass

from packaging.version import Version

from relforge.errors import ConfigError, RefusedError
from relforge.forges import project_repo
from relforge.git import Git
from relforge.release.checkout import (
    require_clean_checkout,
    require_matrix_pushed,
    require_pushed,
)
from relforge.release.matrixfile import committed_matrices
from relforge.release.release_only import (
    WORKFLOW_DIRS,
    ReleaseOnlyInputs,
    is_workflow_path,
    release_only_changes,
)
from relforge.release.releaseplan import FileChange, NewCommit, PlanBuilder, ReleasePlan, SetRef
from relforge.release.remote import RemoteState
from relforge.release.rerender import generation_of, is_generated
from relforge.release.versions import Line, version_at


def release_only_subject(line: Line) -> str:
    return f"[RELEASE-ONLY CHANGES] Branch Cut for Release {line}"


@dataclass(frozen=True, kw_only=True)
class CutRequest:
    line: Line
    remote: str = "origin"
    source: str | None = None  # --from; default: the trunk
    trunk: str = "main"
    matrix: str | None = None  # path of the matrix file in the tree; default: discovered
    version_file: str = "version.txt"
    github_repo: str | None = None


def plan_cut(git: Git, options: CutRequest) -> ReleasePlan:
    """The ref updates and commits of `relforge release cut X.Y` against the remote: the
    frozen `orig/` marker and the release branch at the cut point (each left alone when it
    exists), the release-only commit and the trunk's version bump.  Reads the remote, writes
    nothing; `relforge.release.apply.apply_plan` carries the plan out."""
    require_clean_checkout(git)
    line, remote = options.line, options.remote
    state = RemoteState.read(git, remote)
    trunk_tip = state.require_branch(options.trunk, hint="pass --main BRANCH")
    source_name = options.source or options.trunk
    source = state.resolve(source_name, "--from")
    release = state.branch(line.branch)
    orig = state.branch(line.orig_branch)
    state.ensure(trunk_tip, source, release, orig)
    plan = PlanBuilder(f"release cut {line}", remote)
    # the cut and the trunk's bump are made from the remote's commits: local ones would be
    # left out (the field's "cut origin's commit, which has no matrix and no CI")
    for name, tip in {options.trunk: trunk_tip, source_name: source}.items():
        if state.branch(name) == tip:  # a branch of the remote, not a tag
            note = require_pushed(git, name, tip, remote)
            plan.notes += [note] if note else []

    cut = orig or (git.merge_base(release, trunk_tip) if release else None) or source
    if orig is None:
        plan.actions.append(
            SetRef(
                ref=f"refs/heads/{line.orig_branch}",
                old=None,
                new=cut,
                why="frozen marker of the cut point",
            )
        )
    else:
        plan.done.append(f"{line.orig_branch} exists on {remote} at {orig[:12]}; left alone")

    if release is None:
        if orig is None and not git.is_ancestor(source, trunk_tip):
            raise RefusedError(
                f"{source_name} ({source[:12]}) is not on {remote}/{options.trunk}'s history",
                key="--from",
                hint="cut from a commit of the trunk, e.g. --from viable/strict",
            )
        label = f"{remote}/{line.orig_branch if orig else source_name}"
        version = _check_cut_version(git, cut, label, line, options.version_file)
        where = _Where(
            commit=cut,
            label=label,
            push=f"{remote} {source_name}",
            trunk=None if orig or source == trunk_tip else (f"{remote}/{options.trunk}", trunk_tip),
        )
        commit = _release_only_commit(git, where, options, plan)
        plan.actions += [commit] if commit else []
        plan.actions.append(
            SetRef(
                ref=f"refs/heads/{line.branch}",
                old=None,
                new=commit or cut,
                why=f"release branch, cut at {cut[:12]}",
            )
        )
    else:
        plan.done.append(f"{line.branch} exists on {remote} at {release[:12]}; left alone")
        label = f"{remote}/{line.branch}"
        version = version_at(git, release, options.version_file, label, line)[1]

    _plan_trunk_bump(git, trunk_tip, options, plan)
    # the RC of what the branch's version file says: 0.0.1a0 is tagged 0.0.1, not X.Y.0
    plan.next_step = f"relforge release tag {version.base_version} --rc --execute"
    return plan.build()


def _read(git: Git, commit: str, path: str, label: str, flag: str) -> str:
    text = git.read_file(commit, path)
    if text is None:
        raise ConfigError(f"{label} has no file {path}", key=flag)
    return text


def _check_cut_version(git: Git, cut: str, label: str, line: Line, version_file: str) -> Version:
    version = version_at(git, cut, version_file, label, line)[1]
    if not line.contains(version):
        raise RefusedError(
            f"{version_file} at {label} ({cut[:12]}) says {version}, so it is not the {line} line",
            key="X.Y",
            hint=f"cut {version.major}.{version.minor}, or pass --from a commit whose "
            f"{version_file} says {line}.*",
        )
    return version


@dataclass(frozen=True, kw_only=True)
class _Where:
    """The cut point, for reading its files and for the refusals of a missing matrix."""

    commit: str
    label: str  # e.g. "origin/main"
    push: str  # what the engineer pushes to bring a matrix there, e.g. "origin main"
    trunk: tuple[str, str] | None  # (label, commit) of the trunk when cutting from elsewhere


def _find_matrix(git: Git, where: _Where, given: str | None) -> str | None:
    """The matrix whose channels.default the cut switches; None when the tree has none (a
    project that uses only the release commands)."""
    commit, label = where.commit, where.label
    if given:
        if git.read_file(commit, given) is None:
            _require_matrix_pushed(git, where, given)
        _read(git, commit, given, label, "--matrix")
        return given
    found = committed_matrices(git, commit)
    if len(found) > 1:
        raise ConfigError(
            f"{label} has {len(found)} matrix files ({', '.join(found)})",
            key="--matrix",
            hint="pass --matrix PATH (the matrix whose channels.default the cut switches)",
        )
    return found[0] if found else None


def _require_matrix_pushed(git: Git, where: _Where, given: str | None) -> None:
    require_matrix_pushed(
        git, where.commit, where.label, push=where.push, given=given, elsewhere=where.trunk
    )


def _matrix_of_generated(git: Git, where: _Where, files: dict[str, str]) -> str | None:
    """The matrix the generated workflows were rendered from (their header names it), when no
    matrix sits in the usual places; None when there are no generated workflows.  Refused when
    the tree lacks the matrix they name: their builds would fail, and the branch would keep
    the trunk's channel."""
    cut, label = where.commit, where.label
    named = sorted(
        {generation_of(p, text).matrix for p, text in files.items() if is_generated(text)}
    )
    if len(named) > 1:
        raise ConfigError(
            f"the generated workflows of {label} come from {len(named)} matrices "
            f"({', '.join(named)})",
            key="--matrix",
            hint="pass --matrix PATH (the matrix whose channels.default the cut switches)",
        )
    if not named:
        return None
    if git.read_file(cut, named[0]) is None:
        _require_matrix_pushed(git, where, None)  # the one in the work tree, not committed
        raise RefusedError(
            f"the generated workflows of {label} ({cut[:12]}) were rendered from {named[0]}, "
            f"which {label} does not have; a release of it would have no matrix and no CI",
            key="--matrix",
            hint=f"push {named[0]} first (or pass --matrix PATH if it moved), then rerun",
        )
    return named[0]


def _release_only_commit(
    git: Git, where: _Where, options: CutRequest, plan: PlanBuilder
) -> NewCommit | None:
    cut, label = where.commit, where.label
    matrix = _find_matrix(git, where, options.matrix)
    paths = [p for p in git.list_files(cut, *WORKFLOW_DIRS) if is_workflow_path(p)]
    files = {p: _read(git, cut, p, label, "--repo") for p in paths}
    if matrix is None:
        matrix = _matrix_of_generated(git, where, files)
    if matrix is None:  # none anywhere is a project of the release commands only
        _require_matrix_pushed(git, where, None)
    if matrix is not None:
        files[matrix] = _read(git, cut, matrix, label, "--matrix")
    repo = project_repo(git, options.remote, options.github_repo)
    result = release_only_changes(
        files,
        ReleaseOnlyInputs(
            line=options.line,
            trunk=options.trunk,
            matrix_path=matrix,
            repos=frozenset({repo.lower()}) if repo else None,
            source=label,
            read_tree=lambda prefix: {
                p: _read(git, cut, p, label, "--repo") for p in git.list_files(cut, prefix)
            },
        ),
    )
    plan.notes += result.notes
    if not result.files:
        plan.notes.append("no release-only change to make; the branch starts at the cut point")
        return None
    changes = tuple(
        FileChange(path=p, old=files.get(p), new=text) for p, text in sorted(result.files.items())
    )
    body = "\n".join(f"- {c.path}" for c in changes)
    channel = "; builds target the test channel" if matrix in result.files else ""
    return NewCommit(
        key="release-only",
        branch=options.line.branch,
        parent=cut,
        message=f"{release_only_subject(options.line)}\n\n"
        f"Reusable workflow refs pinned to {options.line.branch}{channel}.\n\n{body}\n",
        changes=changes,
    )


def _plan_trunk_bump(git: Git, tip: str, options: CutRequest, plan: PlanBuilder) -> None:
    line, trunk, path = options.line, options.trunk, options.version_file
    label = f"{options.remote}/{trunk}"
    text, version = version_at(git, tip, path, label, line)
    target = line.next_dev
    if version >= target:
        plan.done.append(f"{path} on {trunk} already says {version} (≥ {target})")
        return
    if not line.contains(version):
        raise RefusedError(
            f"{path} on {label} says {version}, so {trunk} is not on the {line} line",
            key="X.Y",
            hint=f"cut {version.major}.{version.minor} instead, or fix {path} first",
        )
    new = f"{target}\n" if text.endswith("\n") or not text else str(target)
    commit = NewCommit(
        key="version-bump",
        branch=trunk,
        parent=tip,
        message=f"Bump {path} to {target} after the {line.branch} cut\n",
        changes=(FileChange(path=path, old=text, new=new),),
    )
    plan.actions += [
        commit,
        SetRef(ref=f"refs/heads/{trunk}", old=tip, new=commit, why=f"{trunk} moves to {target}"),
    ]
