"""`relforge init`: write a starter matrix for the project in the current directory."""

from __future__ import annotations

from pathlib import Path

import click

from relforge.init import StarterRequest, default_path, plan_starter, read_project, write_starter


@click.command()
@click.option(
    "--name",
    help="Distribution name (default: [project] name of pyproject.toml, else the directory's "
    "name).",
)
@click.option(
    "--out",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Where to write the matrix (default: matrix/<name>.yaml).",
)
@click.option(
    "--download-url",
    default="",
    metavar="URL",
    help="Base URL the channel indexes are served from (project.download_url); enables the "
    "daily install check workflow.",
)
@click.option("--force", is_flag=True, help="Replace an existing file at --out.")
def init(name: str | None, out: Path | None, download_url: str, force: bool) -> None:
    """Write a starter matrix for the project in the current directory.

    The name and Python range come from pyproject.toml ([project] name, requires-python; else
    python_requires of setup.py or setup.cfg), the release X.Y from version.txt, [project]
    version, setuptools' dynamic version, setup.py, setup.cfg or the newest git tag
    (setuptools-scm, hatch-vcs, versioningit).  The matrix builds Linux wheels for this host
    (the platform tag of its glibc), for the Pythons a builder here has, for CPU and — when the
    sources have CUDA code — one CUDA variant of the nvcc found here; abi3 when the build uses
    the limited API, a dependency axis for torch or numpy in the build requirements, and the
    import name when it differs from the name.  It is checked with the strict loader and
    `matrix lint --strict` before it is written.  It also writes version.txt (X.Y.Z) when the
    project has none and adds .relforge/ and dist/ to .gitignore.  Notes starting with `!` ask
    for a look.  Like `workflows generate`, it writes local files without --execute; an
    existing matrix is never replaced without --force (exit 5).
    """
    root = Path()  # the current directory; messages name `pyproject.toml`, not a long path
    facts = read_project(root, name)
    path = out or default_path(facts)
    request = StarterRequest(facts=facts, path=path, root=root, download_url=download_url)
    starter = plan_starter(request)
    write_starter(starter, force=force)
    click.echo(
        f"wrote {path.as_posix()}: release {starter.release}, {starter.cells} cells "
        f"({starter.platform} × Python {', '.join(starter.pythons)} × "
        f"{', '.join(starter.variants)})"
    )
    for note in starter.notes:
        click.echo(f"  {note}")
    for side in starter.side_files:
        click.echo(side.note)
    click.echo("next:")
    for command in starter.next_commands():
        click.echo(f"  {command}")
