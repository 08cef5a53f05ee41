"""Options the commands share, declared once (each command words its own help where the
meaning differs), their parsers, and the dry-run plumbing of `--execute`."""

from __future__ import annotations

import datetime
from collections.abc import Callable, Collection, Sequence
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

import click

from relforge.errors import UsageError
from relforge.protocols import Outcome

if TYPE_CHECKING:
    from relforge.matrix import Selector
    from relforge.stores import LeasePolicy

F = TypeVar("F", bound=Callable[..., Any])


class Decorator(Protocol):
    """What click.option returns: a decorator giving a command one more option."""

    def __call__(self, f: F, /) -> F: ...


DEFAULT_LEASE_WAIT = 600.0
DEFAULT_LEASE_TTL = 60.0
EXECUTE_HELP = "Apply the plan (the default is a dry run that writes nothing)."


def release_option(help: str, *, required: bool = True) -> Decorator:
    """`--release/-r X.Y`: the release a command works on (required unless told; a command
    that does not require it picks one, e.g. `relforge.matrix.newest_release`)."""
    return click.option("--release", "-r", required=required, help=help)


def optional_release_option(help: str) -> Decorator:
    """`--release/-r X.Y` (optional): the command picks a release when none is given."""
    return click.option("--release", "-r", default=None, metavar="X.Y", help=help)


def releases_option(help: str) -> Decorator:
    """`--release/-r` repeatable into `releases` (default: all)."""
    return click.option("--release", "-r", "releases", multiple=True, help=help)


def channel_option(help: str, choices: Sequence[str], *, short: bool = False) -> Decorator:
    """`--channel` among `choices` (default: none given, the command picks channels.default)."""
    flags = ("--channel", "-c") if short else ("--channel",)
    return click.option(*flags, type=click.Choice(choices), help=help)


def select_option(
    help: str = "Only these cells.", *, metavar: str = "SELECTOR", short: bool = True
) -> Decorator:
    """`--select/-s SELECTOR` repeatable into `selects`; parse with `parse_selectors`."""
    flags = ("--select", "-s") if short else ("--select",)
    return click.option(*flags, "selects", multiple=True, metavar=metavar, help=help)


def format_option(*choices: str, help: str | None = None) -> Decorator:
    """`--format` into `fmt`, among `choices`; the first is the default."""
    return click.option(
        "--format",
        "fmt",
        type=click.Choice(choices),
        default=choices[0],
        show_default=True,
        help=help,
    )


def date_option(help: str) -> Decorator:
    """`--date YYYY-MM-DD` into `date_text`; parse with `parse_date`."""
    return click.option("--date", "date_text", metavar="YYYY-MM-DD", help=help)


def execute_option(help: str = EXECUTE_HELP) -> Decorator:
    """`--execute`: apply what the command plans (without it, a dry run)."""
    return click.option("--execute", is_flag=True, help=help)


def lease_options() -> Decorator:
    """`--lease-wait SECONDS`, `--no-wait`, `--lease-ttl SECONDS`: how a command that changes a
    channel takes the channel's writer lease (relforge.stores.lease); parse with
    `lease_policy`."""
    wait = click.option(
        "--lease-wait",
        type=click.FloatRange(min=0),
        default=DEFAULT_LEASE_WAIT,
        show_default=True,
        metavar="SECONDS",
        help="While another writer holds the channel's lease, wait this long for it (saying "
        "who holds it every few seconds), then refuse (exit 5).",
    )
    no_wait = click.option(
        "--no-wait",
        is_flag=True,
        help="Refuse at once (exit 5, the holder named) when another writer holds the "
        "channel's lease.",
    )
    ttl = click.option(
        "--lease-ttl",
        type=click.FloatRange(min=1),
        default=DEFAULT_LEASE_TTL,
        show_default=True,
        metavar="SECONDS",
        help="How long the channel's lease outlives this run if it dies (renewed every third "
        "of it while the run writes); another writer takes over an expired lease.",
    )

    def apply(f: F) -> F:
        return wait(no_wait(ttl(f)))

    return apply


def lease_policy(
    execute: bool, lease_wait: float, no_wait: bool, lease_ttl: float
) -> LeasePolicy | None:
    """The `LeasePolicy` of the lease flags (None on a dry run: it takes no lease); the lines
    about waiting and takeovers go to stderr."""
    if not execute:
        return None
    from relforge.stores import LeasePolicy

    return LeasePolicy(
        ttl=lease_ttl, wait=0.0 if no_wait else lease_wait, say=partial(click.echo, err=True)
    )


def clone_option(help: str = "The project's git clone.") -> Decorator:
    """`--repo DIR` (default .): the project's clone a git-driven command reads and pushes from."""
    return click.option(
        "--repo",
        default=".",
        show_default=True,
        metavar="DIR",
        type=click.Path(file_okay=False, path_type=Path),
        help=help,
    )


def remote_option(help: str = "Its git remote.") -> Decorator:
    """`--remote NAME` (default origin)."""
    return click.option("--remote", default="origin", show_default=True, metavar="NAME", help=help)


def github_repo_option(
    help: str = "The project's GitHub repository (default: from the remote's URL).",
) -> Decorator:
    """`--github-repo OWNER/NAME`: checked and defaulted by relforge.forges.project_repo."""
    return click.option("--github-repo", metavar="OWNER/NAME", help=help)


def workers_option(default: int = 32, help: str = "Parallel transfers.") -> Decorator:
    """`--workers N` (1–256): parallel requests to a store."""
    return click.option(
        "--workers", type=click.IntRange(1, 256), default=default, show_default=True, help=help
    )


def jobs_option(help: str, default: int | None = None) -> Decorator:
    """`--jobs/-j N` (at least 1): threads or processes working at once."""
    return click.option(
        "--jobs",
        "-j",
        type=click.IntRange(min=1),
        default=default,
        show_default=default is not None,
        help=help,
    )


def parse_date(value: str | None) -> datetime.date | None:
    """The `--date` given (None when not given); a usage error unless it is YYYY-MM-DD."""
    if value is None:
        return None
    try:
        return datetime.date.fromisoformat(value)
    except ValueError:
        raise UsageError(f"{value!r} is not a date like 2025-10-15", key="--date") from None


def parse_selectors(values: tuple[str, ...], axes: Collection[str] = ()) -> list[Selector]:
    """Parse --select values; `axes` are the release's dependency axes (fields too)."""
    from relforge.matrix import parse_selector

    selectors = []
    for value in values:
        try:
            selectors.append(parse_selector(value, axes))
        except ValueError as exc:
            raise UsageError(
                str(exc),
                key=f"--select {value!r}",
                hint="e.g. --select 'os=linux,accelerator=cuda,python>=3.12' "
                "or an id glob like 'wheel-*-cu128'",
            ) from None
    return selectors


def dry_run_note(nothing: str = "written", to: str = "apply") -> str:
    """The line a dry run ends with: what did not happen and how to make it happen."""
    return f"dry run: nothing was {nothing}; add --execute to {to}"


def stop_for_dry_run(execute: bool, *, nothing: str = "written", to: str = "apply") -> bool:
    """After the plan is printed: True (having said so) when it is a dry run, so the caller
    returns before changing anything; False when `--execute` was given."""
    if execute:
        return False
    click.echo(dry_run_note(nothing, to))
    return True


def progress_echo(fmt: str) -> Callable[[str], None]:
    """Where the lines people read go: stdout, or stderr under `--format json` (stdout then
    holds the one JSON document)."""
    return partial(click.echo, err=fmt == "json")


def print_outcome(outcome: Outcome, *, fmt: str, title: str, note: str | None = None) -> None:
    """After the plan was printed: on a dry run its note (`note`, default `dry_run_note()`);
    after `--execute`, what the run did and the step summary `title`; then, under `--format
    json`, the outcome on stdout."""
    from relforge.actions import step_summary
    from relforge.output import print_json

    say = progress_echo(fmt)
    if not outcome.executed:
        say(note or dry_run_note())
    else:
        for line in outcome.lines():
            say(line)
        step_summary(title, outcome.summary_markdown())
    if fmt == "json":
        print_json(outcome.to_json())
