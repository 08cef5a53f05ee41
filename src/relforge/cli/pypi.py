"""`relforge pypi stage|upload`."""

from __future__ import annotations

import tempfile
from pathlib import Path

import click

from relforge.matrix.load import load_matrix
from relforge.output import append_step_summary


@click.group()
def pypi() -> None:
    """Stage the PyPI-default wheels of a release and upload them with twine."""


@pypi.command()
@click.argument("file", metavar="FILE")
@click.option("--version", "version", required=True, help="Released version X.Y.Z.")
@click.option(
    "--manifest",
    "manifest_path",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Manifest of the release (default: the one promote stored in the release channel).",
)
@click.option(
    "--manifest-digest",
    "manifest_digest",
    metavar="SHA256",
    help="Use only the stored release manifest with this sha256 (the one approved); "
    "anything else is refused.",
)
@click.option("--execute", is_flag=True, help="Write the staged files (default: dry run).")
def stage(
    file: str,
    version: str,
    manifest_path: Path | None,
    manifest_digest: str | None,
    execute: bool,
) -> None:
    """Rewrite each platform's PyPI-default wheel without its local version (2.9.0+cu128 →
    2.9.0) into pypi-staging/X.Y.Z/ of the store.  FILE is the matrix file."""
    from relforge.promote.plan import Plan, render
    from relforge.promote.pypi import apply_stage, plan_stage, render_stage
    from relforge.promote.transfer import refuse_conflicts

    plan = plan_stage(load_matrix(file), version, manifest_path, manifest_digest=manifest_digest)
    render_stage(plan, click.echo)
    # A dry run rewrites (in a temporary directory) the wheels whose staged name is taken, so
    # it refuses what --execute would refuse: a staged file is never replaced.
    present = {key for _, key in plan.inputs if plan.store.head(key) is not None}
    if not execute and not present:
        click.echo("dry run: nothing was written; add --execute to apply")
        return
    with tempfile.TemporaryDirectory(prefix="relforge-stage-") as tmp:
        batch, rewritten = apply_stage(plan, Path(tmp), only=None if execute else present)
        for r in rewritten:
            click.echo(f"  {r.path.name}: " + "; ".join(r.changes or ("unchanged",)))
        staged = Plan(
            command="pypi-stage",
            title=f"PyPI staging of {plan.version}",
            batches=(batch,),
            store=plan.store,
        )
        render(staged, click.echo)
        refuse_conflicts(staged.batches)
        if not execute:
            click.echo("dry run: nothing was written; add --execute to apply")
            return
        from relforge.promote.plan import execute as apply

        outcome = apply(staged, click.echo)
    summary = f"staged {outcome.created} new file(s) of {plan.version} ({len(rewritten)} in all)"
    if outcome.created == 0:
        summary += " — everything was already in place"
    click.echo(summary)
    append_step_summary(f"### relforge pypi stage\n\n{summary}")


@pypi.command()
@click.argument("file", metavar="FILE")
@click.option("--version", "version", required=True, help="Version X.Y.Z staged for PyPI.")
@click.option(
    "--repository-url",
    help="Upload endpoint (default: publishing.pypi_repository_url), e.g. "
    "https://upload.pypi.org/legacy/.",
)
@click.option(
    "--index-url",
    help="Simple index that shows what the repository holds (default: derived from "
    "--repository-url: pypi.org/simple for PyPI, else REPOSITORY/simple/).",
)
@click.option("--execute", is_flag=True, help="Upload (default: dry run).")
def upload(
    file: str, version: str, repository_url: str | None, index_url: str | None, execute: bool
) -> None:
    """Upload pypi-staging/X.Y.Z/ with twine.  A file the index has with the same sha256 is
    skipped; one it has with another sha256 stops everything before any upload.  Credentials
    come from TWINE_USERNAME/TWINE_PASSWORD.  FILE is the matrix file."""
    from relforge.promote.channel import main_store
    from relforge.promote.pypi import (
        check_url,
        default_index_url,
        plan_upload,
        public_url,
        refuse_upload_conflicts,
        require_repository,
    )
    from relforge.promote.pypi import upload as do_upload

    matrix = load_matrix(file)
    repository = require_repository(repository_url, matrix)
    index = check_url(index_url, "--index-url") if index_url else default_index_url(repository)
    store = main_store(matrix)
    items = plan_upload(store, version, index)
    click.echo(
        f"upload {len(items)} staged file(s) of {version} to {public_url(repository)} "
        f"(index {public_url(index)})"
    )
    verbs = {"upload": "upload", "identical": "skip", "conflict": "REFUSE"}
    for item in items:
        found = (
            f" (index has {item.found[:12]}…)" if item.state == "conflict" and item.found else ""
        )
        click.echo(f"  {verbs[item.state]:<7} {item.filename}  sha256={item.sha256[:12]}…{found}")
    refuse_upload_conflicts(items, index)
    if not execute:
        click.echo("dry run: nothing was uploaded; add --execute to upload")
        return
    count = do_upload(store, items, repository, index)
    summary = f"uploaded {count} file(s) of {version}; {len(items) - count} already on the index"
    click.echo(summary)
    append_step_summary(f"### relforge pypi upload\n\n{summary}")
