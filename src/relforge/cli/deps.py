"""`relforge deps mirror` and `relforge deps check`: a channel's dependency closure."""

from __future__ import annotations

from pathlib import Path

import click

from relforge.actions import step_summary
from relforge.cli.options import (
    channel_option,
    execute_option,
    format_option,
    parse_selectors,
    print_outcome,
    progress_echo,
    select_option,
    workers_option,
)
from relforge.matrix import ChannelName, load_matrix

_CHANNEL = channel_option(
    "Channel whose wheel folders are filled/checked (default: channels.default).",
    ("nightly", "test", "release"),
)
_SELECT = select_option(
    "Only the cells matching (as `matrix list --select`); repeat for OR.",
    metavar="FIELD=VALUE[,…]",
    short=False,
)
_VERSION = click.option(
    "--version",
    "version",
    default=None,
    help="Public version of the project to resolve (default: each cell's newest in its folder).",
)


@click.group()
def deps() -> None:
    """The dependency closure of a channel: mirror it from an upstream index, check it."""


@deps.command()
@click.argument("file", metavar="FILE")
@_CHANNEL
@click.option(
    "--upstream-index",
    "upstream",
    required=True,
    metavar="URL",
    help="PEP 503 index the dependencies come from (e.g. https://pypi.org/simple/).",
)
@_SELECT
@_VERSION
@click.option(
    "--manifest",
    "manifest_path",
    type=click.Path(dir_okay=False, path_type=Path),
    help="A build's manifest: resolve its wheels instead of the published ones, so their "
    "closure is in the channel before they are validated (--runtime) and published.",
)
@execute_option("Apply the plan (default: a dry run).")
@workers_option(16)
@format_option(
    "text",
    "json",
    help="json: the plan (and with --execute what was written) as one document on stdout; "
    "progress goes to stderr.",
)
def mirror(
    file: str,
    channel: ChannelName | None,
    upstream: str,
    selects: tuple[str, ...],
    version: str | None,
    manifest_path: Path | None,
    execute: bool,
    workers: int,
    fmt: str,
) -> None:
    """Copy the wheels each cell's published wheel (or, with --manifest, its built wheel)
    depends on (transitively, for the cell's platform and Python, as pip resolves them) from
    the upstream index into the cell's folder, each checked against the upstream's sha256;
    record them and re-index.  FILE is the matrix."""
    from relforge.deps import MirrorRequest, built_wheels, plan_mirror, render_mirror
    from relforge.promote import apply_mirror, open_publishing

    matrix = load_matrix(file)
    chosen = matrix.channels.pick(channel)
    built = built_wheels(manifest_path, chosen) if manifest_path is not None else None
    here = open_publishing(matrix).channel(chosen)
    request = MirrorRequest(
        matrix=matrix,
        channel=chosen,
        upstream=upstream,
        selectors=tuple(parse_selectors(selects)),
        version=version,
        built=built,
    )
    plan = plan_mirror(here.store, request)
    say = progress_echo(fmt)
    render_mirror(plan, say)
    report = apply_mirror(plan, here, say, execute=execute, workers=workers)
    print_outcome(report, fmt=fmt, title="relforge deps mirror")


@deps.command()
@click.argument("file", metavar="FILE")
@_CHANNEL
@_SELECT
@_VERSION
def check(
    file: str, channel: ChannelName | None, selects: tuple[str, ...], version: str | None
) -> None:
    """Prove that pip resolves and would install each cell's wheel from the cell's folder
    index alone (exit 4 naming what is missing per cell).  FILE is the matrix file."""
    from relforge.deps import DepsCheckRequest, check_channel, check_summary

    matrix = load_matrix(file)
    chosen = matrix.channels.pick(channel)
    click.echo(f"deps check: the {chosen} channel, each cell from its folder index alone")
    request = DepsCheckRequest(
        matrix=matrix, channel=chosen, selectors=tuple(parse_selectors(selects)), version=version
    )
    results = check_channel(click.echo, request)
    summary = check_summary(chosen, results)
    click.echo(summary)
    step_summary("relforge deps check", summary)
