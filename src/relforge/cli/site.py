"""`relforge site`: render the install selector and compatibility pages from the matrix."""

from __future__ import annotations

from pathlib import Path

import click

from relforge.cli.options import execute_option, releases_option, stop_for_dry_run
from relforge.matrix import load_matrix


@click.command()
@click.argument("file", metavar="FILE")
@releases_option("Release(s) the site covers (default: all); the newest is the page's default.")
@click.option(
    "--out",
    "out",
    required=True,
    type=click.Path(file_okay=False, path_type=Path),
    help="Folder to write; replaced as a whole (only a site relforge wrote is replaced).",
)
@click.option(
    "--download-url",
    default=None,
    help="Base URL of the channel folders instead of project.download_url (a mirror, a store).",
)
@click.option(
    "--publish",
    is_flag=True,
    help="Also upload the site to the store's site/ folder (a plan unless --execute).",
)
@execute_option("With --publish: upload (default: dry run).")
def site(
    file: str,
    releases: tuple[str, ...],
    out: Path,
    download_url: str | None,
    publish: bool,
    execute: bool,
) -> None:
    """Static install-selector site: index.html, compatibility.html, published_versions.json."""
    from relforge.errors import UsageError
    from relforge.matrixstores import main_store
    from relforge.site import SiteRequest, build_site, publish_site

    if execute and not publish:
        raise UsageError("--execute only applies to --publish", key="--execute")
    matrix = load_matrix(file)
    request = SiteRequest(matrix=matrix, out=out, releases=releases, download_url=download_url)
    result = build_site(request)
    click.echo(
        f"wrote the site of {', '.join(result.releases)} to {result.out}/ "
        f"(open {result.out / 'index.html'})"
    )
    if not publish:
        return
    plan, written, where = publish_site(main_store(matrix), result, execute=execute)
    click.echo(f"publish the site to {where}")
    for item in plan:
        click.echo(f"  {'upload' if item.state == 'upload' else 'skip':<6} {item.key}")
    if stop_for_dry_run(execute, nothing="uploaded", to="upload"):
        return
    click.echo(f"uploaded {written} file(s); {len(plan) - written} already identical")
