"""`relforge publish`, `relforge index`, `relforge promote`: channels in an object store.

Dry run by default: each prints its plan and changes nothing; `--execute` applies it.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import click

from relforge.cli.options import execute_option, stop_for_dry_run, workers_option
from relforge.matrix.load import load_matrix
from relforge.matrix.schema import ChannelName
from relforge.output import append_step_summary

if TYPE_CHECKING:
    from relforge.promote.store import ObjectStore

_EXECUTE = execute_option()
_WORKERS = workers_option()


def _run_plan(plan: object, execute: bool) -> None:
    from relforge.promote.plan import Plan, render
    from relforge.promote.plan import execute as apply
    from relforge.promote.transfer import refuse_conflicts

    assert isinstance(plan, Plan)
    render(plan, click.echo)
    refuse_conflicts(plan.batches)
    if stop_for_dry_run(execute):
        return
    outcome = apply(plan, click.echo)
    rebuilt = sum(len(f.rebuild) for f in outcome.indexed)
    summary = (
        f"{plan.title}: {outcome.created} object(s) written, {outcome.deleted} deleted, "
        f"{rebuilt} project page(s) rebuilt in {len(outcome.indexed)} folder(s)"
    )
    if outcome.created == 0 and outcome.deleted == 0 and not outcome.indexed:
        summary += " — everything was already in place"
    summary += f"; retries: {_retries(plan)}"
    click.echo(summary)
    append_step_summary(f"### relforge {plan.command}\n\n{summary}")


def _retries(plan: object) -> int:
    """Requests the plan's stores tried again after a transient fault."""
    from relforge.promote.plan import Plan
    from relforge.promote.retry import total_retries

    assert isinstance(plan, Plan)
    stores: list[object] = [plan.store]
    for batch in plan.batches:
        stores += [batch.store, batch.source]
    return total_retries(stores)


def _warn_serving(download_url: str, store: ObjectStore, folders: Sequence[str]) -> None:
    """Warn (stderr, exit code unchanged) when project.download_url does not serve the pages."""
    from relforge.promote.serving import serving_warnings

    for line in serving_warnings(store, download_url, folders):
        click.echo(line, err=True)


@click.command()
@click.argument("file", metavar="FILE")
@click.option(
    "--channel",
    type=click.Choice(["nightly", "test"]),
    help="Channel to fill (default: the matrix's channels.default).",
)
@click.option(
    "--manifest",
    "manifest_path",
    type=click.Path(dir_okay=False, path_type=Path),
    required=True,
    help="Artifact manifest (relforge-manifest.json) whose validated files are published.",
)
@_EXECUTE
@_WORKERS
def publish(
    file: str, channel: ChannelName | None, manifest_path: Path, execute: bool, workers: int
) -> None:
    """Upload a manifest's validated artifacts (with PEP 658 sidecars) to a channel, store the
    manifest there, prune old nightlies, and re-index.  FILE is the matrix file."""
    from relforge.promote.publish import plan_publish

    matrix = load_matrix(file)
    chosen = matrix.channels.pick(channel)
    plan = plan_publish(matrix, manifest_path, chosen, workers=workers)
    _run_plan(plan, execute)
    if execute:
        _warn_serving(matrix.project.download_url, plan.store, plan.index_folders)


@click.command()
@click.argument("file", metavar="FILE")
@click.option(
    "--channel",
    type=click.Choice(["nightly", "test", "release"]),
    help="Channel whose wheel folders are indexed (default: the matrix's channels.default).",
)
@_EXECUTE
@_WORKERS
def index(file: str, channel: ChannelName | None, execute: bool, workers: int) -> None:
    """(Re)build the PEP 503/691 index of every wheel folder of a channel; only projects whose
    files changed are rebuilt.  FILE is the matrix file."""
    from relforge.promote.channel import main_store, trust, wheel_folders
    from relforge.promote.index import apply_folder, plan_folder, refuse_drift
    from relforge.promote.plan import describe_index
    from relforge.promote.vouch import channel_vouchers

    matrix = load_matrix(file)
    channel = matrix.channels.pick(channel)
    store = main_store(matrix)
    vouchers = channel_vouchers(matrix, store, channel, trust(matrix), workers=min(workers, 16))
    plans = [
        plan_folder(store, f, vouchers, workers=workers) for f in wheel_folders(matrix, channel)
    ]
    click.echo(f"index of the {channel} channel in {store.url}: {len(plans)} folder(s)")
    describe_index(plans, click.echo)
    refuse_drift(plans, store)
    changed = [p for p in plans if p.changed]
    if not execute and vouchers.root is not None:
        what = "rebuilt" if vouchers.root.enabled else "removed (root_index is false)"
        click.echo(f"  {vouchers.root.prefix}/: channel-root pages {what} after the folders")
    if stop_for_dry_run(execute):
        return
    for plan in changed:
        apply_folder(store, plan, workers=workers)
    from relforge.promote.retry import total_retries
    from relforge.promote.rootpages import refresh_root

    root = refresh_root(store, vouchers.root, workers=workers)
    if root is not None:
        click.echo(root.describe())

    click.echo(
        f"{len(changed)} folder(s) written, {len(plans) - len(changed)} up to date; "
        f"retries: {total_retries([store])}"
    )
    _warn_serving(matrix.project.download_url, store, [p.folder for p in plans])


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
@_WORKERS
def promote(
    file: str,
    version: str,
    source: ChannelName,
    target: ChannelName,
    manifest_path: Path | None,
    manifest_digest: str | None,
    execute: bool,
    workers: int,
) -> None:
    """Copy the exact validated objects of one version between channels (server-side, each
    sha256 verified, never overwriting), back them up, and re-index the destination last.
    A killed run resumes when rerun.  FILE is the matrix file."""
    from relforge.promote.promote import plan_promote

    plan = plan_promote(
        load_matrix(file),
        version,
        source,
        target,
        manifest_path,
        manifest_digest=manifest_digest,
        workers=workers,
    )
    _run_plan(plan, execute)
