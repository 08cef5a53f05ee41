"""`relforge upstream check` and `relforge upstream update`: follow the dependencies, CUDA pins
and CPython releases upstream publishes."""

from __future__ import annotations

import datetime
from pathlib import Path

import click

from relforge.actions import append_markdown, step_summary
from relforge.cli.options import (
    date_option,
    execute_option,
    format_option,
    github_repo_option,
    optional_release_option,
    parse_date,
    remote_option,
    stop_for_dry_run,
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
        check_lines,
        check_upstream,
        markdown,
        summary,
    )

    loaded = Loaded.parse(file, read_text(file))
    report = check_upstream(
        loaded, UpstreamIndex(index_url), release=release, today=parse_date(date_text)
    )
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
@execute_option("Write the matrix (with --pull-request: push and open the pull request).")
def update(
    file: str,
    release: str | None,
    index_url: str,
    date_text: str | None,
    pull_request: bool,
    github_repo: str | None,
    remote: str,
    execute: bool,
) -> None:
    """Write the due changes into the matrix FILE, keeping its comments and layout: a new axis
    value, pins from the upstream wheel's METADATA, Pythons added or dropped.  The dry run
    prints each change with its reason and the diff."""
    from relforge.matrix import read_text
    from relforge.upstream import Loaded, UpstreamIndex, check_upstream, plan_update, update_lines

    today = parse_date(date_text)
    if pull_request:
        _pull_request(file, release, index_url, today, github_repo, remote, execute)
        return
    loaded = Loaded.parse(file, read_text(file))
    report = check_upstream(loaded, UpstreamIndex(index_url), release=release, today=today)
    plan = plan_update(loaded, report)
    click.echo("\n".join(update_lines(plan)))
    if not plan.changed:
        return
    click.echo(plan.diff(), nl=False)
    if stop_for_dry_run(execute):
        return
    from relforge.atomic import replacing

    with replacing(Path(file)) as tmp:
        tmp.write_text(plan.new_text, encoding="utf-8")
    done = f"wrote {file}: {len(plan.written)} change(s)"
    click.echo(done)
    step_summary("relforge upstream update", done)


def _pull_request(
    file: str,
    release: str | None,
    index_url: str,
    today: datetime.date | None,
    github_repo: str | None,
    remote: str,
    execute: bool,
) -> None:
    from relforge.forges import GitHubClient
    from relforge.upstream import (
        Loaded,
        UpstreamIndex,
        apply_pull_request,
        check_upstream,
        github_token,
        open_checkout,
        plan_pull_request,
        plan_update,
        update_lines,
    )

    checkout = open_checkout(file, remote=remote, github_repo=github_repo)
    token = github_token()
    gh = GitHubClient(checkout.repo)
    loaded = Loaded.parse(file, checkout.text)
    report = check_upstream(loaded, UpstreamIndex(index_url), release=release, today=today)
    plan = plan_update(loaded, report)
    git = checkout.git
    pr = plan_pull_request(git, gh, plan, path=checkout.path, remote=remote, base=checkout.base)
    click.echo("\n".join(update_lines(plan)))
    click.echo(f"pull request: {pr.describe()}")
    if pr.action in ("current", "nothing"):
        return
    click.echo(f"title: {pr.title}")
    click.echo(plan.diff(), nl=False)
    if stop_for_dry_run(execute, nothing="pushed", to="push and open it"):
        return
    pull = apply_pull_request(git, gh, pr, plan, token=token)
    done = f"pull request #{pull.number}: {pull.html_url}" if pull else "pushed"
    click.echo(done)
    step_summary("relforge upstream update", f"{pr.title}\n\n{done}")
