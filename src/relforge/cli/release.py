"""`relforge release …`: cut release branches, tag RCs and finals, patch releases, status, audit.

Every mutating command prints its plan and changes nothing unless given --execute.  When
everything is already in place the plan is empty and the command exits 3 (nothing to do).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from relforge.actions import append_markdown
from relforge.cli.options import (
    clone_option,
    execute_option,
    format_option,
    github_repo_option,
    remote_option,
)
from relforge.errors import NothingToDoError, UsageError, ValidationFailed
from relforge.git import Git
from relforge.output import console, print_json
from relforge.release import ReleasePlan, parse_line, parse_release

F = TypeVar("F", bound=Callable[..., Any])

_FORMAT = format_option("text", "json", help="json prints one JSON document for machines.")


def _common(func: F) -> F:
    func = clone_option("The project's clone (its remote is what relforge reads and pushes to).")(
        func
    )
    func = remote_option("Git remote.")(func)
    return _FORMAT(func)


_EXECUTE = execute_option("Apply the plan (default: print it and change nothing).")
_VERSION_FILE = click.option(
    "--version-file",
    default="version.txt",
    show_default=True,
    metavar="PATH",
    help="File holding the version, relative to the repository root.",
)
_MAIN = click.option(
    "--main",
    "trunk",
    default="main",
    show_default=True,
    metavar="BRANCH",
    help="The development branch (the trunk) release lines are cut from.",
)
_GITHUB_REPO = github_repo_option()


@click.group()
def release() -> None:
    """Release branches, tags and audits on a real git repository.

    Mutating commands print their plan and change nothing without --execute; when everything
    is already in place they exit 3 (nothing to do)."""


def _print(lines: list[str]) -> None:
    """Lines in rich markup, as the release package gives them."""
    out = console()
    for line in lines:
        out.print(line)


def _finish(git: Git, plan: ReleasePlan, *, execute: bool, fmt: str) -> None:
    from relforge.release import apply_plan, plan_lines, plan_markdown

    if plan.empty:
        if fmt == "json":
            print_json(plan.to_json())
        else:
            _print(plan_lines(plan, execute=execute))
        raise NothingToDoError(f"`relforge {plan.command}` is already done", hint=plan.next_step)
    if not execute:
        print_json(plan.to_json()) if fmt == "json" else _print(plan_lines(plan, execute=False))
        append_markdown(plan_markdown(plan, executed=False))
        return
    if fmt == "text":
        _print(plan_lines(plan, execute=True))
    results = apply_plan(git, plan)
    if fmt == "json":
        print_json(plan.to_json(executed=True, results=results))
    else:
        click.echo(f"  applied: {len(results)} ref(s) pushed to {plan.remote}")
    append_markdown(plan_markdown(plan, executed=True))


@release.command("cut")
@click.argument("version", metavar="X.Y")
@click.option(
    "--from",
    "source",
    metavar="REF",
    help="Branch or tag of the remote to cut from, e.g. viable/strict (default: --main).",
)
@_MAIN
@click.option(
    "--matrix",
    metavar="PATH",
    help="Matrix file whose channels.default the cut switches to test "
    "(default: matrix.yaml or the one file in matrix/).",
)
@_VERSION_FILE
@_GITHUB_REPO
@_EXECUTE
@_common
def cut_command(
    version: str,
    source: str | None,
    trunk: str,
    matrix: str | None,
    version_file: str,
    github_repo: str | None,
    execute: bool,
    repo: Path,
    remote: str,
    fmt: str,
) -> None:
    """Cut release/X.Y and orig/release/X.Y, commit the release-only changes on the branch and
    bump version.txt on the trunk to X.(Y+1).0a0."""
    from relforge.release import CutRequest, plan_cut

    line = parse_line(version)
    git = Git(repo)
    options = CutRequest(
        line=line,
        remote=remote,
        source=source,
        trunk=trunk,
        matrix=matrix,
        version_file=version_file,
        github_repo=github_repo,
    )
    _finish(git, plan_cut(git, options), execute=execute, fmt=fmt)


@release.command("tag")
@click.argument("version", metavar="X.Y.Z")
@click.option("--rc", "kind", flag_value="rc", help="Tag the next release candidate vX.Y.Z-rcN.")
@click.option("--final", "kind", flag_value="final", help="Tag vX.Y.Z on the newest RC's commit.")
@click.option(
    "--at", metavar="REV", help="Commit of release/X.Y for the RC (default: the branch's tip)."
)
@_VERSION_FILE
@_EXECUTE
@_common
def tag_command(
    version: str,
    kind: str | None,
    at: str | None,
    version_file: str,
    execute: bool,
    repo: Path,
    remote: str,
    fmt: str,
) -> None:
    """Tag the next RC on the tip of release/X.Y, or the final on the newest RC."""
    from relforge.release import TagRequest, plan_tag

    parsed = parse_release(version)
    if kind not in ("rc", "final"):
        raise UsageError("say which tag to make", key="--rc/--final", hint="pass --rc or --final")
    if at and kind == "final":
        raise UsageError("the final goes on the newest RC's commit", key="--at")
    git = Git(repo)
    options = TagRequest(
        version=parsed,
        kind="rc" if kind == "rc" else "final",
        remote=remote,
        at=at,
        version_file=version_file,
    )
    _finish(git, plan_tag(git, options), execute=execute, fmt=fmt)


@release.command("patch")
@click.argument("version", metavar="X.Y.Z")
@_VERSION_FILE
@_EXECUTE
@_common
def patch_command(
    version: str, version_file: str, execute: bool, repo: Path, remote: str, fmt: str
) -> None:
    """Bump version.txt on release/X.Y to X.Y.Z for a patch release (X.Y.(Z-1) must be final)."""
    from relforge.release import PatchRequest, plan_patch

    git = Git(repo)
    options = PatchRequest(version=parse_release(version), remote=remote, version_file=version_file)
    _finish(git, plan_patch(git, options), execute=execute, fmt=fmt)


@release.command("status")
@click.argument("version", metavar="X.Y")
@_MAIN
@_VERSION_FILE
@_common
def status_command(
    version: str, trunk: str, version_file: str, repo: Path, remote: str, fmt: str
) -> None:
    """Branches, cut point, RCs and finals, commits since the last RC, and the next command."""
    from relforge.release import StatusRequest, release_status, status_lines

    request = StatusRequest(
        line=parse_line(version), remote=remote, trunk=trunk, version_file=version_file
    )
    status = release_status(Git(repo), request)
    if fmt == "json":
        print_json(status.to_json())
    else:
        _print(status_lines(status))


@release.command("audit")
@click.argument("version", metavar="X.Y")
@click.option(
    "--milestone-file",
    metavar="FILE",
    help="YAML/JSON list of the milestone's issue/PR numbers or URLs.",
)
@click.option(
    "--milestone",
    "milestone_number",
    type=click.IntRange(min=1),
    metavar="N",
    help="GitHub milestone N.",
)
@click.option(
    "--manifest",
    "manifest_path",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Artifact manifest of the release (validated with --runtime): also list, per CUDA "
    "cell, the architectures of its arch list no GPU smoke has run yet (needs --matrix).",
)
@click.option(
    "--matrix",
    "matrix_file",
    type=click.Path(dir_okay=False, path_type=Path),
    help="The matrix the manifest's cells come from (with --manifest).",
)
@_GITHUB_REPO
@_MAIN
@_common
def audit_command(
    version: str,
    milestone_file: str | None,
    milestone_number: int | None,
    manifest_path: Path | None,
    matrix_file: Path | None,
    github_repo: str | None,
    trunk: str,
    repo: Path,
    remote: str,
    fmt: str,
) -> None:
    """Milestone fixes on the trunk that release/X.Y lacks, and trunk reverts it still needs;
    with --manifest, the CUDA architectures no validation has executed.  Exits 4 when
    something is missing (unexecuted architectures are reported, not failed)."""
    from relforge.forges import project_repo
    from relforge.release import (
        AuditRequest,
        audit_lines,
        audit_markdown,
        audit_release,
        fetch_milestone,
        load_milestone_file,
    )

    if (milestone_file is None) == (milestone_number is None):
        raise UsageError(
            "give exactly one milestone",
            key="--milestone-file/--milestone",
            hint="--milestone-file FILE, or --milestone N for a GitHub milestone",
        )
    line = parse_line(version)
    git = Git(repo)
    gh_repo = project_repo(git, remote, github_repo)
    if milestone_file is not None:
        milestone = load_milestone_file(milestone_file, gh_repo)
    else:
        from relforge.forges import GitHubClient

        if gh_repo is None:
            raise UsageError(
                f"the remote {remote!r} is not a GitHub URL, so the milestone's repository "
                "is unknown",
                key="--github-repo",
                hint="pass --github-repo OWNER/NAME",
            )
        assert milestone_number is not None
        milestone = fetch_milestone(GitHubClient(gh_repo), milestone_number)
    if (manifest_path is None) != (matrix_file is None):
        raise UsageError(
            "--manifest and --matrix go together",
            key="--manifest/--matrix",
            hint="the manifest records the GPUs; the matrix says each cell's arch list",
        )
    coverage = _gpu_coverage(matrix_file, manifest_path) if manifest_path else None
    request = AuditRequest(line=line, milestone=milestone, remote=remote, trunk=trunk, repo=gh_repo)
    report = audit_release(git, request)
    if fmt == "json":
        document = report.to_json()
        if coverage is not None:
            document["gpu_coverage"] = [c.to_json() for c in coverage]
        print_json(document)
    else:
        _print(audit_lines(report))
        if coverage is not None:
            from relforge.validate import coverage_lines

            _print(["[bold]GPU coverage[/] (architectures a GPU smoke ran)"])
            _print(coverage_lines(coverage))
    append_markdown(audit_markdown(report))
    if report.findings:
        raise ValidationFailed(
            f"{line.branch} is missing {len(report.findings)} change(s) (see above)",
            hint="cherry-pick them with `git cherry-pick -x`, then rerun the audit",
        )


def _gpu_coverage(matrix_file: Path | None, manifest_path: Path) -> list[Any]:
    """The CUDA cells of the manifest's release and channel, against what it recorded."""
    from relforge.manifest import load_manifest
    from relforge.matrix import CHANNEL_NAMES, expand_cells, load_matrix
    from relforge.validate import gpu_coverage

    assert matrix_file is not None
    manifest = load_manifest(manifest_path)
    matrix = load_matrix(str(matrix_file))
    channel = next((c for c in CHANNEL_NAMES if c == manifest.channel), None)  # dev: none
    cells = expand_cells(matrix, manifest.release, channel=channel)
    return list(gpu_coverage(cells, manifest))
