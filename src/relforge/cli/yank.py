"""`relforge yank`: mark a version's files yanked (PEP 592) on the channel pages, or unyank.

Dry run by default: prints which files in which channels and folders change; `--execute`
applies it.  The stage gives the plan and what applying it did (`YankOutcome`: lines, JSON,
step summary); this command only prints them.
"""

from __future__ import annotations

import click

from relforge.cli.options import (
    execute_option,
    format_option,
    lease_options,
    lease_policy,
    print_outcome,
    progress_echo,
)
from relforge.matrix import ChannelName, load_matrix


@click.command()
@click.argument("file", metavar="FILE")
@click.option("--version", "version", required=True, help="Version whose files are yanked.")
@click.option(
    "--cell",
    "cells",
    multiple=True,
    metavar="ID",
    help="Only the files of this cell (repeatable; default: every cell).",
)
@click.option(
    "--channel",
    "channels",
    multiple=True,
    type=click.Choice(["test", "release", "nightly"]),
    help="Only this channel (repeatable; default: every channel that holds the version).",
)
@click.option("--reason", default="", help="Why it is yanked (shown by pip and uv).")
@click.option("--undo", is_flag=True, help="Remove the yank instead.")
@format_option(
    "text",
    "json",
    help="json: the plan (dry run) or the plan and what was done (--execute) on stdout, the "
    "lines on stderr.",
)
@execute_option()
@lease_options()
def yank(
    file: str,
    version: str,
    cells: tuple[str, ...],
    channels: tuple[ChannelName, ...],
    reason: str,
    undo: bool,
    fmt: str,
    execute: bool,
    lease_wait: float,
    no_wait: bool,
    lease_ttl: float,
) -> None:
    """Mark the files of one version yanked (PEP 592) on the HTML and JSON pages of every
    channel that holds them; pip and uv then skip them unless pinned with `==`.  The yank is
    kept in the store (relforge/yanked/<channel>.json), so re-indexing keeps it.  FILE is the
    matrix file."""
    from relforge.errors import UsageError
    from relforge.promote import YankRequest, apply_yank, lease_scope, plan_yank

    if not undo and not reason.strip():
        raise UsageError("a yank needs a reason", key="--reason", hint="--reason TEXT")
    if undo and reason:
        raise UsageError("--undo takes no --reason", key="--reason")
    request = YankRequest(
        matrix=load_matrix(file),
        version=version,
        reason=reason.strip(),
        undo=undo,
        cells=cells,
        channels=channels,
    )
    policy = lease_policy(execute, lease_wait, no_wait, lease_ttl)
    with lease_scope("yank", policy) as lease:
        plan = plan_yank(request, lease)
        say = progress_echo(fmt)
        for line in plan.lines():
            say(line)
        outcome = apply_yank(plan, execute=execute)
    print_outcome(outcome, fmt=fmt, title="relforge yank")
