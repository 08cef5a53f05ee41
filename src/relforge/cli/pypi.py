"""`relforge pypi stage|upload`.  The stage gives each run's outcome (`StageResult`,
`UploadResult`: lines, JSON, step summary); these commands only print it."""

from __future__ import annotations

from pathlib import Path

import click

from relforge.cli.options import (
    dry_run_note,
    execute_option,
    format_option,
    print_outcome,
    progress_echo,
)
from relforge.matrix import load_matrix

_FORMAT = format_option(
    "text",
    "json",
    help="json: the plan (dry run) or what was done (--execute) on stdout, the progress on stderr.",
)


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
@_FORMAT
@execute_option("Write the staged files (default: dry run).")
def stage(
    file: str,
    version: str,
    manifest_path: Path | None,
    manifest_digest: str | None,
    fmt: str,
    execute: bool,
) -> None:
    """Rewrite each platform's PyPI-default wheel without its local version (2.9.0+cu128 →
    2.9.0) into pypi-staging/X.Y.Z/ of the store.  FILE is the matrix file."""
    from relforge.promote import StageRequest, plan_stage, stage_wheels

    request = StageRequest(
        matrix=load_matrix(file),
        version=version,
        manifest_path=manifest_path,
        manifest_digest=manifest_digest,
    )
    plan = plan_stage(request)
    result = stage_wheels(plan, progress_echo(fmt), execute=execute)
    print_outcome(result, fmt=fmt, title="relforge pypi stage")


@pypi.command()
@click.argument("file", metavar="FILE")
@click.option("--version", "version", required=True, help="Version X.Y.Z staged for PyPI.")
@click.option(
    "--repository-url",
    envvar="TWINE_REPOSITORY_URL",
    help="Upload endpoint (default: TWINE_REPOSITORY_URL, then publishing.pypi_repository_url, "
    "then PyPI's https://upload.pypi.org/legacy/).",
)
@click.option(
    "--index-url",
    help="Simple index that shows what the repository holds (default: derived from "
    "--repository-url: pypi.org/simple for PyPI, else REPOSITORY/simple/).",
)
@_FORMAT
@execute_option("Upload (default: dry run).")
def upload(
    file: str,
    version: str,
    repository_url: str | None,
    index_url: str | None,
    fmt: str,
    execute: bool,
) -> None:
    """Upload pypi-staging/X.Y.Z/ with twine.  A file the index has with the same sha256 is
    skipped; one it has with another sha256 stops everything before any upload.  Credentials
    come from TWINE_USERNAME/TWINE_PASSWORD.  FILE is the matrix file."""
    from relforge.promote import (
        UploadRequest,
        plan_pypi_upload,
        refuse_upload,
        upload_release,
    )

    say = progress_echo(fmt)
    request = UploadRequest(
        matrix=load_matrix(file),
        version=version,
        repository_url=repository_url,
        index_url=index_url,
    )
    plan = plan_pypi_upload(request)
    for line in plan.lines():
        say(line)
    refuse_upload(plan)
    result = upload_release(plan, say, execute=execute)
    note = dry_run_note("uploaded", "upload")
    print_outcome(result, fmt=fmt, title="relforge pypi upload", note=note)
