"""`relforge upstream check` and `relforge upstream update`: follow the dependencies, CUDA pins
and CPython releases upstream publishes.  The stage gives the report and the update's outcome
(lines, JSON, step summary); these commands only print them."""

from __future__ import annotations

import click

from relforge.actions import append_markdown, step_summary
from relforge.cli.options import (
    date_option,
    dry_run_note,
    execute_option,
    format_option,
    github_repo_option,
    optional_release_option,
    parse_date,
    progress_echo,
    remote_option,
)
from relforge.errors import ValidationFailed
from relforge.output import print_json
from relforge.upstream import PYPI

_RELEASE = optional_release_option("Release to follow upstream (default: the newest in FILE).")
_INDEX = click.option(
    "--index-url",
    default=PYPI,
    show_default=True,
    metavar="URL",
    help="PEP 503/691 simple index to read (PEP 658 metadata or range requests for pins).",
)
_DATE = date_option(
    "Day the CPython policy is applied on when the release has no date (default: today)."
)


@click.group()
def upstream() -> None:
    """Follow upstream: new dependency releases, CUDA pins, CPython releases and end of life."""


@upstream.command()
@click.argument("file", metavar="FILE")
@_RELEASE
@_INDEX
@_DATE
@format_option("text", "json")
def check(file: str, release: str | None, index_url: str, date_text: str | None, fmt: str) -> None:
    """Report what upstream asks of a release of the matrix FILE: new values of its dependency
    axes, pins that differ from the upstream wheel's METADATA, yanked or missing pins, Pythons
    to add or drop.  Exit 0 when current, 4 when a change is due."""
    from relforge.matrix import read_text
    from relforge.upstream import (
        Loaded,
        UpstreamIndex,
        UpstreamRequest,
        check_lines,
        check_upstream,
        markdown,
        summary,
    )

    loaded = Loaded.parse(file, read_text(file))
    request = UpstreamRequest(loaded=loaded, release=release, today=parse_date(date_text))
    report = check_upstream(UpstreamIndex(index_url), request)
    if fmt == "json":
        print_json(report.to_json())
    else:
        click.echo("\n".join(check_lines(report)))
    append_markdown(markdown(report))
    if report.due:
        raise ValidationFailed(
            summary(report), hint=f"relforge upstream update {file} --release {report.release}"
        )


@upstream.command()
@click.argument("file", metavar="FILE")
@_RELEASE
@_INDEX
@_DATE
@click.option(
    "--pull-request",
    is_flag=True,
    help="Commit the update on a branch of its own and open (or update) a pull request; needs "
    "GITHUB_TOKEN.",
)
@github_repo_option(
    "Repository of the pull request (default: $GITHUB_REPOSITORY, else the remote's URL)."
)
@remote_option("Git remote to push to.")
@format_option(
    "text",
    "json",
    help="json: the update on stdout (each change with its reason and source, the diff as one "
    "string, the file written or the pull request's action, number and URL), the lines on "
    "stderr.",
)
@execute_option("Write the matrix (with --pull-request: push and open the pull request).")
def update(
    file: str,
    release: str | None,
    index_url: str,
    date_text: str | None,
    pull_request: bool,
    github_repo: str | None,
    remote: str,
    fmt: str,
    execute: bool,
) -> None:
    """Write the due changes into the matrix FILE, keeping its comments and layout: a new axis
    value, pins from the upstream wheel's METADATA, Pythons added or dropped.  The dry run
    prints each change with its reason and the diff."""
    from relforge.upstream import UpdateRequest, plan_upstream_update

    say = progress_echo(fmt)
    request = UpdateRequest(
        file=file,
        index_url=index_url,
        release=release,
        today=parse_date(date_text),
        pull_request=pull_request,
        remote=remote,
        github_repo=github_repo,
    )
    update = plan_upstream_update(request)
    outcome = update.outcome
    for line in outcome.lines():
        say(line)
    if not execute:
        if outcome.due:
            say(dry_run_note("pushed", "push and open it") if pull_request else dry_run_note())
    else:
        outcome = update.apply()
        for line in outcome.done_lines():
            say(line)
        if outcome.due:
            step_summary("relforge upstream update", outcome.summary_markdown())
    if fmt == "json":
        print_json(outcome.to_json())
