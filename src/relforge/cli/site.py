"""`relforge site`: render the install selector and compatibility pages from the matrix."""

from __future__ import annotations

from pathlib import Path

import click

from relforge.matrix.load import load_matrix


@click.command()
@click.argument("file", metavar="FILE")
@click.option(
    "--release",
    "-r",
    "releases",
    multiple=True,
    help="Release(s) the site covers (default: all); the newest is the page's default.",
)
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
def site(file: str, releases: tuple[str, ...], out: Path, download_url: str | None) -> None:
    """Static install-selector site: index.html, compatibility.html, published_versions.json."""
    from relforge.site import build_site

    result = build_site(load_matrix(file), out, releases=releases, download_url=download_url)
    click.echo(
        f"wrote the site of {', '.join(result.releases)} to {result.out}/ "
        f"(open {result.out / 'index.html'})"
    )
