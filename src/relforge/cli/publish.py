"""`relforge publish`, `relforge index`, `relforge promote`: channels in an object store.

Dry run by default: each prints its plan and changes nothing; `--execute` applies it.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import click

from relforge.actions import step_summary
from relforge.cli.options import (
    execute_option,
    format_option,
    lease_options,
    lease_policy,
    print_outcome,
    progress_echo,
    stop_for_dry_run,
    workers_option,
)
from relforge.matrix import ChannelName, load_matrix

if TYPE_CHECKING:
    from relforge.promote import PlanReport
    from relforge.stores import ObjectStore

_EXECUTE = execute_option()
_PARTIAL = click.option(
    "--partial",
    is_flag=True,
    help="Advertise a version before every cell the matrix expects of it is in the channel "
    "(reported loudly; the default leaves it off the pages until it is whole).",
)
_WORKERS = workers_option()
_LEASE = lease_options()


def _run_plan(plan: object, execute: bool) -> PlanReport | None:
    """Print the plan and apply it with --execute; the report (None for a dry run), printed
    by `_print_report` once the command's leases are released (their retries count too)."""
    from relforge.promote import PlanReport, StorePlan, render
    from relforge.promote import execute as apply
    from relforge.stores import refuse_conflicts

    assert isinstance(plan, StorePlan)
    render(plan, click.echo)
    refuse_conflicts(plan.batches)
    if stop_for_dry_run(execute):
        return None
    return PlanReport(plan=plan, done=apply(plan, click.echo))


def _print_report(report: PlanReport | None) -> None:
    if report is None:
        return
    for line in report.lines():
        click.echo(line)
    step_summary(f"relforge {report.plan.command}", report.summary_markdown())


def _warn_serving(download_url: str, store: ObjectStore, folders: Sequence[str]) -> None:
    """Warn (stderr, exit code unchanged) when project.download_url does not serve the pages."""
    from relforge.promote import serving_warnings

    for line in serving_warnings(store, download_url, folders):
        click.echo(line, err=True)


@click.command()
@click.argument("file", metavar="FILE")
@click.option(
    "--channel",
    type=click.Choice(["nightly", "test"]),
    help="Channel to fill (default: the one the manifest was built for; another one is refused).",
)
@click.option(
    "--manifest",
    "manifest_path",
    type=click.Path(dir_okay=False, path_type=Path),
    required=True,
    help="Artifact manifest (relforge-manifest.json) whose validated files are published.",
)
@_EXECUTE
@_PARTIAL
@click.option(
    "--no-index",
    "no_index",
    is_flag=True,
    help="Upload and store the manifest only; leave the pages (and the pruning of older "
    "nightly wheels) to a later `relforge index` (the generated workflows: one index job after "
    "every per-cell upload).",
)
@_WORKERS
@_LEASE
def publish(
    file: str,
    channel: ChannelName | None,
    manifest_path: Path,
    execute: bool,
    partial: bool,
    no_index: bool,
    workers: int,
    lease_wait: float,
    no_wait: bool,
    lease_ttl: float,
) -> None:
    """Upload a manifest's validated artifacts (with PEP 658 sidecars) to a channel, store the
    manifest there, prune old nightlies, and re-index.  A version appears on the pages only
    once every cell the matrix expects of it is there (--partial: at once).  FILE is the
    matrix file."""
    from relforge.promote import PublishRequest, install_lines, lease_scope, plan_publish

    matrix = load_matrix(file)
    request = PublishRequest(
        matrix=matrix,
        manifest_path=manifest_path,
        channel=channel,
        workers=workers,
        partial=partial,
        index=not no_index,
    )
    policy = lease_policy(execute, lease_wait, no_wait, lease_ttl)
    with lease_scope("publish", policy) as lease:
        plan = plan_publish(request, lease)
        report = _run_plan(plan, execute)
    _print_report(report)
    if execute:
        _warn_serving(matrix.project.download_url, plan.store, plan.index_folders)
    if plan.channel is not None:  # the last lines: where to install from, and how
        for line in install_lines(
            matrix.project.name,
            plan.channel,
            plan.install_urls,
            dry_run=not execute,
            pages_later=no_index,
        ):
            click.echo(line)


@click.command()
@click.argument("file", metavar="FILE")
@click.option(
    "--channel",
    type=click.Choice(["nightly", "test", "release"]),
    help="Channel whose wheel folders are indexed (default: the matrix's channels.default).",
)
@format_option(
    "text",
    "json",
    help="json: the outcome on stdout (whole releases: each version's cells, what is missing, "
    "whether it is on the pages), the progress on stderr.",
)
@_EXECUTE
@_PARTIAL
@_WORKERS
@_LEASE
def index(
    file: str,
    channel: ChannelName | None,
    fmt: str,
    execute: bool,
    partial: bool,
    workers: int,
    lease_wait: float,
    no_wait: bool,
    lease_ttl: float,
) -> None:
    """(Re)build the PEP 503/691 index of every wheel folder of a channel; only projects whose
    files changed are rebuilt, and only whole versions are advertised (--partial: every
    version).  Of the nightly channel, the wheels beyond publishing.nightly_keep whole
    nightlies are left off the pages and then deleted.  FILE is the matrix file."""
    from relforge.promote import (
        IndexRequest,
        apply_channel_index,
        index_report,
        lease_scope,
        plan_channel_index,
    )

    matrix = load_matrix(file)
    chosen = matrix.channels.pick(channel)
    request = IndexRequest(matrix=matrix, channel=chosen, partial=partial, workers=workers)
    policy = lease_policy(execute, lease_wait, no_wait, lease_ttl)
    with lease_scope("index", policy) as lease:
        planned = plan_channel_index(request, lease)
        report = index_report(planned)
        say = progress_echo(fmt)
        for line in report.plan_lines():
            say(line)
        if execute:
            report = report.applied(apply_channel_index(planned, workers=workers))
    report = report.retries_counted([planned.store])  # the lease's release too
    print_outcome(report, fmt=fmt, title="relforge index")
    if execute:
        folders = [p.folder for p in planned.plans]
        _warn_serving(matrix.project.download_url, planned.store, folders)


@click.command()
@click.argument("file", metavar="FILE")
@click.option("--version", "version", required=True, help="Version X.Y.Z to promote.")
@click.option(
    "--from", "source", type=click.Choice(["nightly", "test"]), default="test", show_default=True
)
@click.option(
    "--to", "target", type=click.Choice(["test", "release"]), default="release", show_default=True
)
@click.option(
    "--manifest",
    "manifest_path",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Manifest selecting the artifacts (default: the manifests publish stored in the "
    "--from channel for this version).",
)
@click.option(
    "--manifest-digest",
    "manifest_digest",
    metavar="SHA256",
    help="Promote only from the stored manifest with this sha256 (the one the release was "
    "approved on); anything else is refused.",
)
@_EXECUTE
@_PARTIAL
@_WORKERS
@_LEASE
def promote(
    file: str,
    version: str,
    source: ChannelName,
    target: ChannelName,
    manifest_path: Path | None,
    manifest_digest: str | None,
    execute: bool,
    partial: bool,
    workers: int,
    lease_wait: float,
    no_wait: bool,
    lease_ttl: float,
) -> None:
    """Copy the exact validated objects of one version between channels (server-side, each
    sha256 verified, never overwriting), back them up, and re-index the destination last.
    A killed run resumes when rerun.  FILE is the matrix file."""
    from relforge.promote import PromoteRequest, lease_scope, plan_promote

    request = PromoteRequest(
        matrix=load_matrix(file),
        version=version,
        source=source,
        target=target,
        manifest_path=manifest_path,
        manifest_digest=manifest_digest,
        workers=workers,
        partial=partial,
    )
    policy = lease_policy(execute, lease_wait, no_wait, lease_ttl)
    with lease_scope("promote", policy) as lease:
        plan = plan_promote(request, lease)
        report = _run_plan(plan, execute)
    _print_report(report)
